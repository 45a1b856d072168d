"""The shipper's share of the agent's interpreter: a budget of its own thread's CPU time.

The shipper runs in the agent's process, on the agent's GIL: every microsecond it works is one the
agent's threads cannot run Python in. The budget is a token bucket: it fills at ``share`` seconds
of CPU per second of wall time, up to ``share × WINDOW_S`` (so an idle stretch buys a short burst,
never a long one), and the shipper's work is charged by the thread's own CPU clock, which counts
only what it ran (a blocked pipe write or a sleep costs nothing). Past the budget the shipper rests;
what the agent makes meanwhile waits in the processor's bounded queue, which sheds the excess
(counted, shown by ``stats``).
"""

from __future__ import annotations

import time

__all__ = ["InterpreterShare"]

WINDOW_S = 0.1


class InterpreterShare:
    """One per shipper thread; only that thread calls it (the CPU clock is the calling thread's)."""

    def __init__(self, share: float) -> None:
        self.share = share
        self._capacity_ns = share * WINDOW_S * 1e9
        self._tokens_ns = self._capacity_ns
        self._wall_ns = self._cpu_ns = -1  # read on the first call: the clock is the caller thread's
        self.rested_s = 0.0  # total time spent resting: how often the budget bound

    def rest_s(self, *, urgent: bool = False) -> float:
        """Charge the work done since the last call; the seconds to rest before working again (0: go on).

        ``urgent``: a flush or stop waits, so the agent's thread is blocked on this work anyway: it goes
        on now, and leaves no debt (the next span's open row must not wait for it to be paid)."""
        if self.share >= 1.0:
            return 0.0
        wall, cpu = time.monotonic_ns(), time.thread_time_ns()
        if self._cpu_ns < 0:
            self._wall_ns, self._cpu_ns = wall, cpu
        tokens = self._tokens_ns + (wall - self._wall_ns) * self.share - (cpu - self._cpu_ns)
        self._tokens_ns = min(tokens, self._capacity_ns)
        self._wall_ns, self._cpu_ns = wall, cpu
        if urgent:
            self._tokens_ns = max(self._tokens_ns, 0.0)
        if self._tokens_ns >= 0:
            return 0.0
        return -self._tokens_ns / self.share / 1e9
