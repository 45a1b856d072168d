"""A fake OpenAI-, Anthropic- and Gemini-compatible LLM server for examples and tests (stdlib only).

Endpoints: OpenAI Chat Completions (`POST /v1/chat/completions`) and Responses (`POST /v1/responses`),
Anthropic Messages (`POST /v1/messages`), Gemini (`POST /v1beta/models/MODEL:generateContent`, and
`:streamGenerateContent?alt=sse`, the model named in the path); each answers JSON, or a stream when asked.

The "model" is a deterministic script: when tools are offered and none has answered since the
last user message it calls a tool (two in parallel if the user says "both"); otherwise it
answers with text that quotes the tool results. Model names inject faults: "fail-500" answers
HTTP 500 in the provider's error shape, "slow" waits 2 s before answering, "careless" calls tools
as usual but answers without their results (a model that answers badly), "sloppy" types the numbers
of its tool arguments with the letter O for zero ("12.OO" for 12.00: a malformed argument).

On the Responses API, the results of tools the request no longer offers (a handoff's, after an
agent handed the conversation to another with other tools) do not count as answers: the agent
that took over acts on the question with its own tools. Two model names choose what happens after a
handoff on every API: "thorough" calls each offered tool not yet called since the question before it
answers (it follows the handoff), "hasty" answers once any tool has answered (it never does, on the
Responses API too). "careful" is thorough but gives up once a tool result is an error; "coin" is
careful, and types its number arguments sloppily on every other such call (the first included):
a model whose mistake at one step comes and goes, for `blame`. "walker" takes the N steps its
question asks for, one tool call each, and at step N-1 sends the step as text on every other such
call (the first included): a late mistake in a long run.

    with FakeLLMServer() as srv:
        OpenAI(base_url=srv.openai_base_url, api_key="sk-fake")
        Anthropic(base_url=srv.anthropic_base_url, api_key="sk-ant-fake")
        genai.Client(api_key="fake", http_options=types.HttpOptions(base_url=srv.gemini_base_url))

Run it in the foreground with `python examples/fake_llm.py --port 8400`.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import re
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

FAIL_MODEL = "fail-500"
SLOW_MODEL = "slow"
CARELESS_MODEL = "careless"
CARELESS_ANSWER = "Final answer: I could not find that out."
SLOPPY_MODEL = "sloppy"
THOROUGH_MODEL = "thorough"
HASTY_MODEL = "hasty"
CAREFUL_MODEL = "careful"
COIN_MODEL = "coin"
WALKER_MODEL = "walker"
GIVE_UP_ANSWER = "Final answer: a tool failed, so I stopped there."
SLOW_SECONDS = 2.0

JSON = dict[str, Any]


# --- the script: provider-neutral decisions ---------------------------------------------------


@dataclass
class ToolSpec:
    name: str
    schema: JSON


@dataclass
class ToolCall:
    name: str
    arguments: JSON

    @property
    def arguments_json(self) -> str:
        return json.dumps(self.arguments)


@dataclass
class Reply:
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    question: str = ""  # what the calls were made for
    untried: list[ToolSpec] = field(default_factory=list)  # offered, not called since the question
    failed: bool = False  # a tool result since the question reads as an error
    results: int = 0  # tool results since the question
    offered: list[ToolSpec] = field(default_factory=list)


def _pick_string(question: str) -> str:
    # The last run of capitalised words that doesn't open the sentence: "weather in New York?" -> "New York".
    names = [
        m.group(0) for m in re.finditer(r"\b[A-Z][a-zA-Z]+(?:\s+[A-Z][a-zA-Z]+)*", question) if m.start()
    ]
    return names[-1] if names else question.strip().rstrip("?.!")[:60]


def _pick_number(question: str, schema: JSON) -> int:
    if match := re.search(r"\b\d+\b", question):
        return int(match.group(0))
    fallback = schema.get("default", schema.get("minimum", 1))
    return int(fallback) if isinstance(fallback, (int, float)) else 1


def build_arguments(question: str, schema: JSON) -> JSON:
    """Fill every property of a JSON schema from the question, deterministically."""
    args: JSON = {}
    for name, prop in schema.get("properties", {}).items():
        kind = str(prop.get("type", "")).lower()  # Gemini's schemas say STRING, INTEGER...
        if "enum" in prop:
            args[name] = prop["enum"][0]
        elif kind in ("integer", "number"):
            args[name] = _pick_number(question, prop)
        elif kind == "boolean":
            args[name] = True
        elif kind == "array":
            args[name] = []
        elif kind == "object":
            args[name] = {}
        else:
            args[name] = _pick_string(question)
    return args


_FAILED = re.compile(r"\berror\b|unavailable", re.IGNORECASE)  # a tool result that reads as a failure


def decide(
    question: str, tools: list[ToolSpec], tool_results: list[str] | None, called: set[str] | None = None
) -> Reply:
    """tool_results is None when no tool has answered since the last user message; called names the
    tools called since then."""
    if tools and tool_results is None:
        wanted = tools[:2] if re.search(r"\bboth\b", question, re.IGNORECASE) else tools[:1]
        return Reply(tool_calls=_calls(question, wanted), question=question, offered=tools)
    untried = [t for t in tools if t.name not in (called or set())]
    if tool_results:
        failed = any(_FAILED.search(r) for r in tool_results)
        text = "Final answer: " + " | ".join(tool_results)
        return Reply(text, [], question, untried, failed, len(tool_results), tools)
    return Reply(
        text=f"Final answer: you asked {question!r}", question=question, untried=untried, offered=tools
    )


def _calls(question: str, tools: list[ToolSpec]) -> list[ToolCall]:
    return [ToolCall(t.name, build_arguments(question, t.schema)) for t in tools]


def as_model(model: Any, reply: Reply, flip: Callable[[], int] | None = None) -> Reply:
    """The careless model ignores the tool results it was sent when it answers; the sloppy one types
    the question's number, zeros as the letter O, for each number argument; the thorough one calls
    the offered tools it has not called yet rather than answer. The careful one is thorough, but gives
    up once a tool has failed; the coin one is careful, and types its number arguments as the sloppy
    one does on every other such call (``flip``: the server's count of them, from 0: even is sloppy)."""
    if model == WALKER_MODEL:
        return _walk(reply, flip)
    if model in (CAREFUL_MODEL, COIN_MODEL):
        if reply.failed:
            return Reply(text=GIVE_UP_ANSWER, question=reply.question)
        if not reply.tool_calls and reply.untried:
            reply = Reply(tool_calls=_calls(reply.question, reply.untried), question=reply.question)
        numbered = any(isinstance(v, (int, float)) for c in reply.tool_calls for v in c.arguments.values())
        if model == COIN_MODEL and numbered and flip is not None and flip() % 2 == 0:
            model = SLOPPY_MODEL
        else:
            return reply
    if model == THOROUGH_MODEL and not reply.tool_calls and reply.untried:
        return Reply(tool_calls=_calls(reply.question, reply.untried), question=reply.question)
    if model == CARELESS_MODEL and not reply.tool_calls:
        return Reply(text=CARELESS_ANSWER)
    if model == SLOPPY_MODEL and reply.tool_calls:
        number = re.search(r"\d+(?:\.\d+)?", reply.question)
        typed = number.group(0).replace("0", "O") if number else "O"
        for call in reply.tool_calls:
            for name, value in call.arguments.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    call.arguments[name] = typed
    return reply


def _walk(reply: Reply, flip: Callable[[], int] | None) -> Reply:
    """The walker takes the N steps the question asks for, one ``take_step`` call each, then answers;
    at step N-1, on every other such call (the first included), it sends the step as text ("19th"):
    a late mistake the tool refuses. It gives up once a tool has failed."""
    if reply.failed:
        return Reply(text=GIVE_UP_ANSWER, question=reply.question)
    wanted = re.search(r"\d+", reply.question)
    steps = int(wanted.group(0)) if wanted else 1
    if reply.results >= steps or not reply.offered:
        return Reply(text=f"Final answer: walked {steps} steps.", question=reply.question)
    step: int | str = reply.results + 1
    if step == steps - 1 and flip is not None and flip() % 2 == 0:
        step = f"{step}th"
    return Reply(tool_calls=[ToolCall(reply.offered[0].name, {"step": step})], question=reply.question)


def count_tokens(text: str) -> int:
    # Roughly 4 characters a token, like real tokenizers on English; never zero.
    return max(1, len(text) // 4)


def split_text(text: str) -> list[str]:
    """Word-sized pieces (keeping spaces) so streamed text arrives in several deltas."""
    return re.findall(r"\S+\s*|\s+", text) or [text]


def split_json(text: str, parts: int = 3) -> list[str]:
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def new_id(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:24]


# --- OpenAI Chat Completions -----------------------------------------------------------------


def _openai_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def openai_reply(body: JSON) -> Reply:
    messages: list[JSON] = body.get("messages", [])
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    question = _openai_text(messages[last_user].get("content")) if last_user >= 0 else ""
    results = [_openai_text(m.get("content")) for m in messages[last_user + 1 :] if m.get("role") == "tool"]
    called = {
        str((c.get("function") or {}).get("name"))
        for m in messages[last_user + 1 :]
        if m.get("role") == "assistant"
        for c in m.get("tool_calls") or []
    }
    tools = [
        ToolSpec(t["function"]["name"], t["function"].get("parameters", {}))
        for t in body.get("tools", [])
        if t.get("type") == "function"
    ]
    if body.get("tool_choice") == "none":
        tools = []
    return decide(question, tools, results or None, called)


def _openai_usage(body: JSON, reply: Reply) -> JSON:
    prompt = count_tokens(json.dumps(body.get("messages", [])))
    completion = count_tokens(reply.text + "".join(c.name + c.arguments_json for c in reply.tool_calls))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def openai_completion(body: JSON, reply: Reply) -> JSON:
    message: JSON = {"role": "assistant", "content": reply.text or None, "refusal": None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": new_id("call_"),
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments_json},
            }
            for c in reply.tool_calls
        ]
    return {
        "id": new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", ""),
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            }
        ],
        "usage": _openai_usage(body, reply),
        "system_fingerprint": "fp_fake",
    }


def openai_chunks(body: JSON, reply: Reply) -> Iterator[JSON]:
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    base: JSON = {
        "id": new_id("chatcmpl-"),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model", ""),
        "system_fingerprint": "fp_fake",
    }
    # With include_usage the real API sends "usage": null on every chunk; the stream helper
    # overwrites its snapshot's usage with each chunk's, so only the last chunk may carry it.
    if include_usage:
        base["usage"] = None

    def chunk(delta: JSON, finish_reason: str | None = None) -> JSON:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return {**base, "choices": [choice]}

    # Deltas are merged by concatenation, so role/id/name must appear once only.
    yield chunk({"role": "assistant", "content": "" if reply.text else None, "refusal": None})
    for piece in split_text(reply.text) if reply.text else []:
        yield chunk({"content": piece})
    for index, call in enumerate(reply.tool_calls):
        head = {"id": new_id("call_"), "type": "function", "function": {"name": call.name, "arguments": ""}}
        yield chunk({"tool_calls": [{"index": index, **head}]})
        for piece in split_json(call.arguments_json):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, "tool_calls" if reply.tool_calls else "stop")
    if include_usage:
        yield {**base, "choices": [], "usage": _openai_usage(body, reply)}


def openai_error(message: str, kind: str = "server_error") -> JSON:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


# --- OpenAI Responses ------------------------------------------------------------------------


def _responses_items(body: JSON) -> list[JSON]:
    given = body.get("input")
    if isinstance(given, str):
        return [{"type": "message", "role": "user", "content": given}]
    return [item for item in given or [] if isinstance(item, dict)]


def responses_reply(body: JSON) -> Reply:
    question = ""
    results: list[str] = []
    tools = [
        ToolSpec(t["name"], t.get("parameters") or {})
        for t in body.get("tools", [])
        if t.get("type") == "function"
    ]
    # The hasty model takes any result as an answer: it does not follow a handoff.
    offered = {t.name for t in tools} if body.get("model") != HASTY_MODEL else set()
    called: dict[str, str] = {}  # call id -> tool name
    since: set[str] = set()  # the tools called since the question
    # A user message is a new question; function_call_output items after it answer tools, those
    # of a tool still offered (a handoff's result is the next agent's cue to act, not an answer).
    outputs: list[str] = []  # every tool output since the question, a handoff's too: what failed
    for item in _responses_items(body):
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") == "user":
            question, results, since, outputs = _openai_text(item.get("content")), [], set(), []
        elif kind == "function_call":
            called[str(item.get("call_id"))] = str(item.get("name"))
            since.add(str(item.get("name")))
        elif kind == "function_call_output" and (
            not offered
            or called.get(str(item.get("call_id")), "") in offered
            or str(item.get("call_id")) not in called
        ):
            results.append(_openai_text(item.get("output")))
        if kind == "function_call_output":
            outputs.append(_openai_text(item.get("output")))
    if body.get("tool_choice") == "none":
        tools = []
    reply = decide(question, tools, results or None, since)
    reply.failed = reply.failed or any(_FAILED.search(output) for output in outputs)
    return reply


def _responses_usage(body: JSON, reply: Reply) -> JSON:
    prompt = count_tokens(json.dumps([body.get("instructions"), body.get("input")]))
    completion = count_tokens(reply.text + "".join(c.name + c.arguments_json for c in reply.tool_calls))
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + completion,
    }


def _responses_output(reply: Reply) -> list[JSON]:
    items: list[JSON] = []
    if not reply.tool_calls:
        text = {"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}
        items.append(
            {
                "id": new_id("msg_"),
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [text],
            }
        )
    items += [
        {
            "id": new_id("fc_"),
            "type": "function_call",
            "status": "completed",
            "call_id": new_id("call_"),
            "name": call.name,
            "arguments": call.arguments_json,
        }
        for call in reply.tool_calls
    ]
    return items


def responses_object(body: JSON, reply: Reply) -> JSON:
    return {
        "id": new_id("resp_"),
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "model": body.get("model", ""),
        "output": _responses_output(reply),
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools", []),
        "temperature": body.get("temperature", 1.0),
        "top_p": body.get("top_p", 1.0),
        "usage": _responses_usage(body, reply),
    }


def _responses_item_events(index: int, item: JSON) -> Iterator[tuple[str, JSON]]:
    # Items open empty and are filled by deltas, then sent whole in output_item.done.
    if item["type"] == "message":
        part = item["content"][0]
        where = {"item_id": item["id"], "output_index": index, "content_index": 0}
        added = {**item, "status": "in_progress", "content": []}
        yield "response.output_item.added", {"output_index": index, "item": added}
        yield "response.content_part.added", {**where, "part": {**part, "text": ""}}
        for piece in split_text(part["text"]):
            yield "response.output_text.delta", {**where, "delta": piece, "logprobs": []}
        yield "response.output_text.done", {**where, "text": part["text"], "logprobs": []}
        yield "response.content_part.done", {**where, "part": part}
    else:
        where = {"item_id": item["id"], "output_index": index}
        added = {**item, "status": "in_progress", "arguments": ""}
        yield "response.output_item.added", {"output_index": index, "item": added}
        for piece in split_json(item["arguments"]):
            yield "response.function_call_arguments.delta", {**where, "delta": piece}
        yield "response.function_call_arguments.done", {**where, "arguments": item["arguments"]}
    yield "response.output_item.done", {"output_index": index, "item": item}


def responses_events(body: JSON, reply: Reply) -> Iterator[tuple[str, JSON]]:
    response = responses_object(body, reply)
    started = {**response, "status": "in_progress", "output": [], "usage": None}
    events = [("response.created", {"response": started}), ("response.in_progress", {"response": started})]
    for index, item in enumerate(response["output"]):
        events += _responses_item_events(index, item)
    events.append(("response.completed", {"response": response}))
    # Every event names itself twice (event: line and "type") and carries its position.
    for sequence_number, (name, data) in enumerate(events):
        yield name, {"type": name, "sequence_number": sequence_number, **data}


# --- Anthropic Messages ----------------------------------------------------------------------


def _blocks(content: Any) -> list[JSON]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def _anthropic_text(content: Any) -> str:
    return "".join(b.get("text", "") for b in _blocks(content) if b.get("type") == "text")


def anthropic_reply(body: JSON) -> Reply:
    question = ""
    results: list[str] = []
    called: set[str] = set()
    # A user turn made of tool_result blocks answers tools; any other user turn is a new question.
    for message in body.get("messages", []):
        blocks = _blocks(message.get("content"))
        if message.get("role") != "user":
            called.update(str(b.get("name")) for b in blocks if b.get("type") == "tool_use")
            continue
        tool_results = [b for b in blocks if b.get("type") == "tool_result"]
        if tool_results:
            results.extend(_anthropic_text(b.get("content")) for b in tool_results)
        else:
            question, results, called = _anthropic_text(message.get("content")), [], set()
    tools = [ToolSpec(t["name"], t["input_schema"]) for t in body.get("tools", []) if "input_schema" in t]
    if (body.get("tool_choice") or {}).get("type") == "none":
        tools = []
    return decide(question, tools, results or None, called)


def _anthropic_content(reply: Reply) -> list[JSON]:
    # Claude usually says something before calling tools; keep that so clients see mixed content.
    text = reply.text or "Let me look that up."
    blocks: list[JSON] = [{"type": "text", "text": text}]
    blocks += [
        {"type": "tool_use", "id": new_id("toolu_"), "name": c.name, "input": c.arguments}
        for c in reply.tool_calls
    ]
    return blocks


def _anthropic_usage(body: JSON, content: list[JSON]) -> tuple[int, int]:
    prompt = json.dumps([body.get("system", ""), body.get("messages", [])])
    return count_tokens(prompt), count_tokens(json.dumps(content))


def anthropic_message(body: JSON, reply: Reply) -> JSON:
    content = _anthropic_content(reply)
    input_tokens, output_tokens = _anthropic_usage(body, content)
    return {
        "id": new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": body.get("model", ""),
        "content": content,
        "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }


def anthropic_events(body: JSON, reply: Reply) -> Iterator[tuple[str, JSON]]:
    message = anthropic_message(body, reply)
    start = {**message, "content": [], "stop_reason": None, "usage": {**message["usage"], "output_tokens": 1}}
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
            )
            deltas = [{"type": "text_delta", "text": piece} for piece in split_text(block["text"])]
        else:
            empty = {**block, "input": {}}
            yield (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": empty},
            )
            # The real API opens every tool input with an empty partial_json.
            pieces = ["", *split_json(json.dumps(block["input"]))]
            deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in pieces]
        for delta in deltas:
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    usage = {"output_tokens": message["usage"]["output_tokens"]}
    yield "message_delta", {"type": "message_delta", "delta": stop, "usage": usage}
    yield "message_stop", {"type": "message_stop"}


def anthropic_error(message: str, kind: str = "api_error") -> JSON:
    return {"type": "error", "error": {"type": kind, "message": message}}


# --- Gemini generateContent ------------------------------------------------------------------

# /v1beta/models/gemini-2.5-flash:generateContent; the SDK quotes nothing, so the name has no "/" or ":".
GEMINI_PATH = re.compile(r"/(v1|v1beta|v1alpha)/models/([^/:]+):(generateContent|streamGenerateContent)")
_GEMINI_PART_KINDS = (
    "text", "inlineData", "fileData", "functionCall", "functionResponse", "executableCode",
    "codeExecutionResult", "toolCall", "toolResponse",
)  # fmt: skip
_GEMINI_STATUS = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 500: "INTERNAL"}


def _gemini_parts(content: Any) -> list[JSON]:
    parts = content.get("parts") if isinstance(content, dict) else None
    return [p for p in parts or [] if isinstance(p, dict)]


def gemini_unknown_part(body: JSON) -> str | None:
    """What the real API refuses (HTTP 400): a part holding none of the kinds it knows."""
    for content in body.get("contents") or []:
        for part in _gemini_parts(content):
            if not any(kind in part for kind in _GEMINI_PART_KINDS):
                return f"Invalid JSON payload received. Unknown part: {json.dumps(part)[:100]}"
    return None


def _gemini_result(response: Any) -> str:
    # The SDK's automatic function calling sends {"result": ...}: quote what the tool returned.
    if isinstance(response, dict) and len(response) == 1 and ("result" in response or "output" in response):
        response = next(iter(response.values()))
    return response if isinstance(response, str) else json.dumps(response, separators=(",", ":"))


def gemini_reply(body: JSON) -> Reply:
    question = ""
    results: list[str] = []
    called: set[str] = set()
    # A user turn of function responses answers tools; any other user turn is a new question.
    for content in body.get("contents") or []:
        parts = _gemini_parts(content)
        if not isinstance(content, dict) or content.get("role", "user") != "user":
            called.update(
                str(p["functionCall"].get("name")) for p in parts if isinstance(p.get("functionCall"), dict)
            )
            continue
        answers = [p["functionResponse"] for p in parts if isinstance(p.get("functionResponse"), dict)]
        if answers:
            results.extend(_gemini_result(a.get("response")) for a in answers)
        else:
            question, results, called = "".join(str(p.get("text", "")) for p in parts), [], set()
    # The SDK sends a Python function's schema as parameters_json_schema: JSON takes either spelling.
    schemas = ("parameters", "parametersJsonSchema", "parameters_json_schema")
    tools = [
        ToolSpec(d["name"], next((d[k] for k in schemas if d.get(k)), {}))
        for tool in body.get("tools") or []
        for d in tool.get("functionDeclarations") or tool.get("function_declarations") or []
    ]
    if ((body.get("toolConfig") or {}).get("functionCallingConfig") or {}).get("mode") == "NONE":
        tools = []
    return decide(question, tools, results or None, called)


def _gemini_chunk(model: str, parts: list[JSON], finish: bool, usage: JSON) -> JSON:
    candidate: JSON = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = "STOP"
    return {
        "candidates": [candidate],
        "usageMetadata": usage,
        "modelVersion": model,
        "responseId": new_id(""),
    }


def _gemini_usage(body: JSON, reply: Reply) -> JSON:
    prompt = count_tokens(json.dumps([body.get("systemInstruction"), body.get("contents")]))
    answer = count_tokens(reply.text + "".join(c.name + c.arguments_json for c in reply.tool_calls))
    return {"promptTokenCount": prompt, "candidatesTokenCount": answer, "totalTokenCount": prompt + answer}


def _gemini_calls(reply: Reply) -> list[JSON]:
    # The Gemini API usually gives a call no id: clients match results to calls by name and order.
    return [{"functionCall": {"name": c.name, "args": c.arguments}} for c in reply.tool_calls]


def gemini_response(model: str, body: JSON, reply: Reply) -> JSON:
    parts = [{"text": reply.text}] if reply.text else []
    return _gemini_chunk(model, parts + _gemini_calls(reply), True, _gemini_usage(body, reply))


def gemini_chunks(model: str, body: JSON, reply: Reply) -> Iterator[JSON]:
    """Text over several chunks, the calls in one, the finish reason on the last."""
    usage = _gemini_usage(body, reply)
    pieces = split_text(reply.text) if reply.text else []
    for position, piece in enumerate(pieces):
        last = position == len(pieces) - 1 and not reply.tool_calls
        yield _gemini_chunk(model, [{"text": piece}], last, usage)
    if reply.tool_calls:
        yield _gemini_chunk(model, _gemini_calls(reply), True, usage)


def gemini_error(status: int, message: str) -> JSON:
    return {"error": {"code": status, "message": message, "status": _GEMINI_STATUS.get(status, "UNKNOWN")}}


# --- HTTP -------------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 so the SDKs reuse connections: JSON gets a Content-Length, SSE is chunked.
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: with Nagle on, each response would wait ~40 ms.
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        if not self.server.quiet:
            super().log_message(format, *args)

    def _error(self, status: int, message: str, kind: str) -> None:
        # Each provider has its own error shape; the SDKs read the message out of it.
        if GEMINI_PATH.fullmatch(self.path.split("?", 1)[0]):
            self._send_json(status, gemini_error(status, message))
            return
        is_anthropic = self.path.startswith("/v1/messages")
        self._send_json(
            status, anthropic_error(message, kind) if is_anthropic else openai_error(message, kind)
        )

    def do_GET(self) -> None:
        self._error(404, f"unknown path {self.path}", "not_found_error")

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if not isinstance(body, dict):
                raise ValueError("request body must be a JSON object")
        except ValueError as exc:
            self._error(400, f"invalid JSON body: {exc}", "invalid_request_error")
            return
        self.server.record(path, body)

        gemini = GEMINI_PATH.fullmatch(path)
        model = gemini.group(2) if gemini else body.get("model")
        if gemini is None and path not in ("/v1/chat/completions", "/v1/responses", "/v1/messages"):
            self._error(404, f"unknown path {path}", "not_found_error")
            return
        if model == FAIL_MODEL:
            kind = "api_error" if path == "/v1/messages" else "server_error"
            self._error(500, f"injected failure: the fake model {FAIL_MODEL!r} always fails", kind)
            return
        if model == SLOW_MODEL:
            time.sleep(SLOW_SECONDS)

        if gemini is not None:
            self._gemini(gemini.group(2), gemini.group(3) == "streamGenerateContent", body)
        elif path == "/v1/chat/completions":
            reply = as_model(model, openai_reply(body), self.server.flip)
            if body.get("stream"):
                # Only OpenAI ends its stream with a sentinel; its events have no names.
                self._send_sse(((None, c) for c in openai_chunks(body, reply)), done_sentinel=True)
            else:
                self._send_json(200, openai_completion(body, reply))
        elif path == "/v1/responses":
            reply = as_model(model, responses_reply(body), self.server.flip)
            if body.get("stream"):
                # Named events and no [DONE] sentinel, as the Responses API streams.
                self._send_sse(responses_events(body, reply), done_sentinel=False)
            else:
                self._send_json(200, responses_object(body, reply))
        else:
            reply = as_model(model, anthropic_reply(body), self.server.flip)
            if body.get("stream"):
                self._send_sse(anthropic_events(body, reply), done_sentinel=False)
            else:
                self._send_json(200, anthropic_message(body, reply))

    def _gemini(self, model: str, streamed: bool, body: JSON) -> None:
        refused = gemini_unknown_part(body)
        if refused is not None:
            self._error(400, refused, "invalid_request_error")
            return
        reply = as_model(model, gemini_reply(body), self.server.flip)
        if not streamed:
            self._send_json(200, gemini_response(model, body, reply))
        elif "alt=sse" in self.path:
            # Unnamed events, no sentinel; the API ends each event with CRLF CRLF.
            self._send_sse(
                ((None, c) for c in gemini_chunks(model, body, reply)), done_sentinel=False, crlf=True
            )
        else:  # without alt=sse the API streams one JSON array
            self._send_json(200, list(gemini_chunks(model, body, reply)))

    def _send_json(self, status: int, payload: JSON | list[JSON]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", new_id("req_"))
        self.end_headers()
        self.wfile.write(data)

    def _send_sse(
        self, events: Iterator[tuple[str | None, JSON]], *, done_sentinel: bool, crlf: bool = False
    ) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("request-id", new_id("req_"))
        self.end_headers()
        end = "\r\n\r\n" if crlf else "\n\n"
        for name, payload in events:
            prefix = f"event: {name}\n" if name else ""
            self._write_chunk(f"{prefix}data: {json.dumps(payload)}{end}".encode())
        if done_sentinel:
            self._write_chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")

    def _write_chunk(self, data: bytes) -> None:
        # One SSE event per HTTP chunk, flushed, so clients see it arrive as a real stream.
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], quiet: bool, requests: list[tuple[str, JSON]]) -> None:
        super().__init__(address, _Handler)
        self.quiet = quiet
        self.requests = requests
        self._lock = threading.Lock()
        self._flips = 0

    def flip(self) -> int:
        """The coin model's count of its calls with number arguments, from 0 (even: typed sloppily)."""
        with self._lock:
            self._flips += 1
            return self._flips - 1

    def record(self, path: str, body: JSON) -> None:
        with self._lock:
            self.requests.append((path, body))

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (a timeout test, a killed agent) is not the server's error.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeLLMServer:
    """The fake provider on 127.0.0.1, served from a daemon thread."""

    def __init__(self, port: int = 0, *, quiet: bool = True) -> None:
        self._port = port
        self._quiet = quiet
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        # (path, parsed JSON body) of every request received, oldest first; kept after stop().
        self.requests: list[tuple[str, JSON]] = []

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeLLMServer is not started")
        return int(self._server.server_address[1])

    @property
    def openai_base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def gemini_base_url(self) -> str:
        """For ``types.HttpOptions(base_url=...)``: the SDK adds ``/v1beta/models/...``."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeLLMServer:
        if self._server is None:
            self._server = _Server(("127.0.0.1", self._port), self._quiet, self.requests)
            # A short poll interval keeps stop() quick: shutdown() waits for the next poll.
            serve = functools.partial(self._server.serve_forever, poll_interval=0.05)
            self._thread = threading.Thread(target=serve, name="fake-llm", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            if self._thread is not None:
                self._thread.join()
            self._server, self._thread = None, None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free one)")
    args = parser.parse_args()
    with FakeLLMServer(args.port, quiet=False) as srv:
        print(f"OpenAI base URL:    {srv.openai_base_url}", flush=True)
        print(f"Anthropic base URL: {srv.anthropic_base_url}", flush=True)
        print(f"Gemini base URL:    {srv.gemini_base_url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
