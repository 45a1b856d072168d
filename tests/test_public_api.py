"""The public surface: a short, sorted __all__."""

from __future__ import annotations

import otel_blackbox


def test_public_names() -> None:
    assert otel_blackbox.__all__ == [
        "BlackboxConfig",
        "BlackboxSpanExporter",
        "BlackboxSpanProcessor",
        "CassetteSpanExporter",
        "session",
    ]
    assert otel_blackbox.__all__ == sorted(otel_blackbox.__all__)
    for name in otel_blackbox.__all__:
        assert getattr(otel_blackbox, name).__module__.startswith("otel_blackbox.")
