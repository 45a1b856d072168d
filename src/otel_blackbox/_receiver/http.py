"""The OTLP/HTTP server: ``POST /v1/traces``, protobuf or JSON, identity / gzip / deflate.

Every request is checked in this order, and the first failed check is the answer:

1. the bearer token, when there is one (constant-time compare): 401;
2. the path: 404; the method: 405 with ``Allow: POST``;
3. the Content-Type (``application/x-protobuf`` or ``application/json``, parameters allowed) and
   Content-Encoding: 415;
4. the body's framing (Content-Length or chunked): 411 / 400; its size, as sent and decompressed:
   413;
5. the body itself (TraceService): 400 if malformed, else 200 once committed (or 503 when the
   queue is full or the database late, 413 for more spans than the whole queue holds).

A client that sends ``Expect: 100-continue`` is refused before it sends the body. After an answer
given without reading the body, the body is read and thrown away (up to a bound) so that the client
gets to read the answer; past that bound the connection is closed.

Nothing a client sends ends in a traceback: a handler's unexpected error is one line in the log
and a 500, and the server goes on.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import socket
import socketserver
import sys
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from otel_blackbox._receiver.answers import JSON, PROTOBUF, Answer, failure
from otel_blackbox._receiver.body import (
    ENCODINGS,
    MIB,
    BadBody,
    BodyCut,
    BodyReader,
    BodyTooLarge,
    decompress,
)
from otel_blackbox._receiver.service import TraceService

__all__ = ["TRACES_PATH", "Connections", "OtlpHandler", "OtlpServer", "make_server"]

logger = logging.getLogger("otel_blackbox")

TRACES_PATH = "/v1/traces"
_CONTENT_TYPES = (PROTOBUF, JSON)
_IDENTITY = ("", "identity", "none")
_DRAIN_MAX = 64 * MIB  # beyond the limit, what is read and thrown away of a refused body
_IDLE_TIMEOUT_S = 30  # a connection silent this long (between requests, or in a body) is closed


class Connections:
    """The open connections and which are between requests: a shutdown closes those at once, and
    lets the others finish the request they are in."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: set[socket.socket] = set()
        self.stopping = False

    def opened(self, conn: socket.socket) -> None:
        with self._lock:
            if not self.stopping:
                self._idle.add(conn)
                return
        _shut_reading(conn)

    def busy(self, conn: socket.socket) -> None:
        with self._lock:
            self._idle.discard(conn)

    def idle(self, conn: socket.socket) -> bool:
        """Between requests again; False when shutting down (the connection should close)."""
        with self._lock:
            if self.stopping:
                return False
            self._idle.add(conn)
            return True

    def closed(self, conn: socket.socket) -> None:
        with self._lock:
            self._idle.discard(conn)

    def stop(self) -> None:
        with self._lock:
            self.stopping = True
            idle, self._idle = self._idle, set()
        for conn in idle:
            _shut_reading(conn)


def _shut_reading(conn: socket.socket) -> None:
    """The handler waiting for the next request reads an end of file and closes the connection."""
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_RD)


class OtlpServer(ThreadingHTTPServer):
    """One thread a connection; ``stop()`` waits for the requests in flight."""

    daemon_threads = False
    block_on_close = True  # server_close() joins every handler thread
    request_queue_size = 128

    def __init__(
        self,
        address: tuple[Any, ...],
        family: socket.AddressFamily,
        *,
        token: str | None,
        max_body_bytes: int,
        verbose: bool = False,
    ) -> None:
        self.address_family = family
        self.token = None if token is None else token.encode("utf-8")
        self.max_body_bytes = max_body_bytes
        self.verbose = verbose
        self.connections = Connections()
        self.service: TraceService | None = None  # attached once the port is known
        super().__init__(address, OtlpHandler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind looks the host's name up (getfqdn): a DNS query for nothing.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def stop(self) -> None:
        """Accept no more connections, close the idle ones, answer the requests in flight."""
        self.shutdown()  # serve_forever returns: nothing more is accepted
        self.connections.stop()
        self.server_close()  # the listening socket, then every handler thread joined

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return  # the client went away: nothing to say
        logger.warning("otel-blackbox serve: error on a connection from %s: %s: %s", client_address[0],
                       type(exc).__name__, exc)  # fmt: skip


class OtlpHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: exporters send request after request on one connection
    server_version = "otel-blackbox"
    sys_version = ""
    timeout = _IDLE_TIMEOUT_S
    server: OtlpServer

    # -- the connection ----------------------------------------------------------------------------

    def setup(self) -> None:
        super().setup()
        self.server.connections.opened(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.connections.closed(self.connection)

    def handle_one_request(self) -> None:
        """BaseHTTPRequestHandler's, with every method answered by ``_answer`` (405 for all but
        POST, where the base class would say 501) and the connection marked busy while in a request."""
        connections = self.server.connections
        try:
            self.raw_requestline = self.rfile.readline(65537)
            if not self.raw_requestline:
                self.close_connection = True
                return
            connections.busy(self.connection)
            if len(self.raw_requestline) > 65536:
                self.requestline = self.request_version = self.command = ""
                self.send_error(HTTPStatus.REQUEST_URI_TOO_LONG)
                return
            if not self.parse_request():
                return  # answered already
            if self.request_version == "HTTP/0.9":  # no headers: no content type, no length
                self.send_error(HTTPStatus.BAD_REQUEST, "HTTP/0.9 is not supported")
                return
            try:
                self._answer()
            except (ConnectionError, TimeoutError):
                raise
            except Exception as exc:  # a bug: one line, a 500, and the server goes on
                logger.warning("otel-blackbox serve: internal error: %s: %s", type(exc).__name__, exc)
                self.close_connection = True
                self._send(failure(500, f"internal error: {type(exc).__name__}"))
            self.wfile.flush()
        except (ConnectionError, TimeoutError):
            self.close_connection = True
        finally:
            if not self.close_connection and not connections.idle(self.connection):
                self.close_connection = True

    def handle_expect_100(self) -> bool:
        """Refuse before the body is sent, when the headers are enough to refuse."""
        refusal = self._refusal()
        if refusal is None:
            return super().handle_expect_100()
        self.close_connection = True  # whether the client sends the body anyway is its business
        self._send(refusal)
        return False

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The base class's errors (a malformed request line or headers) as OTLP answers."""
        self.close_connection = True
        if getattr(self, "request_version", "HTTP/0.9") == "HTTP/0.9":
            self.request_version = "HTTP/1.0"  # else the base class would write the body alone
        self._send(failure(int(code), message or HTTPStatus(code).phrase))

    def log_message(self, format: str, *args: Any) -> None:
        pass  # one line per answer with --verbose (_send), nothing otherwise

    # -- the request -------------------------------------------------------------------------------

    def _answer(self) -> None:
        refusal = self._refusal()
        if refusal is not None:
            self._send(refusal)
            self._drain()
            return
        server = self.server
        limit = server.max_body_bytes
        encoding = self._media_type()
        reader = BodyReader(self.rfile, self._content_length())
        try:
            body = reader.read(limit)
            content_encoding = self._content_encoding()
            if content_encoding not in _IDENTITY:
                body = decompress(body, content_encoding, limit)
        except BodyTooLarge as exc:
            self._send(failure(413, f"{exc} ({limit / MIB:g} MiB, serve --max-body-mb)", encoding))
            if not reader.done and not reader.drain(_DRAIN_MAX):
                self.close_connection = True
            return
        except BadBody as exc:
            self.close_connection = not reader.done
            self._send(failure(400, f"malformed body: {exc}", encoding))
            return
        except BodyCut:
            self.close_connection = True  # the client is gone
            return
        assert server.service is not None  # attached before serving
        self._send(server.service.export(body, encoding))

    def _refusal(self) -> Answer | None:
        """The answer to a request refused on its headers alone, or None."""
        server = self.server
        encoding = JSON if self._media_type() == JSON else PROTOBUF
        if server.token is not None and not self._authorized(server.token):
            headers = (("WWW-Authenticate", 'Bearer realm="otel-blackbox"'),)
            return failure(401, "missing or wrong token (Authorization: Bearer TOKEN)", encoding, headers)
        path = urlsplit(self.path).path
        if path != TRACES_PATH:
            return failure(404, f"no such path {_quoted(path)}: traces go to POST {TRACES_PATH}", encoding)
        if self.command != "POST":
            return failure(405, f"method {_quoted(self.command)} not allowed: POST only", encoding,
                           (("Allow", "POST"),))  # fmt: skip
        media = self._media_type()
        if media not in _CONTENT_TYPES:
            got = self.headers.get("Content-Type")
            return failure(
                415,
                f"unsupported Content-Type {_quoted(got) if got else '(none)'}: send application/x-protobuf "
                "or application/json",
            )
        content_encoding = self._content_encoding()
        if content_encoding not in _IDENTITY and content_encoding not in ENCODINGS:
            return failure(
                415,
                f"unsupported Content-Encoding {_quoted(content_encoding)}: gzip, deflate or none",
                encoding,
            )
        transfer = self.headers.get("Transfer-Encoding")
        if transfer is not None and transfer.strip().lower() != "chunked":
            return failure(400, f"unsupported Transfer-Encoding {_quoted(transfer)}: chunked only", encoding)
        if transfer is None:
            length = self.headers.get("Content-Length")
            if length is None:
                return failure(411, "a Content-Length (or a chunked body) is required", encoding)
            size = _length(length)
            if size is None:
                return failure(400, f"not a Content-Length: {_quoted(length)}", encoding)
            if size > server.max_body_bytes:
                return failure(
                    413,
                    f"the body ({size} bytes) is over the limit of {server.max_body_bytes} bytes "
                    f"({server.max_body_bytes / MIB:g} MiB, serve --max-body-mb)",
                    encoding,
                )
        return None

    def _authorized(self, token: bytes) -> bool:
        scheme, _, credentials = (self.headers.get("Authorization") or "").strip().partition(" ")
        given = credentials.strip().encode("latin-1", "replace")  # the header's bytes, as sent
        matches = hmac.compare_digest(given, token)  # constant time whatever the scheme says
        return matches and scheme.lower() == "bearer"

    def _media_type(self) -> str:
        return (self.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()

    def _content_encoding(self) -> str:
        return (self.headers.get("Content-Encoding") or "").strip().lower()

    def _content_length(self) -> int | None:
        """The body's length; None for a chunked body (_refusal made sure it is one or the other)."""
        if self.headers.get("Transfer-Encoding") is not None:
            return None
        return _length(self.headers.get("Content-Length") or "0")

    def _drain(self) -> None:
        """After a refusal: read the body the client may be sending, or close the connection."""
        if self.close_connection:
            return
        transfer = self.headers.get("Transfer-Encoding")
        length = _length(self.headers.get("Content-Length") or "0")
        chunked = transfer is not None and transfer.strip().lower() == "chunked"
        if (transfer is not None and not chunked) or (
            transfer is None and (length is None or length > _DRAIN_MAX)
        ):
            self.close_connection = True  # a body of no length known, or too long to read for nothing
        elif chunked or length:
            reader = BodyReader(self.rfile, None if transfer is not None else length)
            if not reader.drain(_DRAIN_MAX):
                self.close_connection = True

    # -- the answer --------------------------------------------------------------------------------

    def _send(self, answer: Answer) -> None:
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.content_type)
        self.send_header("Content-Length", str(len(answer.body)))
        for name, value in answer.headers:
            self.send_header(name, value)
        if self.close_connection or self.server.connections.stopping:
            self.send_header("Connection", "close")  # and the base class closes it
        self.end_headers()
        self.wfile.write(answer.body)
        if self.server.verbose:
            detail = f": {answer.message}" if answer.message else ""  # an error, a rejection, a warning
            logger.info(
                "otel-blackbox serve: %s %s %s -> %d%s",
                self.client_address[0], _shown(getattr(self, "command", "") or "-"),
                _shown(getattr(self, "path", "") or "-"), answer.status, detail,
            )  # fmt: skip


def _length(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdigit() and text.isascii() and len(text) <= 18 else None


def _quoted(text: str) -> str:
    """What a client sent, quoted and bounded for a message or the log (no control characters)."""
    return repr(text[:100] + ("..." if len(text) > 100 else ""))


def _shown(text: str) -> str:
    """For the log: bounded, control characters escaped, no quotes."""
    return repr(text[:200])[1:-1]


def make_server(
    host: str,
    port: int,
    *,
    token: str | None,
    max_body_bytes: int,
    service: Callable[[int], TraceService],
    verbose: bool = False,
) -> OtlpServer:
    """A server listening on host:port (0: a free port), ``service(port)`` attached; OSError if it
    cannot listen there."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, _, _, _, address = infos[0]
    server = OtlpServer(address, family, token=token, max_body_bytes=max_body_bytes, verbose=verbose)
    server.service = service(server.port)
    return server
