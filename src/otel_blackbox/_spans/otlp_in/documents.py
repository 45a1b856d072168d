"""The JSON documents of a file, read as it streams: JSON lines, or one document over many lines."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from otel_blackbox._spans.otlp_in.span import OtlpError

__all__ = ["read_documents"]


def read_documents(lines: Iterable[str]) -> Iterator[tuple[int | None, object]]:
    """The JSON documents of a file, read as it streams: one per line (JSON lines, as ``export`` and
    the Collector's ``file`` exporter write), or one document over many lines (a backend's body,
    pretty-printed or not).

    Yields (line number, document); the line is None for a document of many lines. Raises
    OtlpError naming the line of what is not JSON. JSON lines are read one at a time, each line
    whole; a document of many lines is necessarily read whole, its text and then its parsed form.
    """
    numbered = enumerate(lines, 1)
    for number, line in numbered:
        if _blank(line):
            continue
        try:
            first = json.loads(line)
        except RecursionError:
            raise OtlpError(f"line {number}", "nested too deeply to read") from None
        except json.JSONDecodeError:
            # Not a line of its own: the file is one document, read whole (blank lines before it
            # kept, so that an error's line number is the file's).
            text = "\n" * (number - 1) + line + "".join(rest for _, rest in numbered)
            del line
            whole = _whole(text)
            del text
            yield None, whole
            return
        del line  # no line nor document is held here while the one yielded is stored
        yield number, first
        del first
        for number, line in numbered:
            if not _blank(line):
                document = _line(line, number)
                del line
                yield number, document
                del document


def _blank(line: str) -> bool:
    return not line or line.isspace()  # no stripped copy of a long line


def _whole(text: str) -> object:
    try:
        return json.loads(text)
    except RecursionError:
        raise OtlpError("", "nested too deeply to read") from None
    except json.JSONDecodeError as exc:
        raise OtlpError(f"line {exc.lineno}", f"not JSON ({exc.msg}, column {exc.colno})") from None


def _line(line: str, number: int) -> object:
    try:
        return json.loads(line)
    except RecursionError:
        raise OtlpError(f"line {number}", "nested too deeply to read") from None
    except json.JSONDecodeError as exc:
        raise OtlpError(f"line {number}", f"not JSON ({exc.msg}, column {exc.colno})") from None
