"""BlackboxLogExporter: log records for a BatchLogRecordProcessor, or ``OTEL_LOGS_EXPORTER=blackbox``.

The log counterpart of BlackboxSpanExporter: ``opentelemetry-instrument`` loads it from the
``opentelemetry_logs_exporter`` entry point and puts it behind the SDK's BatchLogRecordProcessor,
whose thread calls ``export``. Same store, same rows, same redaction as BlackboxLogRecordProcessor;
records with no span context are counted as skipped and not stored.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult

from otel_blackbox._config import BlackboxConfig
from otel_blackbox._recorder import process_runs
from otel_blackbox._store.log_rows import snapshot_log
from otel_blackbox._store.log_writer import LogWriter

__all__ = ["BlackboxLogExporter"]


class BlackboxLogExporter(LogRecordExporter):
    """Writes each exported batch of log records to the SQLite store, on the exporting thread."""

    def __init__(self, db_path: str | Path | None = None, *, config: BlackboxConfig | None = None) -> None:
        config = config or BlackboxConfig.from_env()
        if db_path is not None:
            config = config.replace(db_path=db_path)
        self.config = config
        self.logs_skipped = 0
        started_ns = time.time_ns()
        self._lock = threading.Lock()
        self._writer = LogWriter(
            config,
            run_start=lambda: process_runs.run_start(config.db_path, started_ns),
            skipped=lambda: self.logs_skipped,
        )
        self._shutdown = False

    def export(self, batch: Sequence[Any]) -> LogRecordExportResult:
        with self._lock:
            if self._shutdown:  # checked under the lock: never reopen what shutdown() closed
                return LogRecordExportResult.FAILURE
            snapshots = []
            for record in batch:
                try:
                    snapshot = snapshot_log(record)
                except Exception:  # not a readable SDK record: counted, the batch goes on
                    self._writer.skip()
                    continue
                if snapshot is None:
                    self.logs_skipped += 1
                else:
                    snapshots.append(snapshot)
            self._writer.receive(snapshots)
            ok = self._writer.write_pending()
            if not ok:  # the exporter's caller does not retry: these are lost, and counted
                self._writer.finish()
        return LogRecordExportResult.SUCCESS if ok else LogRecordExportResult.FAILURE

    def shutdown(self) -> None:
        with self._lock:
            self._shutdown = True
            self._writer.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True  # every export() is written before it returns

    @property
    def logs_written(self) -> int:
        return self._writer.logs_written
