"""A request body, read within the size limit: Content-Length or chunked, then decompressed.

The limit holds for the body as sent and again for it decompressed, which is done a bounded piece
at a time: a small gzip bomb stops being inflated one byte past the limit, it is never held whole.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from typing import Protocol

__all__ = ["ENCODINGS", "MIB", "BadBody", "BodyCut", "BodyReader", "BodyTooLarge", "decompress"]

MIB = 1024 * 1024
_PIECE = MIB  # read from the socket at most this much at a time
_MAX_LINE = 4096  # a chunk-size line or a trailer line
_CHUNK_SIZE = re.compile(rb"[0-9a-fA-F]{1,16}")
# The encodings a client may send (Content-Encoding, lower case), and the zlib window bits of each.
ENCODINGS = {"gzip": 31, "x-gzip": 31, "deflate": 15}


class Readable(Protocol):
    def read(self, size: int, /) -> bytes: ...
    def readline(self, size: int, /) -> bytes: ...


class BodyTooLarge(Exception):
    """The body, or the body decompressed, is past the limit."""


class BadBody(Exception):
    """The body's framing or compression is broken (the message says how)."""


class BodyCut(Exception):
    """The connection ended before the body did: there is no one left to answer."""


class BodyReader:
    """The body of one request on ``rfile``: ``length`` bytes, or chunked when ``length`` is None."""

    def __init__(self, rfile: Readable, length: int | None) -> None:
        self._rfile = rfile
        self._pieces = self._sized(length) if length is not None else self._chunked()
        self.done = False  # read to its end: the connection can carry another request

    def read(self, limit: int) -> bytes:
        """The whole body; BodyTooLarge once more than ``limit`` bytes came (the rest is not read)."""
        pieces: list[bytes] = []
        total = 0
        for piece in self._pieces:
            total += len(piece)
            if total > limit:
                raise BodyTooLarge(f"the body is over the limit of {limit} bytes")
            pieces.append(piece)
        self.done = True
        return b"".join(pieces)

    def drain(self, max_bytes: int) -> bool:
        """Read what is left of the body and throw it away, up to ``max_bytes``; True if it ended.

        Read, so that a client still sending it gets to read the answer (an unread body makes the
        connection's close a reset, and the client sees no answer at all).
        """
        total = 0
        try:
            for piece in self._pieces:
                total += len(piece)
                if total > max_bytes:
                    return False
        except (BadBody, BodyCut, OSError):
            return False
        self.done = True
        return True

    def _sized(self, length: int) -> Iterator[bytes]:
        left = length
        while left > 0:
            piece = self._rfile.read(min(left, _PIECE))
            if not piece:
                raise BodyCut(f"the body ended after {length - left} of {length} bytes")
            left -= len(piece)
            yield piece

    def _chunked(self) -> Iterator[bytes]:
        while True:
            line = self._line("chunk size")
            size_text = line.split(b";", 1)[0].strip()  # a chunk extension is ignored
            if not _CHUNK_SIZE.fullmatch(size_text):
                raise BadBody(f"not a chunk size: {size_text[:40]!r}")
            size = int(size_text, 16)
            if size == 0:
                while self._line("trailer").strip():  # trailers are read and ignored
                    pass
                return
            yield from self._sized(size)
            if self._line("chunk end").strip():
                raise BadBody("a chunk is longer than its size")

    def _line(self, what: str) -> bytes:
        line = self._rfile.readline(_MAX_LINE + 1)
        if not line:
            raise BodyCut(f"the body ended before its {what}")
        if len(line) > _MAX_LINE or not line.endswith(b"\n"):
            raise BadBody(f"a {what} line longer than {_MAX_LINE} bytes")
        return line


def decompress(body: bytes, encoding: str, limit: int) -> bytes:
    """``body`` inflated (gzip, several members too, or deflate); BodyTooLarge past ``limit`` bytes."""
    wbits = ENCODINGS[encoding]
    out: list[bytes] = []
    total = 0
    data = body
    try:
        while True:
            inflater = zlib.decompressobj(wbits)
            while not inflater.eof:
                piece = inflater.decompress(data, limit + 1 - total)
                data = inflater.unconsumed_tail
                if not piece and not data:
                    break  # all input used and nothing more comes out: the stream is cut short
                total += len(piece)
                if total > limit:
                    raise BodyTooLarge(f"the body decompressed is over the limit of {limit} bytes")
                out.append(piece)
            if not inflater.eof:
                raise BadBody(f"the {encoding} stream is cut short")
            data = inflater.unused_data
            if not data.strip(b"\0"):  # the end, or the zero padding some writers add
                break
            if wbits != ENCODINGS["gzip"]:
                raise BadBody(f"data after the end of the {encoding} stream")
    except zlib.error as exc:
        raise BadBody(f"not valid {encoding}: {exc}") from None
    return b"".join(out)
