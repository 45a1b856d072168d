"""`show --format markdown` (and --run / --session), read back with a real CommonMark parser.

The databases are recorded for real: the example weather agent run twice with --fail-tool against
its in-process FakeLLMServer (two runs of one session, a tool that raises in each), and spans with
hostile names and attributes made with the OpenTelemetry SDK through BlackboxSpanProcessor. The
CLI runs in a subprocess, and its output is parsed with markdown-it-py's CommonMark preset: what a
test checks is the structure a renderer builds (headings, lists, fences, inline text), not strings.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest
import weather_agent  # examples/ is on sys.path (conftest.py)
from helpers import EXAMPLES, Recorder, fuzz_examples, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from otel_blackbox._cost.prices import format_usd, total_usd
from otel_blackbox._cost.spans import span_price
from otel_blackbox._render.md_escape import code, fenced, inline, visible
from otel_blackbox._store import queries
from otel_blackbox._store.connection import connect_reader

MD = MarkdownIt("commonmark")
SESSION = "session-md-21"
ERROR = "weather service unavailable for Paris"
# Markdown, HTML, a fence longer than three, a bidi override, a zero-width space, a Unicode tag
# character (invisible text), an entity, a backslash, a line break, an ordered-list start.
HOSTILE = (
    "# heading\n[link](http://x) <script>alert(1)</script> <b>bold</b> ````` \u202eevil\u200b "
    "&amp; ![img](http://y) *em* _u_ | a | ~~s~~ $x$ \\ \U000e0041 1. item"
)
# A body that would close a short fence and start blocks of its own.
BODY = "before\n````\n# not a heading\n``````\n<script>alert(2)</script>\n\r\n[x](http://z)\nafter"
ARGUMENTS = {"q": "```` # h <script>"}
HOSTILE_SESSION = "s`` `x`\n# s"
SECRET = "sk-proj-" + "A1b2C3d4" * 4  # the recorder stores it masked, and so it is shown
DEEP = 12  # a chain of nested spans deeper than the tree list nests


def shown(text: str, *, block: bool = False) -> str:
    """How the hostile strings read once rendered: invisible characters as escapes, and line breaks
    too but in a code block."""
    for raw, escape in (("\r", "\\x0d"), ("\u202e", "\\u202e"), ("\u200b", "\\u200b"),
                        ("\U000e0041", "\\U000e0041")):  # fmt: skip
        text = text.replace(raw, escape)
    return text if block else text.replace("\n", "\\n")


# --- reading the parsed document ----------------------------------------------------------------


def walk(tokens: list[Token]) -> Iterator[Token]:
    for token in tokens:
        yield token
        yield from walk(token.children or [])


def text_of(token: Token) -> str:
    """The text an inline token shows (code spans included)."""
    return "".join(c.content for c in token.children or [] if c.type in ("text", "code_inline"))


@dataclass
class Doc:
    source: str
    tokens: list[Token]

    @classmethod
    def parse(cls, source: str) -> Doc:
        return cls(source, MD.parse(source))

    def headings(self) -> list[tuple[str, str]]:
        return [
            (t.tag, text_of(self.tokens[i + 1]))
            for i, t in enumerate(self.tokens)
            if t.type == "heading_open"
        ]

    def section(self, title: str) -> list[Token]:
        """The block tokens after the heading whose text is ``title``, up to the next heading."""
        at = [i for i, t in enumerate(self.tokens) if t.type == "heading_open"]
        (start,) = [n for n, (_, text) in enumerate(self.headings()) if text == title]
        end = at[start + 1] if start + 1 < len(at) else len(self.tokens)
        return self.tokens[at[start] + 3 : end]

    def fences(self) -> list[Token]:
        return [t for t in self.tokens if t.type == "fence"]

    def list_items(self, tokens: list[Token]) -> list[tuple[int, str]]:
        """(nesting, text) of each item of the first list in ``tokens``."""
        depth, items = 0, []
        for token in tokens:
            if token.type == "bullet_list_open":
                depth += 1
            elif token.type == "bullet_list_close":
                depth -= 1
                if depth == 0:
                    break
            elif token.type == "inline" and depth:
                items.append((depth, text_of(token)))
        return items


def no_markup_from_content(doc: Doc) -> None:
    """Nothing the renderer does not write itself: no HTML, link, image; in the HTML, no tag of theirs."""
    kinds = {t.type for t in walk(doc.tokens)}
    assert not kinds & {"html_block", "html_inline", "link_open", "image", "hr", "blockquote_open"}
    html = MD.render(doc.source)
    assert "<script" not in html and "<a " not in html and "<img" not in html and "<b>" not in html


def show(db: Path, *args: str) -> str:
    return run_cli("show", *args, db=db, check=True).stdout


# --- the recordings -------------------------------------------------------------------------------


@dataclass
class Weather:
    db: Path
    traces: list[str]  # in the order they ran
    runs: list[str]  # newest first


@pytest.fixture(scope="module")
def weather(tmp_path_factory: pytest.TempPathFactory) -> Weather:
    """The example agent run twice, as a user runs it, with a tool that raises: two runs, one session."""
    db = tmp_path_factory.mktemp("weather") / "blackbox.db"
    traces = []
    for _ in range(2):
        argv = [sys.executable, str(EXAMPLES / "weather_agent.py"), "--db", str(db), "--fail-tool"]
        done = subprocess.run(
            [*argv, "--session-id", SESSION], capture_output=True, text=True, timeout=60, check=True
        )
        (found,) = re.findall(r"^TRACE ([0-9a-f]{32})$", done.stdout, re.M)
        traces.append(found)
    runs = json.loads(run_cli("runs", "--json", db=db, check=True).stdout)
    return Weather(db, traces, [run["run_id"] for run in runs])


@dataclass
class Hostile:
    db: Path
    trace: str  # the hostile names and attributes
    deep: str  # the deep chain, with an open span


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hostile]:
    recorder = Recorder(tmp_path_factory.mktemp("hostile") / "blackbox.db")
    tracer = recorder.tracer
    kind = "openinference.span.kind"
    with tracer.start_as_current_span(
        HOSTILE, attributes={kind: "AGENT", "session.id": HOSTILE_SESSION}
    ) as root:
        with tracer.start_as_current_span("llm " + HOSTILE, attributes={
            kind: "LLM", "llm.model_name": "gpt-4o-mini", "session.id": HOSTILE_SESSION,
            "llm.token_count.prompt": 10, "llm.token_count.completion": 5, "llm.token_count.total": 15,
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": BODY,
            "llm.input_messages.1.message.role": HOSTILE,
            "llm.input_messages.1.message.content": f"hi, my key is {SECRET}",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_1",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": HOSTILE,
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": json.dumps(ARGUMENTS),
        }):  # fmt: skip
            pass
        with tracer.start_as_current_span(
            "<img src=x onerror=alert(1)>",
            attributes={kind: "TOOL", "input.value": HOSTILE},
            record_exception=False,
            set_status_on_exception=False,
        ) as tool:
            tool.record_exception(ValueError(HOSTILE), attributes={"exception.type": HOSTILE})
            tool.set_status(Status(StatusCode.ERROR, HOSTILE))
    hostile_trace = format(root.get_span_context().trace_id, "032x")
    parent = tracer.start_span("depth-0")
    chain = [parent]
    for depth in range(1, DEEP):
        chain.append(tracer.start_span(f"depth-{depth}", context=trace.set_span_in_context(chain[-1])))
    tracer.start_span("left-open", context=trace.set_span_in_context(chain[-1]))  # never ended
    for span in reversed(chain):
        span.end()
    recorder.flush()
    yield Hostile(recorder.db_path, hostile_trace, format(parent.get_span_context().trace_id, "032x"))
    recorder.provider.shutdown()


# --- one trace ------------------------------------------------------------------------------------


def test_a_failing_run_as_markdown(weather: Weather) -> None:
    db, trace_id = weather.db, weather.traces[0]
    doc = Doc.parse(show(db, trace_id[:8], "--format", "markdown"))
    no_markup_from_content(doc)
    headings = doc.headings()
    assert headings[0] == ("h1", f"Trace {trace_id}: weather-agent")
    assert [text for tag, text in headings if tag == "h2"] == ["Failures", "Span tree", "Spans"]
    names = ["weather-agent", "ChatCompletion", "get_weather", "get_forecast", "ChatCompletion"]
    assert [text for tag, text in headings if tag == "h3"] == [
        f"{n}. {'✗' if name == 'get_weather' else '✓'} {name} {kind}"
        for n, (name, kind) in enumerate(zip(names, ["AGENT", "LLM", "TOOL", "TOOL", "LLM"], strict=True), 1)
    ]

    # The failure, with its exception's type and message: listed at the top, and in its span.
    assert doc.list_items(doc.section("Failures")) == [
        (1, f"✗ get_weather TOOL (span 3): ValueError: {ERROR}")
    ]
    failed = doc.section("3. ✗ get_weather TOOL")
    paragraphs = [text_of(t) for t in failed if t.type == "inline"]
    assert f"Exception ValueError: {ERROR}" in paragraphs
    stack = [t for t in failed if t.type == "fence"][-1]
    assert stack.info == "text" and stack.content.startswith("Traceback (most recent call last):")
    assert stack.content.endswith(f"ValueError: {ERROR}\n")
    assert [t.content for t in failed if t.type == "fence"][:2] == [
        '{"city": "Paris"}\n',
        f"error: ValueError: {ERROR}\n",
    ]

    # The tree: a nested list, the root's children one level in, in the order they ran.
    tree = doc.list_items(doc.section("Span tree"))
    assert [depth for depth, _ in tree] == [1, 2, 2, 2, 2]
    assert [text.split(" · ")[0] for _, text in tree] == [
        f"{'✗' if n == 'get_weather' else '✓'} {n}" for n in names
    ]
    assert tree[2][1].endswith("· ERROR (span 3)")

    # The messages by role, in fences: the system prompt as sent, the tool calls' arguments as JSON.
    llm = doc.section("2. ✓ ChatCompletion LLM")
    blocks = [(text_of(llm[i - 2]), t.info, t.content) for i, t in enumerate(llm) if t.type == "fence"]
    assert blocks[0] == ("system", "text", weather_agent.SYSTEM_PROMPT + "\n")
    assert blocks[1][0] == "user" and blocks[1][2].startswith("What's the weather in Paris")
    calls = [
        (label.split(" (id ")[0], json.loads(body))
        for label, info, body in blocks
        if info == "json" and "→" in label
    ]
    assert calls == [("assistant → tool call get_weather", {"city": "Paris"}),
                     ("assistant → tool call get_forecast", {"city": "Paris", "days": 3})]  # fmt: skip

    # Tokens and cost: the LLM spans' prices as cost.py computes them, and their total in the header.
    with closing(connect_reader(db)) as conn:
        spans = queries.trace_spans(conn, trace_id)
    prices = [span_price(s) for s in spans if s.oi_span_kind == "LLM"]
    assert all(p is not None for p in prices)
    header = [text for _, text in doc.list_items(doc.tokens)]
    assert f"Cost: {format_usd(total_usd(prices))} (genai-prices " in "\n".join(header)
    tokens = sum(s.total_tokens or 0 for s in spans if s.oi_span_kind == "LLM")
    assert f"Tokens: {tokens} (prompt " in "\n".join(header)
    first_call = spans[1]
    assert first_call.oi_span_kind == "LLM" and prices[0] is not None
    facts = [text_of(t) for t in llm if t.type == "inline" and text_of(t).startswith("Model: ")]
    assert facts == [
        f"Model: gpt-4o-mini · tokens: prompt {first_call.prompt_tokens}, completion "
        f"{first_call.completion_tokens}, total {first_call.total_tokens} · cost {format_usd(prices[0].usd)}"
    ]

    # The second model call repeats the conversation: it points to call 1 (span 2) and shows the rest.
    second = doc.section("5. ✓ ChatCompletion LLM")
    notes = [text_of(t) for t in second if t.type == "inline"]
    assert "Same 2 messages as call 1 (span 2), 3 new (--full shows them all)." in notes
    assert any(n.startswith("tool · result of call call_") for n in notes)

    # The text format is still the default, unchanged.
    text = show(db, trace_id)
    assert text == show(db, trace_id, "--format", "text") and text.startswith(
        f"trace {trace_id}  weather-agent  ERROR"
    )


def test_hostile_names_and_attributes_stay_literal_text(hostile: Hostile) -> None:
    doc = Doc.parse(show(hostile.db, hostile.trace, "--format", "markdown"))
    no_markup_from_content(doc)
    for raw in ("\u202e", "\u200b", "\U000e0041", "\r"):
        assert raw not in doc.source
    # Only the headings the renderer writes: the title, three sections, one per span.
    name = shown(HOSTILE)
    assert doc.headings() == [
        ("h1", f"Trace {hostile.trace}: {name}"), ("h2", "Failures"), ("h2", "Span tree"), ("h2", "Spans"),
        ("h3", f"1. · {name} AGENT"), ("h3", f"2. · llm {name} LLM"),
        ("h3", "3. ✗ <img src=x onerror=alert(1)> TOOL"),
    ]  # fmt: skip
    assert not any(t.type in ("em_open", "strong_open") for t in walk(doc.section("Span tree")))
    tree = doc.list_items(doc.section("Span tree"))
    assert [d for d, _ in tree] == [1, 2, 2] and tree[0][1].startswith(f"· {name} · AGENT · ")
    assert tree[1][1].startswith(f"· llm {name} · LLM · ") and " · 15 tokens · $0.0" in tree[1][1]
    # The failure: the exception's type and message as recorded, the status message too.
    (failure,) = doc.list_items(doc.section("Failures"))
    assert failure == (1, f"✗ <img src=x onerror=alert(1)> TOOL (span 3): {name}: {name}")
    tool = doc.section("3. ✗ <img src=x onerror=alert(1)> TOOL")
    assert f"Exception {name}: {name}" in [text_of(t) for t in tool if t.type == "inline"]
    # Each body is one fence, whole: no backtick run in it closes it, nothing after it is parsed.
    fences = doc.fences()
    (body,) = [t for t in fences if "not a heading" in t.content]
    assert body.content == shown(BODY, block=True) + "\n" and body.info == "text"
    (arguments,) = [t for t in fences if t.info == "json"]
    assert json.loads(arguments.content) == ARGUMENTS
    assert shown(HOSTILE, block=True) + "\n" in [t.content for t in fences]  # the tool's input, as a block
    assert not any(
        "not a heading" in text_of(t) or text_of(t) == "after" for t in doc.tokens if t.type == "inline"
    )
    # Names inside code spans (a tool call's name) and roles (strong text) read as recorded.
    llm = doc.section(f"2. · llm {name} LLM")
    labels = [text_of(t) for t in llm if t.type == "inline"]
    assert f"assistant → tool call {name} (id call_1)" in labels and name in labels
    # Shown as stored: redacted.
    assert SECRET not in doc.source
    assert "hi, my key is [REDACTED:openai-key]\n" in [t.content for t in fences]


def test_the_deep_tree_and_an_open_span(hostile: Hostile) -> None:
    doc = Doc.parse(show(hostile.db, hostile.deep, "--format", "markdown"))
    tree = doc.list_items(doc.section("Span tree"))
    assert len(tree) == DEEP + 1  # every span listed, none lost to the parser's nesting limit
    assert [d for d, _ in tree] == [*range(1, 9), *[8] * (DEEP + 1 - 8)]
    assert tree[8][1].startswith("↳ depth 8: · depth-8 ·")
    assert tree[-1][1].startswith("↳ depth 12: … left-open · OPEN (last seen ")
    facts = [text_of(t) for t in doc.section(f"{DEEP + 1}. … left-open") if t.type == "inline"]
    assert facts[0].startswith("Status: OPEN: still open when the recording stopped")


# --- bounds ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A long input on the root, and 400 spans of 900 characters each."""
    recorder = Recorder(tmp_path_factory.mktemp("big") / "blackbox.db")
    with recorder.tracer.start_as_current_span(
        "root", attributes={"input.value": "y" * 5000 + "END"}
    ) as root:
        for n in range(400):
            attributes = {"openinference.span.kind": "CHAIN", "input.value": f"{n} " + "x" * 900}
            with recorder.tracer.start_as_current_span(f"step-{n}", attributes=attributes):
                pass
    recorder.flush()
    yield recorder.db_path, format(root.get_span_context().trace_id, "032x")
    recorder.provider.shutdown()


def test_long_values_are_shortened_and_the_whole_is_bounded_unless_full(big: tuple[Path, str]) -> None:
    db, trace_id = big
    short = Doc.parse(show(db, trace_id, "--format", "markdown"))
    assert len(short.source) <= 60_000  # under GitHub's 65,536 for an issue or a comment
    root_input = short.fences()[0]
    assert root_input.content == "y" * 1000 + "\n… [+4003 chars, --full]\n"
    shown_spans = [text for tag, text in short.headings() if tag == "h3"]
    assert 10 < len(shown_spans) < 401 and shown_spans[0] == "1. · root"
    tree = short.list_items(short.section("Span tree"))
    assert len(tree) == 301 and tree[-1] == (1, "… 101 more spans (--full)")
    last = text_of(short.tokens[-2])
    left_out = f"the details of {401 - len(shown_spans)} of 401 spans, 101 of 401 span tree entries."
    assert last.startswith(f"Left out (the output stops near 60,000 characters): {left_out}")
    assert last.endswith(f"All of it: otel-blackbox show {trace_id} --format markdown --full")
    no_markup_from_content(short)

    full = Doc.parse(show(db, trace_id, "--format", "markdown", "--full"))
    assert full.fences()[0].content == "y" * 5000 + "END\n"
    assert len([tag for tag, _ in full.headings() if tag == "h3"]) == 401
    assert len(full.list_items(full.section("Span tree"))) == 401
    assert "--full]" not in full.source and "Left out" not in full.source
    assert all(t.content == f"{n} " + "x" * 900 + "\n" for n, t in enumerate(full.fences()[1:]))


# --- runs and sessions ----------------------------------------------------------------------------


def test_a_session_and_a_run(weather: Weather, hostile: Hostile) -> None:
    first, second = weather.traces
    doc = Doc.parse(show(weather.db, "--session", SESSION, "--format", "markdown"))
    no_markup_from_content(doc)
    headings = doc.headings()
    assert headings[0] == ("h1", f"Session {SESSION}")
    assert [text for tag, text in headings if tag == "h2"] == [
        "Failures", f"Trace {first}: weather-agent", f"Trace {second}: weather-agent"
    ]  # fmt: skip
    # Spans numbered across the traces, each section saying which trace it is in.
    numbers = [int(text.split(".")[0]) for tag, text in headings if tag == "h4"]
    assert numbers == list(range(1, 11))
    assert [text for _, text in doc.list_items(doc.section("Failures"))] == [
        f"✗ get_weather TOOL (span {n}): ValueError: {ERROR}" for n in (3, 8)
    ]
    eighth = [text_of(t) for t in doc.section("8. ✗ get_weather TOOL") if t.type == "inline"]
    assert any(line.endswith(f"· trace {second}") for line in eighth)
    text = show(weather.db, "--session", SESSION).splitlines()
    assert text[0] == f"session {SESSION}: 2 traces, 10 spans"
    assert [line.split()[1] for line in text if line.startswith("trace ")] == [first, second]

    # A run: the weather runs hold one trace each; the hostile recorder's run holds both its traces.
    oldest = weather.runs[-1]
    doc = Doc.parse(show(weather.db, "--run", oldest[:6], "--format", "markdown"))
    assert doc.headings()[0] == ("h1", f"Run {oldest}")
    assert [text for tag, text in doc.headings() if tag == "h2"] == [
        "Failures",
        f"Trace {first}: weather-agent",
    ]
    (run,) = json.loads(run_cli("runs", "--json", db=hostile.db, check=True).stdout)
    doc = Doc.parse(show(hostile.db, "--run", run["run_id"], "--format", "markdown"))
    no_markup_from_content(doc)
    assert [text for tag, text in doc.headings() if tag == "h2"] == [
        "Failures", f"Trace {hostile.trace}: {shown(HOSTILE)}", f"Trace {hostile.deep}: depth-0"
    ]  # fmt: skip
    as_json = json.loads(show(hostile.db, "--run", run["run_id"], "--json"))
    assert (as_json["kind"], as_json["id"]) == ("run", run["run_id"])
    assert [t["trace_id"] for t in as_json["traces"]] == [hostile.trace, hostile.deep]
    assert len(as_json["spans"]) == 3 + DEEP + 1
    # A hostile session id: found, and shown as literal text.
    doc = Doc.parse(show(hostile.db, "--session", HOSTILE_SESSION, "--format", "markdown"))
    assert doc.headings()[0] == ("h1", f"Session {shown(HOSTILE_SESSION)}")
    no_markup_from_content(doc)


# --- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["ffffffff", "--format", "markdown"], 1, "no trace with id 'ffffffff'"),
        (["{trace}", "--run", "{run}"], 2, "one of TRACE_ID, --run, --session (got TRACE_ID and --run)"),
        (["--format", "markdown"], 2, "give exactly one of TRACE_ID, --run, --session"),
        (["{trace}", "--format", "markdown", "--json"], 2, "--json and --format markdown: give one of them"),
        (["--run", "abcdef012345", "--format", "markdown"], 1, "no run with id 'abcdef012345'"),
        (["--session", "nobody", "--format", "markdown"], 1, "no span with session id 'nobody'"),
        (["{trace}", "--format", "html"], 2, "Invalid value for '--format'"),
    ],
    ids=["unknown-trace", "trace-and-run", "neither", "json-and-markdown", "unknown-run", "unknown-session",
         "bad-format"],
)  # fmt: skip
def test_bad_input_is_one_line(weather: Weather, args: list[str], code: int, says: str) -> None:
    argv = [a.format(trace=weather.traces[0], run=weather.runs[0]) for a in args]
    result = run_cli("show", *argv, db=weather.db)
    assert (result.returncode, result.stdout) == (code, "")
    (line,) = result.stderr.splitlines()
    assert line.startswith("otel-blackbox: error: ") and says in line


# --- the escapes themselves, against the parser ---------------------------------------------------

_TRICKY = st.sampled_from(
    [*"`*_[]()<>#!|~&$\\-+=.:;1 \n\t\r\x00\x1b\x85\u00a0\u202e\u200b\u2028", "\U000e0041", "\ud800", "&amp;",
     "<b>", "```", "1.", "http://x"]
)  # fmt: skip
_TEXT = st.lists(st.one_of(_TRICKY, st.characters()), max_size=40).map("".join)


@settings(max_examples=fuzz_examples(300), deadline=None)
@given(_TEXT)
def test_inline_text_and_code_spans_read_back_as_they_are_shown(text: str) -> None:
    (_, paragraph, _) = MD.parse(f"x {inline(text)} y")
    assert {c.type for c in paragraph.children or []} <= {"text"}
    assert text_of(paragraph) == f"x {visible(text)} y"
    (_, paragraph, _) = MD.parse(f"x {code(text)} y")
    if visible(text).strip():
        assert [c.type for c in paragraph.children or []] == ["text", "code_inline", "text"]
        assert paragraph.children is not None and paragraph.children[1].content == visible(text)


@settings(max_examples=fuzz_examples(300), deadline=None)
@given(_TEXT)
def test_a_fenced_body_is_one_block_with_the_body_in_it(text: str) -> None:
    block, *after = MD.parse("\n".join(fenced(text, "json")) + "\n\nafter\n")
    assert block.type == "fence" and block.info == "json"
    assert [t.type for t in after] == ["paragraph_open", "inline", "paragraph_close"] and after[
        1
    ].content == "after"
    body = visible(text, single_line=False)
    assert block.content == (body[:-1] if body.endswith("\n") else body) + "\n"
