"""Messages between the agent and its writer process: pickled tuples, each behind its length.

Both ends are this package's own code, started by the agent for itself over an anonymous pipe:
nothing else can write to either end.
"""

from __future__ import annotations

import os
import pickle
import struct
from typing import Any

__all__ = ["FrameReader", "encode", "write_all"]

_LENGTH = struct.Struct(">I")


def encode(message: tuple[Any, ...]) -> bytes:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _LENGTH.pack(len(body)) + body


def write_all(fd: int, data: bytes) -> None:
    """Write every byte (a pipe takes at most its buffer's worth per call)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class FrameReader:
    """Bytes in, whole messages out; a partial frame waits for the rest."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[tuple[Any, ...]]:
        buffer = self._buffer
        buffer += data
        messages = []
        offset = 0
        while len(buffer) - offset >= _LENGTH.size:
            (length,) = _LENGTH.unpack_from(buffer, offset)
            end = offset + _LENGTH.size + length
            if len(buffer) < end:
                break
            messages.append(pickle.loads(buffer[offset + _LENGTH.size : end]))
            offset = end
        del buffer[:offset]
        return messages
