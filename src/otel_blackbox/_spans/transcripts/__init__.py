"""Transcripts in: conversations saved by other tools (chat logs) as OpenInference spans in OTLP/JSON.

``otlp.py`` holds the neutral conversation (turns: user, assistant with text and tool calls, tool
results) and turns it into one OTLP/JSON document, which ``import`` stores through the one ingest
path (``_store.ingest.Importer``: redaction, bounds, idempotency). ``chat.py`` reads chat logs.
"""
