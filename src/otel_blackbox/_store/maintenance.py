"""Retention and the size cap, done a bounded share at a time so span writes never wait long.

Retention runs once the writer has the file open (its first write) and every cleanup interval.
The size is checked once a second; over the cap, the oldest complete traces go (about _BUDGET_S of
work a tick, three times that past the cap itself) until the data is down to 90 % of it, then the
freed pages go back to the filesystem. The writer (writer.py) calls ``tick`` once a tick and
handles its faults as it handles a write's.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

from otel_blackbox._config import BlackboxConfig
from otel_blackbox._store.retention import (
    apply_retention,
    database_bytes,
    evict_oldest,
    give_space_back,
    size_cap_target,
)

__all__ = ["Maintenance"]

_BUDGET_S = 0.05  # of each 100 ms tick, for evicting traces down from the size cap
_VACUUM_PAGES_PER_TICK = 2048  # 16 MB of 8 KiB pages given back to the filesystem a tick


class Maintenance:
    """The state of one file's upkeep: when retention and the size last ran, and the work under way."""

    def __init__(self, config: BlackboxConfig) -> None:
        self.config = config
        self._last_cleanup = 0.0
        self._last_size_check = 0.0
        self.evicting = False  # over the size cap: evicting a share each tick down to 90 %
        self.freed = False  # pages to give back to the filesystem once eviction is done

    def tick(
        self,
        connection: Callable[[], sqlite3.Connection],
        *,
        connected: bool,
        between: Callable[[], None] | None = None,
    ) -> None:
        """What is due now, on the writer's open file. ``connection`` gives that file; nothing is
        done until the writer has one (``connected``): upkeep never creates a file, nor opens again
        one that was deleted while recording, before a span is written to it. ``between`` is called
        between two steps (an eviction step, or eviction and giving space back), as the writer's
        write_pending does."""
        config = self.config
        cap = config.max_db_bytes
        if not connected or (config.retention_seconds is None and cap is None):
            return
        now = time.monotonic()
        retention_due = config.retention_seconds is not None and (
            self._last_cleanup == 0.0 or now - self._last_cleanup >= config.cleanup_interval_s
        )
        size_check_due = cap is not None and not self.evicting and now - self._last_size_check >= 1.0
        if not (retention_due or self.evicting or self.freed or size_check_due):
            return
        conn = connection()
        if retention_due and config.retention_seconds is not None:
            self._last_cleanup = now
            self.freed |= apply_retention(conn, config.retention_seconds) > 0
        if cap is not None and size_check_due:
            self._last_size_check = now
            self.evicting = database_bytes(conn) > cap
        if cap is not None and self.evicting:
            # Past the cap itself, take a larger share: the cap must hold even under heavy writing.
            budget = _BUDGET_S * (3 if database_bytes(conn) > cap else 1)
            evicted, done = evict_oldest(conn, size_cap_target(cap), budget_s=budget, between=between)
            self.evicting = not done
            self.freed |= evicted > 0
        if self.freed and not self.evicting:
            if between is not None:
                between()
            self.freed = not give_space_back(conn, max_pages=_VACUUM_PAGES_PER_TICK)
