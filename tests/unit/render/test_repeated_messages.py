"""A long agent run shown in proportion to its length: each model call's input messages that an earlier
call already carried are referred to ("same 214 messages as call 12, 2 new"), the new ones shown;
``--full`` shows every message. In `show -v`, `--format markdown`, `--json`, `report` and the MCP
tools, recorded through the real processor (OpenInference attributes, span limits lifted)."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from helpers import CHROMIUM, Recorder, open_page, run_cli
from opentelemetry.sdk.trace import SpanLimits

from otel_blackbox._mcp import traces as mcp_traces
from otel_blackbox._render.html_report import trace_report
from otel_blackbox._render.repeats import number_calls
from otel_blackbox._spans.messages import Message, ToolCall
from otel_blackbox._store import queries
from otel_blackbox._store.connection import connect_reader
from otel_blackbox._store.trace_logs import load_trace

ROUNDS = 30
SYSTEM = "You are a careful coding agent. Read the files you need before you change anything."
TASK = "Tidy every module under src/shop and keep the tests green."
SUMMARY = "Summary of the work so far: modules 0 to 14 read, nothing changed yet."
WORDS = ("order", "item", "price", "total", "customer", "cart", "stock", "tax", "invoice", "payment")


def tool_output(n: int, size: int) -> str:
    """``size`` characters of source-like text, marked ``MARK-n-`` at its start (one per round)."""
    rng = random.Random(n)
    text = f"# MARK-{n}-\n"
    while len(text) < size:
        text += f"def {rng.choice(WORDS)}_{rng.choice(WORDS)}(x):\n    return {rng.choice(WORDS)}(x) + {n}\n"
    return text[:size]


def _message(prefix: str, message: dict[str, Any]) -> dict[str, Any]:
    attrs = {f"{prefix}.message.role": message["role"]}
    if message.get("content") is not None:
        attrs[f"{prefix}.message.content"] = message["content"]
    if "tool_call_id" in message:
        attrs[f"{prefix}.message.tool_call_id"] = message["tool_call_id"]
    for j, call in enumerate(message.get("tool_calls", [])):
        at = f"{prefix}.message.tool_calls.{j}.tool_call"
        attrs[f"{at}.id"] = call["id"]
        attrs[f"{at}.function.name"] = "read_file"
        attrs[f"{at}.function.arguments"] = call["arguments"]
    return attrs


def record(db: Path, rounds: int, *, size: int = 2000, compact_at: int | None = None) -> str:
    """An agent of ``rounds`` model calls, each with a ``read_file`` tool call and its ``size``-character
    result; at round ``compact_at`` the conversation is compacted (a summary replaces it). Returns the
    trace id."""
    recorder = Recorder(db, span_limits=SpanLimits(max_span_attributes=100_000))
    kind = "openinference.span.kind"
    conversation: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": TASK},
    ]
    with recorder.tracer.start_as_current_span("agent", attributes={kind: "AGENT"}) as root:
        for n in range(rounds):
            if n == compact_at:
                conversation = [conversation[0], {"role": "user", "content": SUMMARY}]
            call = {"id": f"call_{n}", "arguments": json.dumps({"path": f"src/shop/m{n}.py"})}
            answer = {"role": "assistant", "content": f"Reading m{n}.py next.", "tool_calls": [call]}
            attrs: dict[str, Any] = {kind: "LLM", "llm.model_name": "gpt-4.1-mini"}
            attrs["input.value"] = json.dumps({"messages": conversation})
            for i, message in enumerate(conversation):
                attrs.update(_message(f"llm.input_messages.{i}", message))
            attrs.update(_message("llm.output_messages.0", answer))
            with recorder.tracer.start_as_current_span("ChatCompletion", attributes=attrs):
                pass
            output = tool_output(n, size)
            tool_attrs = {kind: "TOOL", "tool.name": "read_file", "input.value": call["arguments"]}
            with recorder.tracer.start_as_current_span("read_file", attributes=tool_attrs) as tool:
                tool.set_attribute("output.value", output)
            conversation = [
                *conversation,
                answer,
                {"role": "tool", "tool_call_id": call["id"], "content": output},
            ]
            if n % 10 == 9:
                recorder.flush()
    recorder.flush()
    recorder.provider.shutdown()
    return format(root.get_span_context().trace_id, "032x")


@pytest.fixture(scope="module")
def run30(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    db = tmp_path_factory.mktemp("run30") / "blackbox.db"
    return db, record(db, ROUNDS, size=600)


@pytest.fixture(scope="module")
def compacted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    db = tmp_path_factory.mktemp("compacted") / "blackbox.db"
    return db, record(db, 8, size=300, compact_at=5)


def show(db: Path, *args: str) -> str:
    return run_cli("show", *args, db=db, check=True).stdout


def _inputs(call: int) -> int:
    """How many input messages call ``call`` (from 1) of an uncompacted run carries."""
    return 2 + 2 * (call - 1)


def test_show_v_refers_to_the_call_before_and_shows_the_new_messages(run30: tuple[Path, str]) -> None:
    db, trace_id = run30
    text = show(db, trace_id, "-v")
    assert len(re.findall(r"\[LLM\]  call \d+  ", text)) == ROUNDS  # every model call numbered
    assert re.search(r"\[LLM\]  call 1  ", text) and re.search(rf"\[LLM\]  call {ROUNDS}  ", text)
    for call in range(2, ROUNDS + 1):  # the first call shows all; each later one refers to the one before
        assert f"messages: same {_inputs(call - 1)} messages as call {call - 1}, 2 new\n" in text
    assert text.count(f"[system] {SYSTEM}") == 1 and text.count(f"[user] {TASK}") == 1
    for n in range(ROUNDS - 1):  # each result: on its tool span, and as a new message of the next call
        assert text.count(f"# MARK-{n}-") == 2, n
    assert text.count("] → read_file(") == 2 * ROUNDS - 1  # made (call n), then sent again (call n + 1)

    full = show(db, trace_id, "-v", "--full")
    assert "same " not in full and full.count("messages:\n") == ROUNDS
    assert full.count(f"[system] {SYSTEM}") == ROUNDS
    assert full.count("# MARK-0-") == ROUNDS  # the tool span, then every later call
    assert len(full) > 5 * len(text)


def test_a_call_after_a_compaction_is_shown_in_full(compacted: tuple[Path, str]) -> None:
    db, trace_id = compacted
    text = show(db, trace_id, "-v")
    assert "messages: same 8 messages as call 4, 2 new" in text  # before the compaction
    assert "as call 5" not in text  # call 6 (after it) starts with no earlier call's input
    after = text.split(re.search(r"\[LLM\]  call 6  .*\n", text)[0])[1]  # type: ignore[index]
    assert after.split("──")[0].lstrip("│ ").startswith("messages:\n")
    assert f"[user] {SUMMARY}" in after.split("call 7")[0]
    assert "messages: same 2 messages as call 6, 2 new" in text  # then it grows again


def test_markdown_refers_to_the_earlier_call_unless_full(run30: tuple[Path, str]) -> None:
    db, trace_id = run30
    doc = show(db, trace_id, "--format", "markdown")
    assert re.search(r"\*Same 2 messages as call 1 \(span \d+\), 2 new \(--full shows them all\)\.\*", doc)
    assert "(span 2, call 1)" in doc  # the tree entry
    assert doc.count(SYSTEM) == 1
    full = show(db, trace_id, "--format", "markdown", "--full")
    assert "Same " not in full and full.count(SYSTEM) == ROUNDS


def test_json_gives_the_repeat_and_the_new_messages(run30: tuple[Path, str]) -> None:
    db, trace_id = run30
    spans = json.loads(show(db, trace_id, "--json"))["spans"]
    llm = sorted((s for s in spans if s["call"] is not None), key=lambda s: s["call"])
    assert [s["call"] for s in llm] == list(range(1, ROUNDS + 1))
    assert all(s["call"] is None for s in spans if s not in llm)
    first, last = llm[0], llm[-1]
    assert "same_input_as" not in first and "llm.input_messages.0.message.content" in first["attributes"]
    repeat = last["same_input_as"]
    assert repeat["call"] == ROUNDS - 1 and repeat["span_id"] == llm[-2]["span_id"]
    assert repeat["messages"] == _inputs(ROUNDS - 1)
    assert [m["role"] for m in repeat["new_messages"]] == ["assistant", "tool"]
    assert repeat["new_messages"][0]["tool_calls"][0]["name"] == "read_file"
    assert repeat["new_messages"][1]["content"].startswith(f"# MARK-{ROUNDS - 2}-")
    assert repeat["omitted"]["keys"] == ["input.value", "llm.input_messages.*"]
    # input.value, then the attributes of each input message (see _message): 2 for the system and the user
    # message, 5 for an assistant message and its tool call, 3 for a tool result
    assert repeat["omitted"]["count"] == 1 + 2 + 2 + (5 + 3) * (ROUNDS - 1)
    assert not any(k.startswith("llm.input_messages.") or k == "input.value" for k in last["attributes"])
    assert "llm.output_messages.0.message.content" in last["attributes"]  # the rest is kept

    full = json.loads(show(db, trace_id, "--json", "--full"))["spans"]
    assert not any("same_input_as" in s for s in full)
    last_full = next(s for s in full if s["span_id"] == last["span_id"])
    assert last_full["call"] == ROUNDS and "input.value" in last_full["attributes"]
    assert f"llm.input_messages.{_inputs(ROUNDS) - 1}.message.content" in last_full["attributes"]


def _report_bytes(tmp_path: Path, rounds: int, full: bool = False) -> int:
    db = tmp_path / f"r{rounds}.db"
    trace_id = record(db, rounds, size=2000)
    conn = connect_reader(db)
    try:  # attributes stored apart are read when asked for: within the connection
        spans = load_trace(conn, trace_id)
        (summary,) = queries.summarize(conn, [trace_id])
        return len(trace_report(summary, spans, summary.end_ns, full=full).encode())
    finally:
        conn.close()


def test_the_report_grows_with_the_run_not_its_square(tmp_path: Path) -> None:
    small, large = _report_bytes(tmp_path, 20), _report_bytes(tmp_path, 40)
    assert large / small < 2.5, (small, large)
    assert _report_bytes(tmp_path, 40, full=True) > 5 * large  # every message of every call


def test_the_report_refers_to_the_earlier_call(run30: tuple[Path, str], tmp_path: Path) -> None:
    db, trace_id = run30
    out = tmp_path / "page.html"
    run_cli("report", trace_id, "-o", str(out), db=db, check=True)
    data = json.loads(re.search(r'id="blackbox-data">(.*?)</script>', out.read_text(), re.S)[1])  # type: ignore[index]
    llm = sorted((s for s in data["spans"] if s["call"] is not None), key=lambda s: s["call"])
    assert llm[0]["inputRepeat"] is None and len(llm[0]["inputMessages"]) == 2 and llm[0]["omitted"] is None
    last = llm[-1]
    assert last["inputRepeat"] == {
        "call": ROUNDS - 1,
        "traceId": trace_id,
        "spanId": llm[-2]["spanId"],
        "count": _inputs(ROUNDS - 1),
        "text": f"same {_inputs(ROUNDS - 1)} messages as call {ROUNDS - 1}, 2 new",
    }
    assert [m["role"] for m in last["inputMessages"]] == ["assistant", "tool"]
    assert "input.value" not in last["attributes"] and last["omitted"]["keys"] == [
        "input.value",
        "llm.input_messages.*",
    ]
    run_cli("report", trace_id, "-o", str(out), "--full", db=db, check=True)
    data = json.loads(re.search(r'id="blackbox-data">(.*?)</script>', out.read_text(), re.S)[1])  # type: ignore[index]
    last = next(s for s in data["spans"] if s["call"] == ROUNDS)
    assert last["inputRepeat"] is None and len(last["inputMessages"]) == _inputs(ROUNDS)
    # input.value is the input the page shows: embedded once, put back in the attributes' table
    assert (
        last["shownAs"] == {"input.value": "input"}
        and json.loads(last["input"])["messages"][0]["content"] == SYSTEM
    )


def test_the_mcp_tools_refer_to_the_earlier_call_unless_full(run30: tuple[Path, str]) -> None:
    db, trace_id = run30
    page = mcp_traces.show_trace(db, trace_id, limit=500)
    assert "messages: same 2 messages as call 1, 2 new" in page
    assert page.count(SYSTEM) == 1
    full = mcp_traces.show_trace(db, trace_id, limit=5, full=True)
    assert "same " not in full
    spans = json.loads(show(db, trace_id, "--json"))["spans"]
    last = max((s for s in spans if s["call"] is not None), key=lambda s: s["call"])
    got = json.loads(mcp_traces.get_span(db, trace_id, last["span_id"]))
    assert got["span"]["same_input_as"]["call"] == ROUNDS - 1
    assert any(
        line.startswith(f"messages: same {_inputs(ROUNDS - 1)} messages as call") for line in got["details"]
    )
    assert "input.value" not in got["span"]["attributes"]
    text = mcp_traces.get_span(db, trace_id, last["span_id"], full=True)
    assert "same_input_as" not in text and '"messages:"' in text and "messages: same" not in text


def test_messages_compare_by_identity_or_equality() -> None:
    from otel_blackbox._render.repeats import _is_prefix

    shared = [Message("system", "s"), Message("user", "u")]
    grown = [*shared, Message("assistant", None, [ToolCall("c1", "read_file", "{}")])]
    assert _is_prefix(shared, grown)  # the same objects
    copied = [Message("system", "s"), Message("user", "u"), Message("tool", "out", tool_call_id="c1")]
    assert _is_prefix(shared, copied)  # equal objects
    assert not _is_prefix(shared, [Message("system", "s"), Message("user", "other")])
    assert not _is_prefix(grown, shared) and not _is_prefix([], grown)
    assert number_calls([]).numbers == {}


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (make test installs it)")
def test_the_report_links_the_earlier_call_in_chromium(
    run30: tuple[Path, str], tmp_path: Path, browser: Any
) -> None:
    db, trace_id = run30
    out = tmp_path / "page.html"
    run_cli("report", trace_id, "-o", str(out), db=db, check=True)
    page, seen = open_page(browser, out.as_uri(), ".bar")
    try:
        page.locator(".tree-node", has_text="ChatCompletion").last.click()
        repeat = page.locator("[data-testid=input-repeat]")
        assert repeat.inner_text() == f"same {_inputs(ROUNDS - 1)} messages as call {ROUNDS - 1}, 2 new"
        assert page.locator("[data-section=input-messages] .message").count() == 2  # the new ones
        assert (
            "left out (input.value, llm.input_messages.*)"
            in page.locator("[data-testid=omitted-attributes]").inner_text()
        )
        earlier = repeat.locator("a").get_attribute("data-span-id")
        repeat.locator("a").click()
        assert page.locator("#details").get_attribute("data-span-id") == earlier
        assert "model call" in page.locator("[data-table=summary]").inner_text()
        page.locator(".tree-node", has_text="read_file").last.click()  # its output.value: embedded once
        row = page.locator("[data-table=attributes] tr[data-key='output.value']")
        assert f"# MARK-{ROUNDS - 1}-" in row.inner_text()
        assert seen == {"errors": [], "requests": [], "dialogs": []}
    finally:
        page.close()
