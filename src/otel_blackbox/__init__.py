"""otel-blackbox: a flight recorder for LLM agents, built on OpenTelemetry.

``BlackboxSpanProcessor`` writes every span to a local SQLite file the moment it starts
(``BlackboxLogRecordProcessor`` the log records that carry a span's content, beside it);
``otel-blackbox`` (the CLI) reads it back. ``session`` records, replays and forks a program's
LLM traffic beneath httpx and httpx2; ``blame`` finds the step that made an incident fail.
Importing this package creates no file and starts no thread.

Everything a user imports is here (and ``otel_blackbox.errors``, ``otel_blackbox.cli``,
``otel_blackbox.pytest_plugin``); every other module is private and may change.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING

from otel_blackbox._version import __version__ as __version__
from otel_blackbox.errors import (
    AmbiguousRunId,
    AmbiguousTraceId,
    BadArgument,
    BlackboxError,
    CassetteError,
    ConfigError,
    CredentialLeak,
    DatabaseLocked,
    DatabaseNotFound,
    ImportInputError,
    MalformedRunId,
    MalformedTraceId,
    MissingSDK,
    NotABlackboxDatabase,
    OutputError,
    PullError,
    ReplayDivergence,
    ReplayIncomplete,
    ResultKept,
    RunLookupError,
    RunNotFound,
    SessionError,
    SessionIdNotFound,
    SpanShapeError,
    StoreError,
    TraceLookupError,
    TraceNotFound,
)

if TYPE_CHECKING:  # for type checkers only; at run time __getattr__ loads each name on first use
    from otel_blackbox._config import BlackboxConfig
    from otel_blackbox._playback.blame import BlamePlan, BlameReport, blame
    from otel_blackbox._playback.http.hook import BlackboxHTTPInstrumentor
    from otel_blackbox._playback.http.transport import (
        AsyncBlackboxTransport,
        AsyncHttpx2BlackboxTransport,
        BlackboxTransport,
        Httpx2BlackboxTransport,
    )
    from otel_blackbox._playback.session import session
    from otel_blackbox._recorder.cassette_exporter import CassetteSpanExporter
    from otel_blackbox._recorder.exporter import BlackboxSpanExporter
    from otel_blackbox._recorder.log_processor import BlackboxLogRecordProcessor
    from otel_blackbox._recorder.processor import BlackboxSpanProcessor
    from otel_blackbox._stubbable import stubbable

__all__ = [
    "AmbiguousRunId",
    "AmbiguousTraceId",
    "BadArgument",
    "BlackboxConfig",
    "BlackboxError",
    "BlackboxHTTPInstrumentor",
    "BlackboxLogRecordProcessor",
    "BlackboxSpanExporter",
    "BlackboxSpanProcessor",
    "BlamePlan",
    "BlameReport",
    "CassetteError",
    "CassetteSpanExporter",
    "ConfigError",
    "CredentialLeak",
    "DatabaseLocked",
    "DatabaseNotFound",
    "ImportInputError",
    "MalformedRunId",
    "MalformedTraceId",
    "MissingSDK",
    "NotABlackboxDatabase",
    "OutputError",
    "PullError",
    "ReplayDivergence",
    "ReplayIncomplete",
    "ResultKept",
    "RunLookupError",
    "RunNotFound",
    "SessionError",
    "SessionIdNotFound",
    "SpanShapeError",
    "StoreError",
    "TraceLookupError",
    "TraceNotFound",
    "__version__",
    "blame",
    "session",
    "stubbable",
]
# The transports of a flavour exist only when its library is installed (neither is a dependency):
# exported only then, so that ``from otel_blackbox import *`` works everywhere.
if importlib.util.find_spec("httpx") is not None:
    __all__ += ["AsyncBlackboxTransport", "BlackboxTransport"]
if importlib.util.find_spec("httpx2") is not None:
    __all__ += ["AsyncHttpx2BlackboxTransport", "Httpx2BlackboxTransport"]

# Loaded on first use: the writer process imports store modules of this package and must not pay
# for the OpenTelemetry SDK; the session pulls in the HTTP hook and the wire translations. The
# transports of a flavour exist only when its library (httpx, httpx2) is installed.
_HOMES = {
    "AsyncBlackboxTransport": "._playback.http.transport",
    "AsyncHttpx2BlackboxTransport": "._playback.http.transport",
    "BlackboxConfig": "._config",
    "BlackboxHTTPInstrumentor": "._playback.http.hook",
    "BlackboxLogRecordProcessor": "._recorder.log_processor",
    "BlackboxSpanExporter": "._recorder.exporter",
    "BlackboxSpanProcessor": "._recorder.processor",
    "BlackboxTransport": "._playback.http.transport",
    "BlamePlan": "._playback.blame",
    "BlameReport": "._playback.blame",
    "CassetteSpanExporter": "._recorder.cassette_exporter",
    "Httpx2BlackboxTransport": "._playback.http.transport",
    "blame": "._playback.blame",
    "session": "._playback.session",
    "stubbable": "._stubbable",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'otel_blackbox' has no attribute {name!r}")
    module = importlib.import_module(home, __name__)
    if not hasattr(module, name):  # a transport whose library is not installed
        library = "httpx2" if "Httpx2" in name else "httpx"
        raise AttributeError(f"otel_blackbox.{name} needs {library}, which is not installed")
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
