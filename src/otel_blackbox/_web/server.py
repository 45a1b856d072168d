"""A local, read-only web viewer over the span database: ``otel-blackbox ui``.

Standard library only (``http.server``). It binds to 127.0.0.1 and nothing else, answers only GET,
and opens the database read-only (``mode=ro``) for each request, so traces a running agent writes
appear without a restart and the viewer can never change the file.

Routes: ``/`` the trace list (filters as query parameters), ``/api/traces`` the same list as JSON,
``/trace/<id>`` one trace's HTML report (a unique id prefix is enough).
"""

from __future__ import annotations

import json
import sqlite3
import sys
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from otel_blackbox._cost import llm_calls
from otel_blackbox._render.html_report import trace_report
from otel_blackbox._store import queries
from otel_blackbox._store.connection import connect_reader, describe_sqlite_error
from otel_blackbox._web.filters import BadRequest, parse_filter
from otel_blackbox._web.pages import list_page, message_page, row_cells, summary_json
from otel_blackbox._web.trace_list import find_traces
from otel_blackbox.errors import AmbiguousTraceId, ConfigError, StoreError, TraceNotFound

__all__ = ["LOCAL_HOST", "ViewerServer", "make_server"]

LOCAL_HOST = "127.0.0.1"

_SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class ViewerServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, db_path: Path, port: int, *, verbose: bool = False) -> None:
        self.db_path = db_path
        self.verbose = verbose
        super().__init__((LOCAL_HOST, port), ViewerHandler)


class ViewerHandler(BaseHTTPRequestHandler):
    server: ViewerServer
    server_version = "otel-blackbox-viewer"

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            sys.stderr.write(f"{self.address_string()} - {format % args}\n")

    def _send(self, status: HTTPStatus, body: str, content_type: str = "text/html; charset=utf-8") -> None:
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for key, value in _SECURITY_HEADERS.items():
            self.send_header(key, value)
        if status == HTTPStatus.METHOD_NOT_ALLOWED:
            self.send_header("Allow", "GET")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _error(self, status: HTTPStatus, message: str, *, as_json: bool = False) -> None:
        if as_json:
            self._send(status, json.dumps({"error": message}), "application/json")
        else:
            self._send(status, message_page(status, message))

    def _host_ok(self) -> bool:
        # Refuse a Host other than the loopback one: a web page cannot reach the viewer by DNS rebinding.
        host = (self.headers.get("Host") or "").strip().lower()
        name = host.rsplit(":", 1)[0] if not host.startswith("[") else host.split("]", 1)[0] + "]"
        return name in {LOCAL_HOST, "localhost"}

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        as_json = url.path.startswith("/api/")
        if not self._host_ok():
            self._error(HTTPStatus.FORBIDDEN, "the viewer answers only on 127.0.0.1", as_json=as_json)
            return
        try:
            if url.path in ("/", "/index.html"):
                flt = parse_filter(url.query)
                with self._reader() as conn:
                    traces = find_traces(conn, flt)
                    costs = llm_calls.trace_costs(conn, [t.trace_id for t in traces])
                self._send(HTTPStatus.OK, list_page(traces, flt, self.server.db_path, costs))
            elif url.path == "/favicon.ico":  # every browser asks; a 404 is an error in its console
                self._send(HTTPStatus.NO_CONTENT, "", "image/x-icon")
            elif url.path == "/api/traces":
                flt = parse_filter(url.query)
                with self._reader() as conn:
                    traces = find_traces(conn, flt)
                    costs = llm_calls.trace_costs(conn, [t.trace_id for t in traces])
                payload = {
                    "traces": [
                        {**summary_json(t, costs[t.trace_id]), "cells": row_cells(t, costs[t.trace_id])}
                        for t in traces
                    ]
                }
                self._send(HTTPStatus.OK, json.dumps(payload, default=str), "application/json")
            elif url.path.startswith("/trace/"):
                self._send(HTTPStatus.OK, self._report(unquote(url.path[len("/trace/") :])))
            else:
                self._error(HTTPStatus.NOT_FOUND, f"no such page: {url.path}", as_json=as_json)
        except BadRequest as exc:
            self._error(HTTPStatus.BAD_REQUEST, str(exc), as_json=as_json)
        except TraceNotFound as exc:
            self._error(HTTPStatus.NOT_FOUND, str(exc), as_json=as_json)
        except AmbiguousTraceId as exc:
            self._error(HTTPStatus.BAD_REQUEST, str(exc), as_json=as_json)
        except StoreError as exc:
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, str(exc), as_json=as_json)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the browser went away before the answer: nothing to tell anyone
        except Exception as exc:  # a bug: still an answer, and one log line rather than a traceback
            reason = f"{type(exc).__name__}: {exc}"
            sys.stderr.write(f"otel-blackbox viewer: internal error on {self.path!r}: {reason}\n")
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error", as_json=as_json)

    do_HEAD = do_GET

    def _refuse(self) -> None:
        self.close_connection = True  # the body (if any) is never read
        self._error(HTTPStatus.METHOD_NOT_ALLOWED, "the viewer is read-only: only GET is allowed")

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse

    def _reader(self) -> _Reader:
        return _Reader(self.server.db_path)

    def _report(self, trace_id: str) -> str:
        with self._reader() as conn:
            full_id = queries.resolve_trace_id(conn, trace_id)
            spans = queries.trace_spans(conn, full_id)
            summaries = queries.summarize(conn, [full_id])
            if not summaries:
                raise TraceNotFound(f"no trace with id {trace_id!r}")
            (summary,) = summaries
            last_seen = queries.last_seen_by_trace(conn, full_id).get(full_id, summary.end_ns)
        return trace_report(summary, spans, last_seen)


class _Reader:
    """A read-only connection for one request; sqlite3 errors become one-line StoreErrors."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn: sqlite3.Connection | None = None

    def __enter__(self) -> sqlite3.Connection:
        self.conn = connect_reader(self.path)
        return self.conn

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        if self.conn is not None:
            self.conn.close()
        if isinstance(exc, sqlite3.Error):
            raise describe_sqlite_error(self.path, exc) from None


def make_server(
    db_path: str | Path, *, host: str = LOCAL_HOST, port: int = 0, verbose: bool = False
) -> ViewerServer:
    """A viewer bound to 127.0.0.1:port (0: any free port); ConfigError for any other host."""
    if host != LOCAL_HOST:
        raise ConfigError(f"--host {host}: the viewer is local-only and binds to {LOCAL_HOST} only")
    return ViewerServer(Path(db_path), port, verbose=verbose)
