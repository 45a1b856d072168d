"""The public surface: a short, sorted __all__, and the analysis side free of execution-side imports."""

from __future__ import annotations

import json
import subprocess
import sys

import otel_blackbox


def test_public_names() -> None:
    assert otel_blackbox.__all__ == [
        "BlackboxConfig",
        "BlackboxSpanExporter",
        "BlackboxSpanProcessor",
        "CassetteSpanExporter",
    ]
    assert otel_blackbox.__all__ == sorted(otel_blackbox.__all__)
    for name in otel_blackbox.__all__:
        assert getattr(otel_blackbox, name).__module__.startswith("otel_blackbox.")


def test_cli_imports_no_network_or_http_client() -> None:
    code = (
        "import json, sys, otel_blackbox.cli\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'httpx', 'httpx2', 'httpcore', 'httpcore2', 'openai', 'anthropic', 'requests', 'urllib3'})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
