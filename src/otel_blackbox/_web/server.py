"""The workbench over the span database: ``otel-blackbox ui``.

Standard library only (``http.server``). It opens the database read-only (``mode=ro``) for each
request, so traces a running agent writes appear without a restart and the workbench never changes
the file; what it makes (incidents, children, contracts, job records) goes to its workspace
(``workspace.py``). Who may read and who may act: ``guard.py``.

GET: ``/`` runs and traces (filters as query parameters), ``/api/traces`` the traces as JSON,
``/run/<id>`` and ``/trace/<id>`` the report opened on where it failed, with the rerun form (a unique
id prefix is enough), ``/job/<id>`` a job (``/child``, ``/incident``: its cassettes; ``/contract``:
the contract its child holds), ``/api/job/<id>`` its progress, ``/contracts`` the saved contracts.
POST (the actions): ``/rerun``, ``/blame``, ``/job/<id>/cancel``, ``/contracts/save``, ``/contracts/run-all``.
"""

from __future__ import annotations

import contextlib
import json
import re
import shlex
import socket
import sqlite3
import sys
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from otel_blackbox._cassette.diff.contract import CONTRACT_SUFFIX
from otel_blackbox._cassette.suite import Suite, load_suite
from otel_blackbox._cassette.trusted import checked_cassette
from otel_blackbox._cost import llm_calls
from otel_blackbox._playback.agent.incident import Incident
from otel_blackbox._playback.agent.sdk import available_apis
from otel_blackbox._render.html_report import SpanGroup, cassette_report, group_report, trace_report
from otel_blackbox._store import queries, runs
from otel_blackbox._store.connection import connect_reader, describe_sqlite_error
from otel_blackbox._web.actions import (
    BadForm,
    child_contract,
    job_verdict,
    read_rerun_form,
    save_contract,
    start_blame,
    start_rerun,
    start_run_all,
)
from otel_blackbox._web.contract_pages import contract_page, contracts_page
from otel_blackbox._web.filters import BadRequest, parse_filter
from otel_blackbox._web.good_answers import KnownAnswer, known_answers
from otel_blackbox._web.guard import ACCESS_COOKIE, LOCAL_HOST, Guard, Refused
from otel_blackbox._web.jobs import Job, JobBoard
from otel_blackbox._web.masking import mask_page, mask_spans
from otel_blackbox._web.pages import list_page, message_page, row_cells, summary_json
from otel_blackbox._web.trace_list import find_traces
from otel_blackbox._web.workbench_pages import (
    BAR_CSS,
    event_lines,
    job_page,
    rerun_panel,
    runs_section,
)
from otel_blackbox._web.workspace import Workspace, incident_of, stub_fields, target_spans
from otel_blackbox.errors import (
    AmbiguousRunId,
    AmbiguousTraceId,
    BlackboxError,
    CassetteError,
    ConfigError,
    RunNotFound,
    StoreError,
    TraceNotFound,
)

__all__ = ["LOCAL_HOST", "ViewerServer", "make_server"]

MAX_FORM_BYTES = 1 << 20
IDLE_TIMEOUT_S = 30.0  # a connection that sends nothing for this long (between requests, or in one) is closed
_CLIENT_GONE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)
ACTIONS = frozenset({"/rerun", "/blame", "/contracts/save", "/contracts/run-all"})
_JOB_PAGE = re.compile(r"/job/(?P<id>[\w-]+)(?:/(?P<what>child|incident|contract))?")
_JOB_API = re.compile(r"/api/job/(?P<id>[\w-]+)")
_JOB_CANCEL = re.compile(r"/job/(?P<id>[\w-]+)/cancel")


class _NotFound(Exception):
    """A page or a job that is not there: 404."""


class _TooLarge(Exception):
    """A form larger than MAX_FORM_BYTES: 413."""


class _ClientGone(Exception):
    """The client closed its side before its request was whole: nothing to answer, nobody to tell."""


def _last(fields: dict[str, list[str]], name: str) -> str | None:
    values = fields.get(name)
    return values[-1] if values else None


def _contract_name(job: Job) -> str:
    """A default name for a job's contract: its target, shortened."""
    if job.target is None:
        return f"contract-{job.id}"
    return f"{job.target.kind}-{job.target.id[:12]}"


_SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    # same-origin, not no-referrer: under no-referrer a browser sends a form's POST with "Origin: null",
    # which the guard refuses; nothing links off the workbench for a referrer to leak to.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


class ViewerServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        db_path: Path,
        address: tuple[str, int],
        *,
        guard: Guard,
        workspace: Workspace,
        program: list[str] | None = None,
        verbose: bool = False,
        idle_timeout: float | None = IDLE_TIMEOUT_S,
    ) -> None:
        self.db_path = db_path
        self.program = program
        self.verbose = verbose
        self.idle_timeout = idle_timeout
        self.guard = guard
        self.workspace = workspace
        self.board = JobBoard(workspace)
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, ViewerHandler)

    def server_close(self) -> None:
        self.board.stop_all()
        super().server_close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (closed mid-request, reset, timed out) is no error of the
        workbench: one line under --verbose, never a traceback. Anything else: one line too."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (*_CLIENT_GONE, TimeoutError)):
            if self.verbose:
                sys.stderr.write(f"{client_address[0]} - the client went away: {type(exc).__name__}\n")
            return
        reason = "no exception" if exc is None else f"{type(exc).__name__}: {exc}"
        sys.stderr.write(f"otel-blackbox viewer: internal error: {reason}\n")


class ViewerHandler(BaseHTTPRequestHandler):
    server: ViewerServer
    server_version = "otel-blackbox-viewer"

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.idle_timeout)  # an idle connection is closed

    def finish(self) -> None:
        with contextlib.suppress(*_CLIENT_GONE):  # it left before the last bytes were flushed
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            sys.stderr.write(f"{self.address_string()} - {format % args}\n")

    def _send(
        self,
        status: HTTPStatus,
        body: str,
        content_type: str = "text/html; charset=utf-8",
        headers: dict[str, str] | None = None,
    ) -> None:
        data = mask_page(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for key, value in {**_SECURITY_HEADERS, **(headers or {})}.items():
            self.send_header(key, value)
        if status == HTTPStatus.METHOD_NOT_ALLOWED:
            self.send_header("Allow", "GET")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _redirect(self, location: str, headers: dict[str, str] | None = None) -> None:
        self._send(HTTPStatus.SEE_OTHER, "", headers={"Location": location, **(headers or {})})

    def _error(self, status: HTTPStatus, message: str, *, as_json: bool = False) -> None:
        if as_json:
            self._send(status, json.dumps({"error": message}), "application/json")
        else:
            self._send(status, message_page(status, message))

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        self._answer(url.path, lambda: self._get(url.path, url.query), as_json=url.path.startswith("/api/"))

    do_HEAD = do_GET

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        if path not in ACTIONS and not _JOB_CANCEL.fullmatch(path):
            self._refuse()
            return
        self._answer(path, lambda: self._post(path), as_json=False)

    def _refuse(self) -> None:
        self.close_connection = True  # the body (if any) is never read
        self._error(
            HTTPStatus.METHOD_NOT_ALLOWED, "only GET is allowed here (actions are POSTs to their own paths)"
        )

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse

    def _answer(self, path: str, respond: Callable[[], None], *, as_json: bool) -> None:
        """Run ``respond`` with every failure made one clear answer, never a traceback."""
        try:
            query = parse_qs(urlsplit(self.path).query)
            given = _last(query, "token") if self.command == "GET" and path == "/" else None
            self.server.guard.check_read(self.headers, given)
            if given is not None:  # the access token, once: kept in a cookie, out of the address bar
                cookie = f"{ACCESS_COOKIE}={given}; HttpOnly; SameSite=Strict; Path=/"
                self._redirect("/", {"Set-Cookie": cookie})
                return
            respond()
        except _ClientGone:
            self.close_connection = True
        except Refused as exc:
            self.close_connection = True
            self._error(HTTPStatus.FORBIDDEN, str(exc), as_json=as_json)
        except (BadRequest, BadForm, CassetteError, AmbiguousTraceId, AmbiguousRunId) as exc:
            self._error(HTTPStatus.BAD_REQUEST, str(exc), as_json=as_json)
        except _TooLarge as exc:
            self.close_connection = True
            self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, str(exc), as_json=as_json)
        except (TraceNotFound, RunNotFound, _NotFound) as exc:
            self._error(HTTPStatus.NOT_FOUND, str(exc), as_json=as_json)
        except StoreError as exc:
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, str(exc), as_json=as_json)
        except OSError as exc:
            if isinstance(exc, _CLIENT_GONE):
                self.close_connection = True
                return  # the browser went away before the answer: nothing to tell anyone
            if isinstance(exc, TimeoutError):  # the rest of the form never came
                self.close_connection = True
                self._error(HTTPStatus.REQUEST_TIMEOUT, "the request's body did not arrive in time")
                return
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"the workbench could not write its files: {exc}")
        except Exception as exc:  # a bug: still an answer, and one log line rather than a traceback
            reason = f"{type(exc).__name__}: {exc}"
            sys.stderr.write(f"otel-blackbox viewer: internal error on {self.path!r}: {reason}\n")
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error", as_json=as_json)

    # -- GET -----------------------------------------------------------------------------------------

    def _get(self, path: str, query: str) -> None:
        server = self.server
        if path in ("/", "/index.html"):
            flt = parse_filter(query)
            with self._reader() as conn:
                traces = find_traces(conn, flt)
                costs = llm_calls.trace_costs(conn, [t.trace_id for t in traces])
                found = runs.recent_runs(conn, limit=flt.limit)
                run_costs = llm_calls.run_costs(conn, found)
            top = runs_section(found, run_costs)
            self._send(HTTPStatus.OK, list_page(traces, flt, server.db_path, costs, top=top))
        elif path == "/favicon.ico":  # every browser asks; a 404 is an error in its console
            self._send(HTTPStatus.NO_CONTENT, "", "image/x-icon")
        elif path == "/api/traces":
            flt = parse_filter(query)
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
        elif path.startswith(("/trace/", "/run/")):
            kind, _, ident = path[1:].partition("/")
            self._send(HTTPStatus.OK, self._target_page(kind, unquote(ident)))
        elif path == "/contracts":
            self._send(HTTPStatus.OK, self._contracts_page())
        elif match := _JOB_PAGE.fullmatch(path):
            self._job_get(self._job(match["id"]), match["what"])
        elif match := _JOB_API.fullmatch(path):
            job = self._job(match["id"])
            record = job.record()
            lines = event_lines(record["events"])
            progress = {"state": record["state"], "seconds": record["seconds"], "lines": lines}
            self._send(HTTPStatus.OK, json.dumps(progress), "application/json")
        else:
            raise _NotFound(f"no such page: {path}")

    def _job(self, job_id: str) -> Job:
        job = self.server.board.get(job_id)
        if job is None:
            raise _NotFound(f"no job {job_id!r} in this workbench (jobs live as long as ui runs; records in "
                            f"{self.server.workspace.jobs})")  # fmt: skip
        return job

    def _job_get(self, job: Job, what: str | None) -> None:
        guard = self.server.guard
        if what is None:
            report, completed = job_verdict(job)
            page = job_page(job, report, token=guard.action_token, read_only=guard.read_only,
                            child_completed=completed)  # fmt: skip
            self._send(HTTPStatus.OK, page)
        elif what in ("child", "incident"):
            path = job.child if what == "child" else job.incident
            if path is None or not path.is_file():
                raise _NotFound(f"job {job.id} has no {what} cassette")
            self._send(HTTPStatus.OK, cassette_report(checked_cassette(path)))  # broken: 400, its line
        else:  # contract
            _, results = child_contract(job)
            name = _contract_name(job)
            page = contract_page(job, results, name, self.server.workspace.contracts,
                                 token=guard.action_token, read_only=guard.read_only)  # fmt: skip
            self._send(HTTPStatus.OK, page)

    def _target_page(self, kind: str, ident: str) -> str:
        """A run's or a trace's report, opened on where it failed, under the workbench's bar."""
        incident: Incident | None = None
        unusable = None
        known: dict[str, KnownAnswer] = {}
        with self._reader() as conn:
            target, spans = target_spans(conn, kind, ident)
            spans = mask_spans(spans)  # a secret of this process already in the database: not shown
            if kind == "run":
                summary = runs.run_summary(conn, target.id)
                status = summary.status
                last_seen = runs.last_seen_by_traces(conn, spans)
                page = group_report(
                    SpanGroup("run", target.id, spans[0].pid), spans, last_seen, select_failure=True
                )
            else:
                (trace,) = queries.summarize(conn, [target.id])
                status = trace.status
                seen = queries.last_seen_by_trace(conn, target.id).get(target.id, trace.end_ns)
                page = trace_report(trace, spans, seen, select_failure=True)
            try:
                incident = incident_of(spans, target)
            except BlackboxError as exc:  # spans no built-in agent can follow (no model call)
                unusable = str(exc)
            if incident is not None and status in ("error", "open"):  # the stubs' good answers, if known
                failing = [f.tool for f in stub_fields(incident) if f.failed]
                known = known_answers(conn, incident, failing, exclude={s.trace_id for s in spans})
        guard = self.server.guard
        server_program = None if self.server.program is None else shlex.join(self.server.program)
        jobs = [j for j in self.server.board.all() if j.target == target]
        if incident is None:
            panel = rerun_panel(target, status, [], [], api=None, model=None, token=guard.action_token,
                                read_only=guard.read_only, jobs=jobs, program=server_program,
                                unusable=unusable)  # fmt: skip
        else:
            apis = available_apis()
            api = incident.api if incident.api in apis else (apis[0] if apis else None)
            panel = rerun_panel(target, status, stub_fields(incident), apis, api=api, model=incident.model,
                                token=guard.action_token, read_only=guard.read_only, jobs=jobs,
                                program=server_program, known=known)  # fmt: skip
        head, _, rest = page.partition("</head>")
        rest, body, after = rest.partition("<body>")
        return f"{head}<style>{BAR_CSS}</style></head>{rest}{body}{panel}{after}"

    def _contracts_page(self, problem: str | None = None) -> str:
        workspace, guard = self.server.workspace, self.server.guard
        suite = Suite([], [])
        if workspace.contracts.is_dir() and any(workspace.contracts.glob(f"*{CONTRACT_SUFFIX}")):
            try:
                suite = load_suite(workspace.contracts)
            except BlackboxError as exc:
                problem = str(exc)
        runs_all = [j for j in self.server.board.all() if j.kind == "run-all"]
        return contracts_page(suite, workspace.contracts, available_apis(), token=guard.action_token,
                              read_only=guard.read_only, last_run=runs_all[-1] if runs_all else None,
                              problem=problem)  # fmt: skip

    # -- POST ----------------------------------------------------------------------------------------

    def _form(self) -> dict[str, list[str]]:
        length = self.headers.get("Content-Length")
        try:
            size = int(length or "0")
        except ValueError:
            raise BadForm("Content-Length is not a number") from None
        if size < 0:
            raise BadForm("Content-Length is not a number")
        if size > MAX_FORM_BYTES:
            raise _TooLarge(f"a form of {size} bytes is larger than {MAX_FORM_BYTES}")
        body = self.rfile.read(size)
        if len(body) < size:  # the client closed before the whole form came: never act on a part
            raise _ClientGone
        kind = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if body and kind != "application/x-www-form-urlencoded":
            raise BadForm(f"a form is sent as application/x-www-form-urlencoded, not {kind or 'nothing'}")
        try:
            return parse_qs(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
        except UnicodeDecodeError:
            raise BadForm("the form is not UTF-8") from None

    def _post(self, path: str) -> None:
        form = self._form()
        self.server.guard.check_action(self.headers, _last(form, "token"))
        board = self.server.board
        if path in ("/rerun", "/blame"):
            kind = (form.get("target_kind") or [""])[-1]
            if kind not in ("run", "trace"):
                raise BadForm("target_kind: run or trace")
            with self._reader() as conn:
                target, spans = target_spans(conn, kind, (form.get("target_id") or [""])[-1].strip())
            spans = mask_spans(spans)  # the incident written to the workspace holds no secret either
            if path == "/blame":
                job = start_blame(board, form, target, spans, available_apis())
            else:
                asked = read_rerun_form(form, target, spans, available_apis(), self.server.program)
                job = start_rerun(board, asked, spans)
            self._redirect(f"/job/{job.id}")
        elif path == "/contracts/save":
            job = self._job((form.get("job") or [""])[-1])
            save_contract(self.server.workspace, job, form)
            self._redirect("/contracts")
        elif path == "/contracts/run-all":
            job = start_run_all(board, form, available_apis())
            self._redirect(f"/job/{job.id}")
        else:
            match = _JOB_CANCEL.fullmatch(path)
            assert match is not None
            job = self._job(match["id"])
            board.cancel(job)
            self._redirect(f"/job/{job.id}")

    def _reader(self) -> _Reader:
        return _Reader(self.server.db_path)


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
    db_path: str | Path,
    *,
    host: str = LOCAL_HOST,
    port: int = 0,
    verbose: bool = False,
    read_only: bool = False,
    token: str | None = None,
    workdir: str | Path | None = None,
    program: list[str] | None = None,
    idle_timeout: float | None = IDLE_TIMEOUT_S,
) -> ViewerServer:
    """A workbench on host:port (0: any free port): 127.0.0.1, or any other address with ``token``
    (ConfigError without one). Its files go to ``workdir`` (default: beside the database); ``program``:
    what a rerun form may choose instead of the built-in agent; ``idle_timeout``: the seconds a
    connection may send nothing before it is closed."""
    local = host == LOCAL_HOST
    if not local and token is None:
        raise ConfigError(f"--host {host}: the workbench beyond 127.0.0.1 needs --token")
    db = Path(db_path)
    workspace = Workspace(Path(workdir)) if workdir is not None else Workspace.beside(db)
    guard = Guard(local=local, access_token=None if local else token, read_only=read_only)
    return ViewerServer(db, (host, port), guard=guard, workspace=workspace, program=program, verbose=verbose,
                        idle_timeout=idle_timeout)  # fmt: skip
