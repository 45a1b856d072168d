"""Anthropic Messages requests read into a neutral ``model_input``: pure functions.

Top-level fields as ``ANTHROPIC_FIELDS`` (``fields.py``) sorts them:

* ``messages``, ``model``, ``system`` and ``tools`` are read (below). ``system``, a string or a list
  of text blocks (joined with a blank line), is ``systemPrompt``.
* ``params`` under neutral names: ``max_tokens`` -> ``maxTokens``, ``temperature``, ``top_p`` ->
  ``topP``, ``tool_choice`` -> ``toolChoice``, ``stop_sequences`` -> ``stop``, and
  ``output_config.format`` -> ``responseFormat`` (``output_config``'s other keys, ``effort``...,
  stay under ``params.output_config``).
* Not compared (transport: how the request is delivered, billed, cached or attributed, not what the
  model is asked): ``stream``, ``metadata``, ``service_tier``, ``container``, ``inference_geo``,
  ``cache_control``, ``diagnostics``, ``user_profile_id``, ``workspace_id``, ``speed``,
  ``billing_policy``, ``fallback_credit_token``, ``thread``; each reason is in the table. A
  ``container`` object's ``skills`` do change what the model can run: they are kept as
  ``params.container.skills``, its id is not.
* Every other field, those known to change what the model does (``thinking``, ``top_k``,
  ``mcp_servers``, ``context_management``, ``compaction``, ``fallbacks``) and any the table does not
  know, goes under ``params`` with its own name, so it is compared, never dropped.

A message keeps string content as a string. Block content becomes parts:

* ``text`` -> ``{type: text, text}`` (citations and ``cache_control`` dropped: the neutral text is
  one string, and the passages a citation points at are in the hosted tools' results);
  ``tool_use`` -> ``{type: tool_use, toolCallId, toolName, toolInput}``; ``tool_result`` ->
  ``{type: tool_result, toolCallId, toolName, result}``, the content as sent (a string, a list of
  blocks, or ``""`` when absent), or ``error`` (a string) when ``is_error`` is true.
* An assistant turn is canonicalized to the shape replay sends back: its ``thinking`` blocks as
  ``{type: reasoning, text, signature}`` and ``redacted_thinking`` as ``{type: reasoning, redacted}``,
  in order; then each hosted tool call, a ``server_tool_use`` / ``mcp_tool_use`` block with the block
  that answers it (its ``tool_use_id`` is the use's id: ``web_search_tool_result``,
  ``code_execution_tool_result``, ``mcp_tool_result``...) as ``{type: hosted_tool, toolName,
  toolInput, result, resultType}`` (``resultType`` the result block's type, ``status: "error"`` for
  an MCP result with ``is_error``; an MCP call's ``toolName`` is ``<server_name>/<name>``); then its
  text blocks joined into one text part; then its tool uses in order. Provider ids, ``caller`` and
  ``cache_control`` are dropped. Other blocks only a response holds (``container_upload``...) are
  dropped, as ``model_output`` drops them, so a request that echoes a replayed response normalizes
  like the recorded one.
* Passthrough: any other block in a user turn (``image``, ``document``, ``search_result``, ...) is
  kept as sent, under its own ``type``, less ``cache_control``.
* ``tools`` -> ``{name, description, inputSchema}`` (server tools have no schema: name and description
  only).
"""

from __future__ import annotations

from typing import Any

from otel_blackbox._cassette.output import Hosted
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.anthropic.blocks import hosted_at, reasonings
from otel_blackbox._wire.anthropic.fields import ANTHROPIC_FIELDS as REQUEST_FIELDS
from otel_blackbox._wire.call_ids import CallIds
from otel_blackbox._wire.protocol import tool_settings

__all__ = ["model_input"]


def model_input(request: JsonObject, ids: CallIds) -> JsonObject:
    """A request body as ``model_input`` (``Provider.model_input``)."""
    names: dict[str, str] = {}  # neutral id -> tool name, from the tool uses seen so far
    payload: JsonObject = {
        "messages": [_message(m, ids, names) for m in request.get("messages") or []],
        "tools": [_tool(t) for t in request.get("tools") or []],
    }
    if request.get("system") is not None:
        payload["systemPrompt"] = _system(request["system"])
    if request.get("model") is not None:
        payload["model"] = request["model"]
    params = REQUEST_FIELDS.params(request)
    skills = _container_skills(request.get("container"))
    if skills is not None:
        params["container"] = {"skills": skills}
    if params:
        payload["params"] = params
    return payload


def _container_skills(container: Any) -> Any:
    """A container object's skills (what the model can run there), or None: its id is transport."""
    return container.get("skills") if isinstance(container, dict) else None


def _system(system: Any) -> str:
    if isinstance(system, str):
        return system
    return "\n\n".join(b.get("text", "") for b in system if isinstance(b, dict) and b.get("type") == "text")


def _tool(tool: JsonObject) -> JsonObject:
    neutral: JsonObject = {"name": tool.get("name", ""), "description": tool.get("description") or ""}
    if "input_schema" in tool:
        neutral["inputSchema"] = tool["input_schema"]
    # The rest (a server tool's versioned type and limits, strict, input_examples...) are settings;
    # cache_control is a prompt-cache marker, not what the model does.
    return tool_settings(neutral, tool, ("name", "description", "input_schema", "cache_control"))


def _message(message: JsonObject, ids: CallIds, names: dict[str, str]) -> JsonObject:
    role, content = message.get("role"), message.get("content")
    if not isinstance(content, list):
        return {"role": role, "content": content}
    blocks = [b for b in content if isinstance(b, dict)]
    if role == "assistant":
        return {"role": role, "content": _assistant_parts(blocks, ids, names)}
    return {"role": role, "content": [_user_part(b, ids, names) for b in blocks]}


def _assistant_parts(blocks: list[JsonObject], ids: CallIds, names: dict[str, str]) -> list[JsonObject]:
    """The canonical order replay sends back: reasoning, hosted tools, the text, the tool uses."""
    parts: list[JsonObject] = [{"type": "reasoning", **r.to_json()} for r in reasonings(blocks)]
    parts += [{"type": "hosted_tool", **h.to_json()} for h in _hosted_calls(blocks)]
    text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
    if text:
        parts.append({"type": "text", "text": text})
    for block in blocks:
        if block.get("type") == "tool_use":
            call_id = ids.neutral(str(block.get("id")))
            names[call_id] = str(block.get("name", ""))
            parts.append(_tool_use(call_id, names[call_id], block.get("input", {})))
    return parts


def _tool_use(call_id: str, name: str, tool_input: Any) -> JsonObject:
    return {"type": "tool_use", "toolCallId": call_id, "toolName": name, "toolInput": tool_input}


def _user_part(block: JsonObject, ids: CallIds, names: dict[str, str]) -> JsonObject:
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": block.get("text", "")}
    if kind == "tool_result":
        call_id = ids.neutral(str(block.get("tool_use_id")))
        part: JsonObject = {
            "type": "tool_result",
            "toolCallId": call_id,
            "toolName": names.get(call_id, "unknown"),
        }
        content = block.get("content", "")
        if block.get("is_error"):
            part["error"] = content if isinstance(content, str) else _joined_text(content)
        else:
            part["result"] = content
        return part
    if kind == "tool_use":  # only assistants call tools, but keep the id neutral wherever it is
        return _tool_use(
            ids.neutral(str(block.get("id"))), str(block.get("name", "")), block.get("input", {})
        )
    return {k: v for k, v in block.items() if k != "cache_control"}


def _joined_text(content: Any) -> str:
    blocks = content if isinstance(content, list) else []
    return "\n".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")


def _hosted_calls(blocks: list[JsonObject]) -> list[Hosted]:
    return [hosted for _, hosted in hosted_at(blocks)]
