"""Responses items as a request's input and a response's output both carry them, both ways: the
calls the program runs (``PROGRAM_CALLS``) and those the API ran (hosted calls), a message's text and
refusal, a reasoning item; read into their neutral form, and a hosted call's item written back.

A hosted call is a ``*_call`` item that is not one the program answers (``PROGRAM_CALLS``, or a
``tool_search_call`` with ``execution: client``). Its neutral form (``hosted_of``; ``hosted_item``
is the inverse):

* ``web_search_call`` -> ``toolName: web_search``, ``toolInput``: its ``action``;
* ``file_search_call`` -> ``file_search``, ``toolInput``: its ``queries``, ``result``: its ``results``;
* ``code_interpreter_call`` -> ``code_interpreter``, ``toolInput``: ``{code?, container_id}``,
  ``result``: its ``outputs``;
* any other ``*_call`` (``image_generation_call``, ``mcp_call``...) -> its type less ``_call``,
  ``toolInput``: every field but ``id``, ``type`` and ``status``, nulls left out.

``status`` is the item's own. A reasoning item (``reasoning_of``) is its summary texts (``[]`` when
the item's is empty), its ``reasoning_text`` content joined (when it has some), its
``encrypted_content``.
"""

from __future__ import annotations

from typing import Any

from otel_blackbox._cassette.output import Hosted, Reasoning
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.neutral_parts import objects_of

__all__ = [
    "HOSTED_INPUT",
    "HOSTED_RESULT",
    "PROGRAM_CALLS",
    "TEXT_PARTS",
    "hosted_item",
    "hosted_of",
    "is_hosted",
    "reasoning_of",
    "refusal_of",
    "text_of",
]

# Calls the program runs and answers with a ``*_output`` item; any other ``*_call`` the API ran.
PROGRAM_CALLS = (
    "function_call",
    "custom_tool_call",
    "computer_call",
    "local_shell_call",
    "shell_call",
    "apply_patch_call",
)
# A hosted call's fields: the one (or the ones) that are its input, and the one that is its result.
HOSTED_INPUT: dict[str, str | tuple[str, ...]] = {
    "web_search_call": "action",
    "file_search_call": "queries",
    "code_interpreter_call": ("code", "container_id"),
}
HOSTED_RESULT = {"file_search_call": "results", "code_interpreter_call": "outputs"}
TEXT_PARTS = ("input_text", "output_text", "text")
_NOT_INPUT = ("id", "type", "status")


def text_of(content: Any) -> str:
    """A message's text: the string itself, or its text parts joined (refusals are apart)."""
    if isinstance(content, str):
        return content
    return "".join(str(p.get("text", "")) for p in objects_of(content) if p.get("type") in TEXT_PARTS)


def refusal_of(content: Any) -> str | None:
    """A message's refusal parts joined; None when it has none."""
    refusals = [p for p in objects_of(content) if p.get("type") == "refusal"]
    return "".join(str(p.get("refusal", "")) for p in refusals) if refusals else None


def is_hosted(item: JsonObject) -> bool:
    kind = item.get("type")
    if not isinstance(kind, str) or not kind.endswith("_call") or kind in PROGRAM_CALLS:
        return False
    return item.get("execution") != "client"  # a tool search the program runs itself


def reasoning_of(item: JsonObject) -> Reasoning:
    """A reasoning item's summary texts, its reasoning_text content joined, its encrypted content."""
    summary = [str(p.get("text", "")) for p in objects_of(item.get("summary"))]
    content = objects_of(item.get("content"))
    encrypted = item.get("encrypted_content")
    return Reasoning(
        text="".join(str(p.get("text", "")) for p in content) if content else None,
        summary=summary,
        encrypted_content=encrypted if isinstance(encrypted, str) else None,
    )


def hosted_of(item: JsonObject) -> Hosted:
    """A hosted tool call by the table of the module docstring."""
    kind = str(item["type"])
    name = kind.removesuffix("_call")
    status = item["status"] if isinstance(item.get("status"), str) else None
    fields = HOSTED_INPUT.get(kind)
    if fields is None:
        rest = {k: v for k, v in item.items() if k not in _NOT_INPUT and v is not None}
        return Hosted(name, tool_input=rest, status=status)
    if isinstance(fields, tuple):
        given: Any = {k: item[k] for k in fields if item.get(k) is not None}
    else:
        given = item.get(fields)
    result = item.get(HOSTED_RESULT[kind]) if kind in HOSTED_RESULT else None
    if result is None:
        return Hosted(name, tool_input=given, status=status)
    return Hosted(name, tool_input=given, result=result, status=status)


def hosted_item(hosted: Hosted, item_id: str) -> JsonObject:
    """The item ``hosted_of`` read, rebuilt: the inverse of the docstring's table."""
    kind = f"{hosted.tool_name}_call"
    if kind in PROGRAM_CALLS:  # it would read back as a call the program answers
        raise ValueError(
            f"a hosted tool cannot be named {hosted.tool_name!r}: that is a call the program runs"
        )
    given = hosted.tool_input if hosted.has_input else None
    fields = HOSTED_INPUT.get(kind)
    if fields is None:
        if not isinstance(given, dict):
            raise ValueError(f"the toolInput of a hosted {hosted.tool_name} call must be an object")
        item: JsonObject = {**given, "id": item_id, "type": kind}
        return {**item, "status": hosted.status} if hosted.status is not None else item
    item = {"id": item_id, "type": kind}
    if isinstance(fields, tuple):
        for key in fields:
            item[key] = given.get(key) if isinstance(given, dict) else None
    else:
        item[fields] = given
    if kind in HOSTED_RESULT:
        item[HOSTED_RESULT[kind]] = hosted.result if hosted.has_result else None
    item["status"] = hosted.status or "completed"  # a status the SDK requires of these items
    return item
