"""Chat logs: a saved conversation in one of three JSON shapes, read as a neutral ``Conversation``.

* ``openai-chat``: an OpenAI Chat Completions ``messages`` array, or an object with ``messages`` (and
  ``model``, ``tools``): system / developer, user, assistant (``tool_calls``) and ``tool`` messages;
* ``openai-responses``: an OpenAI Responses ``input`` list, or an object with ``input`` (and
  ``instructions``, ``model``, ``tools``, ``output``): ``message``, ``function_call`` and
  ``function_call_output`` items;
* ``anthropic``: an Anthropic ``messages`` list, or an object with ``messages`` and ``system`` (and
  ``model``, ``tools``): content blocks ``text``, ``tool_use``, ``tool_result`` (``is_error``).

A file holds one, or many: a JSON array of them (objects with ``messages`` or ``input``) or JSON
Lines, one a line. The shape is recognized from what only one of them has (a ``tool`` role, a
``function_call`` item, a ``tool_use`` block...); a plain text conversation reads the same in all
three. Unknown fields are ignored; parts that are not text (images, files, thinking, reasoning
items) are left out and counted.
Anything else is an ``ImportInputError``: one line naming the file and what was expected.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from otel_blackbox._render.words import with_article
from otel_blackbox._spans.transcripts.conversation import Conversation, ToolCall, Turn
from otel_blackbox._spans.transcripts.reading import Counts, as_int, as_str, decoded, jsonl_values, parts_text
from otel_blackbox.errors import ImportInputError

__all__ = ["FORMATS", "is_chat_log", "read_chats"]

FORMATS = ("openai-chat", "openai-responses", "anthropic")
_EXPECTED = (
    "expected a chat log: an OpenAI Chat messages array, an OpenAI Responses input list or an "
    "Anthropic messages list (or an object holding one)"
)
_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
_RESPONSES_ITEMS = frozenset(
    {
        "message",
        "function_call",
        "function_call_output",
        "reasoning",
        "custom_tool_call",
        "custom_tool_call_output",
    }
)
_RESPONSES_PARTS = frozenset({"input_text", "output_text", "input_image", "input_file", "refusal"})
_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking", "document"})


# --- which shape ------------------------------------------------------------------------------------


def _messages_of(document: Any) -> tuple[list[Any], dict[str, Any]] | None:
    """The list of messages / items and the object around it (empty for a bare list)."""
    if isinstance(document, list):
        return document, {}
    if isinstance(document, dict):
        for key in ("messages", "input"):
            if isinstance(document.get(key), list):
                return document[key], document
    return None


def _shapes(items: list[Any], around: dict[str, Any]) -> set[str]:
    """The shapes these items can be read as (all three for a plain text conversation, none for
    something that is no chat log, or mixes the shapes' features)."""
    if not items or not all(isinstance(i, dict) and (i.get("role") in _ROLES or "type" in i) for i in items):
        return set()
    shapes = set(FORMATS)
    # A bare "message" type is also an Anthropic response's: only the other item types tell.
    if "input" in around or any(i.get("type") in _RESPONSES_ITEMS - {"message"} for i in items):
        shapes &= {"openai-responses"}
    if "system" in around:
        shapes &= {"anthropic"}
    for item in items:
        if item.get("type") is not None and item.get("type") not in _RESPONSES_ITEMS:
            return set()
        role = item.get("role")
        if role == "tool" or "tool_calls" in item or "tool_call_id" in item:
            shapes &= {"openai-chat"}
        elif role in ("system", "developer"):
            shapes -= {"anthropic"}
        content = item.get("content")
        parts = [p for p in content if isinstance(p, dict)] if isinstance(content, list) else []
        kinds = {p.get("type") for p in parts}
        if kinds & _ANTHROPIC_BLOCKS:
            shapes &= {"anthropic"}
        if kinds & _RESPONSES_PARTS:
            shapes &= {"openai-responses"}
        if "image_url" in kinds:
            shapes &= {"openai-chat"}
    return shapes


# --- reading helpers --------------------------------------------------------------------------------


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps({} if value is None else value, ensure_ascii=False)


def _tokens(item: dict[str, Any], *names: str) -> int | None:
    usage = item.get("usage")
    if not isinstance(usage, dict):
        return None
    return next((found for n in names if (found := as_int(usage.get(n))) is not None), None)


def _assistant(text: str, calls: list[ToolCall], item: dict[str, Any]) -> Turn:
    return Turn(
        "assistant",
        text,
        tuple(calls),
        prompt_tokens=_tokens(item, "prompt_tokens", "input_tokens"),
        completion_tokens=_tokens(item, "completion_tokens", "output_tokens"),
    )


# --- the three shapes -------------------------------------------------------------------------------


def _openai_chat(items: list[Any], around: dict[str, Any], skipped: Counts) -> Conversation:
    turns: list[Turn] = []
    system: list[str] = []
    for item in items:
        role = item.get("role")
        if role in ("system", "developer") and not turns:
            system.append(parts_text(item.get("content"), skipped))
        elif role == "assistant":
            calls = [
                ToolCall(as_str(c.get("id")), as_str(fn.get("name")), _json_text(fn.get("arguments")))
                for c in item.get("tool_calls") or []
                if isinstance(c, dict) and isinstance(fn := c.get("function"), dict)
            ]
            turns.append(_assistant(parts_text(item.get("content"), skipped), calls, item))
        elif role == "tool":
            content = parts_text(item.get("content"), skipped)
            turns.append(
                Turn("tool", content, call_id=as_str(item.get("tool_call_id")), name=as_str(item.get("name")))
            )
        else:
            turns.append(
                Turn("system" if role == "developer" else str(role), parts_text(item.get("content"), skipped))
            )
    return _conversation(turns, around, "openai", "\n\n".join(system) or None, skipped)


def _openai_responses(items: list[Any], around: dict[str, Any], skipped: Counts) -> Conversation:
    turns: list[Turn] = []
    output = around.get("output")
    for item in [*items, *(output if isinstance(output, list) else [])]:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        last = turns[-1] if turns else None
        if kind == "message" and item.get("role") == "assistant":
            text = parts_text(item.get("content"), skipped)
            if last is not None and last.role == "assistant" and not last.tool_calls:
                turns[-1] = Turn("assistant", "\n".join(filter(None, [last.text, text])))
            else:
                turns.append(_assistant(text, [], item))
        elif kind == "message":
            role = item.get("role")
            turns.append(
                Turn("system" if role == "developer" else str(role), parts_text(item.get("content"), skipped))
            )
        elif kind == "function_call":
            call = ToolCall(
                as_str(item.get("call_id")), as_str(item.get("name")), _json_text(item.get("arguments"))
            )
            if last is not None and last.role == "assistant":
                turns[-1] = Turn("assistant", last.text, (*last.tool_calls, call))
            else:
                turns.append(Turn("assistant", "", (call,)))
        elif kind == "function_call_output":
            turns.append(
                Turn("tool", parts_text(item.get("output"), skipped), call_id=as_str(item.get("call_id")))
            )
        else:
            skipped.add(str(kind))
    system = around.get("instructions")
    lead = [t.text for t in turns[: next((i for i, t in enumerate(turns) if t.role != "system"), len(turns))]]
    turns = turns[len(lead) :]
    prompt = "\n\n".join([*([system] if isinstance(system, str) and system else []), *lead]) or None
    return _conversation(turns, around, "openai", prompt, skipped)


def _anthropic(items: list[Any], around: dict[str, Any], skipped: Counts) -> Conversation:
    turns: list[Turn] = []
    for item in items:
        role, content = str(item.get("role")), item.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": as_str(content)}]
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in blocks:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "tool_use" and isinstance(block, dict):
                calls.append(
                    ToolCall(
                        as_str(block.get("id")), as_str(block.get("name")), _json_text(block.get("input"))
                    )
                )
            elif kind == "tool_result" and isinstance(block, dict):
                result = parts_text(block.get("content"), skipped)
                error = block.get("is_error") is True
                turns.append(Turn("tool", result, call_id=as_str(block.get("tool_use_id")), is_error=error))
            else:
                texts.append(parts_text([block], skipped))
        text = "\n".join(t for t in texts if t)
        if role == "assistant":
            turns.append(_assistant(text, calls, item))
        elif text or not any(t.role == "tool" for t in turns[-1:]):
            turns.append(Turn(role, text))
    system = around.get("system")
    prompt = parts_text(system, skipped) if system is not None else None
    return _conversation(turns, around, "anthropic", prompt or None, skipped)


def _conversation(
    turns: list[Turn], around: dict[str, Any], provider: str, system: str | None, skipped: Counts
) -> Conversation:
    tools = around.get("tools")
    model = around.get("model")
    return Conversation(
        turns=tuple(turns),
        model=model if isinstance(model, str) and model else None,
        provider=provider,
        system=system,
        tools=tuple(t for t in tools if isinstance(t, dict)) if isinstance(tools, list) else (),
        source="chat",
        skipped=dict(skipped),
    )


_READERS: dict[str, Callable[[list[Any], dict[str, Any], Counts], Conversation]] = {
    "openai-chat": _openai_chat,
    "openai-responses": _openai_responses,
    "anthropic": _anthropic,
}


def _read(document: Any, name: str, shape: str | None) -> tuple[str, Conversation]:
    """The chat log's shape and conversation; ``shape`` names it (else it is recognized)."""
    found = _messages_of(document)
    shapes = _shapes(*found) if found is not None else set()
    if not shapes:
        raise ImportInputError(f"{name}: not a chat log: {_EXPECTED}")
    if shape is not None and shape not in shapes:
        reads_as = " or ".join(f for f in FORMATS if f in shapes)
        raise ImportInputError(f"{name}: not {with_article(shape)} chat log (it reads as {reads_as})")
    chosen = shape or next(f for f in FORMATS if f in shapes)
    assert found is not None
    conversation = _READERS[chosen](found[0], found[1], Counts())
    if not any(t.role == "assistant" for t in conversation.turns):
        raise ImportInputError(
            f"{name}: {with_article(chosen)} chat log with no assistant turn: nothing to import"
        )
    return chosen, conversation


def _is_log(value: Any) -> bool:
    return isinstance(value, dict) and any(isinstance(value.get(k), list) for k in ("messages", "input"))


def is_chat_log(document: Any) -> bool:
    """Whether a JSON document reads as a chat log in one of the shapes, or as a list of them."""
    if isinstance(document, list) and document and all(_is_log(d) for d in document):
        document = document[0]
    found = _messages_of(document)
    return found is not None and bool(_shapes(*found))


def read_chats(raw: bytes, name: str, shape: str | None = None) -> list[tuple[bytes, Conversation]]:
    """The conversations of a file, each with the bytes that key it: one chat log (JSON), a JSON
    array of chat logs (objects with ``messages`` or ``input``), or JSON Lines, a chat log a line
    (the line named in an error; a broken last line, still being written, is left out)."""
    text = decoded(raw, name)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        if not exc.msg.startswith("Extra data"):  # one document, broken
            raise ImportInputError(f"{name}: not JSON at line {exc.lineno}; {_EXPECTED}") from None
        found = []
        for number, line in jsonl_values(raw, name, _EXPECTED, Counts()):
            key = json.dumps(line, sort_keys=True).encode()
            found.append((key, _read(line, f"{name}, line {number}", shape)[1]))
        return found
    if isinstance(document, list) and document and all(_is_log(d) for d in document):
        return [
            (json.dumps(d, sort_keys=True).encode(), _read(d, f"{name}, item {n}", shape)[1])
            for n, d in enumerate(document, 1)
        ]
    return [(raw, _read(document, name, shape)[1])]
