"""Reading and writing cassette files.

Reading validates the structure (types and required fields) and reports the first problem as one
line naming where it is; it never trusts the file's own hashes (that is verify's job). Writing is
atomic: a temporary file beside the target, then a rename.

A file is read as gzip when its name ends in ``.gz`` or it starts with gzip's magic bytes, and a
document in the compact encoding (``compact.py``) is decoded to its v2 document, so every command
reads ``run.json``, ``run.json.gz`` and a renamed one alike. A name ending in ``.gz`` is written
compressed and compact; any other, plain v2 JSON (the interchange format).
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from otel_blackbox._atomic import atomic_binary_writer
from otel_blackbox._cassette.compact import decode_document, encode_document
from otel_blackbox._cassette.model import FORMAT_VERSION, STEP_TYPES, Cassette, Step
from otel_blackbox.errors import CassetteError, ConfigError

__all__ = [
    "MAX_FILE_BYTES",
    "document_of",
    "is_gzip",
    "is_gzip_name",
    "load_cassette",
    "loads_json",
    "max_file_bytes",
    "parse_cassette",
    "read_document",
    "read_text",
    "save_cassette",
]

# The JSON text of a cassette, once decompressed, is refused past this (read no further than that):
# it is what reading it holds in memory. OTEL_BLACKBOX_MAX_CASSETTE_MB overrides.
MAX_FILE_BYTES = 32 * 1024 * 1024
_GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 20


def max_file_bytes() -> int:
    raw = os.environ.get("OTEL_BLACKBOX_MAX_CASSETTE_MB", "").strip()
    if not raw:
        return MAX_FILE_BYTES
    try:
        megabytes = float(raw)
    except ValueError:
        megabytes = -1.0
    if not 0 < megabytes < math.inf:
        raise ConfigError(f"OTEL_BLACKBOX_MAX_CASSETTE_MB: expected a number of megabytes > 0, got {raw!r}")
    return int(megabytes * 1024 * 1024)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _reject_constant(name: str) -> Any:
    raise CassetteError(f"{name} is not valid JSON (non-finite numbers are not allowed)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400 parses as infinity: no JSON tool can write it back
        raise CassetteError(f"the number {text[:40]} is too large (non-finite numbers are not allowed)")
    return value


def loads_json(text: str, source: str) -> Any:
    """Strict JSON: no NaN / Infinity, a clear line for anything else that is wrong."""
    if not text.strip():
        raise CassetteError(f"{source}: the file is empty")
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except CassetteError as exc:
        raise CassetteError(f"{source}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise CassetteError(
            f"{source}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    except RecursionError:
        raise CassetteError(f"{source}: JSON nested too deeply") from None
    except ValueError:  # an integer past Python's digit limit for int()
        raise CassetteError(f"{source}: a number in the file has too many digits") from None


def is_gzip_name(path: str | Path) -> bool:
    return Path(path).name.lower().endswith(".gz")


def is_gzip(path: str | Path) -> bool:
    """Whether the file is gzip-compressed, by its first bytes (a renamed file too) or its name."""
    try:
        with Path(path).open("rb") as handle:
            return handle.read(2) == _GZIP_MAGIC or is_gzip_name(path)
    except OSError:
        return is_gzip_name(path)


def read_text(path: str | Path, *, max_bytes: int | None = None) -> str:
    """The file's text, decompressed when it is gzip (by name or content); CassetteError past
    ``max_bytes`` of text (by default :func:`max_file_bytes`), a gzip file refused as soon as its
    inflated text passes it (never inflated whole)."""
    path = Path(path)
    max_bytes = max_file_bytes() if max_bytes is None else max_bytes
    try:
        size = path.stat().st_size
        if path.is_dir():
            raise CassetteError(f"{path}: is a directory, not a cassette file")
        with path.open("rb") as handle:
            if handle.read(2) == _GZIP_MAGIC or is_gzip_name(path):
                handle.seek(0)
                data = _inflate(handle, path, max_bytes)
            elif size > max_bytes:
                raise CassetteError(
                    f"{path}: {size / 2**20:.1f} MB is larger than the {max_bytes / 2**20:g} MB limit"
                    " (OTEL_BLACKBOX_MAX_CASSETTE_MB)"
                )
            else:
                handle.seek(0)
                data = handle.read(max_bytes + 1)  # the file may have grown since stat
                if len(data) > max_bytes:
                    limit = f"{max_bytes / 2**20:g} MB"
                    raise CassetteError(
                        f"{path}: larger than the {limit} limit (OTEL_BLACKBOX_MAX_CASSETTE_MB)"
                    )
        return data.decode("utf-8")
    except FileNotFoundError:
        raise CassetteError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise CassetteError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise CassetteError(f"{path}: {exc.strerror or exc}") from None


def _inflate(handle: IO[bytes], path: Path, max_bytes: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    try:
        with gzip.GzipFile(fileobj=handle, mode="rb") as unzipped:
            while chunk := unzipped.read(_CHUNK):  # at most _CHUNK bytes inflated at a time
                total += len(chunk)
                if total > max_bytes:
                    raise CassetteError(
                        f"{path}: more than the {max_bytes / 2**20:g} MB limit once decompressed"
                        " (OTEL_BLACKBOX_MAX_CASSETTE_MB); not read further"
                    )
                chunks.append(chunk)
    except EOFError:
        raise CassetteError(f"{path}: the gzip data is cut short (a truncated file)") from None
    except (gzip.BadGzipFile, zlib.error) as exc:
        raise CassetteError(f"{path}: not valid gzip data ({exc})") from None
    return b"".join(chunks)


def read_document(path: str | Path) -> Any:
    """The file's JSON, a compact document decoded to its v2 document (not yet checked as a cassette)."""
    return document_of(read_text(path), str(path))


def document_of(text: str, source: str) -> Any:
    """The JSON of a cassette file's text (as :func:`read_text` gives it), decoded to v2 when compact."""
    data = loads_json(text, source)
    try:
        return decode_document(data, source, max_bytes=max_file_bytes())
    except RecursionError:
        raise CassetteError(f"{source}: JSON nested too deeply") from None


def _require(
    obj: dict[str, Any], key: str, kinds: tuple[type, ...], where: str, *, nullable: bool = False
) -> Any:
    if key not in obj:
        raise CassetteError(f"{where}: missing field {key!r}")
    value = obj[key]
    if value is None and nullable:
        return None
    if isinstance(value, bool) or not isinstance(value, kinds):
        expected = " or ".join(k.__name__.replace("str", "string").replace("float", "number") for k in kinds)
        raise CassetteError(f"{where}: field {key!r} must be {expected}{' or null' if nullable else ''}")
    return value


def _found(data: dict[str, Any]) -> str:
    """What a JSON object that is not a cassette holds instead, for the line that says so."""
    if not data:
        return "the file is an empty JSON object"
    keys = [json.dumps(str(key), ensure_ascii=True)[:40] for key in list(data)[:5]]
    more = f" and {len(data) - 5} more" if len(data) > 5 else ""
    return f"its keys are {', '.join(keys)}{more}"


def parse_cassette(data: Any, source: str = "cassette", *, check_version: bool = True) -> Cassette:
    """A Cassette from parsed JSON; CassetteError naming the first structural problem."""
    if not isinstance(data, dict):
        raise CassetteError(f"{source}: a cassette is a JSON object, not {type(data).__name__}")
    if "id" not in data:  # another JSON file (OTLP, a contract, a chat log): say what it is not
        raise CassetteError(f"{source}: not a Blackbox cassette (no 'id' field: {_found(data)})")
    version = data.get("version")
    if check_version and version != FORMAT_VERSION:
        shown = "missing" if version is None else repr(version)
        raise CassetteError(f"{source}: version {shown} is not supported (expected {FORMAT_VERSION})")
    if "version" in data and (isinstance(version, bool) or not isinstance(version, int)):
        raise CassetteError(f"{source}: field 'version' must be an integer")
    cassette_id = _require(data, "id", (str,), source)
    created_at = _require(data, "createdAt", (int, float), source)
    parent_id = data.get("parentId")
    forked_from = data.get("forkedFromStepId")
    for key, value in (("parentId", parent_id), ("forkedFromStepId", forked_from)):
        if value is not None and not isinstance(value, str):
            raise CassetteError(f"{source}: field {key!r} must be a string")
    for key in ("api", "agent", "subagentOf", "edit"):
        if data.get(key) is not None and not isinstance(data[key], dict):
            raise CassetteError(f"{source}: field {key!r} must be an object")
    subagents = data.get("subagents")
    if subagents is not None and not (
        isinstance(subagents, list) and all(isinstance(x, dict) for x in subagents)
    ):
        raise CassetteError(f"{source}: field 'subagents' must be a list of objects")
    raw_steps = _require(data, "steps", (list,), source)
    steps = []
    for position, raw in enumerate(raw_steps):
        where = f"{source}: step {position}"
        if not isinstance(raw, dict):
            raise CassetteError(f"{where}: a step is a JSON object")
        step_type = _require(raw, "type", (str,), where)
        if step_type not in STEP_TYPES:
            raise CassetteError(f"{where}: unknown step type {step_type!r}")
        if "payload" not in raw:
            raise CassetteError(f"{where}: missing field 'payload'")
        steps.append(
            Step(
                id=_require(raw, "id", (str,), where),
                index=_require(raw, "index", (int,), where),
                type=step_type,
                timestamp=_require(raw, "timestamp", (int, float), where),
                payload=raw["payload"],
                prev_hash=_require(raw, "prevHash", (str,), where, nullable=True),
                hash=_require(raw, "hash", (str,), where),
            )
        )
    return Cassette(
        id=cassette_id,
        created_at=created_at,
        steps=steps,
        version=version if isinstance(version, int) else FORMAT_VERSION,
        parent_id=parent_id,
        forked_from_step_id=forked_from,
        api=data.get("api"),
        agent=data.get("agent"),
        subagents=subagents,
        subagent_of=data.get("subagentOf"),
        edit=data.get("edit"),
    )


def load_cassette(path: str | Path, *, check_version: bool = True) -> Cassette:
    """Read and structurally validate a cassette file (CassetteError on any problem)."""
    return parse_cassette(read_document(path), str(path), check_version=check_version)


def save_cassette(cassette: Cassette, path: str | Path, *, compact: bool | None = None) -> int:
    """Write atomically; the bytes of JSON text written (before compression) come back.

    A name ending in ``.gz``: the compact encoding, gzip-compressed. Any other: plain v2,
    pretty-printed (two-space indent, as the JavaScript tool writes), step by step (never the whole
    text at once); ``compact=True`` writes the compact encoding there too (uncompressed), and
    ``compact=False`` plain v2 inside the gzip."""
    gzipped = is_gzip_name(path)
    compact = gzipped if compact is None else compact
    with atomic_binary_writer(path) as handle:
        if gzipped:
            # mtime 0 and no name in the header: the same cassette compresses to the same bytes.
            with gzip.GzipFile(filename="", mode="wb", fileobj=handle, mtime=0) as zipped:
                return _write_json(cassette, zipped.write, compact)
        return _write_json(cassette, handle.write, compact)


def _write_json(cassette: Cassette, write: Callable[[bytes], object], compact: bool) -> int:
    written = 0
    for text in _compact_text(cassette) if compact else _plain_text(cassette):
        # A lone surrogate (a valid JSON escape) has no UTF-8 form: escape it, as JSON.stringify does.
        data = _SURROGATE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text).encode("utf-8")
        write(data)
        written += len(data)
    return written


def _dumps(value: Any, indent: int | None) -> str:
    separators = None if indent else (",", ":")
    return json.dumps(value, indent=indent, separators=separators, ensure_ascii=False, allow_nan=False)


def _compact_text(cassette: Cassette) -> Iterator[str]:
    yield _dumps(encode_document(cassette.to_json()), None) + "\n"


def _plain_text(cassette: Cassette) -> Iterator[str]:
    """Exactly ``json.dumps(cassette.to_json(), indent=2)`` and a newline, one step at a time."""
    document = cassette.to_json()
    steps = document.pop("steps")  # to_json puts the steps last
    head = _dumps(document, 2)
    if not steps:
        yield head[:-2] + ',\n  "steps": []\n}\n'
        return
    yield head[:-2] + ',\n  "steps": ['
    for position, step in enumerate(steps):
        # A JSON text holds no raw newline inside a string: each of its lines moves in by four.
        yield ("\n    " if position == 0 else ",\n    ") + _dumps(step, 2).replace("\n", "\n    ")
    yield "\n  ]\n}\n"
