"""JSON Pointer (RFC 6901): where a contract points in a tool's input or in a JSON answer."""

from __future__ import annotations

from typing import Any

__all__ = ["pointer_to", "resolve_pointer"]


def resolve_pointer(document: Any, pointer: str) -> tuple[bool, Any]:
    """RFC 6901: (True, value) where the pointer leads, (False, None) where it leads nowhere."""
    if pointer == "":
        return True, document
    current = document
    for raw in pointer[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(current, dict) and token in current:
            current = current[token]
        elif isinstance(current, list) and token.isdigit() and (token == "0" or token[0] != "0"):
            if int(token) >= len(current):
                return False, None
            current = current[int(token)]
        else:
            return False, None
    return True, current


def pointer_to(key: str) -> str:
    """The pointer to a top-level key: ``a/b`` → ``/a~1b``, ``m~n`` → ``/m~0n``."""
    return "/" + key.replace("~", "~0").replace("/", "~1")
