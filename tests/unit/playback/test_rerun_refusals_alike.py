"""The built-in rerun refuses the same setup mistakes the same way on all four providers: a missing
key, a malformed or unreachable --base-url, a --stub naming a tool the incident never offered. Each
is one line and exit 2, before any model call (the fake provider hears nothing) and with no child
written."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_llm import FakeLLMServer
from helpers import run_cli
from test_builtin_rerun import APIS as PROVIDERS
from test_builtin_rerun import MODEL_OF

from otel_blackbox._cassette.io import save_cassette
from otel_blackbox._cassette.model import Cassette

KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "GEMINI_API_KEY", "GOOGLE_API_KEY")
SCHEMA = {"type": "object", "properties": {"order_id": {"type": "integer"}}, "required": ["order_id"]}


def incident(path: Path) -> Path:
    cassette = Cassette(id="incident-alike", created_at=1, api={"name": "openai-chat", "stream": False})
    call = {"toolCallId": "call-0", "toolName": "lookup_order", "toolInput": {"order_id": 42}}
    tools = [{"name": "lookup_order", "description": "Look an order up.", "inputSchema": SCHEMA}]
    question = {"role": "user", "content": "What is the status of order 42?"}
    cassette.append("model_input", {"messages": [question], "tools": tools, "model": "gpt-4o-mini"}, 2)
    cassette.append("model_output", {"type": "tool_calls", "calls": [call]}, 3)
    cassette.append("tool_call", call, 4)
    cassette.append("tool_result", {"toolCallId": "call-0", "toolName": "lookup_order", "error": "down"}, 5)
    cassette.append("metadata", {"event": "run_failed", "status": "error", "reason": "ToolError"}, 6)
    save_cassette(cassette, path)
    return path


def base_url(llm: FakeLLMServer, provider: str) -> str:
    return {"anthropic": llm.anthropic_base_url, "gemini": llm.gemini_base_url}.get(
        provider, llm.openai_base_url
    )


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEYS:
        monkeypatch.setenv(name, "sk-alike-0123456789")
    for name in ("GOOGLE_API_KEY", "ANTHROPIC_AUTH_TOKEN"):  # each SDK would warn that both are set
        monkeypatch.delenv(name)
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def refused(tmp_path: Path, llm: FakeLLMServer, *args: str) -> str:
    child = tmp_path / "child.json"
    result = run_cli("rerun", str(incident(tmp_path / "incident.json")), *args, "-o", str(child))
    assert result.returncode == 2, (args, result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert llm.requests == [] and not child.exists()
    return lines[0]


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_missing_key_is_refused_before_any_call(
    tmp_path: Path, llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)
    line = refused(tmp_path, llm, "--provider", provider, "--model", MODEL_OF[provider],
                   "--base-url", base_url(llm, provider))  # fmt: skip
    assert f"--provider {provider}" in line and "could not start" in line


# Each provider with one malformed URL, and every form of malformed URL with one provider: the check
# is the same for all (it runs before the provider is chosen).
MALFORMED = [(p, "not-a-url") for p in PROVIDERS] + [
    ("openai-chat", url) for url in ("ftp://127.0.0.1/v1", "http://", "http://127.0.0.1:99999", "http://a b/")
]


@pytest.mark.parametrize(("provider", "url"), MALFORMED)
def test_a_malformed_base_url_is_refused_before_any_call(
    tmp_path: Path, llm: FakeLLMServer, keys: None, provider: str, url: str
) -> None:
    line = refused(tmp_path, llm, "--provider", provider, "--model", MODEL_OF[provider], "--base-url", url)
    assert "--base-url" in line and "expected http(s)://host[:port][/path]" in line


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_unreachable_base_url_is_refused_before_any_call(
    tmp_path: Path, llm: FakeLLMServer, keys: None, provider: str
) -> None:
    port = closed_port()
    line = refused(tmp_path, llm, "--provider", provider, "--model", MODEL_OF[provider],
                   "--base-url", f"http://127.0.0.1:{port}/v1")  # fmt: skip
    assert f"nothing answers at 127.0.0.1:{port}" in line


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_stub_for_a_tool_never_offered_is_refused_before_any_call(
    tmp_path: Path, llm: FakeLLMServer, keys: None, provider: str
) -> None:
    line = refused(tmp_path, llm, "--provider", provider, "--model", MODEL_OF[provider],
                   "--base-url", base_url(llm, provider), "--stub", 'lookup_ordr={"ok": true}')  # fmt: skip
    assert (
        "--stub lookup_ordr: the incident never offered a tool of that name (it offered: lookup_order)"
        in line
    )


def test_the_same_rerun_with_good_setup_reaches_the_provider(
    tmp_path: Path, llm: FakeLLMServer, keys: None
) -> None:
    """The refusals above are not a rerun that never calls: with the key, the URL and the stub right,
    the fake provider hears the call."""
    child = tmp_path / "child.json"
    result = run_cli(
        "rerun", str(incident(tmp_path / "incident.json")), "--base-url", llm.openai_base_url,
        "--stub", 'lookup_order={"status": "shipped"}', "-o", str(child),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert llm.requests and child.exists()
