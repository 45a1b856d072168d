"""Runs (one recorder's lifetime in one process) and sessions: `runs`, `cassette --run/--session`,
`report --run/--session`, and schema version 2, which gave runs their ids, on a real older file.

The recording is real: two agent processes (subprocesses, each its own BlackboxSpanProcessor)
and two processor lifetimes in this process (the same pid: spans go to the run that was current
when they were written). The first agent has no root span, as LangChain or
opentelemetry-instrumentation-openai-v2 give: each model call and tool call is a trace of its own.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers import CHROMIUM, TESTS, Recorder, open_page, run_cli
from openinference.semconv.trace import (
    MessageAttributes,
    OpenInferenceSpanKindValues,
    SpanAttributes,
    ToolCallAttributes,
)
from opentelemetry import trace
from opentelemetry.trace import Tracer

from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import Cassette, terminal_outcome, tool_call_sequence
from otel_blackbox._cassette.verify import verify_cassette
from otel_blackbox._store import runs
from otel_blackbox._store.connection import connect_reader, connect_writer
from otel_blackbox._store.queries import TraceSummary
from otel_blackbox._store.schema import MIGRATIONS, SCHEMA_VERSION, SPAN_COLUMNS, _statements
from otel_blackbox.errors import StoreError

SESSION = "chat-1"
SYSTEM = "You are a weather assistant."
LLM = OpenInferenceSpanKindValues.LLM.value
TOOL = OpenInferenceSpanKindValues.TOOL.value
RUN_ID = re.compile(r"^[0-9a-f]{16}$")

# What a subprocess runs: one agent scenario of this module, recorded into the database given.
_AGENT = f"""
import sys
sys.path[:0] = [{str(Path(__file__).parent)!r}, {str(TESTS)!r}]
import os, test_runs
from helpers import Recorder
recorder = Recorder(sys.argv[1])
test_runs.SCENARIOS[sys.argv[2]](recorder.tracer)
recorder.provider.shutdown()
print(os.getpid())
"""


def _messages(prefix: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """OpenInference's flattened messages: ``llm.input_messages.0.message.role`` and so on."""
    attrs: dict[str, Any] = {}
    for i, message in enumerate(messages):
        at = f"{prefix}.{i}."
        attrs[at + MessageAttributes.MESSAGE_ROLE] = message["role"]
        if "content" in message:
            attrs[at + MessageAttributes.MESSAGE_CONTENT] = message["content"]
        if "tool_call_id" in message:
            attrs[at + MessageAttributes.MESSAGE_TOOL_CALL_ID] = message["tool_call_id"]
        for j, (call_id, name, arguments) in enumerate(message.get("calls", [])):
            call = f"{at}{MessageAttributes.MESSAGE_TOOL_CALLS}.{j}."
            attrs[call + ToolCallAttributes.TOOL_CALL_ID] = call_id
            attrs[call + ToolCallAttributes.TOOL_CALL_FUNCTION_NAME] = name
            attrs[call + ToolCallAttributes.TOOL_CALL_FUNCTION_ARGUMENTS_JSON] = json.dumps(arguments)
    return attrs


def _model_call(
    tracer: Tracer, inputs: list[dict[str, Any]], output: dict[str, Any], session: str | None = SESSION
) -> None:
    attributes = {
        SpanAttributes.OPENINFERENCE_SPAN_KIND: LLM,
        SpanAttributes.LLM_MODEL_NAME: "gpt-4o-mini",
        SpanAttributes.LLM_INVOCATION_PARAMETERS: json.dumps({"model": "gpt-4o-mini"}),
        **_messages(SpanAttributes.LLM_INPUT_MESSAGES, [{"role": "system", "content": SYSTEM}, *inputs]),
        **_messages(SpanAttributes.LLM_OUTPUT_MESSAGES, [output]),
    }
    if session is not None:
        attributes[SpanAttributes.SESSION_ID] = session
    with tracer.start_as_current_span("ChatOpenAI", attributes=attributes):
        pass


def _tool(
    tracer: Tracer, name: str, arguments: dict[str, Any], result: str | Exception, session: str | None
) -> None:
    attributes = {
        SpanAttributes.OPENINFERENCE_SPAN_KIND: TOOL,
        SpanAttributes.TOOL_NAME: name,
        SpanAttributes.INPUT_VALUE: json.dumps(arguments),
    }
    if session is not None:
        attributes[SpanAttributes.SESSION_ID] = session
    try:
        with tracer.start_as_current_span(name, attributes=attributes) as span:
            if isinstance(result, Exception):
                raise result
            span.set_attribute(SpanAttributes.OUTPUT_VALUE, result)
    except ValueError:
        pass  # the agent carries on: the span recorded the failure


def _no_root_agent(tracer: Tracer) -> None:
    """LangChain-style: the model call, the tool and the next model call are three traces."""
    question = {"role": "user", "content": "Weather in Paris?"}
    asked = {"role": "assistant", "calls": [("call_p1", "get_weather", {"city": "Paris"})]}
    _model_call(tracer, [question], asked)
    _tool(tracer, "get_weather", {"city": "Paris"}, "sunny, 21C", SESSION)
    result = {"role": "tool", "tool_call_id": "call_p1", "content": "sunny, 21C"}
    _model_call(tracer, [question, asked, result], {"role": "assistant", "content": "It is sunny in Paris."})


def _rooted_agent(tracer: Tracer) -> None:
    """An agent span over its calls (the session id on the root only), a failing tool; then a model
    call of its own trace, in no session."""
    with tracer.start_as_current_span(
        "agent",
        attributes={SpanAttributes.OPENINFERENCE_SPAN_KIND: "AGENT", SpanAttributes.SESSION_ID: SESSION},
    ):
        question = {"role": "user", "content": "Forecast for Oslo?"}
        asked = {"role": "assistant", "calls": [("call_o1", "get_forecast", {"city": "Oslo"})]}
        _model_call(tracer, [question], asked, session=None)
        _tool(tracer, "get_forecast", {"city": "Oslo"}, ValueError("forecast service down"), None)
        failed = {"role": "tool", "tool_call_id": "call_o1", "content": "error: forecast service down"}
        _model_call(tracer, [question, asked, failed], {"role": "assistant", "content": "No forecast."}, None)
    _model_call(
        tracer, [{"role": "user", "content": "Thanks"}], {"role": "assistant", "content": "Welcome."}, None
    )


def _killed_agent(tracer: Tracer) -> None:
    """Spans left open when the recorder stops, as in a run killed mid-tool."""
    root = tracer.start_span("agent-c")
    tracer.start_span("stuck_tool", context=trace.set_span_in_context(root))


def _short_agent(tracer: Tracer) -> None:
    with tracer.start_as_current_span("agent-d"), tracer.start_as_current_span("step"):
        pass
    # A span reported after the fact, started before this recorder was: still this run's.
    tracer.start_span("reported-late", start_time=time.time_ns() - 60 * 10**9).end()


SCENARIOS = {"no-root": _no_root_agent, "rooted": _rooted_agent}


@dataclass
class Recorded:
    db: Path
    pids: dict[str, int]  # scenario -> the pid that recorded it
    run_ids: dict[str, str]  # scenario -> its run id


def _subprocess_run(db: Path, scenario: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", _AGENT, str(db), scenario],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return int(done.stdout.split()[-1])


def _in_process_run(db: Path, agent: Any) -> None:
    recorder = Recorder(db)
    agent(recorder.tracer)
    recorder.provider.shutdown()


def _runs_json(db: Path) -> list[dict[str, Any]]:
    value: list[dict[str, Any]] = json.loads(run_cli("runs", "--json", db=db, check=True).stdout)
    return value


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    db = tmp_path_factory.mktemp("runs") / "blackbox.db"
    pids = {"no-root": _subprocess_run(db, "no-root"), "rooted": _subprocess_run(db, "rooted")}
    _in_process_run(db, _killed_agent)
    _in_process_run(db, _short_agent)  # the same pid as the one before: a second run of it
    pids["killed"] = pids["short"] = os.getpid()
    listed = _runs_json(db)
    order = ["short", "killed", "rooted", "no-root"]  # newest first
    assert [r["pid"] for r in listed] == [pids[name] for name in order]
    return Recorded(db, pids, {name: r["run_id"] for name, r in zip(order, listed, strict=True)})


def _spans_of_pid(db: Path, pid: int) -> set[tuple[str, str]]:
    conn = sqlite3.connect(db)
    try:
        return {
            (r[0], r[1]) for r in conn.execute("SELECT trace_id, span_id FROM spans WHERE pid = ?", (pid,))
        }
    finally:
        conn.close()


def _unique_prefix(run_id: str, others: list[str]) -> str:
    return next(
        run_id[:n] for n in range(1, 17) if not any(o.startswith(run_id[:n]) for o in others if o != run_id)
    )


def _one_line_error(result: subprocess.CompletedProcess[str], code: int, text: str) -> None:
    assert result.returncode == code, (result.returncode, result.stderr)
    assert result.stderr.count("\n") == 1 and text in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and not result.stdout


# -- runs ----------------------------------------------------------------------------------------


def test_runs_json_one_object_a_run_newest_first(recorded: Recorded) -> None:
    listed = {r["run_id"]: r for r in _runs_json(recorded.db)}
    assert len(listed) == 4 and all(RUN_ID.match(run_id) for run_id in listed)
    by_name = {name: listed[run_id] for name, run_id in recorded.run_ids.items()}
    no_root, rooted, killed, short = (by_name[n] for n in ("no-root", "rooted", "killed", "short"))
    assert (no_root["traces"], no_root["spans"], no_root["status"]) == (3, 3, "ok")
    assert no_root["root_names"] == ["ChatOpenAI", "get_weather"]  # distinct, in time order
    assert (rooted["traces"], rooted["spans"], rooted["status"]) == (2, 5, "error")
    assert rooted["error_count"] == 1 and rooted["root_names"] == ["agent", "ChatOpenAI"]
    assert (killed["traces"], killed["spans"], killed["status"], killed["open_count"]) == (1, 2, "open", 2)
    assert (short["traces"], short["spans"], short["status"]) == (2, 3, "ok")
    assert short["root_names"] == ["reported-late", "agent-d"]  # by start time
    for run in listed.values():
        assert run["started_ns"] <= run["last_seen_ns"]
    # Every span is in exactly one run: the two runs of this process share its pid, not its spans.
    assert sum(r["spans"] for r in listed.values()) == sum(len(_spans_of_pid(recorded.db, p)) for p in {
        no_root["pid"], rooted["pid"], killed["pid"]})  # fmt: skip


def test_runs_text_one_line_a_run(recorded: Recorded) -> None:
    out = run_cli("runs", db=recorded.db, check=True).stdout.splitlines()
    assert out[0].split()[:3] == ["RUN", "ID", "PID"] and len(out) == 5
    rows = {line.split()[0]: line for line in out[1:]}
    no_root = rows[recorded.run_ids["no-root"]]
    assert f" {recorded.pids['no-root']} " in no_root and " ok " in no_root
    assert no_root.rstrip().endswith("ChatOpenAI, get_weather")
    assert " error " in rows[recorded.run_ids["rooted"]] and " open " in rows[recorded.run_ids["killed"]]
    assert "2/2o" in rows[recorded.run_ids["killed"]]  # spans / open, as `list` shows them
    limited = run_cli("runs", "--limit", "1", db=recorded.db, check=True).stdout.splitlines()
    assert len(limited) == 2 and limited[1].startswith(recorded.run_ids["short"])
    assert "Example:" in run_cli("runs", "--help", check=True).stdout


def test_runs_of_a_database_with_no_recorder(tmp_path: Path) -> None:
    db = tmp_path / "empty.db"
    connect_writer(db).close()
    assert run_cli("runs", db=db, check=True).stdout.strip() == "no runs recorded yet"
    assert _runs_json(db) == []


def test_runs_shows_hostile_root_names_escaped(tmp_path: Path) -> None:
    db = tmp_path / "hostile.db"
    hostile = "\x1b[2J\x1b[31mred\r\x07\u202eevil\nline"

    def agent(tracer: Tracer) -> None:
        with tracer.start_as_current_span(hostile):
            pass

    _in_process_run(db, agent)
    text = run_cli("runs", db=db, check=True).stdout
    assert "\\x1b[2J\\x1b[31mred\\x0d\\x07\\u202eevil\\nline" in text
    assert not re.search("[\x00-\x09\x0b-\x1f\u202e]", text) and len(text.splitlines()) == 2
    listed = run_cli("runs", "--json", db=db, check=True).stdout
    assert "\x1b" not in listed and "\u202e" not in listed
    assert json.loads(listed)[0]["root_names"] == [hostile]  # the same value, as JSON escapes


def test_store_functions_agree_with_the_cli(recorded: Recorded) -> None:
    conn = connect_reader(recorded.db)
    try:
        summaries = runs.recent_runs(conn, limit=10)
        assert [s.run_id for s in summaries] == [
            recorded.run_ids[n] for n in ("short", "killed", "rooted", "no-root")
        ]
        for summary in summaries:
            spans = runs.run_spans(conn, summary.run_id)
            assert len(spans) == summary.spans and len({s.trace_id for s in spans}) == summary.traces
            assert [s.start_ns for s in spans] == sorted(s.start_ns for s in spans)
            assert runs.run_summary(conn, summary.run_id) == summary
        # The session: every trace with a span of it, whole (the agent's calls carry no session id).
        no_root = {s.trace_id for s in runs.run_spans(conn, recorded.run_ids["no-root"])}
        agent = {s.trace_id for s in runs.run_spans(conn, recorded.run_ids["rooted"]) if s.name == "agent"}
        session = runs.session_spans(conn, SESSION)
        assert {s.trace_id for s in session} == no_root | agent and len(session) == 3 + 4
        assert [s.start_ns for s in session] == sorted(s.start_ns for s in session)
    finally:
        conn.close()


def test_run_and_session_queries_read_through_indexes(recorded: Recorded) -> None:
    # Cheap at a million spans: the spans of a run come from the start-time index window, a
    # session's from the session index and the (trace_id, span_id) index; never a table scan.
    conn = connect_reader(recorded.db)
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        runs.recent_runs(conn)
        runs.run_spans(conn, recorded.run_ids["rooted"])
        runs.session_spans(conn, SESSION)
        conn.set_trace_callback(None)
        spans_statements = [s for s in statements if "FROM spans" in s]
        assert len(spans_statements) == 3
        for statement in spans_statements:
            plan = " ".join(str(row[-1]) for row in conn.execute(f"EXPLAIN QUERY PLAN {statement}"))
            full_scan = re.search(r"SCAN (spans|span_rows|r)\b(?! USING)", plan)  # the view reads span_rows
            assert "INDEX" in plan and not full_scan, (statement, plan)
    finally:
        conn.close()


# -- run ids: prefixes, unknown and ambiguous ----------------------------------------------------


def test_a_unique_prefix_is_enough(recorded: Recorded, tmp_path: Path) -> None:
    run_id = recorded.run_ids["no-root"]
    prefix = _unique_prefix(run_id, list(recorded.run_ids.values()))
    out = tmp_path / "run.json"
    result = run_cli("cassette", "--run", prefix.upper(), "-o", str(out), db=recorded.db, check=True)
    assert f"from 3 traces of run {run_id}" in result.stdout
    assert load_cassette(out).id == f"run-{run_id}"


def test_unknown_run_and_session_are_one_line_and_exit_1_a_malformed_id_2(
    recorded: Recorded, tmp_path: Path
) -> None:
    unknown = next(
        c * 16 for c in "0123456789abcdef" if not any(r.startswith(c) for r in recorded.run_ids.values())
    )
    out = str(tmp_path / "x")
    for command in ("cassette", "report"):
        _one_line_error(
            run_cli(command, "--run", unknown, "-o", out, db=recorded.db), 1, f"no run with id '{unknown}'"
        )
        _one_line_error(run_cli(command, "--run", "not-hex", "-o", out, db=recorded.db), 2, "not a run id")
        missing = run_cli(command, "--session", "no-such-session", "-o", out, db=recorded.db)
        _one_line_error(missing, 1, "no span with session id 'no-such-session'")
    assert not Path(out).exists()


def test_ambiguous_run_id_and_a_run_without_spans(tmp_path: Path) -> None:
    db = tmp_path / "many.db"
    # Seventeen runs: two of them must share a first hex digit.
    for _ in range(17):
        _in_process_run(db, _short_agent)
    ids = [r["run_id"] for r in _runs_json(db)]
    shared = next(c for c in "0123456789abcdef" if sum(i.startswith(c) for i in ids) > 1)
    for command in ("cassette", "report"):
        result = run_cli(command, "--run", shared, "-o", str(tmp_path / "x"), db=db)
        _one_line_error(result, 2, f"run id '{shared}' is ambiguous: it matches")  # usage, as for a trace
    # A run whose spans retention has taken is still a run, with nothing to build from.
    recorder = Recorder(db)
    long_ago = time.time_ns() - 30 * 86_400 * 10**9
    recorder.tracer.start_span("expired", start_time=long_ago).end(end_time=long_ago + 1)
    recorder.provider.shutdown()
    run_cli("cleanup", "--retention", "7d", db=db, check=True)
    empty = _runs_json(db)[0]
    assert empty["spans"] == 0 and empty["traces"] == 0 and empty["status"] == "ok"
    result = run_cli("cassette", "--run", empty["run_id"], "-o", str(tmp_path / "x"), db=db)
    _one_line_error(result, 1, "has no spans")


def test_exactly_one_of_trace_run_and_session(recorded: Recorded, tmp_path: Path) -> None:
    run_id, out = recorded.run_ids["no-root"], str(tmp_path / "x")
    for command in ("cassette", "report"):
        cases = [
            (command, "abc", "--run", run_id, "-o", out),
            (command, "--run", run_id, "--session", SESSION, "-o", out),
            (command, "-o", out),
        ]
        for args in cases:
            result = run_cli(*args, db=recorded.db)
            _one_line_error(result, 2, "give exactly one of")
    assert not Path(out).exists()


# -- cassettes of a run and of a session ---------------------------------------------------------


def _steps(cassette: Cassette) -> list[tuple[str, Any]]:
    """(type, what matters of the payload) for each step."""
    out: list[tuple[str, Any]] = []
    for step in cassette.steps:
        payload = step.payload
        if step.type == "model_input":
            out.append((step.type, [m["role"] for m in payload["messages"]]))
        elif step.type == "model_output":
            calls = payload.get("calls")
            out.append((step.type, [c["toolName"] for c in calls] if calls else payload["text"]))
        elif step.type in ("tool_call", "tool_result"):
            out.append((step.type, payload["toolName"]))
        else:
            out.append((step.type, payload.get("event")))
    return out


def test_cassette_of_a_run_without_a_root_span_holds_every_round(recorded: Recorded, tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    run_id = recorded.run_ids["no-root"]
    result = run_cli("cassette", "--run", run_id, "-o", str(out), db=recorded.db, check=True)
    assert "outcome success" in result.stdout
    cassette = load_cassette(out)
    assert cassette.id == f"run-{run_id}"
    assert _steps(cassette) == [
        ("model_input", ["user"]),
        ("model_output", ["get_weather"]),
        ("tool_call", "get_weather"),
        ("tool_result", "get_weather"),
        ("model_input", ["user", "assistant", "user"]),
        ("model_output", "It is sunny in Paris."),
        ("metadata", "run_completed"),
    ]
    assert cassette.steps[2].payload["toolInput"] == {"city": "Paris"}
    assert cassette.steps[3].payload["result"] == "sunny, 21C"
    assert terminal_outcome(cassette).final_answer == "It is sunny in Paris."
    assert [s.timestamp for s in cassette.steps] == sorted(s.timestamp for s in cassette.steps)
    assert verify_cassette(cassette).passed


def test_cassette_of_a_session_spans_both_processes_in_time_order(recorded: Recorded, tmp_path: Path) -> None:
    out = tmp_path / "session.json"
    result = run_cli("cassette", "--session", SESSION, "-o", str(out), db=recorded.db, check=True)
    assert f"from 4 traces of session {SESSION}" in result.stdout
    cassette = load_cassette(out)
    assert cassette.id == f"session-{SESSION}"
    # The rooted agent's trace carries the session on its root only: all of its spans come along,
    # not the model call of its own trace that followed it.
    assert _steps(cassette) == [
        ("model_input", ["user"]),
        ("model_output", ["get_weather"]),
        ("tool_call", "get_weather"),
        ("tool_result", "get_weather"),
        ("model_input", ["user", "assistant", "user"]),
        ("model_output", "It is sunny in Paris."),
        ("model_input", ["user"]),
        ("model_output", ["get_forecast"]),
        ("tool_call", "get_forecast"),
        ("tool_result", "get_forecast"),
        ("model_input", ["user", "assistant", "user"]),
        ("model_output", "No forecast."),
        ("metadata", "run_completed"),
    ]
    assert tool_call_sequence(cassette) == ["get_weather", "get_forecast"]
    assert cassette.steps[9].payload["error"] == "ValueError: forecast service down"
    assert [s.timestamp for s in cassette.steps] == sorted(s.timestamp for s in cassette.steps)
    assert verify_cassette(cassette).passed


def test_cassette_of_a_killed_run_and_of_one_trace_still_work(recorded: Recorded, tmp_path: Path) -> None:
    out = tmp_path / "killed.json"
    # Killed before any model call: nothing a replay could play, refused unless --force.
    refused = run_cli("cassette", "--run", recorded.run_ids["killed"], "-o", str(out), db=recorded.db)
    assert refused.returncode == 2 and "no model call in the cassette" in refused.stderr and not out.exists()
    forced = ("cassette", "--run", recorded.run_ids["killed"], "-o", str(out), "--force")
    run_cli(*forced, db=recorded.db, check=True)
    assert terminal_outcome(load_cassette(out)).status == "error"  # open spans: the run never ended
    trace_id = next(iter(_spans_of_pid(recorded.db, recorded.pids["no-root"])))[0]
    # One model call of a run that makes each call a trace (any of them: a set): the one that asked
    # for a tool has no final answer, a cassette verify fails, written only with --force.
    result = run_cli("cassette", trace_id[:12], "-o", str(out), "--force", db=recorded.db, check=True)
    assert "traces of" not in result.stdout and load_cassette(out).id == trace_id


# -- reports of a run and of a session -----------------------------------------------------------


def _page_data(path: Path) -> dict[str, Any]:
    found = re.search(
        r'<script type="application/json" id="blackbox-data">(.*?)</script>', path.read_text(), re.S
    )
    assert found
    value: dict[str, Any] = json.loads(found.group(1))
    return value


def test_report_of_a_run_holds_all_its_traces(recorded: Recorded, tmp_path: Path) -> None:
    out = tmp_path / "run.html"
    run_id = recorded.run_ids["rooted"]
    result = run_cli("report", "--run", run_id[:10], "-o", str(out), db=recorded.db, check=True)
    assert result.stdout.strip() == f"wrote {out}: run {run_id}, 2 traces, 5 spans"
    data = _page_data(out)
    group = data["group"]
    assert data["kind"] == "run" and group["kind"] == "run" and group["id"] == run_id
    assert group["pid"] == recorded.pids["rooted"] and group["traceCount"] == 2
    assert (group["spanCount"], group["errorCount"], group["status"]) == (5, 1, "error")
    assert group["rootNames"] == ["agent", "ChatOpenAI"] and group["sessions"] == [SESSION]
    spans = data["spans"]
    assert {(s["traceId"], s["spanId"]) for s in spans} == _spans_of_pid(recorded.db, recorded.pids["rooted"])
    # Each trace is a tree of its own, in time order: the agent and its three calls, then the call alone.
    assert [(s["name"], s["depth"]) for s in spans] == [
        ("agent", 0), ("ChatOpenAI", 1), ("get_forecast", 1), ("ChatOpenAI", 1), ("ChatOpenAI", 0),
    ]  # fmt: skip
    assert all(0 <= s["startOffsetNs"] <= s["endOffsetNs"] <= group["durationNs"] for s in spans)


def test_report_of_a_session_and_of_an_open_run(recorded: Recorded, tmp_path: Path) -> None:
    out = tmp_path / "session.html"
    result = run_cli("report", "--session", SESSION, "-o", str(out), db=recorded.db, check=True)
    assert f"session {SESSION}, 4 traces, 7 spans" in result.stdout
    data = _page_data(out)
    assert data["group"]["pid"] is None and {s["name"] for s in data["spans"]} == {
        "ChatOpenAI", "get_weather", "agent", "get_forecast"
    }  # fmt: skip
    run_cli("report", "--run", recorded.run_ids["killed"], "-o", str(out), db=recorded.db, check=True)
    group = _page_data(out)["group"]
    assert group["status"] == "open" and group["openCount"] == 2 and group["lastSeen"]
    assert all(s["open"] and s["endOffsetNs"] >= s["startOffsetNs"] for s in _page_data(out)["spans"])


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (make test installs it)")
def test_run_report_in_chromium(browser: Any, recorded: Recorded, tmp_path: Path) -> None:
    out = tmp_path / "run.html"
    run_id = recorded.run_ids["rooted"]
    run_cli("report", "--run", run_id, "-o", str(out), db=recorded.db, check=True)
    page, seen = open_page(browser, out.as_uri(), ".bar")
    assert page.text_content("h1") == f"run {run_id}"
    assert page.text_content("[data-field=trace-count] .value") == "2"
    assert page.locator(".bar").count() == 5 and page.locator("#tree .tree-node").count() == 5
    page.locator(".bar", has_text="get_forecast").first.click()
    details = page.text_content("#details") or ""
    assert "forecast service down" in details
    trace_ids = {t for t, _ in _spans_of_pid(recorded.db, recorded.pids["rooted"])}
    assert any(t in details for t in trace_ids)  # a page of several traces names the span's trace
    page.check("#errors-only")
    assert [b.text_content() for b in page.locator(".bar").all() if b.is_visible()] == ["get_forecast"]
    assert seen == {"errors": [], "requests": [], "dialogs": []}


# -- schema version 2 on a file written with version 1 -------------------------------------------


def _version_1_copy(source: Path, target: Path) -> None:
    """A real version-1 file: the schema of MIGRATIONS[0] only, holding the rows of ``source``
    (spans as they are; recorder rows without the run id version 1 did not have)."""
    conn = sqlite3.connect(target, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        for statement in _statements(MIGRATIONS[0]):
            conn.execute(statement)
        conn.execute("PRAGMA user_version = 1")
        conn.execute("ATTACH DATABASE ? AS source", (str(source),))
        columns = ", ".join(c for c in SPAN_COLUMNS if c not in ("resource", "scope"))
        conn.execute(
            f"INSERT INTO spans ({columns}, resource, scope) "
            f"SELECT {columns}, resource, scope FROM source.spans"
        )
        columns = "id, pid, started_ns, last_seen_ns, spans_written, spans_dropped, write_errors"
        conn.execute(f"INSERT INTO recorders ({columns}) SELECT {columns} FROM source.recorders")
        conn.execute("DETACH DATABASE source")
    finally:
        conn.close()


def _version(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


@pytest.fixture
def version_1(recorded: Recorded, tmp_path: Path) -> Iterator[Path]:
    db = tmp_path / "v1.db"
    _version_1_copy(recorded.db, db)
    assert _version(db) == 1 and SCHEMA_VERSION == 6
    yield db


def test_version_1_file_is_upgraded_and_every_command_works(recorded: Recorded, version_1: Path) -> None:
    before = run_cli("list", "--json", db=version_1, check=True)  # reads it (and upgrades it)
    assert _version(version_1) == SCHEMA_VERSION
    conn = sqlite3.connect(version_1)
    try:
        ids = [r[0] for r in conn.execute("SELECT run_id FROM recorders ORDER BY id")]
        indexes = {r[1]: r[2] for r in conn.execute("PRAGMA index_list(recorders)")}
    finally:
        conn.close()
    assert len(ids) == 4 and len(set(ids)) == 4 and all(RUN_ID.match(i) for i in ids)
    assert indexes["recorders_by_run_id"] == 1  # unique
    assert not set(ids) & set(recorded.run_ids.values())  # new ids: version 1 had none to keep

    # The same runs as in the file they were copied from, under their new ids.
    def without_ids(listed: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in r.items() if k != "run_id"} for r in listed]

    assert without_ids(_runs_json(version_1)) == without_ids(_runs_json(recorded.db))
    assert json.loads(before.stdout) == json.loads(
        run_cli("list", "--json", db=recorded.db, check=True).stdout
    )
    trace_id = json.loads(before.stdout)[0]["trace_id"]
    shown = run_cli("show", trace_id[:10], db=version_1, check=True).stdout
    assert trace_id in shown
    out = version_1.parent / "run.json"
    run_cli(
        "cassette", "--run", _runs_json(version_1)[-1]["run_id"], "-o", str(out), db=version_1, check=True
    )
    assert load_cassette(out).steps
    # The recorder writes to the upgraded file: its run gets an id of its own.
    _in_process_run(version_1, _short_agent)
    newest = _runs_json(version_1)[0]
    assert RUN_ID.match(newest["run_id"]) and newest["run_id"] not in ids and newest["spans"] == 3


def test_the_writer_upgrades_a_version_1_file(version_1: Path) -> None:
    connect_writer(version_1, create=False).close()
    assert _version(version_1) == SCHEMA_VERSION
    conn = connect_reader(version_1)
    try:
        assert len(runs.recent_runs(conn)) == 4
    finally:
        conn.close()


def test_a_version_1_file_that_cannot_be_upgraded_says_so(version_1: Path) -> None:
    # Read-only, as for a file this user cannot write (root, who runs these tests, writes any file).
    conn = sqlite3.connect(f"file:{version_1}?mode=ro", uri=True)
    try:
        with pytest.raises(StoreError, match="predates runs"):
            runs.recent_runs(conn)
        with pytest.raises(StoreError, match="predates runs"):
            runs.resolve_run_id(conn, "ab")
    finally:
        conn.close()
    assert _version(version_1) == 1


# -- status: open > error > incomplete > ok ------------------------------------------------------------


INCOMPLETE = "blackbox.run.incomplete"


def test_status_precedence_is_open_then_error_then_incomplete_then_ok() -> None:
    for open_count, error_count, incomplete, status in [
        (1, 1, 1, "open"), (0, 1, 1, "error"), (0, 0, 1, "incomplete"), (0, 0, 0, "ok"),
    ]:  # fmt: skip
        run = runs.RunSummary("r", -1, 0, 0, open_count=open_count, error_count=error_count,
                              incomplete_count=incomplete)  # fmt: skip
        trace = TraceSummary("t", 0, 0, 1, open_count, error_count, "root", None, None,
                             "the last user message has no answer" if incomplete else None)  # fmt: skip
        assert run.status == trace.status == status and run.to_json()["status"] == status


def _otlp_trace(trace_id: str, children: list[tuple[str, int | None]], why: str | None) -> dict[str, Any]:
    """One trace: a root (``why`` as its blackbox.run.incomplete) and children (name, status code;
    None: still open, with no end)."""
    attributes = [{"key": INCOMPLETE, "value": {"stringValue": why}}] if why else []
    root = {
        "traceId": trace_id,
        "spanId": "1" * 16,
        "name": "chat",
        "startTimeUnixNano": "1000000000",
        "endTimeUnixNano": "5000000000",
        "attributes": attributes,
        "status": {"code": 0 if why else 1},
    }
    spans = [root] + [
        {"traceId": trace_id, "spanId": f"{n + 2:016x}", "parentSpanId": "1" * 16, "name": name,
         "startTimeUnixNano": str(2_000_000_000 + n), **({} if code is None else {
             "endTimeUnixNano": "3000000000", "status": {"code": code}})}
        for n, (name, code) in enumerate(children)
    ]  # fmt: skip
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]}


def test_an_imported_run_is_incomplete_only_when_none_of_its_traces_failed_or_is_open(tmp_path: Path) -> None:
    db = tmp_path / "imported.db"
    why = "the call transfer_to_human_agents (call_1) has a result but no model answer after it"
    files = {
        "failed": [_otlp_trace("a" * 32, [("tool", 2)], why), _otlp_trace("b" * 32, [], why)],
        "open": [_otlp_trace("c" * 32, [("tool", None)], why)],
        "incomplete": [_otlp_trace("d" * 32, [("tool", 1)], why), _otlp_trace("e" * 32, [("tool", 1)], None)],
        "ok": [_otlp_trace("f" * 32, [("tool", 1)], None)],
    }
    for name, documents in files.items():
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(d) + "\n" for d in documents))
        run_cli("import", str(path), db=db, check=True)
    by_source = {Path(r["source"]).stem: r for r in _runs_json(db)}
    assert {name: (r["status"], r["incomplete_count"]) for name, r in by_source.items()} == {
        "failed": ("error", 2), "open": ("open", 1), "incomplete": ("incomplete", 1), "ok": ("ok", 0),
    }  # fmt: skip
    traces = {t["trace_id"][0]: (t["status"], t["incomplete"]) for t in json.loads(
        run_cli("list", "--json", db=db, check=True).stdout)}  # fmt: skip
    assert traces == {"a": ("error", why), "b": ("incomplete", why), "c": ("open", why),
                      "d": ("incomplete", why), "e": ("ok", None), "f": ("ok", None)}  # fmt: skip


def test_a_recorded_root_is_never_incomplete(tmp_path: Path) -> None:
    db = tmp_path / "recorded.db"

    def agent(tracer: Tracer) -> None:  # a recording that sets the attribute itself is not an import
        with tracer.start_as_current_span("agent", attributes={INCOMPLETE: "says so"}):
            pass

    _in_process_run(db, agent)
    assert [r["status"] for r in _runs_json(db)] == ["ok"]
    listed = json.loads(run_cli("list", "--json", db=db, check=True).stdout)
    assert [(t["status"], t["incomplete"]) for t in listed] == [("ok", None)]
