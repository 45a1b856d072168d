"""Whether a Codex tool call failed, from what its rollout holds: the output text the model saw, and
the events some versions write beside it.

A rollout stores a call's output as the text the model was sent (``function_call_output`` /
``custom_tool_call_output``), with no success flag (Codex drops ``success`` when it writes the
payload). What the text says, as openai/codex's ``codex-rs/core`` writes it:

* a command's output: JSON ``{"output": ..., "metadata": {"exit_code": N, "duration_seconds": S}}``
  (``format_exec_output_for_model_structured``), or text ``Exit code: N\\nWall time: S seconds\\n
  [Total output lines: L\\n]Output:\\n...`` (``..._freeform``, the freeform ``apply_patch`` and
  ``shell`` tools), or a unified-exec reply (``exec_command`` / ``write_stdin``): ``Chunk ID: ...\\n
  Wall time: ...\\n`` then ``Process exited with code N`` or ``Process running with session ID
  ...``, ``Original token count: ...``, ``Output:\\n...``. Failed when N is not 0;
* an error Codex answered the model with instead of running the call (``FunctionCallError::
  RespondToModel``): the message alone, e.g. ``apply_patch verification failed: Failed to find
  expected lines in ...`` / ``... invalid patch: ...`` / ``... invalid hunk at line N, ...``,
  ``apply_patch handler received invalid patch input``, ``patch rejected: ...``, ``patch rejected
  by user``, ``exec command rejected by user``, ``execution error: ...``, ``failed to parse
  function arguments: ...``; older versions (codex.rs) ``error: <apply_patch error>`` and, for an
  MCP call that did not run, ``err: ...``.

Only the start of the text is read (a JSON document's fields, the header lines of a command's
output, or the opening words of an error message), so an output that merely holds the word "error"
(a file listing, a test log) is not a failure, and neither is exit code 0.

Events: ``patch_apply_end`` (``call_id``, ``success``) and ``mcp_tool_call_end`` (``call_id``,
``result`` ``{"Err": ...}`` or ``{"Ok": {..., "isError": true}}``) name failed calls, in the versions
that write them.
"""

from __future__ import annotations

import json
import re
from typing import Any

from otel_blackbox._spans.transcripts.reading import Counts, as_int, as_str, parts_text

__all__ = ["failed_call", "read_output"]

_EXIT_CODE = re.compile(r"(?:Exit code:|Process exited with code) (-?\d+)\s*\Z")
# The first line of a command's output as Codex words it (freeform exec, unified exec).
_HEADER = re.compile(r"(?:Exit code|Chunk ID|Wall time): |Process (?:exited with code|running with) ")
_HEADER_LINES = 8
# The opening of an error message Codex answered the model with (codex-rs/core tools/handlers,
# tools/events.rs, apply_patch.rs), kept to Codex's own words.
_ERROR_OPENINGS = (
    "apply_patch verification failed:",
    "apply_patch handler received ",
    "patch rejected",
    "exec command rejected by user",
    "execution error:",
    "failed to parse function arguments:",
    "failed to parse exec_command arguments:",
    "failed to parse write_stdin arguments:",
    "exec_command failed:",
    "write_stdin failed:",
    "err: ",
)
# What codex-apply-patch says of a patch it cannot apply (ParseError, ComputeReplacements), alone or
# after "error: " (older versions); compared in lower case.
_PATCH_ERRORS = (
    "invalid patch",
    "invalid hunk at line ",
    "failed to find expected lines",
    "failed to find context ",
    "patch detected without explicit call to apply_patch",
)


def _exit_code(text: str) -> int | None:
    """The exit code a command's output states in its header lines (before ``Output:``), or None
    when the text is not a command's output."""
    lines = text.split("\n", _HEADER_LINES)
    if not _HEADER.match(lines[0]):
        return None
    for line in lines[:_HEADER_LINES]:
        if line == "Output:":
            break
        match = _EXIT_CODE.match(line)
        if match:
            return int(match.group(1))
    return None


def _says_failed(text: str) -> bool:
    """Whether the text the model saw says the call failed (see the module's docstring)."""
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        metadata = parsed.get("metadata")
        code = as_int(metadata.get("exit_code")) if isinstance(metadata, dict) else None
        return bool(code) or parsed.get("success") is False
    code = _exit_code(text)
    if code is not None:
        return code != 0
    opening = text.lstrip()
    if opening.startswith(_ERROR_OPENINGS):
        return True
    lowered = opening.removeprefix("error: ").lower()
    return lowered.startswith(_PATCH_ERRORS)


def read_output(value: Any, counts: Counts) -> tuple[str, bool]:
    """A call's ``output`` as (text, failed): the text as the model saw it, unchanged; failed when an
    output object says ``success: false`` or the text says the call failed."""
    if isinstance(value, dict):  # {content, success} in some versions
        text = parts_text(value.get("content"), counts) or json.dumps(value, ensure_ascii=False)
        return text, value.get("success") is False or _says_failed(text)
    text = parts_text(value, counts)
    return text, _says_failed(text)


def failed_call(event: dict[str, Any]) -> str | None:
    """The call id an ``event_msg`` says failed (``patch_apply_end`` with ``success: false``,
    ``mcp_tool_call_end`` with an ``Err`` result or one with ``isError``), else None."""
    kind, call_id = event.get("type"), as_str(event.get("call_id"))
    if kind == "patch_apply_end":
        return call_id if event.get("success") is False else None
    result = event.get("result")
    if kind != "mcp_tool_call_end" or not isinstance(result, dict):
        return None
    ok = result.get("Ok")
    failed = "Err" in result or (
        isinstance(ok, dict) and (ok.get("isError") is True or ok.get("is_error") is True)
    )
    return call_id if failed else None
