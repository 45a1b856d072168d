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
        "stubbable",
    ]
    assert otel_blackbox.__all__ == sorted(otel_blackbox.__all__)
    for name in otel_blackbox.__all__:
        assert getattr(otel_blackbox, name).__module__.startswith("otel_blackbox.")


def test_every_entry_point_loads() -> None:
    """The console script, the pytest plugin and the OpenTelemetry hooks point at modules that exist."""
    from importlib.metadata import distribution

    points = {(p.group, p.name): p for p in distribution("otel-blackbox").entry_points}
    assert set(points) == {
        ("console_scripts", "otel-blackbox"),
        ("pytest11", "blackbox"),
        ("opentelemetry_traces_exporter", "blackbox"),
        ("opentelemetry_pre_instrument", "blackbox"),
    }
    for point in points.values():
        assert point.load() is not None, point
    assert points["pytest11", "blackbox"].value == "otel_blackbox.replay.pytest_plugin"
