"""Spans as data: which attributes mean what (``semconv``), messages and tool calls read back from
them, redaction, and the formats spans come in (OTLP) and go out in (OTLP, OpenInference JSONL)."""
