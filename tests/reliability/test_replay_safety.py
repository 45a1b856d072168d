"""Replay safety: in replay mode no socket is opened to any host, whatever the agent does.

The guard here sits at the socket level, below every HTTP library: creating an internet socket,
resolving a name, connecting or sending a datagram is counted and refused. Recordings are made
against the fake provider on 127.0.0.1; replays point the SDKs at the real providers' default
addresses, so a replay that leaked would try to reach api.openai.com, and the guard would see it.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import anthropic_agent  # examples/ is on sys.path (conftest.py)
import httpx
import openai
import pytest
import weather_agent
from fake_llm import FakeLLMServer
from helpers import EXAMPLES, TESTS, run_cli
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Tracer

import otel_blackbox
from otel_blackbox.errors import ReplayDivergence, ReplayIncomplete

pytestmark = pytest.mark.reliability

KEY = "sk-test-looks-real-0123456789abcdef"
QUESTION = "What's the weather in Lisbon, and the 2 day forecast? I need both."
INTERNET = (socket.AF_INET, socket.AF_INET6)


@contextlib.contextmanager
def no_sockets() -> Iterator[list[str]]:
    """Every attempt to reach any host (even 127.0.0.1) is recorded and refused with an OSError."""
    attempts: list[str] = []

    def refuse(what: str) -> Callable[..., Any]:
        def refused(*args: Any, **kwargs: Any) -> Any:
            attempts.append(f"{what}{args[1:] if what.startswith('socket.') else args}")
            raise OSError(f"network blocked by the test: {what}")

        return refused

    real_init = socket.socket.__init__

    def guarded_init(self: socket.socket, family: Any = -1, *args: Any, **kwargs: Any) -> None:
        if family in INTERNET or family == -1:  # -1: the default, AF_INET
            attempts.append(f"socket({family})")
            raise OSError("network blocked by the test: an internet socket")
        real_init(self, family, *args, **kwargs)  # AF_UNIX socketpairs (asyncio's self-pipe) are local

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket.socket, "__init__", guarded_init)
        for name in ("connect", "connect_ex", "sendto"):
            patch.setattr(socket.socket, name, refuse(f"socket.{name}"))
        for name in ("create_connection", "getaddrinfo", "gethostbyname", "gethostbyname_ex"):
            patch.setattr(socket, name, refuse(name))
        yield attempts


def _tracer() -> Tracer:
    return TracerProvider(shutdown_on_exit=False).get_tracer("t")


def openai_agent(
    base_url: str | None, *, stream: bool = False, question: str = QUESTION, retries: int = 2
) -> str:
    with openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=retries) as client:
        answer, _ = weather_agent.run_agent(client, _tracer(), question, stream=stream)
    return answer


def anthropic_agent_run(base_url: str | None, *, stream: bool = False) -> str:
    with anthropic.Anthropic(base_url=base_url, api_key=KEY, max_retries=2, open_telemetry=False) as client:
        answer, _ = anthropic_agent.run_agent(client, _tracer(), QUESTION, stream=stream)
    return answer


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    """One cassette per way of talking to a model, recorded live against the fake provider."""
    folder = tmp_path_factory.mktemp("cassettes")
    runs: dict[str, Callable[[FakeLLMServer], str]] = {
        "openai": lambda s: openai_agent(s.openai_base_url),
        "openai-stream": lambda s: openai_agent(s.openai_base_url, stream=True),
        "anthropic": lambda s: anthropic_agent_run(s.anthropic_base_url),
        "anthropic-stream": lambda s: anthropic_agent_run(s.anthropic_base_url, stream=True),
    }
    made = {}
    with FakeLLMServer() as server:
        for name, run in runs.items():
            cassette = folder / f"{name}.json"
            with otel_blackbox.session(mode="record", cassette=cassette):
                made[name] = (cassette, run(server))
    return made


@pytest.mark.parametrize("name", ["openai", "openai-stream", "anthropic", "anthropic-stream"])
def test_replay_against_the_real_provider_address_never_opens_a_socket(
    recorded: dict[str, tuple[Path, str]], name: str
) -> None:
    cassette, answer = recorded[name]
    agent = anthropic_agent_run if name.startswith("anthropic") else openai_agent
    with no_sockets() as attempts, otel_blackbox.session(mode="replay", cassette=cassette):
        replayed = agent(None, stream=name.endswith("stream"))  # the SDK's default: the real provider
    assert replayed == answer
    assert attempts == []


def test_an_async_agent_replays_without_a_socket(recorded: dict[str, tuple[Path, str]]) -> None:
    cassette, _ = recorded["openai"]

    async def ask() -> str:
        async with openai.AsyncOpenAI(api_key=KEY) as client:
            first = await client.chat.completions.create(
                model="gpt-4o-mini",
                messages=[{"role": "user", "content": QUESTION}],
                tools=weather_agent.TOOLS,
            )
            return first.choices[0].finish_reason or ""

    with (
        no_sockets() as attempts,
        pytest.raises(ReplayIncomplete),  # one call of the recorded two: replay says so at the end
        otel_blackbox.session(mode="replay", cassette=cassette, match="sequence"),
    ):
        assert asyncio.run(ask()) == "tool_calls"
    assert attempts == []


def test_a_request_the_cassette_does_not_know_fails_loudly_even_with_retries(
    recorded: dict[str, tuple[Path, str]],
) -> None:
    cassette, _ = recorded["openai"]
    with (
        no_sockets() as attempts,
        pytest.raises(ReplayDivergence, match=r"step 0 \(model_input\) differs"),
        otel_blackbox.session(mode="replay", cassette=cassette),
    ):
        # The SDK retries what fails (max_retries=2); none of its tries may go out.
        openai_agent(None, question="Something the recording never asked")
    assert attempts == []


def test_a_call_past_the_end_of_the_cassette_fails_loudly(recorded: dict[str, tuple[Path, str]]) -> None:
    cassette, _ = recorded["openai"]
    with (
        no_sockets() as attempts,
        pytest.raises(ReplayDivergence),
        otel_blackbox.session(mode="replay", cassette=cassette),
    ):
        openai_agent(None)
        openai_agent(None)  # a second run: the cassette has nothing left to serve
    assert attempts == []


def test_a_caught_error_still_fails_the_replay(recorded: dict[str, tuple[Path, str]]) -> None:
    cassette, _ = recorded["openai"]
    with (
        no_sockets() as attempts,
        pytest.raises(ReplayDivergence),
        otel_blackbox.session(mode="replay", cassette=cassette),
        contextlib.suppress(openai.APIError),  # an agent that swallows every API error
    ):
        openai_agent(None, question="Something the recording never asked", retries=0)
    assert attempts == []


def test_plain_http_the_cassette_never_saw_does_not_go_out(recorded: dict[str, tuple[Path, str]]) -> None:
    cassette, _ = recorded["openai"]
    with (
        no_sockets() as attempts,
        pytest.raises(ReplayDivergence),
        otel_blackbox.session(mode="replay", cassette=cassette, match="sequence"),
        contextlib.suppress(httpx.HTTPError),
    ):
        httpx.get("https://example.com/never-recorded")
    assert attempts == []


GUARDED_AGENT = """
import sys
sys.path[:0] = [{here!r}, {tests!r}, {examples!r}]
from test_replay_safety import no_sockets, openai_agent
with no_sockets() as attempts:
    print(openai_agent(None))
print("ATTEMPTS", len(attempts))
"""


def test_the_replay_launcher_serves_an_unmodified_script_without_a_socket(
    recorded: dict[str, tuple[Path, str]], tmp_path: Path
) -> None:
    cassette, answer = recorded["openai"]
    script = tmp_path / "agent.py"
    here = Path(__file__).parent
    script.write_text(GUARDED_AGENT.format(here=str(here), tests=str(TESTS), examples=str(EXAMPLES)))
    result = run_cli("replay", str(cassette), "--", sys.executable, str(script))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [answer, "ATTEMPTS 0"]
