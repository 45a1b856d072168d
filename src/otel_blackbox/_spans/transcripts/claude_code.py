"""Claude Code sessions: JSONL files (one record a line) read as neutral ``Conversation`` s.

Claude Code writes one file a session under ``~/.claude/projects/<the folder, / as ->/``; a
subagent's conversation (the Task tool) is a file of its own whose records have ``isSidechain: true``
and the session's ``sessionId``. There is no official schema; what is read:

* ``user`` records: ``message.content`` a string (what the person typed) or blocks: ``text``,
  ``image`` (left out, counted) and ``tool_result`` (``tool_use_id``, ``content`` a string or text
  and image blocks, ``is_error``); ``toolUseResult`` is ignored (the block is what the model saw);
* ``assistant`` records: ``message`` an Anthropic message (``id``, ``model``, ``content`` blocks
  ``text``, ``thinking`` (left out, counted), ``tool_use``; ``usage``). One response is often split
  over consecutive records with the same ``message.id``: they are merged into one turn;
* ``system`` records (``content``, ``level``) and ``summary`` records (``summary``): metadata;
* ``file-history-snapshot``, ``queue-operation`` and unknown record types: skipped, counted.

The turns follow the ``parentUuid`` chain back from the chain's last record (an abandoned branch is
left out and counted), the main chain apart from each side chain. A line that is not JSON is
refused, except a broken last line (a session still being written: skipped, counted); so is a line
that is not an object with a ``type``, and a file with no known record.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from otel_blackbox._spans.transcripts.otlp import Conversation, ToolCall, Turn
from otel_blackbox.errors import ImportInputError

__all__ = ["Session", "read_session", "session_files"]

KNOWN = frozenset({"user", "assistant", "system", "summary", "file-history-snapshot", "queue-operation"})
_MESSAGES = frozenset({"user", "assistant", "system"})
_EXPECTED = "expected a Claude Code session: one JSON object a line, with a type (user, assistant, ...)"


class _Counts(dict[str, int]):
    def add(self, kind: str, n: int = 1) -> None:
        self[kind] = self.get(kind, 0) + n


@dataclass
class Session:
    """One file's conversations: the main chain's (None when the file holds only side chains) and
    each side chain's, with the ``sessionId`` that links a subagent's file to its session."""

    name: str
    session_id: str | None
    main: Conversation | None
    side: list[Conversation] = field(default_factory=list)


def session_files(path: Path) -> list[Path]:
    """The session files of ``path``: itself, or every ``*.jsonl`` under it (sorted)."""
    if path.is_dir():
        return sorted(p for p in path.rglob("*.jsonl") if p.is_file())
    return [path]


# --- lines ------------------------------------------------------------------------------------------


def _records(raw: bytes, name: str, counts: _Counts) -> list[dict[str, Any]]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ImportInputError(f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    lines = text.splitlines()
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    records: list[dict[str, Any]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            if number - 1 == last and records:  # a session still being written: read up to it
                counts.add("truncated line")
                continue
            raise ImportInputError(f"{name}, line {number}: not JSON; {_EXPECTED}") from None
        if not isinstance(record, dict) or not isinstance(record.get("type"), str):
            raise ImportInputError(f"{name}, line {number}: not a Claude Code record; {_EXPECTED}")
        if record["type"] not in KNOWN:
            counts.add(f"record {record['type']}")
            continue
        records.append(record)
    if not records:
        raise ImportInputError(f"{name}, line 1: no Claude Code record; {_EXPECTED}")
    return records


# --- chains -----------------------------------------------------------------------------------------


def _chain(leaf: dict[str, Any], by_uuid: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The records from the chain's root to ``leaf``, by ``parentUuid`` (across a compaction, by
    ``logicalParentUuid``)."""
    chain: list[dict[str, Any]] = []
    seen: set[int] = set()
    record: dict[str, Any] | None = leaf
    while record is not None and id(record) not in seen:
        seen.add(id(record))
        chain.append(record)
        parent = record.get("parentUuid") or record.get("logicalParentUuid")
        record = by_uuid.get(parent) if isinstance(parent, str) else None
    chain.reverse()
    return chain


def _time_ns(record: dict[str, Any]) -> int | None:
    stamp = record.get("timestamp")
    if not isinstance(stamp, str):
        return None
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return int(when.timestamp() * 1_000_000) * 1000


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(content: Any, counts: _Counts) -> str:
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "text":
            texts.append(_str(block.get("text")))
        elif isinstance(block, dict):
            counts.add(str(block.get("type", "block")))
    return "\n".join(t for t in texts if t)


def _schema_of(value: Any) -> dict[str, Any]:
    kinds = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}
    return {"type": kinds.get(type(value), "string")}


@dataclass
class _Assistant:
    message_id: str
    model: str | None
    time_ns: int | None
    texts: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)

    def turn(self) -> Turn:
        read, write = (
            _int(self.usage.get("cache_read_input_tokens")),
            _int(self.usage.get("cache_creation_input_tokens")),
        )
        given, output = _int(self.usage.get("input_tokens")), _int(self.usage.get("output_tokens"))
        prompt = None if given is None else given + (read or 0) + (write or 0)
        return Turn(
            "assistant",
            "\n".join(t for t in self.texts if t),
            tuple(self.calls),
            time_ns=self.time_ns,
            prompt_tokens=prompt,
            completion_tokens=output,
            cache_read_tokens=read,
            cache_write_tokens=write,
            model=self.model,
        )


def _conversation(
    chain: list[dict[str, Any]], meta: dict[str, Any], counts: _Counts, tools: dict[str, dict[str, Any]]
) -> Conversation | None:
    turns: list[Turn] = []
    pending: _Assistant | None = None
    system_events = _Counts()

    def flush() -> None:
        nonlocal pending
        if pending is not None:
            turns.append(pending.turn())
            pending = None

    for record in chain:
        kind = record.get("type")
        message = record.get("message") if isinstance(record.get("message"), dict) else {}
        assert isinstance(message, dict)
        when = _time_ns(record)
        if kind == "system":
            system_events.add(_str(record.get("level")) or "info")
            continue
        if kind == "assistant":
            message_id = _str(message.get("id")) or _str(record.get("uuid"))
            if pending is None or pending.message_id != message_id:
                flush()
                model = message.get("model")
                pending = _Assistant(message_id, model if isinstance(model, str) and model else None, when)
            usage = message.get("usage")
            if isinstance(usage, dict):  # the split records repeat it; the last is the most complete
                pending.usage = usage
            content = message.get("content")
            for block in content if isinstance(content, list) else [{"type": "text", "text": content}]:
                block_kind = block.get("type") if isinstance(block, dict) else None
                if block_kind == "text" and isinstance(block, dict):
                    pending.texts.append(_str(block.get("text")))
                elif block_kind == "tool_use" and isinstance(block, dict):
                    name, given = _str(block.get("name")), block.get("input")
                    arguments = given if isinstance(given, dict) else {}
                    pending.calls.append(
                        ToolCall(_str(block.get("id")), name, json.dumps(arguments, ensure_ascii=False))
                    )
                    properties = tools.setdefault(
                        name, {"name": name, "input_schema": {"type": "object", "properties": {}}}
                    )["input_schema"]["properties"]
                    for key, value in arguments.items():
                        properties.setdefault(key, _schema_of(value))
                else:
                    counts.add(str(block_kind or "block"))
            continue
        flush()
        content = message.get("content")
        texts: list[str] = []
        for block in content if isinstance(content, list) else [{"type": "text", "text": content}]:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                turns.append(
                    Turn(
                        "tool",
                        _text(block.get("content"), counts),
                        call_id=_str(block.get("tool_use_id")),
                        is_error=block.get("is_error") is True,
                        time_ns=when,
                    )
                )
            else:
                texts.append(_text([block], counts))
        text = "\n".join(t for t in texts if t)
        if text:
            turns.append(Turn("user", text, time_ns=when))
    flush()
    if not any(t.role == "assistant" for t in turns):
        return None
    models = [t.model for t in turns if t.model and t.model != "<synthetic>"]
    metadata = dict(meta)
    if system_events:
        metadata["system_events"] = dict(system_events)
    if counts:
        metadata["left_out"] = dict(counts)
    return Conversation(
        turns=tuple(turns),
        model=models[-1] if models else None,
        provider="anthropic",
        tools=tuple(tools.values()),
        source="claude-code",
        skipped=dict(counts),
        metadata=metadata,
    )


def read_session(raw: bytes, name: str) -> Session:
    """The conversations of one session file; ImportInputError (one line naming ``name`` and the
    line) when it is not a Claude Code session."""
    counts = _Counts()
    records = _records(raw, name, counts)
    by_uuid = {r["uuid"]: r for r in records if isinstance(r.get("uuid"), str)}
    summaries = [_str(r.get("summary")) for r in records if r["type"] == "summary" and r.get("summary")]
    for record in records:
        if record["type"] in ("file-history-snapshot", "queue-operation"):
            counts.add(f"record {record['type']}")
    groups: dict[tuple[bool, str], list[dict[str, Any]]] = {}
    for record in records:
        if record["type"] in _MESSAGES:
            sidechain = record.get("isSidechain") is True
            agent = _str(record.get("agentId")) if sidechain else ""
            groups.setdefault((sidechain, agent), []).append(record)
    session_id = next((r["sessionId"] for r in records if isinstance(r.get("sessionId"), str)), None)
    main: Conversation | None = None
    side: list[Conversation] = []
    for (is_side, agent), members in groups.items():
        chain = _chain(members[-1], by_uuid)
        on_chain = {id(r) for r in chain}
        own = _Counts(counts) if not is_side else _Counts()
        left_out = sum(1 for r in members if id(r) not in on_chain)
        if left_out:
            own.add("branch record", left_out)
        first = chain[0]
        meta: dict[str, Any] = {
            k: v
            for k, v in (
                ("session_id", session_id),
                ("agent_id", agent or None),
                ("cwd", first.get("cwd")),
                ("version", first.get("version")),
                ("git_branch", first.get("gitBranch")),
            )
            if isinstance(v, str) and v
        }
        if summaries and not is_side:
            meta["summaries"] = summaries
        conversation = _conversation(chain, meta, own, {})
        if conversation is None:
            continue
        if is_side:
            side.append(conversation)
        else:
            main = conversation
    return Session(name, session_id, main, side)
