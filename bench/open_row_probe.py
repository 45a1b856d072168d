"""Timestamps of each stage of an open row's way to disk (bench_open_row_latency.py reads them).

Not part of the package: the benchmark runs its agent through this file, which wraps a few of the
recorder's internals in the agent and, through the writer process's boot line, in the writer
process. Each event is one line, written unbuffered (a SIGKILL loses none) to
``$BLACKBOX_PROBE_DIR/<pid>.log``: ``kind time_ns fields...``.

    python bench/open_row_probe.py tests/programs/stress_agent.py churn --db PATH ...   # the agent, probed

Agent events: ``T`` an open snapshot taken from the registry (trace, span, start_ns), ``D0``/``D1``
a delivery to the writer begins/ends (finals, opens), ``R0``/``R1`` the shipper rests on its share,
``P0``/``P1`` the writer process is started / ready (the first ``P1`` counts). Writer events are
logged by the writer process and by the agent itself (open rows written from the shipper's thread
while the writer process starts). Writer events: ``V`` a batch received
(finals, opens, then the open keys), ``W0``/``W1`` a transaction begins/commits (finals, opens, then
the open keys committed), ``M0``/``M1`` maintenance (retention, eviction) begins/ends.
"""

from __future__ import annotations

import functools
import os
import runpy
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

_FD: int | None = None


def _log(*fields: object) -> None:
    global _FD
    if _FD is None:
        folder = os.environ["BLACKBOX_PROBE_DIR"]
        _FD = os.open(f"{folder}/{os.getpid()}.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(_FD, (" ".join(str(f) for f in fields) + "\n").encode())


def _keys(snapshots: Any) -> list[str]:
    return [f"{s[0]:032x}:{s[1]:016x}" for s in snapshots]


def _around(owner: Any, name: str, before: Callable[..., None], after: Callable[..., None]) -> None:
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        before(*args, **kwargs)
        result = original(*args, **kwargs)
        after(result, *args, **kwargs)
        return result

    setattr(owner, name, wrapped)


def install_writer() -> None:
    """In the writer process: receive, each transaction, maintenance."""
    from otel_blackbox._store.writer import SpanWriter

    original_receive = SpanWriter.receive

    def receive(self: Any, definitions: Any, finals: Any, opens: Any) -> None:
        opens, finals = list(opens), list(finals)
        _log("V", time.time_ns(), len(finals), len(opens), *_keys(opens))
        original_receive(self, definitions, finals, opens)

    SpanWriter.receive = receive  # type: ignore[method-assign]

    if not hasattr(SpanWriter, "_write_run"):  # an older writer (--baseline-src): a transaction a call
        _around(SpanWriter, "_write", _write_began, _write_ended)
        _around(
            SpanWriter,
            "maintain",
            lambda *a: _log("M0", time.time_ns()),
            lambda *a: _log("M1", time.time_ns()),
        )
        return

    def write_began(_self: Any, items: Any, first: int, opens: Any, _between: Any) -> None:
        _log("W0", time.time_ns(), len(items) - first, len(opens))

    def write_ended(result: Any, _self: Any, items: Any, first: int, _opens: Any, _between: Any) -> None:
        # One transaction: the final rows items[first:end], and the open rows it held (those it
        # was given, and those that came in between two of its steps).
        error, end, held = result
        ended = {key for key, _ in items[first:end]}
        committed = [s for k, s in held.items() if k not in ended] if error is None else []
        _log("W1", time.time_ns(), end - first, len(committed), *_keys(committed))

    _around(SpanWriter, "_write_run", write_began, write_ended)
    _around(
        SpanWriter, "maintain", lambda *a: _log("M0", time.time_ns()), lambda *a: _log("M1", time.time_ns())
    )


def _write_began(_self: Any, finals: Any, opens: Any) -> None:
    _log("W0", time.time_ns(), len(finals), len(opens))


def _write_ended(error: Any, _self: Any, finals: Any, opens: Any) -> None:
    committed = [s for k, s in opens.items() if k not in finals] if error is None else []
    _log("W1", time.time_ns(), len(finals), len(committed), *_keys(committed))


def install_agent() -> None:
    """In the agent: the shipper's look at the registry, its deliveries and rests; the writer's start."""
    from otel_blackbox._recorder import process_sink as companion
    from otel_blackbox._recorder import shipper

    def taken(result: Any, *_args: Any) -> None:
        now = time.time_ns()
        for snapshot in result.values():
            _log("T", now, f"{snapshot[0]:032x}:{snapshot[1]:016x}", snapshot[7])

    _around(shipper.Shipper, "_take_opens", lambda *a: None, taken)
    _around(
        shipper.Shipper,
        "_deliver",
        lambda _s, finals, opens, _m: _log("D0", time.time_ns(), len(finals), len(opens)),
        lambda _r, _s, finals, opens, _m: _log("D1", time.time_ns(), len(finals), len(opens)),
    )
    _around(
        shipper.Shipper,
        "_rest",
        lambda _s, seconds: _log("R0", time.time_ns(), f"{seconds:.4f}"),
        lambda *a: _log("R1", time.time_ns()),
    )
    # The writer process is ready when start returns (older code) or wait_ready first says so.
    waits = hasattr(companion.ProcessSink, "wait_ready")
    _around(
        companion.ProcessSink,
        "start",
        lambda *a: _log("P0", time.time_ns()),
        lambda *a: None if waits else _log("P1", time.time_ns()),
    )
    if waits:
        _around(
            companion.ProcessSink,
            "wait_ready",
            lambda *a: None,
            lambda ready, *a: _log("P1", time.time_ns()) if ready else None,
        )
    install_writer()  # the agent's own SpanWriter: open rows written from the shipper's thread
    here = str(Path(__file__).resolve().parent)
    companion._BOOT = (  # the writer process loads this file too, and wraps its own side
        f"import sys; sys.path[:0] = sys.argv[2:] + [{here!r}]; import open_row_probe; "
        "open_row_probe.install_writer(); from otel_blackbox._store.writer_process import main; main()"
    )


if __name__ == "__main__":
    install_agent()
    sys.argv = sys.argv[1:]  # the agent's script and arguments, as if it were run directly
    script = sys.argv[0]
    runpy.run_path(script, run_name="__main__")
