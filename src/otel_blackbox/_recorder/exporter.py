"""BlackboxSpanExporter: the end-only variant, for a BatchSpanProcessor or opentelemetry-instrument.

It writes finished spans only (no open rows, so a killed process shows nothing of the call it
died in); use BlackboxSpanProcessor where that matters. Same store, same rows, same redaction.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from otel_blackbox._config import BlackboxConfig
from otel_blackbox._recorder import process_runs
from otel_blackbox._store.snapshot import Snapshotter
from otel_blackbox._store.writer import SpanWriter

__all__ = ["BlackboxSpanExporter"]


class BlackboxSpanExporter(SpanExporter):
    """Writes each exported batch of finished spans to the SQLite store, on the exporting thread."""

    def __init__(self, db_path: str | Path | None = None, *, config: BlackboxConfig | None = None) -> None:
        config = config or BlackboxConfig.from_env()
        if db_path is not None:
            config = config.replace(db_path=db_path)
        self.config = config
        self._lock = threading.Lock()
        # export() writes on the exporting thread (the BatchSpanProcessor's own).
        started_ns = time.time_ns()
        self._writer = SpanWriter(config, started_ns=started_ns)
        # Log records exported by this process to the same file join this run (process_runs.py).
        process_runs.register(config.db_path, started_ns)
        self._snapshotter = Snapshotter()
        self._shutdown = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self._lock:
            # Checked under the lock: an export that waited for shutdown() must not reopen the
            # connection shutdown() just closed.
            if self._shutdown:
                return SpanExportResult.FAILURE
            snapshots = []
            for span in spans:
                try:
                    snapshots.append(self._snapshotter.snapshot(span, is_open=False))
                except Exception:  # not a recordable SDK span: counted, the batch goes on
                    self._writer.skip(span.name)
            self._writer.receive(self._snapshotter.take_definitions(), (), ())
            ok = self._writer.write_now(snapshots)
            self._writer.maintain()
        return SpanExportResult.SUCCESS if ok else SpanExportResult.FAILURE

    def shutdown(self) -> None:
        self._shutdown = True
        with self._lock:
            self._writer.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True  # every export() is written before it returns
