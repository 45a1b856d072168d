"""What OTLP gives a span beyond the store's columns comes back out: `import` then `export --format
otlp`, through the real CLI, gives back bytesValue attributes (at the top and nested), the traceState
of a span and of a link, and the dropped counts of a span, an event and a link."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path

from google.protobuf import json_format  # type: ignore[import-untyped]
from helpers import run_cli
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from test_otlp import collector_parse

from otel_blackbox._spans.otlp_carried import ATTR_BYTES, ATTR_DROPPED_ATTRIBUTES, ATTR_TRACE_STATE
from otel_blackbox._spans.otlp_in.decoder import OtlpDecoder
from otel_blackbox._store.snapshot import ATTRIBUTES, EVENTS

TRACE_ID = bytes.fromhex("0af7651916cd43dd8448eb211c80319c")
SPAN_ID = bytes.fromhex("b7ad6b7169203331")
LINKED_TRACE = bytes.fromhex("1af7651916cd43dd8448eb211c80319c")
LINKED_SPAN = bytes.fromhex("c7ad6b7169203331")


def kv(key: str, value: AnyValue) -> KeyValue:
    return KeyValue(key=key, value=value)


def request() -> ExportTraceServiceRequest:
    """One span with every field the store has no column for."""
    now = time.time_ns()
    chunks = ArrayValue(values=[AnyValue(string_value="x"), AnyValue(bytes_value=b"hi")])
    nested = KeyValueList(values=[kv("a/b~c", AnyValue(bytes_value=b"\x01"))])
    attributes = [
        kv("blob", AnyValue(bytes_value=b"\x00\x01\x02\xff")),
        kv("chunks", AnyValue(array_value=chunks)),
        kv("nested", AnyValue(kvlist_value=nested)),
        kv("looks.like.base64", AnyValue(string_value="AAEC")),  # text, and stays text
    ]
    span = Span(
        trace_id=TRACE_ID,
        span_id=SPAN_ID,
        trace_state="vendor=abc,other=1",
        name="fetch",
        kind=Span.SPAN_KIND_CLIENT,
        start_time_unix_nano=now,
        end_time_unix_nano=now + 1_000_000,
        attributes=attributes,
        dropped_attributes_count=3,
        events=[
            Span.Event(
                time_unix_nano=now + 500,
                name="chunk",
                attributes=[kv("raw", AnyValue(bytes_value=b"\x00"))],
                dropped_attributes_count=4,
            )
        ],
        dropped_events_count=2,
        links=[
            Span.Link(
                trace_id=LINKED_TRACE, span_id=LINKED_SPAN, trace_state="k=v", dropped_attributes_count=5
            )
        ],
        dropped_links_count=1,
    )
    message = ExportTraceServiceRequest()
    resource_spans = message.resource_spans.add()
    resource_spans.resource.attributes.append(kv("service.name", AnyValue(string_value="svc")))
    resource_spans.scope_spans.add(spans=[span]).scope.name = "scope"
    return message


def otlp_json_line(message: ExportTraceServiceRequest) -> str:
    """As OTLP/JSON writes it: ProtoJSON, with trace and span ids as hex."""
    data = json_format.MessageToDict(message)
    for span in data["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        for holder in (span, *span.get("links", ())):
            for key in ("traceId", "spanId"):
                holder[key] = base64.b64decode(holder[key]).hex()
    return json.dumps(data)


def exported_span(db: Path, tmp_path: Path, name: str) -> tuple[Span, str]:
    out = tmp_path / name
    run_cli("export", "--format", "otlp", "-o", str(out), db=db, check=True)
    (line,) = out.read_text().splitlines()
    (resource_spans,) = collector_parse(line).resource_spans
    ((span,),) = [list(s.spans) for s in resource_spans.scope_spans]
    return span, line


def test_import_then_export_gives_back_bytes_trace_states_and_dropped_counts(tmp_path: Path) -> None:
    sent = request()
    original = sent.resource_spans[0].scope_spans[0].spans[0]
    source = tmp_path / "in.jsonl"
    source.write_text(otlp_json_line(sent) + "\n")
    db = tmp_path / "blackbox.db"
    result = run_cli("import", str(source), db=db)
    assert result.returncode == 0 and result.stderr == "", result.stderr

    span, line = exported_span(db, tmp_path, "out.jsonl")
    assert '"bytesValue":"AAEC/w=="' in line  # OTLP/JSON bytes: base64
    assert list(span.attributes) == list(original.attributes)  # bytes as bytes, nested ones too
    assert span.trace_state == "vendor=abc,other=1"
    assert (span.dropped_attributes_count, span.dropped_events_count, span.dropped_links_count) == (3, 2, 1)
    (event,) = span.events
    assert list(event.attributes) == list(original.events[0].attributes)
    assert event.dropped_attributes_count == 4
    (link,) = span.links
    assert (link.trace_id, link.span_id, link.trace_state) == (LINKED_TRACE, LINKED_SPAN, "k=v")
    assert link.dropped_attributes_count == 5 and list(link.attributes) == []

    # The export imports again as it was: a second round trip changes nothing.
    copy = tmp_path / "copy.db"
    run_cli("import", str(tmp_path / "out.jsonl"), db=copy, check=True)
    assert exported_span(copy, tmp_path, "again.jsonl")[1] == line


def test_protobuf_carries_the_same_fields_as_json() -> None:
    """`serve` decodes OTLP/protobuf: what it stores equals what `import` stores of the same spans."""
    sent = request()
    from_protobuf = OtlpDecoder().from_protobuf(sent.SerializeToString(), strict=True).snapshots
    from_json = OtlpDecoder().from_json(json.loads(otlp_json_line(sent))).snapshots
    assert from_protobuf == from_json
    (snapshot,) = from_protobuf
    attributes = snapshot[ATTRIBUTES]
    assert attributes["blob"] == "AAEC/w=="  # stored as base64 text (JSON has no bytes)
    assert attributes[ATTR_BYTES] == ["/blob", "/chunks/1", "/nested/a~1b~0c"]
    assert attributes[ATTR_TRACE_STATE] == "vendor=abc,other=1"
    assert attributes[ATTR_DROPPED_ATTRIBUTES] == 3
    assert snapshot[EVENTS][0][2] == {"raw": "AA==", ATTR_BYTES: ["/raw"], ATTR_DROPPED_ATTRIBUTES: 4}


def test_a_redacted_bytes_value_is_exported_as_the_text_stored(tmp_path: Path) -> None:
    """A bytes value under a secret's name is masked at import: its text is what can be given back."""
    sent = request()
    span = sent.resource_spans[0].scope_spans[0].spans[0]
    span.attributes.append(kv("api_key", AnyValue(bytes_value=b"sk-proj-0123456789abcdefghij")))
    source = tmp_path / "in.jsonl"
    source.write_text(otlp_json_line(sent) + "\n")
    db = tmp_path / "blackbox.db"
    run_cli("import", str(source), db=db, check=True)
    exported, _ = exported_span(db, tmp_path, "out.jsonl")
    masked = next(a.value for a in exported.attributes if a.key == "api_key")
    assert masked.WhichOneof("value") == "string_value" and "REDACTED" in masked.string_value
    assert next(a.value for a in exported.attributes if a.key == "blob").bytes_value == b"\x00\x01\x02\xff"
