"""Anthropic content blocks that a request's history and a response both carry, both ways: thinking
(``thinking`` / ``redacted_thinking``) and hosted tool use (a ``server_tool_use`` / ``mcp_tool_use``
block with the block that answers it), read into neutral ``Reasoning`` and ``Hosted`` entries and
written back from them.
"""

from __future__ import annotations

from otel_blackbox._cassette.output import Hosted, Reasoning
from otel_blackbox._types import JsonObject

__all__ = [
    "HOSTED_USES",
    "MCP_RESULT",
    "hosted_at",
    "hosted_blocks",
    "reasonings",
    "string_field",
    "thinking_block",
]

# The blocks of a hosted tool's use; the block that answers one carries its id as tool_use_id.
HOSTED_USES = ("server_tool_use", "mcp_tool_use")
MCP_RESULT = "mcp_tool_result"


def reasonings(blocks: list[JsonObject]) -> list[Reasoning]:
    """The thinking and redacted_thinking blocks, in order."""
    found: list[Reasoning] = []
    for block in blocks:
        if block.get("type") == "thinking":
            found.append(
                Reasoning(text=string_field(block, "thinking"), signature=string_field(block, "signature"))
            )
        elif block.get("type") == "redacted_thinking":
            found.append(Reasoning(redacted=string_field(block, "data")))
    return found


def string_field(block: JsonObject, key: str) -> str | None:
    """The field ``key`` of a block, a string or None when it is not there."""
    value = block.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"the {key} of the {block.get('type')} block is not a string")
    return value


def hosted_at(blocks: list[JsonObject]) -> list[tuple[int, Hosted]]:
    """Each server_tool_use / mcp_tool_use with the block that answers it, in the uses' order, with
    the index of the block it starts at (the use, or a result that stands alone).

    A result is the block whose ``tool_use_id`` is a use's id, or any ``*_tool_result`` block other
    than a client's ``tool_result`` (one that answers no use here stands alone, named by its type).
    """
    calls: list[JsonObject] = []
    open_uses: dict[str, JsonObject | None] = {}  # provider id -> its entry, until its result comes
    for index, block in enumerate(blocks):
        kind = str(block.get("type"))
        if kind in HOSTED_USES:
            entry = {"tool_name": _hosted_name(block), "tool_input": block.get("input", {}), "at": index}
            calls.append(entry)
            open_uses[str(block.get("id"))] = entry
        elif kind != "tool_result" and (
            kind.endswith("_tool_result") or block.get("tool_use_id") in open_uses
        ):
            entry = open_uses.pop(str(block.get("tool_use_id")), None) or _orphan(calls, kind, index)
            entry["result_type"] = kind
            if "content" in block:
                entry["result"] = block["content"]
            if kind == MCP_RESULT and block.get("is_error"):
                entry["status"] = "error"
    return [(entry.pop("at"), Hosted(**entry)) for entry in calls]


def _orphan(calls: list[JsonObject], kind: str, index: int) -> JsonObject:
    """The entry of a result whose use is not in the same turn."""
    entry: JsonObject = {"tool_name": kind.removesuffix("_tool_result"), "at": index}
    calls.append(entry)
    return entry


def _hosted_name(block: JsonObject) -> str:
    name = str(block.get("name", ""))
    # MCP tool names hold no "/" (the MCP spec's characters), so the last "/" splits the two again.
    return f"{block.get('server_name', '')}/{name}" if block.get("type") == "mcp_tool_use" else name


def thinking_block(reasoning: Reasoning) -> JsonObject:
    if reasoning.redacted is not None:
        return {"type": "redacted_thinking", "data": reasoning.redacted}
    text = reasoning.text if reasoning.text is not None else "\n\n".join(reasoning.summary or [])
    return {"type": "thinking", "thinking": text, "signature": reasoning.signature or ""}


def hosted_blocks(hosted: Hosted, suffix: str) -> list[JsonObject]:
    """The use block and, when the call has a result, the block answering it."""
    mcp = hosted.result_type == MCP_RESULT or (hosted.result_type is None and "/" in hosted.tool_name)
    use: JsonObject = {"type": "mcp_tool_use" if mcp else "server_tool_use"}
    use["id"] = f"{'mcptoolu' if mcp else 'srvtoolu'}_{suffix}"
    if mcp:
        server, _, name = hosted.tool_name.rpartition("/")
        use.update(name=name, server_name=server)
    else:
        use["name"] = hosted.tool_name
    use["input"] = hosted.tool_input if hosted.has_input else {}
    if not hosted.has_result:
        return [use]
    kind = hosted.result_type or f"{hosted.tool_name}_tool_result"
    result: JsonObject = {"type": kind, "tool_use_id": use["id"], "content": hosted.result}
    if kind == MCP_RESULT:
        result["is_error"] = hosted.status == "error"
    return [use, result]
