"""What every recorder of the process shares: its settings, ``OTEL_SDK_DISABLED``, and the hooks of the
process's life (fork, exit), which hold the recorder by a weak reference so that it can still be
garbage collected. The span processor and the log record processor are ``Recorder``s: each makes its
own queue and writer (``_new_writer``) and says what a fork and an exit do to them."""

from __future__ import annotations

import atexit
import logging
import os
import threading
import weakref
from abc import ABC, abstractmethod
from pathlib import Path

from opentelemetry.sdk.environment_variables import OTEL_SDK_DISABLED

from otel_blackbox._config import BlackboxConfig

__all__ = ["EXIT_FLUSH_TIMEOUT_S", "Recorder", "call_at_exit"]

logger = logging.getLogger("otel_blackbox")

EXIT_FLUSH_TIMEOUT_S = 5.0


class Recorder(ABC):
    """A recorder's settings and its place in the process's life (fork, exit)."""

    config: BlackboxConfig
    disabled: bool

    def _set_up(self, db_path: str | Path | None, config: BlackboxConfig | None) -> None:
        """``config`` (``BlackboxConfig.from_env()`` when None; ``db_path`` wins over its own), the
        first writer (started lazily) and the hooks. Creating a recorder starts nothing."""
        config = config or BlackboxConfig.from_env()
        if db_path is not None:
            config = config.replace(db_path=db_path)
        self.config = config
        self.disabled = os.environ.get(OTEL_SDK_DISABLED, "").strip().lower() == "true"
        self._shutdown = False
        self._start_lock = threading.Lock()
        self._new_writer()
        ref = weakref.ref(self)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(
                before=lambda: call_at_exit(ref, "_before_fork"),
                after_in_parent=lambda: call_at_exit(ref, "_after_fork_in_parent"),
                after_in_child=lambda: call_at_exit(ref, "_after_fork_in_child"),
            )
        atexit.register(call_at_exit, ref, "_at_exit")

    @abstractmethod
    def _new_writer(self) -> None: ...

    @abstractmethod
    def _before_fork(self) -> None: ...

    @abstractmethod
    def _after_fork_in_parent(self) -> None: ...

    @abstractmethod
    def _after_fork_in_child(self) -> None: ...

    @abstractmethod
    def _at_exit(self) -> None: ...


def call_at_exit(ref: weakref.ref[Recorder], method: str) -> None:
    """A recorder's hook, if the recorder still lives; never raises into the host, not even at exit."""
    recorder = ref()
    if recorder is not None:
        try:
            getattr(recorder, method)()
        except Exception:
            logger.warning("otel-blackbox: %s failed", method, exc_info=True)
