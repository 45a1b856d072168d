"""Anthropic content blocks written from neutral parts: thinking and hosted (server or MCP) tool
use, as a response and a request both carry them."""

from __future__ import annotations

from otel_blackbox._cassette.output import Hosted, Reasoning
from otel_blackbox._wire.protocol import JsonObject

__all__ = ["DEFAULT_MAX_TOKENS", "MCP_RESULT", "hosted_blocks", "thinking_block"]

MCP_RESULT = "mcp_tool_result"
# The API requires max_tokens; a model_input recorded without one (another API's) is sent this.
DEFAULT_MAX_TOKENS = 4096


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
