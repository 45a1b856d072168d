"""Huge and hostile spans are stored bounded and shown safely.

Through the real recorder (BlackboxSpanProcessor on a real SQLite file): one attribute of 50 MB, a
span of 10,000 attributes, span names with terminal control sequences. The terminal commands print
them escaped; the HTML report and the viewer, in a real headless Chromium, show XSS payloads as
text and run none of them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from helpers import CHROMIUM, Recorder, figure, open_page
from opentelemetry import trace
from opentelemetry.sdk.trace import SpanLimits
from test_hostile_input import check_run, cli

from otel_blackbox._cassette.io import save_cassette
from otel_blackbox._cassette.model import Cassette
from otel_blackbox._spans.redact import TRUNCATION_KEY
from otel_blackbox._store.rows import ATTR_DROPPED, ATTR_DROPPED_BYTES, span_bytes_limit
from otel_blackbox._web.server import make_server

pytestmark = pytest.mark.reliability

MAX_ATTRIBUTE_BYTES = 256 * 1024  # the default max_attribute_bytes
# Raised far past the SDK's default of 128 attributes, so that bounding a span is our store's job.
LIMITS = SpanLimits(max_attributes=20_000, max_span_attributes=20_000, max_event_attributes=20_000)
TERMINAL = "\x1b[2J\x1b[31mred\r\x00\x07\u202eevil\x9b\ud800"  # clear screen, colour, CR, NUL, BEL, RLO...


def _rows(recorder: Recorder, name: str) -> list[Any]:
    """The span's attributes as read back (stored apart when long: _store.contents), and their
    size in bytes of JSON."""
    query = "SELECT attributes, attributes_content, model FROM spans WHERE name = ?"
    return [{**r, "stored": len(r["attributes"].encode())} for r in recorder.rows(query, name)]


# --- 5. huge spans, stored bounded ------------------------------------------------------------------


def test_an_attribute_of_50_mb(make_recorder: Callable[..., Recorder]) -> None:
    recorder = make_recorder(span_limits=LIMITS)
    value = "x" * 50 * 1024 * 1024
    started = time.perf_counter()
    with recorder.tracer.start_as_current_span("fifty", attributes={"input.value": value}):
        pass
    on_the_agent = time.perf_counter() - started
    started = time.perf_counter()
    recorder.flush()
    written = time.perf_counter() - started
    (row,) = _rows(recorder, "fifty")
    marker = json.loads(json.loads(row["attributes"])["input.value"])
    assert marker[TRUNCATION_KEY] is True and marker["original_bytes"] == len(value)
    assert marker["sha256"] == hashlib.sha256(value.encode()).hexdigest()  # still comparable
    assert row["stored"] < 4096
    figure("a 50 MB attribute", "bytes stored (attributes)", row["stored"])
    figure("a 50 MB attribute", "time on the agent's thread", f"{on_the_agent * 1000:.1f} ms")
    figure("a 50 MB attribute", "writer time to store it", f"{written * 1000:.0f} ms")


@pytest.mark.parametrize(("count", "size"), [(10_000, 8 * 1024), (10_000, 16)], ids=["8KB-each", "16B-each"])
def test_ten_thousand_attributes(make_recorder: Callable[..., Recorder], count: int, size: int) -> None:
    recorder = make_recorder(span_limits=LIMITS)
    name = f"{count}x{size}"
    started = time.perf_counter()
    with recorder.tracer.start_as_current_span(name, attributes={"openinference.span.kind": "LLM"}) as span:
        for n in range(count):
            span.set_attribute(f"attr.{n}", str(n).rjust(size, "y"))
        span.set_attribute("llm.model_name", "gpt-late")  # set last: its column is still filled
    on_the_agent = time.perf_counter() - started
    recorder.flush()
    (row,) = _rows(recorder, name)
    attributes = json.loads(row["attributes"])
    assert row["model"] == "gpt-late"
    limit = span_bytes_limit(MAX_ATTRIBUTE_BYTES)
    assert row["stored"] <= limit
    if count * size > limit:  # 80 MB: the attributes that fit, in order, and what was left out
        kept = [k for k in attributes if k.startswith("attr.")]
        assert kept == [f"attr.{n}" for n in range(len(kept))]
        assert attributes[ATTR_DROPPED] == count - len(kept)  # the small ones after still fit
        assert attributes[ATTR_DROPPED_BYTES] > count * size - limit
    else:  # 160 KB: all of it, nothing dropped
        assert len(attributes) == count + 2 and ATTR_DROPPED not in attributes
    figure(f"10,000 attributes of {size} B", "bytes stored (attributes)", row["stored"])
    figure(f"10,000 attributes of {size} B", "time on the agent's thread", f"{on_the_agent * 1000:.0f} ms")


def test_events_and_links_past_the_span_limit(make_recorder: Callable[..., Recorder]) -> None:
    recorder = make_recorder()  # the SDK's default limits: 128 events, 128 links
    big = "e" * 200_000  # under max_attribute_bytes: each value is kept whole, the span is not
    links = [
        trace.Link(trace.SpanContext(0xABC, n + 1, is_remote=True), {"note": big}) for n in range(32)
    ]  # 6.4 MB
    with recorder.tracer.start_as_current_span("many-events", links=links) as span:
        for n in range(64):  # 12.8 MB
            span.add_event(f"event-{n}", {"payload": big})
    recorder.flush()
    query = (
        "SELECT length(CAST(links AS BLOB)) AS links_bytes,"
        " events, links, attributes, attributes_content, events_content FROM spans WHERE name = ?"
    )
    (row,) = recorder.rows(query, "many-events")
    row["events_bytes"] = len(row["events"].encode())  # read back: stored apart (_store.contents)
    limit = span_bytes_limit(MAX_ATTRIBUTE_BYTES)
    assert row["events_bytes"] <= limit and row["links_bytes"] <= limit
    events, stored_links = json.loads(row["events"]), json.loads(row["links"])
    attributes = json.loads(row["attributes"])
    assert [e["name"] for e in events] == [f"event-{n}" for n in range(len(events))]  # the first, in order
    assert all(e["attributes"]["payload"] == big for e in events)  # whole, not cut
    assert [link["span_id"] for link in stored_links] == [f"{n + 1:016x}" for n in range(len(stored_links))]
    assert attributes["blackbox.events.dropped"] == 64 - len(events) > 0
    assert attributes["blackbox.links.dropped"] == 32 - len(stored_links) > 0
    assert attributes["blackbox.events.dropped_bytes"] > (64 - len(events)) * 200_000
    assert attributes["blackbox.links.dropped_bytes"] > (32 - len(stored_links)) * 200_000
    name = "64 events and 32 links of 200 KB"
    figure(name, "bytes stored (events / links)", f"{row['events_bytes']:,} / {row['links_bytes']:,}")
    figure(name, "kept (events / links)", f"{len(events)} / {len(stored_links)}")


def test_a_20_mb_span_name_and_status_message(make_recorder: Callable[..., Recorder]) -> None:
    recorder = make_recorder()
    huge = "n" * 20 * 1024 * 1024
    with recorder.tracer.start_as_current_span(huge) as span:
        span.set_status(trace.Status(trace.StatusCode.ERROR, huge))
    recorder.flush()
    (row,) = recorder.rows("SELECT name, status_message FROM spans")
    # Plain text cut short, with a plain-text mark (never an attribute's JSON marker): a name is shown.
    mark = f"… [truncated: {len(huge):,} characters]"
    assert row["name"] == "n" * 1024 + mark
    assert row["status_message"] == "n" * (256 * 1024 // 4) + mark


def test_a_lone_surrogate_does_not_lose_the_spans_written_with_it(
    make_recorder: Callable[..., Recorder],
) -> None:
    """Python text can hold one and UTF-8 cannot: SQLite refused the whole batch, the span's neighbours
    with it, and force_flush timed out."""
    recorder = make_recorder()
    with recorder.tracer.start_as_current_span("before"):
        pass
    with recorder.tracer.start_as_current_span(
        "bad \ud800", attributes={"k\udfff": "v\ud801", "llm.model_name": "\udc80"}
    ) as span:
        span.add_event("e\ud800", {"x": "\ud800"})
        span.set_status(trace.Status(trace.StatusCode.ERROR, "\ud800"))
    with recorder.tracer.start_as_current_span("after"):
        pass
    recorder.flush()  # asserts force_flush returned True
    rows = recorder.rows(
        "SELECT name, model, attributes, events, status_message FROM spans ORDER BY start_ns"
    )
    assert [r["name"] for r in rows] == ["before", "bad \ufffd", "after"]
    bad = rows[1]
    assert bad["model"] == bad["status_message"] == "\ufffd"
    assert json.loads(bad["attributes"])["k\ufffd"] == "v\ufffd" and "e\ufffd" in bad["events"]


# --- 5. control characters, shown safely ------------------------------------------------------------

CALL = "llm.output_messages.0.message.tool_calls.0.tool_call"


def record_run(recorder: Recorder, value: str) -> str:
    """An agent run with `value` in every name and text a span can carry: span names, session id,
    input, model, message role and content, tool call id, name and arguments, the tool's kind and
    name, an event, an exception's message and stack trace, the status message. Its trace id."""
    tracer = recorder.tracer
    root_attributes = {"openinference.span.kind": "AGENT", "session.id": value, "input.value": value}
    llm: dict[str, str | int] = {
        "openinference.span.kind": "LLM",
        "llm.model_name": value,
        "llm.input_messages.0.message.role": value,
        "llm.input_messages.0.message.content": value,
        "llm.output_messages.0.message.role": "assistant",
        f"{CALL}.id": value,
        f"{CALL}.function.name": value,
        f"{CALL}.function.arguments": json.dumps({"q": value}),
        "llm.token_count.prompt": 3,
        "custom.note": value,
    }
    with tracer.start_as_current_span(f"agent {value}", attributes=root_attributes) as root:
        with tracer.start_as_current_span(f"llm {value}", attributes=llm):
            pass
        try:
            tool = {"openinference.span.kind": value, "tool.name": value}
            with tracer.start_as_current_span(f"tool {value}", attributes=tool) as span:
                span.add_event(value, {value: value})
                raise ValueError(value)
        except ValueError:
            pass
    recorder.flush()
    return format(root.get_span_context().trace_id, "032x")


@pytest.fixture
def terminal_trace(make_recorder: Callable[..., Recorder]) -> tuple[Recorder, str]:
    recorder = make_recorder()
    return recorder, record_run(recorder, TERMINAL)


def test_terminal_commands_escape_control_characters(terminal_trace: tuple[Recorder, str]) -> None:
    recorder, trace_id = terminal_trace
    db = recorder.db_path
    names = [row["name"] for row in recorder.rows("SELECT name FROM spans ORDER BY start_ns")]
    # Stored as they came (a lone surrogate, which UTF-8 cannot hold, becomes U+FFFD).
    assert names[0] == f"agent {TERMINAL}".replace("\ud800", "\ufffd")
    shown = 0
    for argv in (
        *(["list"], ["list", "--json"], ["errors"], ["errors", "--json"], ["stats"]),
        *(["show", trace_id], ["show", trace_id, "-v"], ["show", trace_id, "-v", "--full"]),
        *(["show", trace_id, "--json"], ["export"], ["export", "--format", "otlp"]),
        ["cassette", trace_id, "-o", str(db.parent / "run.json"), "--force"],  # no final answer: unverifiable
    ):
        run = cli("--db", str(db), *argv)
        check_run(run, codes=(0,))  # no raw control character on either stream
        shown += run.stdout.count("\\x1b[2J") + run.stdout.count("\\u001b[2J")
    assert shown > 20  # the sequences are there, visibly escaped
    run = cli("inspect", str(db.parent / "run.json"))
    check_run(run, codes=(0,))
    assert "\\x1b[2J" in run.stdout


# --- 6. the HTML report and the viewer run nothing -------------------------------------------------

XSS = [
    "<script>window.__pwned=1;alert(1)</script>",
    "</script><script>window.__pwned=2;alert(2)</script>",
    '<img src=x onerror="window.__pwned=3;alert(3)">',
    '"><svg onload=alert(4)>',
    "javascript:alert(5)",
    "</textarea><script>alert(6)</script>",
    "<!--",
    "\u2028\u2029",
    "'};alert(7);//",
    "${alert(8)}",
    "<style>body{display:none}</style>",
    "<iframe srcdoc='<script>alert(9)</script>'></iframe>",
]
PAYLOAD = " ".join(XSS)
# Nothing the pages build themselves: any of these in the DOM was injected.
INJECTED = "img, svg, iframe, object, embed, body style, textarea, [onerror], [onload], a[href^=javascript]"


def _xss_cassette(path: Path) -> None:
    cassette = Cassette(f"run {PAYLOAD}", 0, parent_id=PAYLOAD, forked_from_step_id=PAYLOAD)
    call = {"toolCallId": PAYLOAD, "toolName": PAYLOAD, "toolInput": {"q": PAYLOAD}}
    cassette.append("model_input", {"messages": [{"role": "user", "content": PAYLOAD}], "model": PAYLOAD}, 0)
    cassette.append("model_output", {"type": "tool_calls", "calls": [call]}, 1)
    cassette.append("tool_call", call, 2)
    cassette.append("tool_result", {"toolCallId": PAYLOAD, "toolName": PAYLOAD, "error": PAYLOAD}, 3)
    cassette.append("model_output", {"type": "final_answer", "text": PAYLOAD}, 4)
    cassette.append("metadata", {"event": "run_completed", "status": "success", "result": PAYLOAD}, 5)
    save_cassette(cassette, path)


def _nothing_ran(page: Any, seen: dict[str, list[str]], own_origin: str = "", scripts: int = 2) -> None:
    """No dialog, no error, no injected element, no script but the page's own `scripts`, no request
    but to the page's own origin."""
    assert seen["dialogs"] == [] and seen["errors"] == [], seen
    assert all(own_origin and url.startswith(own_origin) for url in seen["requests"]), seen["requests"]
    assert page.evaluate("window.__pwned") is None
    assert page.locator(INJECTED).count() == 0
    assert page.locator("script").count() == scripts


@pytest.fixture
def xss_trace(make_recorder: Callable[..., Recorder]) -> tuple[Recorder, str]:
    recorder = make_recorder()
    return recorder, record_run(recorder, PAYLOAD)


needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="needs Debian's chromium (make test installs it)"
)


@contextlib.contextmanager
def _viewer(db_path: Path) -> Iterator[str]:
    """The viewer on a free port of 127.0.0.1 for the length of the block; its origin."""
    server = make_server(db_path, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@needs_chromium
def test_trace_report_shows_payloads_as_text(
    browser: Any, xss_trace: tuple[Recorder, str], tmp_path: Path
) -> None:
    recorder, trace_id = xss_trace
    out = tmp_path / "report.html"
    check_run(cli("--db", str(recorder.db_path), "report", trace_id, "-o", str(out)), codes=(0,))
    page, seen = open_page(browser, out.as_uri(), ".bar")
    assert page.locator(".bar").count() == 3
    for bar in page.locator(".bar").all():
        bar.click()
        details = page.text_content("#details") or ""
        assert PAYLOAD in details  # its name, at least, shown literally
    page.locator(".bar").nth(1).click()  # the LLM span: model, message, tool call, arguments
    details = page.text_content("#details") or ""
    assert details.count(PAYLOAD) >= 4 and '"q": ' + json.dumps(PAYLOAD, ensure_ascii=False) in details
    page.locator(".bar").nth(2).click()  # the tool span: the exception and its stack trace
    assert (page.text_content("#details") or "").count(PAYLOAD) >= 3
    page.fill("#search", XSS[0])  # the search box takes a payload too
    _nothing_ran(page, seen)
    page.close()


@needs_chromium
def test_cassette_report_shows_payloads_as_text(browser: Any, tmp_path: Path) -> None:
    cassette, out = tmp_path / "run.json", tmp_path / "run.html"
    _xss_cassette(cassette)
    check_run(cli("report", str(cassette), "-o", str(out)), codes=(0,))
    page, seen = open_page(browser, out.as_uri(), "tr.step")
    assert PAYLOAD in (page.text_content("#header") or "")
    steps = page.locator("tr.step")
    assert steps.count() == 6
    for n in range(steps.count()):
        steps.nth(n).click()
        details = page.text_content("#details") or ""
        assert json.dumps(PAYLOAD, ensure_ascii=False)[1:-1] in details  # the payload's JSON, as text
    _nothing_ran(page, seen)
    page.close()


@needs_chromium
def test_viewer_pages_show_payloads_as_text(browser: Any, xss_trace: tuple[Recorder, str]) -> None:
    recorder, trace_id = xss_trace
    with _viewer(recorder.db_path) as origin:
        page, seen = open_page(browser, f"{origin}/", "tbody#rows tr")
        assert f"agent {PAYLOAD}" in (page.text_content("tbody#rows") or "")
        # The list refreshes itself from /api/traces with textContent: wait for one refresh.
        page.wait_for_function(
            "document.getElementById('note').textContent.startsWith('updated')", timeout=10_000
        )
        assert f"agent {PAYLOAD}" in (page.text_content("tbody#rows") or "")
        _nothing_ran(page, seen, origin, scripts=1)
        page.close()
        # The filters are echoed into the form; a bad one into the 400 page.
        page, seen = open_page(browser, f"{origin}/?{urlencode({'q': XSS[2], 'session': XSS[3]})}", "form")
        assert (page.input_value("input[name=q]"), page.input_value("input[name=session]")) == (
            XSS[2],
            XSS[3],
        )
        _nothing_ran(page, seen, origin, scripts=1)
        page.close()
        page, seen = open_page(browser, f"{origin}/?{urlencode({'since': XSS[0]})}", "h1")
        assert XSS[0] in (page.text_content("body") or "")
        seen["errors"] = [e for e in seen["errors"] if "status of 400" not in e]  # the page itself is the 400
        _nothing_ran(page, seen, origin, scripts=0)
        page.close()
        page, seen = open_page(browser, f"{origin}/trace/{trace_id}", ".bar")
        for bar in page.locator(".bar").all():
            bar.click()
            assert PAYLOAD in (page.text_content("#details") or "")
        _nothing_ran(page, seen, origin)
        page.close()


@needs_chromium
def test_report_and_viewer_show_bidi_controls_as_escapes(
    browser: Any, make_recorder: Callable[..., Recorder], tmp_path: Path
) -> None:
    # Obeyed, the override would show "invoice\u202efdp.exe" as "invoiceexe.pdf".
    spoof = "invoice\u202efdp.exe \u2066isolate\u2069 \u200fmark"
    escaped = "invoice\\u202efdp.exe \\u2066isolate\\u2069 \\u200fmark"
    recorder = make_recorder()
    trace_id = record_run(recorder, spoof)
    out = tmp_path / "report.html"
    check_run(cli("--db", str(recorder.db_path), "report", trace_id, "-o", str(out)), codes=(0,))
    page, seen = open_page(browser, out.as_uri(), ".bar")
    for n in range(page.locator(".bar").count()):
        page.locator(".bar").nth(n).click()
        shown = page.inner_text("body")
        assert escaped in shown and not re.search("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]", shown)
    assert page.title() == f"trace {trace_id[:8]} \u2013 agent {escaped}"
    assert escaped in (page.locator(".bar").first.get_attribute("title") or "")  # the hover text
    _nothing_ran(page, seen)
    page.close()
    with _viewer(recorder.db_path) as origin:
        page, seen = open_page(browser, f"{origin}/", "tbody#rows tr")
        assert f"agent {escaped}" in page.inner_text("tbody#rows")  # the root name and the session
        page.wait_for_function(
            "document.getElementById('note').textContent.startsWith('updated')", timeout=10_000
        )
        assert page.inner_text("tbody#rows").count(escaped) == 2  # refreshed from /api/traces alike
        _nothing_ran(page, seen, origin, scripts=1)
        page.close()


def test_terminal_shows_the_line_separators_escaped(xss_trace: tuple[Recorder, str]) -> None:
    """U+2028 and U+2029 end a line for some terminals and editors: `show -v` keeps them visible."""
    recorder, trace_id = xss_trace
    run = cli("--db", str(recorder.db_path), "show", trace_id, "-v")
    check_run(run, codes=(0,))
    assert "\\u2028\\u2029" in run.stdout
