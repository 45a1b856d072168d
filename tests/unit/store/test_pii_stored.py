"""PII masks end to end: spans and log records through the real processors into a real SQLite file
(both writers), and spans stored by `import` and `serve`, each with OTEL_BLACKBOX_REDACT_PII set and
without it (then nothing is masked). The database and its WAL are searched as bytes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.trace import TracerProvider

from otel_blackbox import BlackboxConfig, BlackboxLogRecordProcessor, BlackboxSpanProcessor
from otel_blackbox._spans.pii import PII_MASKS

EMAIL, CARD, PHONE, IBAN = (
    "jane.doe@example.com",
    "4111 1111 1111 1111",
    "+44 20 7946 0958",
    "GB82WEST12345698765432",
)
ORDER = "4111 1111 1111 1112"  # fails the Luhn check: an order number, kept
TEXT = f"mail {EMAIL}, card {CARD}, call {PHONE}, pay {IBAN}, order {ORDER}"
VALUES = {"email": EMAIL, "card": CARD, "phone": PHONE, "iban": IBAN}


def _database_bytes(db: Path) -> bytes:
    return b"".join(path.read_bytes() for path in db.parent.glob(db.name + "*"))


def _assert_masked(db: Path, masks: tuple[str, ...]) -> None:
    data = _database_bytes(db)
    for kind, value in VALUES.items():
        if kind in masks:
            assert value.encode() not in data, kind
            assert f"[REDACTED:{kind}]".encode() in data, kind
        else:
            assert value.encode() in data, kind
    assert ORDER.encode() in data


def _record(db: Path, masks: tuple[str, ...], writer: str) -> None:
    config = BlackboxConfig(db_path=db, writer=writer, flush_interval_ms=50, redact_pii=masks)
    tracers, loggers = TracerProvider(shutdown_on_exit=False), LoggerProvider(shutdown_on_exit=False)
    tracers.add_span_processor(BlackboxSpanProcessor(config=config))
    loggers.add_log_record_processor(BlackboxLogRecordProcessor(config=config))
    tracer, logger = tracers.get_tracer("pii"), loggers.get_logger("pii")
    with tracer.start_as_current_span(f"agent for {EMAIL}", attributes={"input.value": TEXT}) as span:
        span.set_attribute("output.value", json.dumps({"answer": TEXT, "card": CARD}))
        span.set_attribute("user.card_number", int(CARD.replace(" ", "")))
        span.add_event("note", {"message": TEXT})
        logger.emit(body={"content": TEXT}, attributes={"note": TEXT}, event_name="gen_ai.user.message")
        try:
            raise RuntimeError(f"payment failed: {TEXT}")
        except RuntimeError as exc:
            span.record_exception(exc)
            span.set_status(trace.Status(trace.StatusCode.ERROR, f"failed for {EMAIL}"))
    tracers.shutdown()
    loggers.shutdown()


@pytest.mark.parametrize("writer", ["process", "thread"])
def test_the_processors_store_no_pii_of_the_masks_turned_on(tmp_path: Path, writer: str) -> None:
    every = tmp_path / "every.db"
    _record(every, PII_MASKS, writer)
    _assert_masked(every, PII_MASKS)
    some = tmp_path / "some.db"
    _record(some, ("email", "iban"), writer)
    _assert_masked(some, ("email", "iban"))


def test_off_by_default_nothing_is_masked(tmp_path: Path) -> None:
    db = tmp_path / "default.db"
    _record(db, (), "thread")
    _assert_masked(db, ())
    assert b"[REDACTED:" not in _database_bytes(db)


def _otlp_document() -> dict[str, Any]:
    now = time.time_ns()  # within the retention, which `serve` applies
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "shop"}}]},
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": "5b8efff798038103d269b633813fc60c",
                                "spanId": "eee19b7ec3c1b174",
                                "name": "checkout",
                                "kind": 1,
                                "startTimeUnixNano": str(now),
                                "endTimeUnixNano": str(now + 10**9),
                                "attributes": [{"key": "input.value", "value": {"stringValue": TEXT}}],
                                "events": [
                                    {
                                        "name": "note",
                                        "timeUnixNano": str(now + 5 * 10**8),
                                        "attributes": [{"key": "message", "value": {"stringValue": TEXT}}],
                                    }
                                ],
                            }
                        ]
                    }
                ],
            }
        ]
    }


def _env(masks: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_BLACKBOX")}
    if masks is not None:
        env["OTEL_BLACKBOX_REDACT_PII"] = masks
    return env


def _cli(db: Path, *args: str, masks: str | None) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "otel_blackbox.cli", "--db", str(db), *args]
    return subprocess.run(argv, capture_output=True, text=True, env=_env(masks), timeout=120)


def test_import_masks_spans_and_chat_logs_when_asked(tmp_path: Path) -> None:
    spans = tmp_path / "spans.jsonl"
    spans.write_text(json.dumps(_otlp_document()) + "\n")
    chat = tmp_path / "chat.json"
    chat.write_text(
        json.dumps({"messages": [{"role": "user", "content": TEXT}, {"role": "assistant", "content": TEXT}]})
    )
    for masks, expected in (("all", PII_MASKS), ("card,phone", ("card", "phone")), (None, ())):
        db = tmp_path / f"import-{masks}.db"
        assert _cli(db, "import", str(spans), masks=masks).returncode == 0
        assert _cli(db, "import", "--from", "chat", str(chat), masks=masks).returncode == 0
        _assert_masked(db, expected)


def test_an_unknown_mask_is_one_line_and_exit_2(tmp_path: Path) -> None:
    spans = tmp_path / "spans.jsonl"
    spans.write_text(json.dumps(_otlp_document()) + "\n")
    db = tmp_path / "bb.db"
    done = _cli(db, "import", str(spans), masks="email,ssn")
    assert done.returncode == 2 and not db.exists()
    assert done.stderr.strip().count("\n") == 0
    assert "OTEL_BLACKBOX_REDACT_PII: unknown PII mask 'ssn'" in done.stderr


@pytest.mark.parametrize("masks", ["all", None])
def test_serve_masks_what_it_receives_when_asked(tmp_path: Path, masks: str | None) -> None:
    db = tmp_path / "served.db"
    argv = [sys.executable, "-m", "otel_blackbox.cli", "--db", str(db), "serve", "--port", "0"]
    with subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=_env(masks)) as proc:
        try:
            assert proc.stderr is not None
            banner = proc.stderr.readline()
            url = banner.split(" on ", 1)[1].split()[0]
            request = urllib.request.Request(
                url,
                data=json.dumps(_otlp_document()).encode(),
                headers={"Content-Type": "application/json"},
                method="POST",
            )
            with urllib.request.urlopen(request, timeout=60) as reply:
                assert reply.status == 200
        finally:
            proc.terminate()
            proc.wait(60)
    _assert_masked(db, PII_MASKS if masks else ())
