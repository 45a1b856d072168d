"""Writes schema_v2.db: a real schema-version-2 file, recorded by otel-blackbox as it was at commit
fce0610 (the last with schema version 2) through the real BlackboxSpanProcessor and OpenTelemetry
SDK. tests/unit/store/test_schema_migration.py upgrades copies of it.

    mkdir /tmp/v2src && git archive fce0610 | tar -x -C /tmp/v2src
    PYTHONPATH=/tmp/v2src/src .venv/bin/python tests/data/make_v2_db.py tests/data/schema_v2.db

Two recording processes, one after the other, each with a resource of its own:

* ``a`` (resource A, scope ``checkout.agent`` 1.2.0): an OK trace (AGENT > LLM, TOOL; the root and
  the LLM span with status OK) in session ``sess-ü-1``, a trace whose tool fails (status ERROR, an
  exception event) and which links to the first trace's root, and a small trace whose child's open
  row is written and then replaced by its final one; it shuts down cleanly.
* ``b`` (resource B, scopes ``planner`` 0.1.0 with a schema URL and ``retriever`` without a
  version): a trace with non-ASCII names, attributes and resource values, and a span left open:
  the process flushes and leaves with os._exit(0), as if killed, so its row stays ``open``.

Span ids come from a seeded generator; times are the real ones (runs are found by the time their
recorder was alive). Retention is off, so a copy can be opened by a recorder at any later date.
"""

from __future__ import annotations

import os
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import Status, StatusCode

from otel_blackbox import BlackboxConfig, BlackboxSpanProcessor
from otel_blackbox._store.schema import SCHEMA_VERSION


class SeededIds(IdGenerator):
    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)

    def generate_span_id(self) -> int:
        return self._random.getrandbits(64) or 1

    def generate_trace_id(self) -> int:
        return self._random.getrandbits(128) or 1


def _provider(db: Path, resource: dict[str, str], seed: int) -> tuple[TracerProvider, BlackboxSpanProcessor]:
    processor = BlackboxSpanProcessor(config=BlackboxConfig(db_path=db, retention="off"))
    provider = TracerProvider(
        resource=Resource.create(resource), id_generator=SeededIds(seed), shutdown_on_exit=False
    )
    provider.add_span_processor(processor)
    return provider, processor


def process_a(db: Path) -> None:
    provider, _ = _provider(
        db, {"service.name": "checkout-agent", "deployment.environment": "staging", "host.name": "ci-1"}, 1
    )
    tracer = provider.get_tracer("checkout.agent", "1.2.0")
    with tracer.start_as_current_span(
        "agent.run",
        attributes={"openinference.span.kind": "AGENT", "session.id": "sess-ü-1", "user.id": "u-7",
                    "input.value": "What is the weather in Paris?"},
    ) as root:  # fmt: skip
        with tracer.start_as_current_span(
            "ChatCompletion",
            attributes={
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o-mini",
                "llm.token_count.prompt": 20,
                "llm.token_count.completion": 5,
                "llm.token_count.total": 25,
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": "What is the weather in Paris?",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_1",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_weather",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"city":"Paris"}',
            },
        ) as llm:
            llm.set_status(Status(StatusCode.OK))
        with tracer.start_as_current_span(
            "get_weather",
            attributes={"openinference.span.kind": "TOOL", "tool.name": "get_weather",
                        "input.value": '{"city":"Paris"}', "output.value": "18 °C, sunny"},
        ):  # fmt: skip
            pass
        root.set_status(Status(StatusCode.OK))
    first_root = root.get_span_context()
    with tracer.start_as_current_span(
        "agent.run",
        attributes={"openinference.span.kind": "AGENT", "session.id": "sess-ü-1"},
        links=[trace.Link(first_root, {"link.reason": "retry of the first run"})],
    ):
        try:
            with tracer.start_as_current_span(
                "lookup_order",
                attributes={"openinference.span.kind": "TOOL", "tool.name": "lookup_order",
                            "input.value": '{"order":"A-17"}'},
            ):  # fmt: skip
                raise ConnectionError("order service unreachable (503)")
        except ConnectionError:
            pass
    parent = tracer.start_span("batch", attributes={"openinference.span.kind": "CHAIN"})
    child = tracer.start_span("step", context=trace.set_span_in_context(parent))
    provider.force_flush()  # the child's open row is written, then replaced by its final one
    child.end()
    parent.end()
    provider.shutdown()


def process_b(db: Path) -> None:
    provider, _ = _provider(
        db,
        {"service.name": "planificateur-é", "service.namespace": "équipe-日本", "note": "🚀 déploiement"},
        2,
    )
    planner = provider.get_tracer("planner", "0.1.0", schema_url="https://opentelemetry.io/schemas/1.26.0")
    retriever = provider.get_tracer("retriever")
    with planner.start_as_current_span(
        "résumé → 日本語 ✓", attributes={"openinference.span.kind": "AGENT", "input.value": "Plan ünïcode 🚀"}
    ):
        with retriever.start_as_current_span(
            "search", attributes={"openinference.span.kind": "RETRIEVER", "input.value": "café ☕"}
        ):
            pass
        with planner.start_as_current_span(
            "Claude",
            attributes={"openinference.span.kind": "LLM", "llm.model_name": "claude-3-5-haiku",
                        "llm.token_count.prompt": 11, "llm.token_count.completion": 3,
                        "output.value": "Voilà — fertig."},
        ):  # fmt: skip
            pass
    killed = planner.start_span("long-running agent", attributes={"openinference.span.kind": "AGENT"})
    retriever.start_span(
        "slow_fetch",
        context=trace.set_span_in_context(killed),
        attributes={"openinference.span.kind": "TOOL", "tool.name": "slow_fetch"},
    )
    provider.force_flush()
    os._exit(0)  # killed: neither span ends, nothing more is written


def main() -> None:
    if len(sys.argv) == 3:
        {"a": process_a, "b": process_b}[sys.argv[1]](Path(sys.argv[2]))
        return
    assert SCHEMA_VERSION == 2, "run this with the source of fce0610 first on PYTHONPATH"
    db = Path(sys.argv[1]).resolve()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    for name in ("a", "b"):
        subprocess.run([sys.executable, __file__, name, str(db)], check=True)
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        spans = conn.execute("SELECT count(*) FROM spans").fetchone()[0]
    finally:
        conn.close()
    print(f"{db}: schema version {version}, {spans} spans, {db.stat().st_size} bytes")


if __name__ == "__main__":
    main()
