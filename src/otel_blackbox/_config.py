"""BlackboxConfig: every knob of the recorder, with OTEL_BLACKBOX_* environment defaults.

Values passed in code win over the environment; the environment wins over the defaults, as in the
OpenTelemetry SDK. Every value is validated here, once, with a one-line ConfigError.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from otel_blackbox.errors import ConfigError

__all__ = ["DEFAULT_DB_PATH", "ENV_VARS", "WRITERS", "BlackboxConfig", "parse_duration", "pii_masks"]

DEFAULT_DB_PATH = "blackbox.db"

# Environment variable -> (field name, one-line doc); docs/configuration.md is generated from it.
ENV_VARS: dict[str, tuple[str, str]] = {
    "OTEL_BLACKBOX_DB": ("db_path", "SQLite file to write (default ./blackbox.db)"),
    "OTEL_BLACKBOX_FLUSH_INTERVAL_MS": (
        "flush_interval_ms",
        "a span open this long is on disk (default 200)",
    ),
    "OTEL_BLACKBOX_MAX_QUEUE_SIZE": (
        "max_queue_size",
        "spans waiting for the writer before drops; `serve` answers 503 instead (20000)",
    ),
    "OTEL_BLACKBOX_MAX_QUEUE_MB": (
        "max_queue_mb",
        "memory those waiting spans may hold, estimated, in MB, before drops (32)",
    ),
    "OTEL_BLACKBOX_SHIPPER_SHARE": (
        "shipper_share",
        "share of the agent's interpreter the thread feeding the writer may use, 0 to 1 (0.25)",
    ),
    "OTEL_BLACKBOX_RETENTION": ("retention", "keep traces this long: 7d, 12h, 30 (days); 0 or off: forever"),
    "OTEL_BLACKBOX_MAX_DB_MB": ("max_db_mb", "size cap in MB, oldest complete traces evicted (300; 0: none)"),
    "OTEL_BLACKBOX_REDACT": ("redact", "mask credentials before they are stored (true)"),
    "OTEL_BLACKBOX_REDACT_PATTERNS": ("redact_patterns", "extra regexes to mask: a JSON list or comma list"),
    "OTEL_BLACKBOX_REDACT_FIELDS": (
        "redact_fields",
        "extra attribute / JSON field names to mask, comma list",
    ),
    "OTEL_BLACKBOX_REDACT_PII": (
        "redact_pii",
        "PII masks to turn on, comma list: email, card (Luhn-checked), phone, iban (mod-97-checked) "
        "or all; each becomes [REDACTED:<mask>] ([recording](recording.md#pii-masks)); none by default",
    ),
    "OTEL_BLACKBOX_MAX_ATTRIBUTE_BYTES": ("max_attribute_bytes", "larger values become a marker (262144)"),
    "OTEL_BLACKBOX_CAPTURE_HTTP": (
        "capture_http",
        "record each HTTP exchange (method, URL, status, bodies; no headers) as a span (false)",
    ),
    "OTEL_BLACKBOX_CAPTURE_HTTP_EXPORT": (
        "capture_http_export",
        "with capture on, also hand those spans, redacted as stored, to the provider's other span "
        "processors (false)",
    ),
    "OTEL_BLACKBOX_WRITER": (
        "writer",
        "where rows are built and written: process (a companion writer process) or thread (process)",
    ),
}
WRITERS = ("process", "thread")

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([dhms]?)\s*$", re.IGNORECASE)
_UNIT_SECONDS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0, "": 86400.0}
_OFF = {"0", "off", "none", "never", "forever", ""}


def parse_duration(value: str | float | None, *, name: str = "retention") -> float | None:
    """'7d', '12h', '30m', '45s' or a bare number of days -> seconds; 0/'off'/None -> None (keep forever)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ConfigError(f"{name}: expected a duration like 7d, got {value!r}")
    if isinstance(value, (int, float)):
        if value < 0:
            raise ConfigError(f"{name}: must not be negative, got {value!r}")
        return None if value == 0 else float(value) * 86400.0
    if value.strip().lower() in _OFF:
        return None
    match = _DURATION.match(value)
    if not match:
        raise ConfigError(f"{name}: expected a duration like 7d, 12h, 30m or a number of days, got {value!r}")
    seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2).lower()]
    return seconds or None


def pii_masks(name: str, value: Any) -> tuple[str, ...]:
    """The PII masks named (a comma list, or a list of names; ``all``: every one), in their order;
    an unknown name is a one-line ConfigError naming ``name``."""
    from otel_blackbox._spans.pii import PII_MASKS  # the masks' own module: not for --help

    names = value.split(",") if isinstance(value, str) else value
    try:
        chosen = {str(n).strip().lower() for n in names} - {"", "none", "off"}
    except TypeError:
        raise ConfigError(
            f"{name}: expected mask names ({', '.join(PII_MASKS)} or all), got {value!r}"
        ) from None
    if "all" in chosen:
        return PII_MASKS
    unknown = sorted(chosen - set(PII_MASKS))
    if unknown:
        raise ConfigError(
            f"{name}: unknown PII mask {unknown[0]!r}; expected {', '.join(PII_MASKS)} or all (a comma list)"
        )
    return tuple(mask for mask in PII_MASKS if mask in chosen)


def _positive_int(name: str, value: Any, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{name}: expected a whole number >= {minimum}, got {value!r}")
    return value


def _queue_megabytes(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1024 * 1024:
        raise ConfigError(f"{name}: expected a number of megabytes above 0, got {value!r}")
    return float(value)


def _share(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise ConfigError(f"{name}: expected a share above 0 and at most 1 (0.25: a quarter), got {value!r}")
    return float(value)


@dataclass(frozen=True)
class BlackboxConfig:
    """Settings of BlackboxSpanProcessor / BlackboxSpanExporter and the store.

    ``BlackboxConfig.from_env(**overrides)`` reads OTEL_BLACKBOX_* first; the plain constructor does not.
    """

    db_path: str | Path = DEFAULT_DB_PATH
    flush_interval_ms: int = 200
    max_queue_size: int = 20_000
    max_batch_size: int = 2_000
    # The queue's memory, estimated (_store.snapshot.queued_bytes), and the shipper thread's share of
    # the agent's interpreter (_recorder.cpu_share): both chosen from bench/bench_host_load.py.
    max_queue_mb: float = 32.0
    shipper_share: float = 0.25
    retention: str | float | None = "7d"
    max_db_mb: float = 300.0
    redact: bool = True
    redact_patterns: tuple[str, ...] = ()
    redact_fields: tuple[str, ...] = ()
    # PII masks turned on by name (_spans/pii.py): "email", "card", "phone", "iban"; or "all", or a
    # comma list as one string. None by default.
    redact_pii: tuple[str, ...] | str = ()
    max_attribute_bytes: int = 256 * 1024
    busy_timeout_ms: int = 5_000
    cleanup_interval_s: float = 300.0
    # The processor observes every httpx / httpx2 exchange of the process (_recorder/capture.py);
    # off by default.
    capture_http: bool = False
    # With capture_http: the capture spans also go to the provider's other span processors, their
    # attributes redacted as the database stores them (_recorder/capture_export.py); off by default.
    capture_http_export: bool = False
    # "process": a companion process builds and writes the rows, off the agent's GIL
    # (_recorder/process_sink.py); "thread": a thread of the agent's process does (the fallback
    # where no process can be started).
    writer: str = "process"
    retention_seconds: float | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        if not str(self.db_path).strip():
            raise ConfigError("db_path: must not be empty")
        _positive_int("flush_interval_ms", self.flush_interval_ms)
        _positive_int("max_queue_size", self.max_queue_size)
        _positive_int("max_batch_size", self.max_batch_size)
        _queue_megabytes("max_queue_mb", self.max_queue_mb)
        _share("shipper_share", self.shipper_share)
        _positive_int("max_attribute_bytes", self.max_attribute_bytes, minimum=1024)
        _positive_int("busy_timeout_ms", self.busy_timeout_ms, minimum=0)
        for name in ("capture_http", "capture_http_export"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name}: expected true or false, got {getattr(self, name)!r}")
        if self.writer not in WRITERS:
            raise ConfigError(f"writer: expected process or thread, got {self.writer!r}")
        if (
            isinstance(self.max_db_mb, bool)
            or not isinstance(self.max_db_mb, (int, float))
            or self.max_db_mb < 0
        ):
            raise ConfigError(f"max_db_mb: expected a number of megabytes >= 0, got {self.max_db_mb!r}")
        if not isinstance(self.cleanup_interval_s, (int, float)) or self.cleanup_interval_s <= 0:
            raise ConfigError(f"cleanup_interval_s: expected seconds > 0, got {self.cleanup_interval_s!r}")
        object.__setattr__(self, "redact_patterns", tuple(self.redact_patterns))
        object.__setattr__(self, "redact_fields", tuple(self.redact_fields))
        object.__setattr__(self, "redact_pii", pii_masks("redact_pii", self.redact_pii))
        for pattern in self.redact_patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ConfigError(f"redact_patterns: {pattern!r} is not a valid regex: {exc}") from None
        object.__setattr__(self, "retention_seconds", parse_duration(self.retention))

    @property
    def max_db_bytes(self) -> int | None:
        return int(self.max_db_mb * 1024 * 1024) if self.max_db_mb else None

    def replace(self, **changes: Any) -> BlackboxConfig:
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> BlackboxConfig:
        """Defaults, then OTEL_BLACKBOX_* variables, then ``overrides`` (None values are ignored)."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for var, (name, _doc) in ENV_VARS.items():
            raw = env.get(var)
            if raw is not None and raw.strip() != "":
                values[name] = _from_env_text(var, name, raw.strip())
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


def _from_env_text(var: str, name: str, raw: str) -> Any:
    if name == "retention":
        parse_duration(raw, name=var)  # a bad value names the variable
        return raw
    if name == "db_path":
        return raw
    if name == "writer":
        if raw.lower() not in WRITERS:
            raise ConfigError(f"{var}: expected process or thread, got {raw!r}")
        return raw.lower()
    if name in ("redact", "capture_http", "capture_http_export"):
        lowered = raw.lower()
        if lowered in ("true", "1", "yes", "on"):
            return True
        if lowered in ("false", "0", "no", "off"):
            return False
        raise ConfigError(f"{var}: expected true or false, got {raw!r}")
    if name == "redact_patterns":
        if raw.startswith("["):
            try:
                items = json.loads(raw)
            except ValueError:
                raise ConfigError(f"{var}: not a valid JSON list of regexes") from None
            if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
                raise ConfigError(f"{var}: expected a JSON list of strings")
            return tuple(items)
        return tuple(p.strip() for p in raw.split(",") if p.strip())
    if name == "redact_fields":
        return tuple(f.strip() for f in raw.split(",") if f.strip())
    if name == "redact_pii":
        return pii_masks(var, raw)
    if name in ("max_queue_mb", "shipper_share"):
        check = _queue_megabytes if name == "max_queue_mb" else _share
        try:
            number = float(raw)
        except ValueError:
            number = raw  # type: ignore[assignment]  # the check below names the variable
        return check(var, number)
    try:
        return float(raw) if name == "max_db_mb" else int(raw)
    except ValueError:
        raise ConfigError(f"{var}: expected a number, got {raw!r}") from None
