"""Local flight recorder AND a Collector, side by side in one TracerProvider.

``BlackboxSpanProcessor`` writes every span to the local SQLite file the moment it starts (what
you read after a crash: a SIGKILLed process keeps its open spans there), and
``BatchSpanProcessor(OTLPSpanExporter(...))`` sends the same spans, with the same trace and span
ids, to an OpenTelemetry Collector (or straight to Phoenix, Jaeger, Tempo) where many services and
hosts meet. Neither depends on the other: when the network or the Collector is down, the local
file still has everything; when the disk cap evicts old traces, the backend still has them.

Run it against a Collector started with examples/collector/otel-collector.yaml::

    python examples/collector/side_by_side.py --endpoint http://127.0.0.1:4318/v1/traces --db blackbox.db
    otel-blackbox --db blackbox.db show <trace id printed above>

or import ``build_provider(endpoint, db_path)`` in your own code. docs/scaling.md has the context.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Tracer

from otel_blackbox import BlackboxSpanProcessor

__all__ = ["DEFAULT_ENDPOINT", "build_provider", "record_one_run"]

# The Collector's OTLP/HTTP receiver; the exporter posts to exactly this URL (path included).
DEFAULT_ENDPOINT = "http://127.0.0.1:4318/v1/traces"


def build_provider(
    endpoint: str = DEFAULT_ENDPOINT,
    db_path: str | Path = "blackbox.db",
    *,
    service_name: str = "support-agent",
    export_timeout_s: float = 10.0,
) -> TracerProvider:
    """A TracerProvider with the local recorder first and the OTLP/HTTP exporter second.

    ``endpoint`` is the full URL spans are POSTed to (``.../v1/traces``). The resource's
    ``service.name`` is what tells services apart once a Collector fans them in; the
    OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES environment variables are honoured as usual.
    Call ``provider.shutdown()`` at the end: it flushes both processors.
    """
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    # 1. The flight recorder: on disk from the moment a span starts, whatever happens next.
    provider.add_span_processor(BlackboxSpanProcessor(db_path))
    # 2. The shared view: ended spans, batched, to the Collector.
    exporter = OTLPSpanExporter(endpoint=endpoint, timeout=export_timeout_s)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def record_one_run(tracer: Tracer, question: str = "Where is order 1042?") -> str:
    """A small agent run (AGENT -> LLM, TOOL, LLM) with no network of its own; returns its trace id."""
    with tracer.start_as_current_span(
        "support-agent", attributes={"openinference.span.kind": "AGENT", "input.value": question}
    ) as root:
        with tracer.start_as_current_span(
            "ChatCompletion",
            attributes={
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o-mini",
                "input.value": question,
                "llm.token_count.prompt": 52,
                "llm.token_count.completion": 11,
                "llm.token_count.total": 63,
            },
        ):
            pass
        with tracer.start_as_current_span(
            "get_order_status",
            attributes={"openinference.span.kind": "TOOL", "tool.name": "get_order_status"},
        ) as tool:
            tool.set_attribute("output.value", '{"order": 1042, "status": "shipped"}')
        with tracer.start_as_current_span(
            "ChatCompletion",
            attributes={"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini"},
        ) as answer:
            answer.set_attribute("output.value", "Order 1042 has shipped.")
        root.set_attribute("output.value", "Order 1042 has shipped.")
        return format(root.get_span_context().trace_id, "032x")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--endpoint", default=DEFAULT_ENDPOINT, help=f"OTLP/HTTP URL ({DEFAULT_ENDPOINT})")
    parser.add_argument("--db", default="blackbox.db", help="the local SQLite file (blackbox.db)")
    args = parser.parse_args(argv)
    provider = build_provider(args.endpoint, args.db)
    trace_id = record_one_run(provider.get_tracer("side_by_side"))
    provider.shutdown()  # writes the last rows and sends the last batch (a failed send is logged)
    print(f"TRACE {trace_id}  (recorded in {args.db}, exported to {args.endpoint})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
