"""The event stream the OpenAI Responses API sends for a response, synthesized for a replay.

``events(response)`` yields (event type, data) in the order the SDK's stream helper
(``client.responses.stream``) checks: ``response.created`` and ``response.in_progress``, then each
output item added, its deltas (text, refusal, reasoning summary and text, call arguments, a hosted
tool's progress and code), its done events, and ``response.completed`` or ``response.incomplete``.
"""

from __future__ import annotations

from collections.abc import Iterator

from otel_blackbox._types import JsonObject
from otel_blackbox._wire.neutral_parts import pieces

__all__ = ["Events", "events"]

Events = Iterator[tuple[str, JsonObject]]


def events(response: JsonObject) -> Events:
    """The stream the API would send; the SDK's helper insists on response.created first, each
    item added before its deltas and done after them, and one response id throughout."""
    started = {**response, "status": "in_progress", "incomplete_details": None, "output": [], "usage": None}
    yield "response.created", {"response": started}
    yield "response.in_progress", {"response": started}
    for index, item in enumerate(response["output"]):
        kind = item["type"]
        if kind == "message":
            yield from _message_events(index, item)
        elif kind == "function_call":
            yield from _call_events(index, item)
        elif kind == "reasoning":
            yield from _reasoning_events(index, item)
        else:
            yield from _hosted_events(index, item)
    yield f"response.{response['status']}", {"response": response}


def _message_events(index: int, item: JsonObject) -> Events:
    added = {**item, "status": "in_progress", "content": []}
    yield "response.output_item.added", {"output_index": index, "item": added}
    for content_index, part in enumerate(item["content"]):
        where = {"item_id": item["id"], "output_index": index, "content_index": content_index}
        if part["type"] == "refusal":
            yield from _refusal_events(where, part)
        else:
            yield from _text_events(where, part)
    yield "response.output_item.done", {"output_index": index, "item": item}


def _text_events(where: JsonObject, part: JsonObject) -> Events:
    # The helper appends text deltas to a part that content_part.added must have opened.
    yield "response.content_part.added", {**where, "part": {**part, "text": ""}}
    for piece in pieces(part["text"]):
        yield "response.output_text.delta", {**where, "delta": piece, "logprobs": []}
    yield "response.output_text.done", {**where, "text": part["text"], "logprobs": []}
    yield "response.content_part.done", {**where, "part": part}


def _refusal_events(where: JsonObject, part: JsonObject) -> Events:
    yield "response.content_part.added", {**where, "part": {**part, "refusal": ""}}
    for piece in pieces(part["refusal"]):
        yield "response.refusal.delta", {**where, "delta": piece}
    yield "response.refusal.done", {**where, "refusal": part["refusal"]}
    yield "response.content_part.done", {**where, "part": part}


def _call_events(index: int, item: JsonObject) -> Events:
    where = {"item_id": item["id"], "output_index": index}
    added = {**item, "status": "in_progress", "arguments": ""}
    yield "response.output_item.added", {"output_index": index, "item": added}
    for piece in pieces(item["arguments"]):
        yield "response.function_call_arguments.delta", {**where, "delta": piece}
    yield "response.function_call_arguments.done", {**where, "arguments": item["arguments"]}
    yield "response.output_item.done", {"output_index": index, "item": item}


def _reasoning_events(index: int, item: JsonObject) -> Events:
    """The reasoning text as a reasoning_text content part, then each summary part, in deltas."""
    where = {"item_id": item["id"], "output_index": index}
    added = {k: v for k, v in item.items() if k not in ("content", "encrypted_content")}
    yield "response.output_item.added", {"output_index": index, "item": {**added, "summary": []}}
    for content_index, part in enumerate(item.get("content") or []):
        at = {**where, "content_index": content_index}
        yield "response.content_part.added", {**at, "part": {**part, "text": ""}}
        for piece in pieces(part["text"]):
            yield "response.reasoning_text.delta", {**at, "delta": piece}
        yield "response.reasoning_text.done", {**at, "text": part["text"]}
        yield "response.content_part.done", {**at, "part": part}
    for summary_index, part in enumerate(item["summary"]):
        at = {**where, "summary_index": summary_index}
        yield "response.reasoning_summary_part.added", {**at, "part": {**part, "text": ""}}
        for piece in pieces(part["text"]):
            yield "response.reasoning_summary_text.delta", {**at, "delta": piece}
        yield "response.reasoning_summary_text.done", {**at, "text": part["text"]}
        yield "response.reasoning_summary_part.done", {**at, "part": part}
    yield "response.output_item.done", {"output_index": index, "item": item}


# What a hosted call's item holds before it has run, and the progress events the API sends for it.
_STARTED: dict[str, JsonObject] = {
    "file_search_call": {"results": None},
    "code_interpreter_call": {"code": "", "outputs": None},
    "image_generation_call": {"result": None},
    "mcp_call": {"arguments": "", "output": None},
}
_PROGRESS = {
    "web_search_call": ("in_progress", "searching"),
    "file_search_call": ("in_progress", "searching"),
    "code_interpreter_call": ("in_progress",),
    "image_generation_call": ("in_progress", "generating"),
    "mcp_call": ("in_progress",),
}


def _hosted_events(index: int, item: JsonObject) -> Events:
    kind = item["type"]
    where = {"item_id": item["id"], "output_index": index}
    added = {**item, **_STARTED.get(kind, {})}
    if "status" in item:
        added["status"] = "in_progress"
    yield "response.output_item.added", {"output_index": index, "item": added}
    for phase in _PROGRESS.get(kind, ()):
        yield f"response.{kind}.{phase}", dict(where)
    yield from _hosted_deltas(kind, where, item)
    if kind in _PROGRESS and item.get("status") == "completed":
        yield f"response.{kind}.completed", dict(where)
    elif kind == "mcp_call" and item.get("status") == "failed":
        yield "response.mcp_call.failed", dict(where)
    yield "response.output_item.done", {"output_index": index, "item": item}


def _hosted_deltas(kind: str, where: JsonObject, item: JsonObject) -> Events:
    """The code a code interpreter runs, the arguments of an MCP call: sent in deltas."""
    if kind == "code_interpreter_call" and isinstance(item.get("code"), str):
        for piece in pieces(item["code"]):
            yield "response.code_interpreter_call_code.delta", {**where, "delta": piece}
        yield "response.code_interpreter_call_code.done", {**where, "code": item["code"]}
        yield "response.code_interpreter_call.interpreting", dict(where)
    elif kind == "mcp_call" and isinstance(item.get("arguments"), str):
        for piece in pieces(item["arguments"]):
            yield "response.mcp_call_arguments.delta", {**where, "delta": piece}
        yield "response.mcp_call_arguments.done", {**where, "arguments": item["arguments"]}
