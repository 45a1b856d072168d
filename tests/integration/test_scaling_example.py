"""The tested example configuration of docs/scaling.md.

``examples/collector/side_by_side.py`` puts ``BlackboxSpanProcessor`` and
``BatchSpanProcessor(OTLPSpanExporter(...))`` in one TracerProvider. Against a tiny OTLP/HTTP
receiver written here (what a Collector's ``otlp`` receiver does: POST /v1/traces, a protobuf
``ExportTraceServiceRequest`` in, an empty ``ExportTraceServiceResponse`` out), the spans produced
once must land both in the SQLite file and at the receiver, with the same trace and span ids.
``otel-collector.yaml`` is checked for structure only: no Collector binary runs here.
"""

from __future__ import annotations

import gzip
import re
import socket
import subprocess
import sys
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from collector.side_by_side import DEFAULT_ENDPOINT, build_provider, record_one_run  # examples/ on sys.path
from helpers import EXAMPLES
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from otel_blackbox._store.connection import connect_reader
from otel_blackbox._store.queries import trace_spans

COLLECTOR_DIR = EXAMPLES / "collector"
SpanKey = tuple[str, str, str | None, str]  # trace id, span id, parent span id, name


class OTLPReceiver:
    """POST /v1/traces on 127.0.0.1: parses each protobuf request, answers 200 with an empty response."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.content_types: list[str] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                encoding = self.headers.get("Content-Encoding", "")
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                if self.path != "/v1/traces":
                    self.send_error(404)
                    return
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                with receiver._lock:
                    receiver.requests.append(request)
                    receiver.content_types.append(self.headers.get("Content-Type", ""))
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:  # quiet test output
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def endpoint(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}/v1/traces"

    def spans(self) -> set[SpanKey]:
        with self._lock:
            requests = list(self.requests)
        return {
            (
                span.trace_id.hex(),
                span.span_id.hex(),
                span.parent_span_id.hex() or None,
                span.name,
            )
            for request in requests
            for resource_spans in request.resource_spans
            for scope_spans in resource_spans.scope_spans
            for span in scope_spans.spans
        }

    def service_names(self) -> set[str]:
        with self._lock:
            requests = list(self.requests)
        return {
            attribute.value.string_value
            for request in requests
            for resource_spans in request.resource_spans
            for attribute in resource_spans.resource.attributes
            if attribute.key == "service.name"
        }

    def __enter__(self) -> OTLPReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def receiver() -> Iterator[OTLPReceiver]:
    with OTLPReceiver() as running:
        yield running


def recorded(db: Path, trace_id: str) -> set[SpanKey]:
    conn = connect_reader(db)
    try:
        return {(s.trace_id, s.span_id, s.parent_span_id, s.name) for s in trace_spans(conn, trace_id)}
    finally:
        conn.close()


def test_spans_land_in_sqlite_and_at_the_receiver_with_the_same_ids(
    receiver: OTLPReceiver, db_path: Path
) -> None:
    provider = build_provider(receiver.endpoint, db_path, service_name="scaling-test")
    trace_id = record_one_run(provider.get_tracer("test_scaling_example"))
    provider.shutdown()  # flushes both processors

    local = recorded(db_path, trace_id)
    assert len(local) == 4
    assert {name for *_, name in local} == {"support-agent", "ChatCompletion", "get_order_status"}
    assert receiver.spans() == local  # same trace id, span ids, parents and names, nothing else
    assert receiver.service_names() == {"scaling-test"}
    assert receiver.content_types and set(receiver.content_types) == {"application/x-protobuf"}


def test_the_recorder_keeps_every_span_when_the_collector_is_down(db_path: Path) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = build_provider(f"http://127.0.0.1:{port}/v1/traces", db_path, export_timeout_s=0.5)
    trace_id = record_one_run(provider.get_tracer("test_scaling_example"))
    provider.shutdown()  # the export fails (and is logged); the local file does not depend on it

    assert len(recorded(db_path, trace_id)) == 4


def test_side_by_side_runs_as_a_script(receiver: OTLPReceiver, tmp_path: Path) -> None:
    db = tmp_path / "script.db"
    script = COLLECTOR_DIR / "side_by_side.py"
    result = subprocess.run(
        [sys.executable, str(script), "--endpoint", receiver.endpoint, "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    match = re.match(r"TRACE ([0-9a-f]{32})", result.stdout)
    assert match, result.stdout
    assert receiver.spans() == recorded(db, match.group(1))


# -- otel-collector.yaml: structure only (no Collector binary here) ---------------------------------

SECTIONS = ("receivers", "processors", "exporters")
KNOWN_TYPES = {
    "receivers": {"otlp", "otlpjsonfile"},
    "processors": {"batch", "memory_limiter"},
    "exporters": {"otlphttp", "file"},
}


@pytest.fixture(scope="module")
def collector_config() -> dict[str, Any]:
    data = yaml.safe_load((COLLECTOR_DIR / "otel-collector.yaml").read_text())
    assert isinstance(data, dict)
    return data


def test_collector_config_references_only_what_it_defines(collector_config: dict[str, Any]) -> None:
    pipelines = collector_config["service"]["pipelines"]
    assert set(pipelines) == {"traces"}
    used: dict[str, set[str]] = {section: set() for section in SECTIONS}
    for pipeline in pipelines.values():
        assert pipeline["receivers"] and pipeline["exporters"]
        for section in SECTIONS:
            names = pipeline.get(section, [])
            assert len(names) == len(set(names)), f"a {section[:-1]} listed twice"
            used[section].update(names)
    for section in SECTIONS:
        defined = set(collector_config[section])
        assert used[section] <= defined, f"undefined {section}: {used[section] - defined}"
        assert defined <= used[section], f"defined but unused {section}: {defined - used[section]}"
        for component_id in defined:  # "type" or "type/name"
            assert component_id.split("/", 1)[0] in KNOWN_TYPES[section], component_id
    assert set(collector_config) == {*SECTIONS, "service"}


def test_collector_config_matches_the_documented_setup(collector_config: dict[str, Any]) -> None:
    receivers, exporters = collector_config["receivers"], collector_config["exporters"]
    assert receivers["otlp"]["protocols"]["http"]["endpoint"] == "127.0.0.1:4318"
    assert receivers["otlpjsonfile"]["include"]  # for `otel-blackbox export --format otlp` files
    assert exporters["otlphttp/phoenix"]["endpoint"] == "http://127.0.0.1:6006"
    assert exporters["file"]["path"]
    assert collector_config["service"]["pipelines"]["traces"]["processors"][-1] == "batch"
    # The example's default endpoint is this receiver's /v1/traces.
    http_endpoint = receivers["otlp"]["protocols"]["http"]["endpoint"]
    assert f"http://{http_endpoint}/v1/traces" == DEFAULT_ENDPOINT
