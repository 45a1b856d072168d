"""Transcripts in: conversations saved by other tools, as OpenInference spans in OTLP/JSON.

``chat.py`` (saved chat logs), ``claude_code.py`` (Claude Code sessions) and ``codex.py`` (Codex CLI
rollouts) each read a file into the neutral conversation of ``conversation.py`` (turns: user,
assistant with text and tool calls, tool results, compactions; how it ended), which ``otlp.py``
makes into OTLP/JSON documents; ``reading.py`` holds what the readers share, ``subagents.py`` which
Task call started which Claude Code subagent. ``traces.py`` keys each transcript's documents (by
session, so a session imported again replaces its trace) for ``import`` to store through the one
ingest path (``_store.ingest.Importer``: redaction, bounds, idempotency).
"""
