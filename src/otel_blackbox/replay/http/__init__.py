"""Deprecated: see ``otel_blackbox.replay``."""

__all__: list[str] = []
