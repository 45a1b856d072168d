"""Transcript files as traces to store: read, keyed and made into OTLP/JSON documents.

A chat log has no identity of its own: its content's hash keys it (each line's, in JSON Lines), so
importing it again stores nothing new. A Claude Code session or a Codex rollout has one (the
session id, and the file's name), which keys the trace: importing the session again after it grew
replaces its trace (the spans' ids come from the content, so an unchanged session is stored once).
A Claude Code session is one trace with the conversations of its subagents' files under its root.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from otel_blackbox._spans.transcripts.chat import read_chats
from otel_blackbox._spans.transcripts.claude_code import read_session
from otel_blackbox._spans.transcripts.codex import read_rollout
from otel_blackbox._spans.transcripts.otlp import Conversation, Keys, otlp_document, root_ids, span_ids

__all__ = ["TranscriptBatch", "chat_traces", "claude_code_traces", "codex_traces"]


@dataclass(frozen=True)
class TranscriptBatch:
    """What one transaction stores: a file's traces (a session's with its subagents' files)."""

    label: str  # the file it came from, for messages
    documents: list[dict[str, Any]]
    replace: dict[str, set[str]] | None  # a session's: its traces' span ids (Importer.store(replace=))


def _keys(source: str, raw: bytes, identity: str | None) -> Keys:
    content = f"{source} {hashlib.sha256(raw).hexdigest()}"
    return Keys(f"{source} session {identity}" if identity else content, content)


def _trace(label: str, documents: list[dict[str, Any]], keyed_by_session: bool) -> TranscriptBatch:
    return TranscriptBatch(label, documents, span_ids(documents) if keyed_by_session else None)


def chat_traces(raw: bytes, label: str, shape: str | None, base_ns: int) -> list[TranscriptBatch]:
    """The chat logs of a file, a trace each, stored together (ImportInputError when the file holds
    none, or a bad one)."""
    documents = [
        otlp_document(conversation, _keys("chat", key, None), base_ns)
        for key, conversation in read_chats(raw, label, shape)
    ]
    return [_trace(label, documents, False)]


@dataclass(frozen=True)
class _Read:
    path: Path
    raw: bytes
    base_ns: int  # the file's mtime: the times of turns that tell none

    @classmethod
    def of(cls, path: Path) -> _Read:
        return cls(path, path.read_bytes(), path.stat().st_mtime_ns)


def claude_code_traces(paths: list[Path]) -> list[TranscriptBatch]:
    """The sessions of these files, each with the subagents' files that name it; every file is read
    before any trace is made, so a bad file (ImportInputError) stores nothing."""
    files = [_Read.of(p) for p in paths]
    sessions = [read_session(f.raw, str(f.path)) for f in files]
    keys = [
        _keys("claude-code", f.raw, f"{s.session_id} {f.path.name}" if s.session_id else None)
        for f, s in zip(files, sessions, strict=True)
    ]
    mains = {s.session_id: n for n, s in enumerate(sessions) if s.main is not None and s.session_id}
    documents: dict[int, list[dict[str, Any]]] = {}  # by the file whose trace they are stored in
    for n, (f, s) in enumerate(zip(files, sessions, strict=True)):
        if s.main is not None:
            documents.setdefault(n, []).append(otlp_document(s.main, keys[n], f.base_ns))
        # A subagent's file goes under the root of the session that started it, when it is here.
        home = n if s.main is not None or s.session_id not in mains else mains[s.session_id]
        parent = root_ids(keys[home]) if sessions[home].main is not None else None
        for i, side in enumerate(s.side):
            side_keys = Keys(keys[n].trace, f"{keys[n].spans} side {i}")
            documents.setdefault(home, []).append(otlp_document(side, side_keys, f.base_ns, parent=parent))
    return [
        _trace(str(files[n].path), found, sessions[n].session_id is not None)
        for n, found in sorted(documents.items())
    ]


def codex_traces(paths: list[Path]) -> list[TranscriptBatch]:
    """The rollouts of these files, one trace each; every file is read before any trace is made."""
    read: list[tuple[_Read, Conversation | None]] = []
    for path in paths:
        f = _Read.of(path)
        read.append((f, read_rollout(f.raw, str(f.path))))
    traces = []
    for f, conversation in read:
        if conversation is None:
            continue
        session = conversation.metadata.get("session_id")
        identity = f"{session} {f.path.name}" if isinstance(session, str) and session else None
        document = otlp_document(conversation, _keys("codex", f.raw, identity), f.base_ns)
        traces.append(_trace(str(f.path), [document], identity is not None))
    return traces
