"""Reading and writing cassette files.

Reading validates the structure (types and required fields) and reports the first problem as one
line naming where it is; it never trusts the file's own hashes (that is verify's job). Writing is
atomic: a temporary file beside the target, then a rename.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

from otel_blackbox._atomic import atomic_text_writer
from otel_blackbox._cassette.model import FORMAT_VERSION, STEP_TYPES, Cassette, Step
from otel_blackbox.errors import CassetteError, ConfigError

__all__ = [
    "MAX_FILE_BYTES",
    "load_cassette",
    "loads_json",
    "max_file_bytes",
    "parse_cassette",
    "read_text",
    "save_cassette",
]

# A cassette bigger than this is refused before it is read; OTEL_BLACKBOX_MAX_CASSETTE_MB overrides.
MAX_FILE_BYTES = 32 * 1024 * 1024


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


def read_text(path: str | Path, *, max_bytes: int | None = None) -> str:
    path = Path(path)
    max_bytes = max_file_bytes() if max_bytes is None else max_bytes
    try:
        size = path.stat().st_size
        if path.is_dir():
            raise CassetteError(f"{path}: is a directory, not a cassette file")
        if size > max_bytes:
            raise CassetteError(
                f"{path}: {size / 2**20:.1f} MB is larger than the {max_bytes / 2**20:g} MB limit"
                " (OTEL_BLACKBOX_MAX_CASSETTE_MB)"
            )
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CassetteError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise CassetteError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise CassetteError(f"{path}: {exc.strerror or exc}") from None


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
    for key in ("api", "agent"):
        if data.get(key) is not None and not isinstance(data[key], dict):
            raise CassetteError(f"{source}: field {key!r} must be an object")
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
    )


def load_cassette(path: str | Path, *, check_version: bool = True) -> Cassette:
    """Read and structurally validate a cassette file (CassetteError on any problem)."""
    return parse_cassette(loads_json(read_text(path), str(path)), str(path), check_version=check_version)


def save_cassette(cassette: Cassette, path: str | Path) -> None:
    """Write atomically, pretty-printed (two-space indent, as the JavaScript tool writes)."""
    text = json.dumps(cassette.to_json(), indent=2, ensure_ascii=False, allow_nan=False)
    # A lone surrogate (a valid JSON escape) has no UTF-8 form: escape it, as JSON.stringify does.
    text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)
    with atomic_text_writer(path) as handle:
        handle.write(text + "\n")
