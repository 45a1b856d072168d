"""``otel-blackbox report``: one self-contained HTML page per trace or cassette, with hostile values inert."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers import Recorder, run_cli, vector, vector_path
from opentelemetry import trace

from otel_blackbox._render.html_report import embed_json

SCRIPT_CLOSE = "</script><script>alert(1)</script>"
ATTR_BREAK = '"><img src=x onerror=alert(1)>'
HOSTILE = SCRIPT_CLOSE + ATTR_BREAK


def _data(page: str) -> dict[str, object]:
    found = re.search(r'<script type="application/json" id="blackbox-data">(.*?)</script>', page, re.S)
    assert found, "no embedded data"
    value: dict[str, object] = json.loads(found.group(1))
    return value


def _assert_self_contained(page: str) -> None:
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", page, re.I)
    assert "<link" not in page.lower()
    assert not re.search(r"<script[^>]*\ssrc\s*=", page, re.I)
    assert not re.search(r"\b(?:fetch|XMLHttpRequest|WebSocket|EventSource|import\s*\()", page)
    assert ".innerHTML" not in page and "outerHTML" not in page and "document.write" not in page
    assert page.lower().count("<script") == 2 and page.lower().count("</script") == 2


def _record(recorder: Recorder, name_suffix: str = "", hostile: str = "") -> str:
    """A run: an agent, an LLM call with messages and a tool call, a failing tool, an open tool span."""
    tracer = recorder.tracer
    with tracer.start_as_current_span(
        "agent" + name_suffix,
        attributes={
            "openinference.span.kind": "AGENT",
            "session.id": "sess-1",
            "user.id": "alice",
            "input.value": "Weather?" + hostile,
        },
    ) as root:
        with tracer.start_as_current_span(
            "ChatCompletion" + name_suffix,
            attributes={
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o-mini",
                "llm.token_count.prompt": 20,
                "llm.token_count.completion": 5,
                "llm.token_count.total": 25,
                "llm.input_messages.0.message.role": "system",
                "llm.input_messages.0.message.content": "You are helpful." + hostile,
                "llm.input_messages.1.message.role": "user",
                "llm.input_messages.1.message.content": "What is the weather in Paris?",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_abc",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_weather",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": json.dumps(
                    {"city": "Paris" + hostile}
                ),
                "custom.note": hostile or "plain",
            },
        ):
            pass
        try:
            with tracer.start_as_current_span(
                "get_weather" + name_suffix,
                attributes={"openinference.span.kind": "TOOL", "tool.name": "get_weather"},
            ):
                raise ValueError("weather service unavailable for Paris" + hostile)
        except ValueError:
            pass
        tracer.start_span(
            "slow_tool" + name_suffix,
            context=trace.set_span_in_context(root),
            attributes={"openinference.span.kind": "TOOL", "input.value": "{}"},
        )  # never ended: still open when the recording stops
        trace_id = format(root.get_span_context().trace_id, "032x")
    recorder.flush()
    return trace_id


def test_trace_report_is_self_contained_with_one_entry_per_span(recorder: Recorder, tmp_path: Path) -> None:
    trace_id = _record(recorder)
    out = tmp_path / "report.html"
    result = run_cli("report", trace_id[:8], "-o", str(out), db=recorder.db_path, check=True)
    assert f"trace {trace_id}, 4 spans" in result.stdout
    page = out.read_text(encoding="utf-8")
    _assert_self_contained(page)
    data = _data(page)
    assert data["kind"] == "trace"
    header = data["trace"]
    assert isinstance(header, dict)
    assert header["traceId"] == trace_id and header["rootName"] == "agent"
    assert header["spanCount"] == 4 and header["openCount"] == 1 and header["status"] == "open"
    assert header["tokensByModel"] == [{"model": "gpt-4o-mini", "input": 20, "output": 5, "total": 25}]
    assert header["sessions"] == ["sess-1"] and header["users"] == ["alice"]
    spans = data["spans"]
    assert isinstance(spans, list) and len(spans) == 4
    assert len({s["spanId"] for s in spans}) == 4
    by_name = {s["name"]: s for s in spans}
    assert spans[0]["name"] == "agent" and by_name["agent"]["depth"] == 0
    assert all(by_name[n]["depth"] == 1 for n in ("ChatCompletion", "get_weather", "slow_tool"))
    llm = by_name["ChatCompletion"]
    assert [m["role"] for m in llm["inputMessages"]] == ["system", "user"]
    call = llm["outputMessages"][0]["toolCalls"][0]
    assert call == {"id": "call_abc", "name": "get_weather", "arguments": '{"city": "Paris"}'}
    tool = by_name["get_weather"]
    assert tool["status"] == "error" and tool["kind"] == "TOOL"
    (exc,) = tool["exceptions"]
    assert exc["type"] == "ValueError" and "unavailable for Paris" in exc["message"]
    assert "Traceback" in exc["stacktrace"]
    opened = by_name["slow_tool"]
    assert opened["open"] is True and opened["status"] == "open"
    assert opened["endOffsetNs"] >= opened["startOffsetNs"]
    assert all(0 <= s["startOffsetNs"] <= s["endOffsetNs"] <= header["durationNs"] for s in spans)
    # One process, one resource: embedded once, every span pointing to it.
    resources = data["resources"]
    assert isinstance(resources, list) and len(resources) == 1
    assert resources[0]["service.name"] and "telemetry.sdk.version" in resources[0]
    assert {s["resource"] for s in spans} == {0}


def test_hostile_values_stay_inert(recorder: Recorder, tmp_path: Path) -> None:
    trace_id = _record(recorder, name_suffix=HOSTILE, hostile=HOSTILE)
    out = tmp_path / "hostile.html"
    run_cli("report", trace_id, "-o", str(out), db=recorder.db_path, check=True)
    page = out.read_text(encoding="utf-8")
    _assert_self_contained(page)  # exactly the page's own two </script> tags
    for raw in (SCRIPT_CLOSE, ATTR_BREAK, "<img", "<script>alert", "onerror=alert(1)>", "\u2028"):
        assert raw not in page, raw
    escaped = json.dumps(HOSTILE)[1:-1].replace("<", "\\u003c").replace(">", "\\u003e")
    assert escaped in page  # the payload is there, only in escaped JSON form
    data = _data(page)
    spans = data["spans"]
    assert isinstance(spans, list)
    names = {s["name"] for s in spans}
    assert names == {n + HOSTILE for n in ("agent", "ChatCompletion", "get_weather", "slow_tool")}
    llm = next(s for s in spans if s["name"].startswith("ChatCompletion"))
    assert llm["attributes"]["custom.note"] == HOSTILE
    assert llm["inputMessages"][0]["content"] == "You are helpful." + HOSTILE
    tool = next(s for s in spans if s["name"].startswith("get_weather"))
    assert tool["exceptions"][0]["message"].endswith(HOSTILE)


@pytest.mark.parametrize(
    "value",
    [
        "</script>",
        "</SCRIPT >",
        "<!--<script>",
        "a\u2028b\u2029c & d",
        {"k</script>": [1.5, float("nan"), float("inf"), None, True]},
        "\ud800 lone surrogate",
    ],
)
def test_embed_json_cannot_close_the_script(value: object) -> None:
    text = embed_json(value)
    assert not set("<>&\u2028\u2029") & set(text)
    text.encode("utf-8")  # no lone surrogate left to break the file
    parsed = json.loads(text)
    if isinstance(value, str):
        assert parsed == value


def test_cassette_report_of_a_fork(tmp_path: Path) -> None:
    out = tmp_path / "fork.html"
    result = run_cli("report", str(vector_path("fork-child")), "-o", str(out), check=True)
    cassette = vector("fork-child")
    assert f"cassette {cassette.id}, {len(cassette.steps)} steps" in result.stdout
    page = out.read_text(encoding="utf-8")
    _assert_self_contained(page)
    assert cassette.parent_id and cassette.forked_from_step_id
    assert cassette.parent_id in page and cassette.forked_from_step_id in page
    for step in cassette.steps:
        assert step.hash[:8] in page
    data = _data(page)
    info = data["cassette"]
    assert isinstance(info, dict)
    assert info["parentId"] == cassette.parent_id
    assert info["forkedFromStepId"] == cassette.forked_from_step_id
    assert info["outcome"]["status"] == "success" and info["toolRounds"] >= 1
    steps = data["steps"]
    assert isinstance(steps, list)
    assert [(s["index"], s["type"], s["hashShort"]) for s in steps] == [
        (s.index, s.type, s.hash[:8]) for s in cassette.steps
    ]
    assert all(s["description"] for s in steps)


def test_report_errors_are_one_line(recorder: Recorder, tmp_path: Path) -> None:
    _record(recorder)
    missing = run_cli("report", "ffffffff", "-o", str(tmp_path / "x.html"), db=recorder.db_path)
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1
    assert "no trace with id" in missing.stderr and not (tmp_path / "x.html").exists()
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    broken = run_cli("report", str(bad), "-o", str(tmp_path / "y.html"))
    assert broken.returncode == 2 and broken.stderr.count("\n") == 1
    assert not (tmp_path / "y.html").exists()
    no_output = run_cli("report", "abc")
    assert no_output.returncode == 2 and "--output" in no_output.stderr
    assert "Example:" in run_cli("report", "--help", check=True).stdout
