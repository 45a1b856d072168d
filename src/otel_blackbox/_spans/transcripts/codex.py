"""Codex CLI rollouts: JSONL files (one record a line) read as neutral ``Conversation`` s.

Codex CLI writes one file a session, ``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl``.
There is no official schema; what is read (checked against openai/codex's ``codex-rs`` source):

* the current shape, every line ``{"timestamp", "type", "payload"}``: ``session_meta`` (``id``,
  ``cwd``, ``originator``, ``cli_version``, ``instructions``, ``git``) and ``turn_context``
  (``model``, ``approval_policy``, ``sandbox_policy``, ``effort``) as metadata; ``response_item``
  (an OpenAI Responses item) as the conversation; ``event_msg`` ``token_count`` (its
  ``info.last_token_usage``) as the tokens of the assistant turn it follows, ``patch_apply_end`` /
  ``mcp_tool_call_end`` as the failures they report (``codex_outputs``); ``compacted``: the history
  restarts, from its ``replacement_history`` (Responses items, written with an empty ``message`` by
  remote compaction, seen in 0.104) as context-only turns, else from its ``message`` (the summary,
  as a user turn);
* the older shape (2025): a first line that is the session itself (``id``, ``timestamp``,
  ``instructions``), then bare Responses items, and ``{"record_type": "state"}`` lines (counted).

Responses items: ``message`` (``user``: a turn, unless it is ``<environment_context>`` (metadata,
counted) or ``<user_instructions>`` / ``# AGENTS.md instructions for ...`` (with ``developer`` and
``system`` messages: the system prompt, each text once); ``assistant``: text of the assistant turn),
``function_call`` (its ``namespace`` prefixed to its name, as Codex flattens it) /
``custom_tool_call`` / ``local_shell_call`` / client ``tool_search_call`` (calls of that turn),
``function_call_output`` / ``custom_tool_call_output`` / ``tool_search_output`` (results; failed as
``codex_outputs`` reads them: a non-zero exit code, or an error Codex answered instead of running the
call, such as ``apply_patch verification failed: ...``); ``reasoning``, ``web_search_call``,
``ghost_snapshot``, ``compaction`` (encrypted), server-side tool search and unknown items are left
out and counted (``replacement_history <type>`` inside a compaction). Consecutive assistant items are
one turn; a ``token_count`` event ends it.

A line that is not JSON is refused, except a broken last line (a session still being written:
skipped, counted); so is a line that is not an object, and a file with no known record.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from otel_blackbox._spans.transcripts.codex_outputs import failed_call, read_output
from otel_blackbox._spans.transcripts.otlp import Conversation, ToolCall, Turn
from otel_blackbox._spans.transcripts.reading import (
    Counts,
    InferredTools,
    as_int,
    as_str,
    iso_time_ns,
    jsonl_values,
    parts_text,
)
from otel_blackbox.errors import ImportInputError

__all__ = ["is_rollout_record", "read_rollout"]

ENVELOPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})
ITEMS = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
    }
)
# Events that repeat what the response items (or the compacted line) already hold.
_ECHOES = frozenset(
    {"user_message", "agent_message", "agent_reasoning", "agent_reasoning_raw_content", "context_compacted"}
)
_CONTEXT_TAGS = ("<environment_context>",)
# The user's instructions: ``<user_instructions>`` before, the AGENTS.md form now.
_INSTRUCTION_TAGS = ("<user_instructions>", "# AGENTS.md instructions for ")
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output"})
_EXPECTED = (
    "expected a Codex rollout: one JSON object a line, {timestamp, type, payload} "
    "(session_meta, response_item, ...) or a bare Responses item"
)


# --- lines ------------------------------------------------------------------------------------------


@dataclass
class _Record:
    """One line as (kind, payload, time): kind is an envelope type, ``item`` (a bare Responses item),
    ``session`` (the older first line) or ``state``."""

    kind: str
    payload: dict[str, Any]
    time_ns: int | None


def _classify(line: dict[str, Any], first: bool, counts: Counts) -> _Record | None:
    kind = line.get("type")
    if isinstance(kind, str) and isinstance(line.get("payload"), dict):
        if kind in ENVELOPES:
            return _Record(kind, line["payload"], iso_time_ns(line.get("timestamp")))
        counts.add(f"record {kind}")
        return None
    if isinstance(kind, str):
        if kind in ITEMS:
            return _Record("item", line, iso_time_ns(line.get("timestamp")))
        counts.add(f"item {kind}")
        return None
    if line.get("record_type") == "state":
        return _Record("state", line, None)
    if first and isinstance(line.get("id"), str) and "timestamp" in line:
        return _Record("session", line, iso_time_ns(line.get("timestamp")))
    return None


def is_rollout_record(document: Any) -> bool:
    """Whether a JSON document reads as a line of a Codex rollout: {timestamp, type, payload} with an
    envelope type, or the older first line ({id, timestamp, instructions})."""
    if not isinstance(document, dict):
        return False
    if document.get("type") in ENVELOPES and isinstance(document.get("payload"), dict):
        return True
    return isinstance(document.get("id"), str) and "timestamp" in document and "instructions" in document


def _records(raw: bytes, name: str, counts: Counts) -> list[_Record]:
    records: list[_Record] = []
    for parsed, (number, value) in enumerate(jsonl_values(raw, name, _EXPECTED, counts)):
        if not isinstance(value, dict):
            raise ImportInputError(f"{name}, line {number}: not a Codex rollout record; {_EXPECTED}")
        record = _classify(value, parsed == 0, counts)
        if record is None and not isinstance(value.get("type"), str):
            raise ImportInputError(f"{name}, line {number}: not a Codex rollout record; {_EXPECTED}")
        if record is not None:
            records.append(record)
    if not any(r.kind in ("response_item", "item", "session_meta", "session") for r in records):
        raise ImportInputError(f"{name}, line 1: no Codex rollout record; {_EXPECTED}")
    return records


# --- the conversation -------------------------------------------------------------------------------


@dataclass
class _Assistant:
    model: str | None
    time_ns: int | None
    texts: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    context_only: bool = False  # a turn of a compaction's replacement history

    def turn(self) -> Turn:
        usage = self.usage or {}
        return Turn(
            "assistant",
            "\n".join(t for t in self.texts if t),
            tuple(self.calls),
            time_ns=self.time_ns,
            prompt_tokens=as_int(usage.get("input_tokens")),  # cached ones included, as OpenAI counts
            completion_tokens=as_int(usage.get("output_tokens")),  # reasoning ones included
            cache_read_tokens=as_int(usage.get("cached_input_tokens")),
            model=self.model,
            context_only=self.context_only,
        )


@dataclass
class _Reader:
    counts: Counts
    entries: list[Turn | _Assistant] = field(default_factory=list)
    pending: _Assistant | None = None
    unpriced: _Assistant | None = None  # the last turn since the last token count
    model: str | None = None
    system: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    tools: InferredTools = field(default_factory=InferredTools)
    replacing: bool = False  # reading a compaction's replacement history: context-only turns
    failed_calls: set[str] = field(default_factory=set)  # call ids an event says failed

    def assistant(self, when: int | None) -> _Assistant:
        if self.pending is None:
            self.pending = _Assistant(self.model, when, context_only=self.replacing)
            self.entries.append(self.pending)
            if not self.replacing:  # a replaced turn's tokens were counted before
                self.unpriced = self.pending
        return self.pending

    def call(
        self, call_id: str, name: str, arguments: dict[str, Any], when: int | None, text: str | None = None
    ) -> None:
        """A tool call; ``text`` the arguments as the model wrote them, when it wrote JSON text."""
        arguments_text = text if text is not None else json.dumps(arguments, ensure_ascii=False)
        self.assistant(when).calls.append(ToolCall(call_id, name, arguments_text))
        self.tools.note(name, arguments)

    def item(self, item: dict[str, Any], when: int | None) -> None:
        kind = item.get("type")
        server = item.get("execution") == "server"  # a tool search the API ran, inside the response
        if kind == "message":
            self.message(item, when)
        elif kind == "function_call":
            given = item.get("arguments")
            try:
                arguments = json.loads(given) if isinstance(given, str) else given
            except ValueError:
                arguments = None
            text = given if isinstance(given, str) and isinstance(arguments, dict) else None
            if not isinstance(arguments, dict):
                arguments = {"arguments": given}
            name = as_str(item.get("namespace")) + as_str(item.get("name"))  # Codex's flat name
            self.call(as_str(item.get("call_id")), name, arguments, when, text)
        elif kind == "custom_tool_call":  # a freeform input (apply_patch): kept as {"input": ...}
            self.call(
                as_str(item.get("call_id")), as_str(item.get("name")), {"input": item.get("input")}, when
            )
        elif kind == "local_shell_call":
            action = item.get("action")
            call_id = as_str(item.get("call_id")) or as_str(item.get("id"))
            self.call(call_id, "local_shell", action if isinstance(action, dict) else {}, when)
        elif kind == "tool_search_call" and not server:
            given = item.get("arguments")
            arguments = given if isinstance(given, dict) else {"arguments": given}
            self.call(as_str(item.get("call_id")), "tool_search", arguments, when)
        elif kind in _OUTPUTS and not server:
            self.pending = None
            if kind == "tool_search_output":  # the tools found, as the model was sent them
                text = json.dumps(item.get("tools"), ensure_ascii=False)
                failed, name = item.get("status") == "failed", "tool_search"
            else:
                (text, failed), name = read_output(item.get("output"), self.counts), ""
            call_id = as_str(item.get("call_id"))
            self.entries.append(
                Turn(
                    "tool",
                    text,
                    call_id=call_id,
                    name=name,
                    is_error=failed,
                    time_ns=when,
                    context_only=self.replacing,
                )
            )
        else:  # reasoning, web_search_call (no result in the rollout), ghost_snapshot, unknown items
            self.counts.add(f"replacement_history {kind}" if self.replacing else str(kind))

    def message(self, item: dict[str, Any], when: int | None) -> None:
        role, text = item.get("role"), parts_text(item.get("content"), self.counts)
        if role == "assistant":
            self.assistant(when).texts.append(text)
            return
        self.pending = None
        stripped = text.lstrip()
        if role in ("developer", "system") or stripped.startswith(_INSTRUCTION_TAGS):
            if text and text not in self.system:  # a compaction and later turns give it again
                self.system.append(text)
        elif stripped.startswith(_CONTEXT_TAGS):
            if not self.replacing:  # a replacement history repeats the one before it
                self.metadata["environment_context"] = self.metadata.get("environment_context", 0) + 1
        elif role == "user":
            if text:
                self.entries.append(Turn("user", text, time_ns=when, context_only=self.replacing))
        else:
            self.counts.add(f"message {role}")

    def compacted(self, payload: dict[str, Any]) -> None:
        """The history restarts: from the ``replacement_history`` items (context-only turns: held
        by the requests after it, no span), else from the summary ``message`` as a user turn."""
        self.pending = self.unpriced = None
        self.entries.append(Turn("compaction"))
        self.metadata["compactions"] = self.metadata.get("compactions", 0) + 1
        history = payload.get("replacement_history")
        if isinstance(history, list) and history:
            self.replacing = True
            for item in history:
                if isinstance(item, dict):
                    self.item(item, None)
                else:
                    self.counts.add("replacement_history item")
            self.replacing = False
            self.pending = None
        elif summary := as_str(payload.get("message")):
            self.entries.append(Turn("user", summary))

    def event(self, payload: dict[str, Any]) -> None:
        kind = as_str(payload.get("type"))
        if kind == "token_count":
            info = payload.get("info")
            last = info.get("last_token_usage") if isinstance(info, dict) else None
            if isinstance(last, dict) and self.unpriced is not None and self.unpriced.usage is None:
                self.unpriced.usage = last
            if isinstance(last, dict):  # a response has ended: the next item starts a new turn
                self.pending = self.unpriced = None
        elif kind in ("patch_apply_end", "mcp_tool_call_end"):
            if (failed := failed_call(payload)) is not None:
                self.failed_calls.add(failed)
        elif kind not in _ECHOES:
            self.counts.add(f"event {kind or 'unknown'}")


def _failed(turn: Turn, failed_calls: set[str]) -> Turn:
    """The turn, a failure when it is the result of a call an event said failed."""
    if turn.role == "tool" and turn.call_id in failed_calls and not turn.context_only:
        return replace(turn, is_error=True)
    return turn


def _meta(reader: _Reader, payload: dict[str, Any], keys: dict[str, str]) -> None:
    for key, name in keys.items():
        value = payload.get(key)
        if isinstance(value, (str, dict)) and value:
            reader.metadata[name] = value


def read_rollout(raw: bytes, name: str) -> Conversation | None:
    """The conversation of one rollout file (None when it has no assistant turn); ImportInputError
    (one line naming ``name`` and the line) when it is not a Codex rollout."""
    counts = Counts()
    reader = _Reader(counts)
    instructions: str | None = None
    for record in _records(raw, name, counts):
        payload = record.payload
        if record.kind in ("session_meta", "session"):
            _meta(reader, payload, {"id": "session_id", "cwd": "cwd", "originator": "originator"})
            _meta(reader, payload, {"cli_version": "cli_version", "git": "git"})
            instructions = as_str(payload.get("instructions")) or instructions
        elif record.kind == "turn_context":
            model = payload.get("model")
            reader.model = model if isinstance(model, str) and model else reader.model
            keys = {"approval_policy": "approval_policy", "sandbox_policy": "sandbox_policy"}
            _meta(reader, payload, {**keys, "effort": "effort"})
        elif record.kind in ("response_item", "item"):
            reader.item(payload, record.time_ns)
        elif record.kind == "event_msg":
            reader.event(payload)
        elif record.kind == "compacted":
            reader.compacted(payload)
        else:  # state
            counts.add(f"record {record.kind}")
    turns = tuple(
        _failed(e.turn() if isinstance(e, _Assistant) else e, reader.failed_calls) for e in reader.entries
    )
    if not any(t.role == "assistant" and not t.context_only for t in turns):
        return None
    system = reader.system or ([instructions] if instructions else [])
    metadata = dict(reader.metadata)
    models = [t.model for t in turns if t.model]
    return Conversation(
        turns=turns,
        model=models[-1] if models else reader.model,
        provider="openai",
        system="\n\n".join(system) or None,
        tools=reader.tools.openai_responses(),
        source="codex",
        skipped=dict(counts),
        metadata=metadata,
    )
