"""`import --from-phoenix` against a stand-in for Phoenix's REST span API on 127.0.0.1.

The stand-in answers what Phoenix 20.26 answers (`GET /v1/projects/{project}/spans`: its own span
shape, `next_cursor` paging, FastAPI's error bodies), including what a real Phoenix cannot be made
to do: a cursor answered twice, a span of the wrong shape, gzip, an API key refused. `make interop`
runs the same command against a real Phoenix server (interop/phoenix_import.py).
"""

from __future__ import annotations

import gzip
import http.server
import json
import socket
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from helpers import run_cli

from otel_blackbox._pull import phoenix_documents
from otel_blackbox._spans.otlp_in.decoder import OtlpDecoder
from otel_blackbox.errors import PullError

TRACE = "4d3d14a72ecc15279ac854bdeccae5ad"
OTHER_TRACE = "0a25c3ba2caf2bf5d9b97e24d70ec3d6"


def phoenix_span(
    span_id: str, *, trace_id: str = TRACE, parent: str | None = None, **extra: Any
) -> dict[str, Any]:
    """A span as Phoenix's API answers it."""
    span: dict[str, Any] = {
        "id": "U3Bhbjo1", "name": "ChatCompletion", "context": {"trace_id": trace_id, "span_id": span_id},
        "span_kind": "LLM", "parent_id": parent, "start_time": "2026-12-02T07:04:06.450536+00:00",
        "end_time": "2026-12-02T07:04:06.452278+00:00", "status_code": "OK", "status_message": "",
        "attributes": {"llm.token_count.total": 249, "llm.model_name": "gpt-4o-mini", "tag.tags": ["a", "b"],
                       "tool.parameters.city": "Paris", "tool.parameters.days": 3, "ratio": 0.25},
        "events": [],
    }  # fmt: skip
    span.update(extra)
    return span


@dataclass
class Phoenix:
    """Pages by cursor: ``pages[cursor]`` is (status, body); the first page's cursor is ''."""

    pages: dict[str, tuple[int, Any]] = field(default_factory=dict)
    project: str = "default"
    token: str | None = None
    gzip: bool = False
    requests: list[dict[str, list[str]]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    url: str = ""


@pytest.fixture
def phoenix() -> Iterator[Phoenix]:
    state = Phoenix()

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            query = parse_qs(parts.query)
            state.requests.append(query)
            state.headers.append(dict(self.headers.items()))
            if len(state.requests) > 20:  # a client that does not stop: fail it rather than hang
                return self.answer(500, {"detail": "too many requests"})
            if state.token and self.headers.get("Authorization") != f"Bearer {state.token}":
                return self.answer(401, {"detail": "Invalid token"})
            if parts.path != f"/v1/projects/{state.project}/spans":
                name = parts.path.removeprefix("/v1/projects/").removesuffix("/spans")
                if parts.path.startswith("/v1/projects/"):
                    return self.answer(404, f"Project with name {name} not found")
                return self.answer(200, "<!doctype html><html>Phoenix</html>", "text/html")
            status, body = state.pages.get(query.get("cursor", [""])[0], (422, {"detail": "Invalid cursor"}))
            self.answer(status, body)

        def answer(self, status: int, body: Any, content_type: str = "application/json") -> None:
            raw = (json.dumps(body) if not isinstance(body, str) else body).encode()
            if isinstance(body, str) and content_type == "application/json":
                content_type = "text/plain; charset=utf-8"
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            if state.gzip:
                raw = gzip.compress(raw)
                self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


def spans_of(documents: list[tuple[int | None, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [
        s for _, d in documents for r in d["resourceSpans"] for ss in r["scopeSpans"] for s in ss["spans"]
    ]


def test_pages_follow_the_cursor_into_documents_the_decoder_reads(phoenix: Phoenix) -> None:
    phoenix.pages = {
        "": (
            200,
            {"data": [phoenix_span("a1678bdfb93d4bdb", parent="4250b2f0c1b201dd")], "next_cursor": "c2"},
        ),
        "c2": (200, {"data": [phoenix_span("4250b2f0c1b201dd", span_kind="AGENT")], "next_cursor": None}),
    }
    documents = list(phoenix_documents(phoenix.url, page_size=1))
    assert [page for page, _ in documents] == [1, 2]
    assert [q.get("cursor") for q in phoenix.requests] == [None, ["c2"]]
    assert all(q["limit"] == ["1"] for q in phoenix.requests)
    decoded = [OtlpDecoder().from_json(d) for _, d in documents]
    child = decoded[0].snapshots[0]
    assert (format(child[0], "032x"), format(child[1], "016x"), format(child[2], "016x")) == (
        TRACE, "a1678bdfb93d4bdb", "4250b2f0c1b201dd",
    )  # fmt: skip
    assert child[7:9] == (1796195046450536000, 1796195046452278000)  # exact to the microsecond
    attributes = child[9]
    assert attributes["tool.parameters"] == '{"city": "Paris", "days": 3}'  # Phoenix's JSON string again
    assert attributes["openinference.span.kind"] == "LLM" and attributes["llm.token_count.total"] == 249
    assert list(attributes["tag.tags"]) == ["a", "b"]
    assert attributes["ratio"] == 0.25


def test_a_cursor_answered_twice_stops_the_pull(phoenix: Phoenix) -> None:
    phoenix.pages = {
        "": (200, {"data": [phoenix_span("a1678bdfb93d4bdb")], "next_cursor": "c2"}),
        "c2": (200, {"data": [phoenix_span("b743880a669ede03")], "next_cursor": "c2"}),
    }
    with pytest.raises(PullError, match=r"\(page 2\): Phoenix gave the cursor 'c2' twice"):
        list(phoenix_documents(phoenix.url))
    assert len(phoenix.requests) == 2


def test_trace_and_since_are_sent_and_applied_here_too(phoenix: Phoenix) -> None:
    # An old Phoenix ignores trace_id: the other trace's span is dropped here.
    early = phoenix_span("b743880a669ede03", start_time="2026-12-02T07:04:05.000000+00:00")
    page = [phoenix_span("a1678bdfb93d4bdb"), phoenix_span("295873e487150580", trace_id=OTHER_TRACE), early]
    phoenix.pages = {"": (200, {"data": page, "next_cursor": None})}
    got = spans_of(list(phoenix_documents(phoenix.url, trace_id=TRACE.upper())))
    assert [s["spanId"] for s in got] == ["a1678bdfb93d4bdb", "b743880a669ede03"]
    assert phoenix.requests[-1]["trace_id"] == [TRACE]
    since = 1796195046_000000000
    got = spans_of(list(phoenix_documents(phoenix.url, since_ns=since)))
    assert [s["spanId"] for s in got] == ["a1678bdfb93d4bdb", "295873e487150580"]
    assert phoenix.requests[-1]["start_time"] == ["2026-12-02T07:04:06+00:00"]


def test_a_trace_phoenix_does_not_hold_is_an_error(phoenix: Phoenix) -> None:
    phoenix.pages = {"": (200, {"data": [], "next_cursor": None})}
    with pytest.raises(PullError, match=f"no spans of trace {TRACE} in project 'default'"):
        list(phoenix_documents(phoenix.url, trace_id=TRACE))


def test_gzip_answers_and_the_api_key(phoenix: Phoenix) -> None:
    phoenix.gzip, phoenix.token = True, "px-key"
    phoenix.pages = {"": (200, {"data": [phoenix_span("a1678bdfb93d4bdb")], "next_cursor": None})}
    with pytest.raises(PullError, match=r"HTTP 401: Invalid token \(set PHOENIX_API_KEY to an API key\)$"):
        list(phoenix_documents(phoenix.url))
    with pytest.raises(PullError, match=r"HTTP 401: Invalid token \(the API key was refused\)$"):
        list(phoenix_documents(phoenix.url, token="wrong"))
    assert len(spans_of(list(phoenix_documents(phoenix.url, token="px-key")))) == 1
    assert phoenix.headers[-1]["Authorization"] == "Bearer px-key"


@pytest.mark.parametrize(
    ("page", "message"),
    [
        ((422, {"detail": [{"loc": ["query", "limit"], "msg": "Input should be at most 1000"}]}),
         r"HTTP 422: limit: Input should be at most 1000$"),
        ((200, {"spans": []}), r"expected a page of spans .*, got keys \['spans'\]$"),
        ((200, {"data": [phoenix_span("xyz")], "next_cursor": None}),
         r"\(page 1\): data\[0\]\.context\.span_id: expected 16 hex digits, got 'xyz'$"),
        ((200, {"data": [phoenix_span("a1678bdfb93d4bdb", start_time="yesterday")], "next_cursor": None}),
         r"data\[0\]\.start_time: expected an ISO 8601 time, got 'yesterday'$"),
        ((200, {"data": [phoenix_span("a1678bdfb93d4bdb", status_code="MAYBE")], "next_cursor": None}),
         r"data\[0\]\.status_code: expected OK, ERROR or UNSET, got 'MAYBE'$"),
        ((200, {"data": [], "next_cursor": 7}), r"next_cursor: expected a string or null, got 7$"),
    ],
)  # fmt: skip
def test_an_answer_of_another_shape_is_one_line(
    phoenix: Phoenix, page: tuple[int, Any], message: str
) -> None:
    phoenix.pages = {"": page}
    with pytest.raises(PullError, match=message) as caught:
        list(phoenix_documents(phoenix.url))
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"url": "ftp://x"}, "expected a URL like http://localhost:6006"),
        ({"url": "http://user:pw@127.0.0.1:6006"}, "give an API key in PHOENIX_API_KEY"),
        ({"url": "http://127.0.0.1:6006", "trace_id": "4d3d"}, "a trace id of 32 hex digits"),
        ({"url": "http://127.0.0.1:6006", "page_size": 5000}, "1 to 1000"),
        ({"url": "http://127.0.0.1:6006", "project": " "}, "project name is empty"),
    ],
)
def test_bad_arguments_fail_before_any_request(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(PullError, match=message):
        phoenix_documents(**kwargs)  # no next(): checked at the call


def test_the_command_stores_the_pull_and_says_why_not_in_one_line(phoenix: Phoenix, tmp_path: Path) -> None:
    phoenix.project = "agents"
    page = [phoenix_span("a1678bdfb93d4bdb", parent="4250b2f0c1b201dd"), phoenix_span("4250b2f0c1b201dd")]
    phoenix.pages = {"": (200, {"data": page, "next_cursor": None})}
    db = tmp_path / "pulled.db"
    result = run_cli("import", "--from-phoenix", phoenix.url, "--project", "agents", db=db)
    assert result.returncode == 0, result.stderr
    with closing(sqlite3.connect(db)) as conn:
        stored = conn.execute(
            "SELECT span_id, parent_span_id, total_tokens FROM spans ORDER BY span_id"
        ).fetchall()
    assert stored == [("4250b2f0c1b201dd", None, 249), ("a1678bdfb93d4bdb", "4250b2f0c1b201dd", 249)]
    for args, expected in (
        (["--project", "nope"], "HTTP 404: Project with name nope not found"),
        (["--project", "agents", "--trace", OTHER_TRACE], f"no spans of trace {OTHER_TRACE}"),
    ):
        result = run_cli("import", "--from-phoenix", phoenix.url, *args, db=tmp_path / "bad.db")
        assert result.returncode == 2 and result.stderr.count("\n") == 1 and expected in result.stderr
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    for url, expected in ((f"{phoenix.url}/ui", "not JSON (an HTML page"), (closed, "cannot connect")):
        result = run_cli("import", "--from-phoenix", url, db=tmp_path / "bad.db")
        assert result.returncode == 2 and result.stderr.count("\n") == 1 and expected in result.stderr
