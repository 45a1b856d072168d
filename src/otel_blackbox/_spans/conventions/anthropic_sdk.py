"""(being written: see _spans/view/registry.py for what this family reads)"""

from __future__ import annotations

from otel_blackbox._spans.view.model import Reading
from otel_blackbox._store.queries import SpanRecord

__all__ = ["NAME", "SUMMARY_KEYS", "read"]

NAME = "anthropic_sdk"
SUMMARY_KEYS: tuple[str, ...] = ()


def read(span: SpanRecord) -> Reading | None:
    return None
