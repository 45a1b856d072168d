"""Responses output items the program runs (``PROGRAM_CALLS``) and hosted calls the API ran, and a
hosted call's item written back from its neutral form (as a response and a request both carry it)."""

from __future__ import annotations

from otel_blackbox._cassette.output import Hosted
from otel_blackbox._wire.protocol import JsonObject

__all__ = ["HOSTED_INPUT", "HOSTED_RESULT", "PROGRAM_CALLS", "hosted_item"]

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


def hosted_item(hosted: Hosted, item_id: str) -> JsonObject:
    """The item ``_hosted`` read, rebuilt: the inverse of the docstring's table."""
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
