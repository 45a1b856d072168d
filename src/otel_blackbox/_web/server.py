"""The workbench over the span database: ``otel-blackbox ui``.

Standard library only (``http.server``). It opens the database read-only (``mode=ro``) for each
request, so traces a running agent writes appear without a restart and the workbench never changes
the file; what it makes (incidents, children, contracts, job records) goes to its workspace
(``workspace.py``). Who may read and who may act: ``guard.py``. This module is the server and its
handler: the headers, the guard's checks, a form read whole, every failure made one answer; what
each path answers is made in ``trace_routes.py`` (what was recorded) and ``job_routes.py`` (jobs,
contracts, the actions).

GET: ``/`` runs and traces (filters as query parameters), ``/api/traces`` the traces as JSON,
``/run/<id>`` and ``/trace/<id>`` the report opened on where it failed, with the rerun form (a unique
id prefix is enough; ``/steps``: its steps to edit), ``/job/<id>`` a job (``/child``, ``/incident``:
its cassettes; ``/contract``: the contract its child holds), ``.../edit/<N>`` a step's editor,
``/api/job/<id>`` its progress, ``/contracts`` the saved contracts. POST (the actions): ``/rerun``,
``/blame``, ``/fork``, ``/job/<id>/cancel``, ``/contracts/save``, ``/contracts/run-all``.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from otel_blackbox._web.actions import BadForm
from otel_blackbox._web.filters import BadRequest
from otel_blackbox._web.guard import ACCESS_COOKIE, LOCAL_HOST, Guard, Refused
from otel_blackbox._web.job_routes import (
    EDIT_PAGE,
    JOB_API,
    JOB_PAGE,
    STEPS_PAGE,
    act,
    edit_view,
    is_action,
    job_progress,
    job_view,
    run_steps_view,
    saved_contracts_page,
)
from otel_blackbox._web.jobs import JobBoard
from otel_blackbox._web.masking import mask_page
from otel_blackbox._web.pages import message_page
from otel_blackbox._web.request_context import NotFound
from otel_blackbox._web.trace_routes import front_page, target_page, traces_json
from otel_blackbox._web.workspace import Workspace
from otel_blackbox.errors import (
    AmbiguousRunId,
    AmbiguousTraceId,
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


class _TooLarge(Exception):
    """A form larger than MAX_FORM_BYTES: 413."""


class _ClientGone(Exception):
    """The client closed its side before its request was whole: nothing to answer, nobody to tell."""


def _last(fields: dict[str, list[str]], name: str) -> str | None:
    values = fields.get(name)
    return values[-1] if values else None


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
        if not is_action(path):
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
        except (TraceNotFound, RunNotFound, NotFound) as exc:
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

    # -- GET: each body is made in trace_routes.py or job_routes.py ----------------------------------

    def _get(self, path: str, query: str) -> None:
        server = self.server
        if path in ("/", "/index.html"):
            self._send(HTTPStatus.OK, front_page(server, query))
        elif path == "/favicon.ico":  # every browser asks; a 404 is an error in its console
            self._send(HTTPStatus.NO_CONTENT, "", "image/x-icon")
        elif path == "/api/traces":
            self._send(HTTPStatus.OK, traces_json(server, query), "application/json")
        elif match := STEPS_PAGE.fullmatch(path):
            self._send(HTTPStatus.OK, run_steps_view(server, unquote(match["parent"])))
        elif match := EDIT_PAGE.fullmatch(path):
            self._send(HTTPStatus.OK, edit_view(server, unquote(match["parent"]), int(match["step"])))
        elif path.startswith(("/trace/", "/run/")):
            kind, _, ident = path[1:].partition("/")
            self._send(HTTPStatus.OK, target_page(server, kind, unquote(ident)))
        elif path == "/contracts":
            self._send(HTTPStatus.OK, saved_contracts_page(server))
        elif match := JOB_PAGE.fullmatch(path):
            self._send(HTTPStatus.OK, job_view(server, match["id"], match["what"]))
        elif match := JOB_API.fullmatch(path):
            self._send(HTTPStatus.OK, job_progress(server, match["id"]), "application/json")
        else:
            raise NotFound(f"no such page: {path}")

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
        self._redirect(act(self.server, path, form))


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
