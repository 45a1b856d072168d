"""Deprecated: the import paths of 0.1's README (``otel_blackbox.replay.http.transport``,
``otel_blackbox.replay.http.hook``, ``otel_blackbox.replay.pytest_plugin``). Import from
``otel_blackbox`` instead; these modules go in the next release (CHANGELOG.md)."""

__all__: list[str] = []
