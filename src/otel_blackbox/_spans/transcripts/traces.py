"""Transcript files as traces to store: read, keyed and made into OTLP/JSON documents.

A chat log has no identity of its own: its content's hash keys it (each line's, in JSON Lines), so
importing it again stores nothing new; chat logs tell no times, so the first of a file starts at
the file's time and each next one 1 ms after the one before it ends (a timeline each, in the file's
order). A Claude Code session or a Codex rollout has one (the session id, and the file's name),
which keys the trace: importing the session again after it grew replaces its trace (the spans' ids
come from the content, so an unchanged session is stored once). A Claude Code session is one trace
with its subagents' conversations (side chains of its file, files of their own imported with it)
each under the TOOL span of the Task call that started it (``subagents.py``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from otel_blackbox._spans.transcripts.chat import is_chat_log, read_chats
from otel_blackbox._spans.transcripts.claude_code import Session, is_session_record, read_session
from otel_blackbox._spans.transcripts.codex import is_rollout_record, read_rollout
from otel_blackbox._spans.transcripts.conversation import Conversation, Keys
from otel_blackbox._spans.transcripts.otlp import conversation_span_ids, end_ns, otlp_documents
from otel_blackbox._spans.transcripts.subagents import place_subagents

__all__ = [
    "TRANSCRIPT_KINDS",
    "TranscriptBatch",
    "chat_traces",
    "claude_code_traces",
    "codex_traces",
    "transcript_kind",
]

# What `import --from` takes, with what each reads.
TRANSCRIPT_KINDS = {
    "chat": "a saved chat log",
    "claude-code": "a Claude Code session",
    "codex": "a Codex CLI rollout",
}


def transcript_kind(document: object) -> str | None:
    """The transcript kind (a key of TRANSCRIPT_KINDS) a JSON document reads as, if any: for the
    hint of an import that took a transcript for OTLP."""
    if is_rollout_record(document):
        return "codex"
    if is_session_record(document):
        return "claude-code"
    return "chat" if is_chat_log(document) else None


@dataclass(frozen=True)
class _Part:
    conversation: Conversation
    keys: Keys
    base_ns: int  # when its spans start if its turns tell no time (the file's mtime, or after another's)
    parent: tuple[str, str] | None = None  # a subagent's: the trace and span it goes under


@dataclass(frozen=True)
class TranscriptBatch:
    """What one transaction stores: a file's traces (a session's with its subagents' files). The
    documents are made as they are stored, a few spans at a time (``otlp_documents``): every LLM
    span holds the conversation before it, so a long session's spans at once would take the square
    of its length in memory."""

    label: str  # the file it came from, for messages
    parts: list[_Part]
    keyed_by_session: bool  # then a stored trace of the session with other spans is replaced

    def documents(self) -> Iterator[dict[str, Any]]:
        """The parts' spans as OTLP/JSON documents, each made when the one before is stored."""
        for p in self.parts:
            yield from otlp_documents(p.conversation, p.keys, p.base_ns, parent=p.parent)

    def replace(self) -> dict[str, set[str]] | None:
        """What ``Importer.store(replace=...)`` takes for these documents: the span ids of each
        trace, named without making the spans."""
        if not self.keyed_by_session:
            return None
        found: dict[str, set[str]] = {}
        for p in self.parts:
            trace_id, ids = conversation_span_ids(p.conversation, p.keys, parent=p.parent)
            found.setdefault(trace_id, set()).update(ids)
        return found


def _keys(source: str, raw: bytes, identity: str | None) -> Keys:
    content = f"{source} {hashlib.sha256(raw).hexdigest()}"
    return Keys(f"{source} session {identity}" if identity else content, content)


def chat_traces(raw: bytes, label: str, shape: str | None, base_ns: int) -> list[TranscriptBatch]:
    """The chat logs of a file, a trace each, stored together (ImportInputError when the file holds
    none, or a bad one): the first starts at ``base_ns``, each next one after the one before ends."""
    parts = []
    for key, conversation in read_chats(raw, label, shape):
        parts.append(_Part(conversation, _keys("chat", key, None), base_ns))
        base_ns = end_ns(conversation, base_ns) + 1_000_000  # a millisecond after, as its own spans are
    return [TranscriptBatch(label, parts, False)]


def claude_code_traces(paths: list[Path]) -> list[TranscriptBatch]:
    """The sessions of these files, each with the subagents' files that name it; every file is read
    before anything is stored, so a bad file (ImportInputError) stores nothing."""
    read: list[tuple[Session, Keys, int]] = []
    for path in paths:
        raw = path.read_bytes()
        session = read_session(raw, str(path))
        identity = f"{session.session_id} {path.name}" if session.session_id else None
        read.append((session, _keys("claude-code", raw, identity), path.stat().st_mtime_ns))
    mains = {s.session_id: n for n, (s, _, _) in enumerate(read) if s.main is not None and s.session_id}
    parts: dict[int, list[_Part]] = {}  # by the file whose trace they are stored in
    sides: dict[int, list[tuple[Conversation, Keys, int]]] = {}  # the subagents of each, in file order
    for n, (session, keys, base_ns) in enumerate(read):
        if session.main is not None:
            parts.setdefault(n, []).append(_Part(session.main, keys, base_ns))
        # A subagent's file goes with the session that started it, when it is here.
        home = mains.get(session.session_id or "", n) if session.main is None else n
        for i, side in enumerate(session.side):
            sides.setdefault(home, []).append((side, Keys(keys.trace, f"{keys.spans} side {i}"), base_ns))
    for home, found in sides.items():
        # All of a session's subagents at once: a call is matched to one subagent only.
        placed = place_subagents(read[home][0], read[home][1], [side for side, _, _ in found])
        for (_, side_keys, base_ns), (side, parent) in zip(found, placed, strict=True):
            parts.setdefault(home, []).append(_Part(side, side_keys, base_ns, parent))
    return [
        TranscriptBatch(read[n][0].name, found, read[n][0].session_id is not None)
        for n, found in sorted(parts.items())
    ]


def codex_traces(paths: list[Path]) -> list[TranscriptBatch]:
    """The rollouts of these files, one trace each; every file is read before anything is stored."""
    batches = []
    for path in paths:
        raw = path.read_bytes()
        conversation = read_rollout(raw, str(path))
        if conversation is None:
            continue
        session = conversation.metadata.get("session_id")
        identity = f"{session} {path.name}" if isinstance(session, str) and session else None
        part = _Part(conversation, _keys("codex", raw, identity), path.stat().st_mtime_ns)
        batches.append(TranscriptBatch(str(path), [part], identity is not None))
    return batches
