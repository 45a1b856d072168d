"""The pytest plugin, run on generated test files: record, replay, once, and how a replay fails.

Each inner run is a separate pytest process (the plugin patches sockets and the HTTP hook, which
are process-wide) whose tests call the real openai SDK; the fake provider runs in this process and
its URL reaches them through an environment variable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from fake_llm import FakeLLMServer  # examples/ is on sys.path (conftest.py)

from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import terminal_outcome
from otel_blackbox.pytest_plugin import cassette_file_name

pytest_plugins = ["pytester"]

URL = "BLACKBOX_PLUGIN_TEST_URL"
QUESTION = "BLACKBOX_PLUGIN_TEST_QUESTION"
CALLS = "BLACKBOX_PLUGIN_TEST_CALLS"

# Imported by the generated test files; their conftest puts pytester's directory on sys.path.
AGENT = f"""
import os

import openai


def ask(question=None):
    question = question or os.environ.get("{QUESTION}", "What's the weather in Lisbon?")
    client = openai.OpenAI(base_url=os.environ["{URL}"], api_key="sk-test-plugin", max_retries=0)
    with client:
        reply = client.chat.completions.create(
            model="fake", messages=[{{"role": "user", "content": question}}]
        )
    return reply.choices[0].message.content


def port():
    return int(os.environ["{URL}"].rsplit(":", 1)[1].split("/")[0])
"""

WEATHER_TEST = """
import pytest
from agent import ask


@pytest.mark.blackbox
def test_weather():
    assert "Lisbon" in ask()
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(agent=AGENT)
    # Tests in subdirectories import agent too.
    pytester.makeconftest("import sys, pathlib\nsys.path.insert(0, str(pathlib.Path(__file__).parent))\n")
    pytester.makeini("[pytest]\nfilterwarnings = error\n")  # the plugin must not warn either
    return pytester


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        monkeypatch.setenv(URL, srv.openai_base_url)
        yield srv  # a test may stop it early: the URL stays set, pointing at nothing


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)


def output(result: pytest.RunResult) -> str:
    return "\n".join(result.outlines + result.errlines)


def test_record_then_replay_with_the_server_stopped(project: pytest.Pytester, server: FakeLLMServer) -> None:
    project.makepyfile(test_agent=WEATHER_TEST)
    recorded = run(project, "--blackbox-mode=record")
    recorded.assert_outcomes(passed=1)
    cassette = project.path / "cassettes" / "test_agent" / "test_weather.json"
    steps = load_cassette(cassette).steps
    assert [s.type for s in steps] == ["model_input", "model_output", "metadata"]
    assert terminal_outcome(load_cassette(cassette)).status == "success"
    assert len(server.requests) == 1

    server.stop()
    replayed = run(project)  # replay is the default mode
    replayed.assert_outcomes(passed=1)
    assert len(server.requests) == 1


def test_once_records_a_missing_cassette_then_replays_it(
    project: pytest.Pytester, server: FakeLLMServer
) -> None:
    project.makepyfile(test_agent=WEATHER_TEST)
    cassette = project.path / "cassettes" / "test_agent" / "test_weather.json"
    run(project, "--blackbox-mode=once").assert_outcomes(passed=1)
    written = cassette.read_bytes()
    assert len(server.requests) == 1

    server.stop()  # a second recording would now fail to connect
    run(project, "--blackbox-mode=once").assert_outcomes(passed=1)
    assert cassette.read_bytes() == written  # replayed, not rewritten


def test_replay_without_a_cassette_fails_saying_how_to_record(project: pytest.Pytester) -> None:
    project.makepyfile(test_agent=WEATHER_TEST)
    result = run(project)
    result.assert_outcomes(errors=1)
    text = output(result)
    expected = project.path / "cassettes" / "test_agent" / "test_weather.json"
    assert f"[blackbox] no cassette at {expected}: record it with `pytest --blackbox-mode=record`" in text
    assert "--blackbox-mode=once" in text
    assert "Traceback" not in text and "CassetteError" not in text and "INTERNALERROR" not in text
    assert not expected.exists()


def test_a_changed_prompt_fails_the_test_with_the_step_message(
    project: pytest.Pytester, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(test_agent=WEATHER_TEST)
    run(project, "--blackbox-mode=record").assert_outcomes(passed=1)
    server.stop()
    monkeypatch.setenv(QUESTION, "What's the weather in Lisbon, or rather in Porto?")
    result = run(project)
    result.assert_outcomes(failed=1)
    text = output(result)
    step = r"\[blackbox\] step 0 \(model_input\) differs at \$\.messages\[0\]\.content: recorded "
    assert re.search(step + r'"What\'s the weather in Lisbon\?", got ".*Porto\?"', text)
    assert "cassette: " in text and "test_weather.json" in text
    assert "INTERNALERROR" not in text


def test_a_hand_edited_cassette_fails_the_test_unless_allowed(
    project: pytest.Pytester, server: FakeLLMServer
) -> None:
    """The answer's text changed in the file, its hash kept: the replay is refused with the line
    naming the check and the step; --blackbox-allow-unverified replays it, and the run's summary
    names the test and the line (a warning would fail this project: filterwarnings = error)."""
    project.makepyfile(test_agent=WEATHER_TEST)
    run(project, "--blackbox-mode=record").assert_outcomes(passed=1)
    server.stop()
    cassette = project.path / "cassettes" / "test_agent" / "test_weather.json"
    data = json.loads(cassette.read_text())
    answer, ended = data["steps"][1]["payload"], data["steps"][2]["payload"]
    answer["text"] = ended["result"] = answer["text"] + " (edited)"  # the run ends as the file says
    cassette.write_text(json.dumps(data))
    refused = run(project)
    refused.assert_outcomes(errors=1)
    text = output(refused)
    why = f"[blackbox] cannot replay: {cassette} fails verify (hash_chain) at step 1: hash does not match"
    assert why in text and "--blackbox-allow-unverified goes on anyway" in text
    assert "Traceback" not in text and "INTERNALERROR" not in text
    allowed = run(project, "--blackbox-allow-unverified")
    allowed.assert_outcomes(passed=1)
    text = output(allowed)
    assert "blackbox: replayed from unverified cassettes" in text
    summary = f"[unverified] test_agent.py::test_weather: {cassette} fails verify (hash_chain) at step 1"
    assert summary in text and "going on anyway (--blackbox-allow-unverified)" in text


def test_a_replay_that_makes_fewer_calls_fails_as_incomplete(
    project: pytest.Pytester, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(
        test_agent=f"""
        import os
        import pytest
        from agent import ask

        @pytest.mark.blackbox
        def test_chat():
            for turn in range(int(os.environ["{CALLS}"])):
                ask(f"Question {{turn}} about Lisbon?")
        """
    )
    monkeypatch.setenv(CALLS, "2")
    run(project, "--blackbox-mode=record").assert_outcomes(passed=1)
    server.stop()
    monkeypatch.setenv(CALLS, "1")
    result = run(project)
    result.assert_outcomes(failed=1)
    assert "[blackbox] the run made 1 of 2 recorded model calls; the next one was step 2" in output(result)


def test_a_failing_test_still_writes_its_recording_and_keeps_its_own_error(
    project: pytest.Pytester, server: FakeLLMServer
) -> None:
    project.makepyfile(
        test_agent="""
        import pytest
        from agent import ask

        @pytest.mark.blackbox
        def test_boom():
            ask()
            assert False, "boom after the model call"
        """
    )
    run(project, "--blackbox-mode=record").assert_outcomes(failed=1)
    cassette = load_cassette(project.path / "cassettes" / "test_agent" / "test_boom.json")
    outcome = terminal_outcome(cassette)
    assert (outcome.status, outcome.failure_reason) == ("error", "AssertionError")
    assert [s.type for s in cassette.steps][:2] == ["model_input", "model_output"]

    server.stop()
    replayed = run(project)
    replayed.assert_outcomes(failed=1)
    text = output(replayed)
    assert "boom after the model call" in text and "[blackbox]" not in text


def test_a_refused_recording_fails_the_test_and_a_skipped_one_writes_nothing(
    project: pytest.Pytester, server: FakeLLMServer
) -> None:
    # The inner file's pytest.skip is the behaviour under test (a skipped test writes no cassette).
    project.makepyfile(
        test_agent="""
        import pytest
        from agent import ask

        @pytest.mark.blackbox
        def test_leaky():
            ask("My key is sk-test-plugin, what's the weather in Lisbon?")

        @pytest.mark.blackbox
        def test_skipped():
            ask()
            pytest.skip("not today")  # intentional: the inner test skips, its cassette must not be written
        """
    )
    result = run(project, "--blackbox-mode=record")
    result.assert_outcomes(failed=1, skipped=1)
    assert "refusing to write" in output(result)  # the session's CredentialLeak, as the test's failure
    assert list(project.path.glob("cassettes/**/*.json")) == []


def test_a_socket_connect_during_replay_fails_the_test(
    project: pytest.Pytester, server: FakeLLMServer
) -> None:
    project.makepyfile(
        test_agent="""
        import contextlib
        import socket
        import pytest
        from agent import ask, port

        @pytest.mark.blackbox
        def test_raw_connect():
            ask()
            socket.create_connection(("127.0.0.1", port()), timeout=5).close()

        @pytest.mark.blackbox
        def test_swallowed_connect():
            ask()
            with contextlib.suppress(OSError), socket.socket() as sock:
                assert sock.connect_ex(("127.0.0.1", port())) == 0
        """
    )
    run(project, "--blackbox-mode=record").assert_outcomes(passed=2)  # recording does not block
    result = run(project)  # the server is still up: only the guard stops these connects
    result.assert_outcomes(failed=2)
    # Count in the failure reports only: the short summary repeats messages in full when pytest
    # sees a CI environment (CI=1) and truncates them otherwise.
    failures = output(result).partition("short test summary info")[0]
    blocked = "[blackbox] network blocked during replay: the test tried to connect to 127.0.0.1:"
    assert failures.count(f"{blocked}{server.port};") == 2
    # The raw connect's own error, as the test saw it, is shown under the failure.
    assert failures.count(f"connect to 127.0.0.1:{server.port} refused") == 1
    assert len(server.requests) == 2  # the recording's two model calls, nothing from the replay


def test_the_fixture_gives_the_session_with_or_without_the_marker(
    project: pytest.Pytester, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(
        test_agent="""
        import os
        from pathlib import Path
        import pytest
        from agent import ask

        def test_unmarked(blackbox):
            assert blackbox.mode == os.environ["EXPECTED_MODE"]
            assert blackbox.match == "exact"
            assert blackbox.path == Path(__file__).parent / "cassettes" / "test_agent" / "test_unmarked.json"
            assert "Lisbon" in ask()

        @pytest.mark.blackbox(match="sequence")
        def test_marked(blackbox):
            assert (blackbox.mode, blackbox.match) == (os.environ["EXPECTED_MODE"], "sequence")
            ask()
        """
    )
    monkeypatch.setenv("EXPECTED_MODE", "record")
    run(project, "--blackbox-mode=record").assert_outcomes(passed=2)
    assert sorted(p.name for p in (project.path / "cassettes" / "test_agent").iterdir()) == [
        "test_marked.json",
        "test_unmarked.json",
    ]
    server.stop()
    monkeypatch.setenv("EXPECTED_MODE", "replay")
    run(project).assert_outcomes(passed=2)


def test_cassettes_are_laid_out_per_module_and_test(
    project: pytest.Pytester, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.mkdir("tests")
    (project.path / "tests" / "test_layout.py").write_text(
        """
import os

import pytest
from agent import ask


@pytest.mark.blackbox
@pytest.mark.parametrize("city", ["Lisbon", "New York/NY"])
def test_city(city):
    assert city in ask(f"What's the weather in {city}?")


class TestGroup:
    @pytest.mark.blackbox
    def test_in_class(self):
        ask()


@pytest.mark.blackbox(cassette="shared.json", match="sequence")
def test_named():
    ask(os.environ.get("SEQUENCE_QUESTION"))
"""
    )
    run(project, "--blackbox-mode=record").assert_outcomes(passed=4)
    folder = project.path / "tests" / "cassettes" / "test_layout"
    lossy = cassette_file_name("test_city[New York/NY]")
    assert re.fullmatch(r"test_city\[New-York-NY\]-[0-9a-f]{8}\.json", lossy)
    expected = ["TestGroup.test_in_class.json", "shared.json", "test_city[Lisbon].json", lossy]
    assert sorted(p.name for p in folder.iterdir()) == sorted(expected)
    assert json.loads((folder / "shared.json").read_text())["steps"]

    server.stop()
    monkeypatch.setenv("SEQUENCE_QUESTION", "A question never recorded?")  # fine with match="sequence"
    run(project).assert_outcomes(passed=4)


def test_cassette_file_names_are_safe_and_distinct() -> None:
    assert cassette_file_name("test_x") == "test_x.json"
    assert cassette_file_name("TestA.test_x[1-True]") == "TestA.test_x[1-True].json"
    lossy = [cassette_file_name(name) for name in ("test_x[a/b]", "test_x[a:b]", "test_x[a b]")]
    assert len(set(lossy)) == 3
    assert all(re.fullmatch(r"[A-Za-z0-9_.\-\[\]]+", name) for name in lossy)
    long = cassette_file_name("test_x[" + "y" * 500 + "]")
    assert len(long) < 150 and long != cassette_file_name("test_x[" + "y" * 499 + "]")


def test_an_unknown_mode_is_a_usage_error(project: pytest.Pytester) -> None:
    result = run(project, "--blackbox-mode=bogus")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    # Python 3.12 started quoting the choices.
    choices = r"'?replay'?, '?record'?, '?once'?\)"
    assert re.search(
        rf"argument --blackbox-mode: invalid choice: 'bogus' \(choose from {choices}", output(result)
    )


def test_an_unknown_marker_argument_fails_clearly(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_agent="""
        import pytest

        @pytest.mark.blackbox(casette="typo.json")
        def test_typo():
            pass
        """
    )
    result = run(project, "--blackbox-mode=record")
    result.assert_outcomes(errors=1)
    assert "[blackbox] unknown blackbox marker argument(s): casette" in output(result)
