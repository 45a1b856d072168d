"""Exceptions raised by otel-blackbox's own APIs (never by the span processor into the host).

Hierarchy::

    BlackboxError                 base of everything below
    ├── ConfigError (ValueError)  a bad option or environment variable
    ├── CassetteError             a file that is not a readable v2 cassette (or contract)
    ├── SessionError              record / replay / fork could not do what was asked
    │   ├── ReplayDivergence      the program asked for something the cassette does not hold
    │   ├── ReplayIncomplete      the program ended before making every recorded call
    │   └── CredentialLeak        a recording would contain a key seen in the environment or a header
    ├── MissingSDK                the SDK of the API a rerun asked for is not installed
    ├── ImportInputError          input to ``import`` that is not OTLP (the message names file and line)
    ├── PullError                 pulling spans from a backend failed (arguments, network, HTTP, shape)
    │   └── SpanShapeError        a span of the answer is not what the API documents
    ├── BadArgument               an MCP tool argument the caller can correct
    ├── OutputError               a file a command would write cannot be written there
    │   └── ResultKept            the work was done but its file could not be written: kept elsewhere
    └── StoreError                a database that cannot be used
        ├── DatabaseNotFound      no file at the path
        ├── NotABlackboxDatabase  not SQLite, or SQLite without our schema, or a newer schema
        ├── DatabaseLocked        another process holds a lock longer than the busy timeout
        ├── TraceLookupError      a trace id prefix that is unknown, malformed or ambiguous
        │   ├── TraceNotFound
        │   │   └── MalformedTraceId  not hex, or too long: no trace can have it
        │   └── AmbiguousTraceId
        ├── RunLookupError        a run id prefix that is unknown, malformed or ambiguous, or a run
        │   │                     without spans
        │   ├── RunNotFound
        │   │   └── MalformedRunId
        │   └── AmbiguousRunId
        └── SessionIdNotFound     no recorded span carries that session id
"""

from __future__ import annotations

__all__ = [
    "AmbiguousRunId",
    "AmbiguousTraceId",
    "BadArgument",
    "BlackboxError",
    "CassetteError",
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
]


class BlackboxError(Exception):
    """Base class: its message is one line, fit to show a user as is."""


class ConfigError(BlackboxError, ValueError):
    """An invalid configuration value, from code or from an OTEL_BLACKBOX_* variable."""


class CassetteError(BlackboxError):
    """Not JSON, not the v2 format, or not a well-formed document of its kind."""


class SessionError(BlackboxError):
    """Recording, replaying or forking failed; the message says what and where."""


class ReplayDivergence(SessionError):
    pass


class ReplayIncomplete(SessionError):
    pass


class CredentialLeak(SessionError):
    pass


class StoreError(BlackboxError):
    """The database cannot be read or written."""


class DatabaseNotFound(StoreError):
    pass


class NotABlackboxDatabase(StoreError):
    pass


class DatabaseLocked(StoreError):
    pass


class TraceLookupError(StoreError):
    pass


class TraceNotFound(TraceLookupError):
    pass


class MalformedTraceId(TraceNotFound):
    """Not an id at all (a usage error, exit 2), though no trace has it either."""


class AmbiguousTraceId(TraceLookupError):
    pass


class RunLookupError(StoreError):
    pass


class RunNotFound(RunLookupError):
    pass


class MalformedRunId(RunNotFound):
    """Not a run id at all (a usage error, exit 2), though no run has it either."""


class AmbiguousRunId(RunLookupError):
    pass


class SessionIdNotFound(StoreError):
    pass


class MissingSDK(BlackboxError):
    """The SDK of the chosen API is not installed (a setup error: exit 2, before anything runs)."""


class ImportInputError(BlackboxError):
    """Input that is not OTLP: one line naming the file, the line and the field."""


class PullError(BlackboxError):
    """A pull that failed: bad arguments, the server unreachable, an HTTP error, an unexpected shape."""


class SpanShapeError(PullError):
    """A span of an answer that is not what the API documents; str() names the field."""


class OutputError(BlackboxError):
    """A file a command would write: a missing or unwritable folder, a folder, a database."""


class ResultKept(OutputError):
    """The work is done (a rerun paid for, a program run) but its file could not be written where
    asked: it is kept at ``kept``, which the message names. ``exit_code`` is the program's, for a
    command that passes it through."""

    def __init__(self, message: str, kept: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.kept = kept
        self.exit_code = exit_code


class BadArgument(BlackboxError):
    """An argument the caller can correct (an MCP tool's): the message says which and why."""
