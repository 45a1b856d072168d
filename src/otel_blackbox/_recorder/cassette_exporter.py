"""CassetteSpanExporter: one cassette per finished trace, written into a folder.

For a BatchSpanProcessor or SimpleSpanProcessor. Spans are redacted exactly as the database
rows are, held per trace until the trace's root span ends, then turned into a cassette and saved
atomically as ``<folder>/<trace id>.json``. Memory is bounded: past ``max_buffered_spans`` the
oldest unfinished trace is written as it is, and its later spans are dropped and counted
(``spans_dropped``) rather than overwrite that cassette with a tail.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from otel_blackbox._cassette.from_spans.cassette import cassette_from_spans
from otel_blackbox._cassette.io import save_cassette
from otel_blackbox._config import BlackboxConfig
from otel_blackbox._spans.redact import redactor_for
from otel_blackbox._store.queries import SpanRecord
from otel_blackbox._store.rows import RowBuilder
from otel_blackbox._store.schema import SPAN_COLUMNS
from otel_blackbox.errors import CassetteError

__all__ = ["CassetteSpanExporter"]

logger = logging.getLogger("otel_blackbox")


class CassetteSpanExporter(SpanExporter):
    """Writes ``<folder>/<trace id>.json`` for every trace whose root span has ended."""

    def __init__(
        self, folder: str | Path, *, config: BlackboxConfig | None = None, max_buffered_spans: int = 10_000
    ) -> None:
        config = config or BlackboxConfig.from_env()
        self.folder = Path(folder)
        self.max_buffered_spans = max_buffered_spans
        redactor = redactor_for(config)
        self._rows = RowBuilder(redactor, os.getpid())
        self._traces: OrderedDict[str, list[SpanRecord]] = OrderedDict()
        self._buffered = 0
        self._cut: OrderedDict[str, None] = OrderedDict()  # traces written before their root ended
        self._lock = threading.Lock()
        self.written: list[Path] = []
        self.spans_dropped = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            with self._lock:
                for span in spans:
                    record = self._record(span)
                    if record.trace_id in self._cut:
                        self._drop_late_span()
                        continue
                    self._traces.setdefault(record.trace_id, []).append(record)
                    self._buffered += 1
                    if span.parent is None or span.parent.is_remote:  # the root ended: the run is over
                        self._write(record.trace_id)
                while self._buffered > self.max_buffered_spans and self._traces:
                    self._cut_oldest()
            return SpanExportResult.SUCCESS
        except Exception:  # an exporter reports failure, it never raises into the processor
            logger.warning("otel-blackbox could not write a cassette", exc_info=True)
            return SpanExportResult.FAILURE

    def _cut_oldest(self) -> None:
        trace_id = next(iter(self._traces))
        self._write(trace_id)
        self._cut[trace_id] = None
        if len(self._cut) > 1_000:
            self._cut.popitem(last=False)

    def _drop_late_span(self) -> None:
        if not self.spans_dropped:
            logger.warning("otel-blackbox: a trace outgrew max_buffered_spans; its later spans are dropped")
        self.spans_dropped += 1

    def _record(self, span: ReadableSpan) -> SpanRecord:
        row = self._rows.span_row(span, span.end_time or 0, is_open=False)
        return SpanRecord.from_row(dict(zip(SPAN_COLUMNS, row, strict=True)))

    def _write(self, trace_id: str) -> None:
        spans = self._traces.pop(trace_id, [])
        self._buffered -= len(spans)
        if not spans:
            return
        try:
            cassette = cassette_from_spans(spans)
        except CassetteError as exc:  # a trace no cassette can be built from (cut by the SDK's limits...)
            logger.warning("otel-blackbox: no cassette for trace %s: %s", trace_id, exc)
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{trace_id}.json"
        save_cassette(cassette, path)
        self.written.append(path)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True  # complete traces are written as soon as their root ends

    def shutdown(self) -> None:
        """Write the traces still buffered (runs whose root never ended)."""
        with self._lock:
            for trace_id in list(self._traces):
                try:
                    self._write(trace_id)
                except Exception:
                    logger.warning("otel-blackbox could not write cassette %s", trace_id, exc_info=True)
