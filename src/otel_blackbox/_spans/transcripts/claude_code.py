"""Claude Code sessions: JSONL files (one record a line) read as neutral ``Conversation`` s.

Claude Code writes one file a session under ``~/.claude/projects/<the folder, / as ->/``. A
subagent's conversation (the Task tool, ``Agent`` since 2.1.63) has records with ``isSidechain:
true``: in the session's own file in versions before 2.0, in a file of its own
(``agent-<agentId>.jsonl``, with ``agentId`` and the session's ``sessionId``; beside the session,
then in ``<session id>/subagents/``) since; its first user message is the call's ``prompt``. Which
call started which subagent is for ``subagents.py``. There is no official schema; what is read:

* ``user`` records: ``message.content`` a string (what the person typed) or blocks: ``text``,
  ``image`` and ``document`` (left out, counted) and ``tool_result`` (``tool_use_id``, ``content`` a
  string or text and image blocks, ``is_error``); of ``toolUseResult`` (Claude Code's own copy of
  the result: the block is what the model saw) only the ``agentId`` of a Task call's (since 2.0: the
  subagent it ran; since 2.1 the block's text ends ``agentId: <id> (...)`` too, read when there is no
  ``toolUseResult``), which the call's TOOL span names;
* ``assistant`` records: ``message`` an Anthropic message (``id``, ``model``, ``content`` blocks
  ``text``, ``thinking`` (left out, counted), ``tool_use``; ``usage``). Since 1.0 one response is
  split over consecutive records with the same ``message.id``: they are merged into one turn. A
  record with ``isApiErrorMessage`` (model ``<synthetic>``) is the error Claude Code wrote when the
  API call failed: a failed turn, whose text the requests after it do not hold;
* ``system`` records: ``compact_boundary`` (the context was compacted: later requests hold only
  what follows, the summary first) and the others (``content``, ``level``) as counted metadata;
* ``summary`` records (``summary``, ``leafUuid``): metadata, unless their leaf is in another file;
* ``file-history-snapshot``, ``queue-operation`` and unknown record types: skipped, counted; of a
  ``progress`` record (2.1) with ``data.type`` ``agent_progress``, which Task call
  (``parentToolUseID``) runs which subagent (``data.agentId``): a session killed while a subagent
  ran has no result naming it.

The turns follow the ``parentUuid`` chain back from the chain's last record (an abandoned branch,
from a rewind or an edit, is left out and counted; across a compaction, ``logicalParentUuid``), the
main chain apart from each side chain. The file's session is its last record's ``sessionId`` (a
resumed session's file starts with copies of the records it resumed). A line that is not JSON is
refused, except a broken last line (a session still being written: skipped, counted); so is a line
that is not an object with a ``type``, and a file with no known record.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from otel_blackbox._spans.transcripts.conversation import Conversation, ToolCall, Turn
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

__all__ = ["TASK_TOOLS", "Session", "is_session_record", "read_session"]

# The tool that runs a subagent: Task, renamed Agent in 2.1.63.
TASK_TOOLS = frozenset({"Task", "Agent"})

KNOWN = frozenset({"user", "assistant", "system", "summary", "file-history-snapshot", "queue-operation"})
_MESSAGES = frozenset({"user", "assistant", "system"})
_EXPECTED = "expected a Claude Code session: one JSON object a line, with a type (user, assistant, ...)"
# The line a subagent's result ends with since 2.1 ("agentId: a1b2c3d (for resuming ...)").
_AGENT_LINE = re.compile(r"^agentId: ([\w-]+)", re.MULTILINE)


@dataclass
class Session:
    """One file's conversations: the main chain's (None when the file holds only side chains) and
    each side chain's, with the ``sessionId`` that links a subagent's file to its session, and the
    Task call that started each subagent the file names (agent id -> call id)."""

    name: str
    session_id: str | None
    main: Conversation | None
    side: list[Conversation] = field(default_factory=list)
    agent_calls: dict[str, str] = field(default_factory=dict)


# --- lines ------------------------------------------------------------------------------------------


def is_session_record(document: Any) -> bool:
    """Whether a JSON document reads as a line of a Claude Code session: a known type, and the
    session's own keys (uuid, sessionId, leafUuid...)."""
    return (
        isinstance(document, dict)
        and document.get("type") in KNOWN
        and any(k in document for k in ("uuid", "parentUuid", "sessionId", "leafUuid", "messageId"))
    )


def _records(raw: bytes, name: str, counts: Counts, agent_calls: dict[str, str]) -> list[dict[str, Any]]:
    """The known records (the others counted), and in ``agent_calls`` the Task call each
    ``agent_progress`` record names for its subagent."""
    records: list[dict[str, Any]] = []
    for number, record in jsonl_values(raw, name, _EXPECTED, counts):
        if not isinstance(record, dict) or not isinstance(record.get("type"), str):
            raise ImportInputError(f"{name}, line {number}: not a Claude Code record; {_EXPECTED}")
        if record["type"] not in KNOWN:
            counts.add(f"record {record['type']}")
            data = record.get("data")
            if isinstance(data, dict) and data.get("type") == "agent_progress":
                agent, call = as_str(data.get("agentId")), as_str(record.get("parentToolUseID"))
                if agent and call:
                    agent_calls.setdefault(agent, call)
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


@dataclass
class _Assistant:
    message_id: str
    model: str | None
    time_ns: int | None
    texts: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    api_error: bool = False  # a message Claude Code wrote when the API call failed ("API Error: ...")

    def turn(self) -> Turn:
        read, write = (
            as_int(self.usage.get("cache_read_input_tokens")),
            as_int(self.usage.get("cache_creation_input_tokens")),
        )
        given, output = as_int(self.usage.get("input_tokens")), as_int(self.usage.get("output_tokens"))
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
            is_error=self.api_error,
        )


def _conversation(chain: list[dict[str, Any]], meta: dict[str, Any], counts: Counts) -> Conversation | None:
    turns: list[Turn] = []
    pending: _Assistant | None = None
    system_events = Counts()
    tools = InferredTools()
    agents: dict[str, dict[str, Any]] = {}  # the subagent a Task call's result names, by call id
    called: dict[str, str] = {}  # each call's tool, by call id

    def flush() -> None:
        nonlocal pending
        if pending is not None:
            turns.append(pending.turn())
            pending = None

    for record in chain:
        kind = record.get("type")
        message = record.get("message") if isinstance(record.get("message"), dict) else {}
        assert isinstance(message, dict)
        when = iso_time_ns(record.get("timestamp"))
        if kind == "system" and record.get("subtype") == "compact_boundary":
            flush()  # the context restarts here, from the summary that follows
            turns.append(Turn("compaction"))
            system_events.add("compact_boundary")
            continue
        if kind == "system":
            system_events.add(as_str(record.get("level")) or "info")
            continue
        if kind == "assistant":
            message_id = as_str(message.get("id")) or as_str(record.get("uuid"))
            if pending is None or pending.message_id != message_id:
                flush()
                model = message.get("model")
                known = isinstance(model, str) and model and model != "<synthetic>"
                pending = _Assistant(message_id, model if known else None, when)
                pending.api_error = record.get("isApiErrorMessage") is True
            usage = message.get("usage")
            if isinstance(usage, dict):  # the split records repeat it; the last is the most complete
                pending.usage = usage
            content = message.get("content")
            for block in content if isinstance(content, list) else [{"type": "text", "text": content}]:
                block_kind = block.get("type") if isinstance(block, dict) else None
                if block_kind == "text" and isinstance(block, dict):
                    pending.texts.append(as_str(block.get("text")))
                elif block_kind == "tool_use" and isinstance(block, dict):
                    name, given = as_str(block.get("name")), block.get("input")
                    arguments = given if isinstance(given, dict) else {}
                    pending.calls.append(
                        ToolCall(as_str(block.get("id")), name, json.dumps(arguments, ensure_ascii=False))
                    )
                    tools.note(name, arguments)
                    called[as_str(block.get("id"))] = name
                else:
                    counts.add(str(block_kind or "block"))
            continue
        flush()
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        texts: list[str] = []
        for block in blocks:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                result = Turn(
                    "tool",
                    parts_text(block.get("content"), counts),
                    call_id=as_str(block.get("tool_use_id")),
                    is_error=block.get("is_error") is True,
                    time_ns=when,
                )
                turns.append(result)
                # The record's toolUseResult is its one result's; else the line the text ends with.
                given = record.get("toolUseResult") if len(results) == 1 else None
                named = _AGENT_LINE.search(result.text)
                agent = as_str(given.get("agentId")) if isinstance(given, dict) else ""
                agent = agent or (named.group(1) if named else "")
                if agent and called.get(result.call_id) in TASK_TOOLS:
                    agents[result.call_id] = {"agent_id": agent}
            else:
                texts.append(parts_text([block], counts))
        text = "\n".join(t for t in texts if t)
        if text:
            turns.append(Turn("user", text, time_ns=when))
    flush()
    if not any(t.role == "assistant" for t in turns):
        return None
    models = [t.model for t in turns if t.model]
    metadata = dict(meta)
    if system_events:
        metadata["system_events"] = dict(system_events)
    return Conversation(
        turns=tuple(turns),
        model=models[-1] if models else None,
        provider="anthropic",
        tools=tools.anthropic(),
        source="claude-code",
        skipped=dict(counts),
        metadata=metadata,
        call_metadata=agents,
    )


def _leaves(
    members: list[dict[str, Any]], by_uuid: dict[str, dict[str, Any]], split: bool
) -> list[dict[str, Any]]:
    """The records the group's conversations end at: its last one; with ``split`` (side chains with
    no ``agentId``: older versions keep every subagent in the session's file) the last of each root's."""
    if not split:
        return [members[-1]]
    root_of: dict[int, str] = {}
    last_of_root: dict[str, dict[str, Any]] = {}  # in the order the roots first appear
    for record in members:
        parent = record.get("parentUuid")
        above = by_uuid.get(parent) if isinstance(parent, str) else None
        root = root_of.get(id(above)) if above is not None else None
        root = root or as_str(record.get("uuid")) or f"line {len(root_of)}"
        root_of[id(record)] = root
        last_of_root[root] = record
    return list(last_of_root.values())


def read_session(raw: bytes, name: str) -> Session:
    """The conversations of one session file; ImportInputError (one line naming ``name`` and the
    line) when it is not a Claude Code session."""
    counts = Counts()
    agent_calls: dict[str, str] = {}
    records = _records(raw, name, counts, agent_calls)
    by_uuid = {r["uuid"]: r for r in records if isinstance(r.get("uuid"), str)}
    summaries: list[str] = []
    for record in records:
        if record["type"] in ("file-history-snapshot", "queue-operation"):
            counts.add(f"record {record['type']}")
        elif record["type"] == "summary" and record.get("summary"):
            leaf = record.get("leafUuid")
            if isinstance(leaf, str) and leaf not in by_uuid:  # written into the wrong file (a known bug)
                counts.add("summary of another session")
            else:
                summaries.append(as_str(record.get("summary")))
    groups: dict[tuple[bool, str], list[dict[str, Any]]] = {}
    for record in records:
        if record["type"] in _MESSAGES:
            sidechain = record.get("isSidechain") is True
            agent = as_str(record.get("agentId")) if sidechain else ""
            groups.setdefault((sidechain, agent), []).append(record)
    # The file's own session: its last record's (a resumed session's file starts with copies of the
    # records of the session it resumed, which keep that session's id).
    session_id = next(
        (r["sessionId"] for r in reversed(records) if isinstance(r.get("sessionId"), str)), None
    )
    main: Conversation | None = None
    side: list[Conversation] = []
    for (is_side, agent), members in groups.items():
        chains = [_chain(leaf, by_uuid) for leaf in _leaves(members, by_uuid, is_side and not agent)]
        on_chain = {id(r) for chain in chains for r in chain}
        left_out = sum(1 for r in members if id(r) not in on_chain)
        for n, chain in enumerate(chains):
            own = Counts(counts) if not is_side else Counts()
            if left_out and n == 0:
                own.add("branch record", left_out)
            first, last = chain[0], chain[-1]
            meta: dict[str, Any] = {
                k: v
                for k, v in (
                    ("session_id", session_id),
                    ("agent_id", agent or None),
                    ("cwd", first.get("cwd")),
                    ("version", last.get("version")),
                    ("git_branch", last.get("gitBranch")),
                )
                if isinstance(v, str) and v
            }
            if summaries and not is_side:
                meta["summaries"] = summaries
            conversation = _conversation(chain, meta, own)
            if conversation is None:
                continue
            if is_side:
                side.append(conversation)
            else:
                main = conversation
    # A result naming its subagent says more than a progress record; the first call to name it
    # started it (a later one may resume it, into the same file).
    named: dict[str, str] = {}
    for call, found in (main.call_metadata if main is not None else {}).items():
        named.setdefault(found["agent_id"], call)
    return Session(name, session_id, main, side, {**agent_calls, **named})
