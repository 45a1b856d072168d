"""``stub_tools`` in pytest, and ``otel_blackbox.stubbable`` on a plain OpenAI-SDK loop.

The pytest part runs generated test projects in separate pytest processes (pytester), as
tests/unit/playback/test_pytest_plugin.py does. Their agent's ``refund_order`` tool imports
``payments_db`` in its body: the payments database's client, which the project has while its
cassettes are recorded and which each replaying test deletes first. The dependency is absent, so the
tool raises if it really runs; and while it is present, each refund appends a line to the ledger.
One project is recorded once for the module and copied into each replaying test's directory.

The ``stubbable`` part records a hand-written tool loop in this process with
``otel_blackbox.session("record", ...)`` and replays it with ``stub_tools=True``: the tools' bodies
count their calls, so a replay that ran one would show it.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import pytest
from fake_llm import FakeLLMServer  # examples/ is on sys.path (conftest.py)
from helpers import blocked_network

import otel_blackbox
from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.model import terminal_outcome, tool_call_sequence
from otel_blackbox.errors import ReplayDivergence

pytest_plugins = ["pytester"]

URL = "BLACKBOX_STUB_TEST_URL"
LEDGER = "BLACKBOX_STUB_TEST_LEDGER"
QUESTION = "Look up order Alpha and refund 12 on it, both please."
ANSWER = "Final answer: order Alpha: paid 12.00 | refunded 12.00 on order Alpha"

# The client of the payments database: present while recording, deleted before replaying.
PAYMENTS_DB = f"""
import os


def refund(order_id, amount):
    with open(os.environ["{LEDGER}"], "a", encoding="utf-8") as ledger:
        ledger.write(f"refund {{order_id}} {{float(amount):.2f}}\\n")
    return f"refunded {{float(amount):.2f}} on order {{order_id}}"
"""

# Imported by the generated test files (their conftest puts the project's directory on sys.path).
AGENT = f"""
import asyncio
import json
import os

import openai
from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled

import otel_blackbox

set_tracing_disabled(True)  # the SDK's own trace export would connect to api.openai.com
QUESTION = {QUESTION!r}
INSTRUCTIONS = "You handle refunds. Look the order up and refund it."


def lookup_order(order_id: str) -> str:
    \"\"\"Look an order up: what was paid for it.\"\"\"
    return f"order {{order_id}}: paid 12.00"


def refund_order(order_id: str, amount: float) -> str:
    \"\"\"Refund an amount on an order.\"\"\"
    import payments_db  # the payments database: only where the cassettes are recorded

    return payments_db.refund(order_id, amount)


def ask_agents():
    client = openai.AsyncOpenAI(base_url=os.environ["{URL}"], api_key="sk-test-stub-tools", max_retries=0)
    agent = Agent(
        name="Refunds",
        instructions=INSTRUCTIONS,
        model=OpenAIResponsesModel("gpt-4o-mini", openai_client=client),
        tools=[function_tool(lookup_order), function_tool(refund_order)],
    )
    return str(asyncio.run(_run(client, agent)).final_output)


async def _run(client, agent):
    async with client:  # closed while its event loop runs
        return await Runner.run(agent, QUESTION, max_turns=4)


# The plain loop's tools: no framework, so the one line a program adds.
TOOLS = {{
    "lookup_order": otel_blackbox.stubbable(lookup_order),
    "refund_order": otel_blackbox.stubbable(refund_order),
}}
SCHEMAS = {{
    "lookup_order": {{"order_id": {{"type": "string"}}}},
    "refund_order": {{"order_id": {{"type": "string"}}, "amount": {{"type": "number"}}}},
}}


def ask_plain():
    tools = [
        {{
            "type": "function",
            "function": {{"name": name, "parameters": {{"type": "object", "properties": props}}}},
        }}
        for name, props in SCHEMAS.items()
    ]
    messages = [{{"role": "system", "content": INSTRUCTIONS}}, {{"role": "user", "content": QUESTION}}]
    with openai.OpenAI(base_url=os.environ["{URL}"], api_key="sk-test-stub-tools", max_retries=0) as client:
        for _ in range(4):
            message = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
            message = message.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                return message.content
            for call in message.tool_calls:
                content = TOOLS[call.function.name](**json.loads(call.function.arguments))
                messages.append({{"role": "tool", "tool_call_id": call.id, "content": content}})
    raise AssertionError("too many tool rounds")
"""

REFUND_TESTS = """
import pytest
from agent import ask_agents, ask_plain


@pytest.mark.blackbox{marker}
def test_agents_sdk():
    assert ask_agents() == {answer!r}


@pytest.mark.blackbox{marker}
def test_plain_loop():
    assert ask_plain() == {answer!r}
"""


def refund_tests(marker: str = "") -> str:
    """The project's test file, its two tests marked ``@pytest.mark.blackbox<marker>``."""
    return REFUND_TESTS.format(marker=marker, answer=ANSWER)


def make_project(directory: Path) -> None:
    (directory / "agent.py").write_text(AGENT)
    (directory / "payments_db.py").write_text(PAYMENTS_DB)
    (directory / "conftest.py").write_text(
        "import sys, pathlib\nsys.path.insert(0, str(pathlib.Path(__file__).parent))\n"
    )
    (directory / "pytest.ini").write_text("[pytest]\nfilterwarnings = error\n")  # no warning either


def ledger_lines(directory: Path) -> list[str]:
    ledger = directory / "ledger.txt"
    return ledger.read_text().splitlines() if ledger.exists() else []


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)


def output(result: pytest.RunResult) -> str:
    return "\n".join(result.outlines + result.errlines)


@dataclass(frozen=True)
class Recorded:
    project: Path  # the recorded project, payments_db.py included
    base_url: str  # the fake server's, stopped once recorded: a replay reaching it fails
    requests: int  # what the server served
    returncode: int
    log: str  # the recording run's output


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """The project recorded once (payments_db present), with a plain marker, as a user records it."""
    project = tmp_path_factory.mktemp("recorded")
    make_project(project)
    (project / "test_refunds.py").write_text(refund_tests())
    with FakeLLMServer() as server:
        base_url = server.openai_base_url
        env = {**_clean_env(), URL: base_url, LEDGER: str(project / "ledger.txt")}
        argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--blackbox-mode=record"]
        done = subprocess.run(argv, cwd=project, capture_output=True, text=True, env=env, timeout=120)
        requests = len(server.requests)
    return Recorded(project, base_url, requests, done.returncode, done.stdout + done.stderr)


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PYTEST_"))}


@pytest.fixture
def replaying(
    recorded: Recorded, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> pytest.Pytester:
    """A copy of the recorded project without its payments database, its ledger as recorded."""
    shutil.copytree(recorded.project, pytester.path, dirs_exist_ok=True)
    (pytester.path / "payments_db.py").unlink()
    monkeypatch.setenv(URL, recorded.base_url)
    monkeypatch.setenv(LEDGER, str(pytester.path / "ledger.txt"))
    return pytester


def test_the_recording_runs_the_tools_and_writes_the_cassettes(recorded: Recorded) -> None:
    assert recorded.returncode == 0 and "2 passed" in recorded.log, recorded.log
    assert "Exception" not in recorded.log and "Warning" not in recorded.log, recorded.log
    assert ledger_lines(recorded.project) == ["refund Alpha 12.00", "refund Alpha 12.00"]  # one per test
    assert recorded.requests == 4  # two model calls per test
    for test in ("test_agents_sdk", "test_plain_loop"):
        cassette = load_cassette(recorded.project / "cassettes" / "test_refunds" / f"{test}.json")
        assert tool_call_sequence(cassette) == ["lookup_order", "refund_order"]
        assert terminal_outcome(cassette).status == "success"
        results = [s.payload for s in cassette.steps if s.type == "tool_result"]
        assert [r.get("result") for r in results] == [
            "order Alpha: paid 12.00",
            "refunded 12.00 on order Alpha",
        ]


def test_the_marker_replays_with_the_dependency_absent_and_the_tools_unrun(
    replaying: pytest.Pytester,
) -> None:
    replaying.makepyfile(test_refunds=refund_tests("(stub_tools=True)"))
    result = run(replaying)
    result.assert_outcomes(passed=2)
    assert "[blackbox]" not in output(result)
    assert ledger_lines(replaying.path) == ["refund Alpha 12.00", "refund Alpha 12.00"]  # as recorded


def test_without_stub_tools_the_same_replay_runs_the_tools_and_fails(replaying: pytest.Pytester) -> None:
    # The proof that the test above can fail: the tool really runs, and its dependency is absent.
    result = run(replaying)  # the recorded file: a plain marker
    result.assert_outcomes(failed=2)
    text = output(result)
    agents_sdk, _, plain_loop = text.partition("_ test_plain_loop _")
    # The Agents SDK tells the model the tool failed: its next request is not the recorded one.
    differs = (
        '$.messages[2].content[1].result: recorded "refunded 12.00 on order Alpha", got "An error occurred'
    )
    assert differs in agents_sdk
    assert "ModuleNotFoundError: No module named 'payments_db'" in plain_loop  # raised in the loop
    assert ledger_lines(replaying.path) == ["refund Alpha 12.00", "refund Alpha 12.00"]


def test_the_command_line_option_stubs_the_tools_of_every_marked_test(replaying: pytest.Pytester) -> None:
    result = run(replaying, "--blackbox-stub-tools")  # the recorded file: a plain marker
    result.assert_outcomes(passed=2)
    assert ledger_lines(replaying.path) == ["refund Alpha 12.00", "refund Alpha 12.00"]


def test_stub_tools_must_be_a_bool(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nfilterwarnings = error\n")
    pytester.makepyfile(
        test_refunds="""
        import pytest

        @pytest.mark.blackbox(stub_tools="yes")
        def test_refund():
            raise AssertionError("never reached: the marker is refused first")
        """
    )
    result = run(pytester, "--blackbox-mode=record")  # refused in either mode, before any cassette
    result.assert_outcomes(errors=1)
    text = output(result)
    assert "[blackbox] stub_tools must be True or False, not 'yes'" in text
    assert "never reached" not in text and "INTERNALERROR" not in text


def test_a_recording_with_stub_tools_still_runs_the_tools(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_project(pytester.path)
    pytester.makepyfile(test_refunds=refund_tests("(stub_tools=True)"))
    monkeypatch.setenv(LEDGER, str(pytester.path / "ledger.txt"))
    with FakeLLMServer() as server:
        monkeypatch.setenv(URL, server.openai_base_url)
        run(pytester, "--blackbox-mode=record").assert_outcomes(passed=2)
        assert len(server.requests) == 4
    assert ledger_lines(pytester.path) == ["refund Alpha 12.00", "refund Alpha 12.00"]  # the tools ran
    assert len(list((pytester.path / "cassettes" / "test_refunds").glob("*.json"))) == 2


# --- otel_blackbox.stubbable in process: a plain OpenAI-SDK loop -------------------------------

KEY = "sk-test-stubbable-0123456789"
STATUS_QUESTION = "What is the status of order Alpha?"
STATUS = {"order_id": "Alpha", "status": "refunded", "amount": 12.0}
SCHEMAS: dict[str, dict[str, Any]] = {
    "lookup_order": {"order_id": {"type": "string"}},
    "refund_order": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
    "order_status": {"order_id": {"type": "string"}},
}
CALLS: list[str] = []  # each tool body that ran


def lookup_order(order_id: str) -> str:
    """Look an order up: what was paid for it."""
    CALLS.append("lookup_order")
    return f"order {order_id}: paid 12.00"


async def refund_order(order_id: str, amount: float) -> str:
    """Refund an amount on an order."""
    CALLS.append("refund_order")
    await asyncio.sleep(0)
    return f"refunded {float(amount):.2f} on order {order_id}"


def find_order(order_id: str) -> str:
    """lookup_order under another Python name."""
    CALLS.append("find_order")
    return f"order {order_id}: paid 12.00"


def order_status(order_id: str) -> dict[str, Any]:
    """The order's status, as JSON data."""
    CALLS.append("order_status")
    return dict(STATUS, order_id=order_id)


def order_status_text(order_id: str) -> str:
    """The same tool, typed as text."""
    CALLS.append("order_status_text")
    return json.dumps(dict(STATUS, order_id=order_id))


Tools = dict[str, Callable[..., Any]]


def refund_tools(lookup: Callable[..., str] | None = None) -> Tools:
    """lookup_order (sync) and refund_order (async), wrapped; ``lookup`` replaces the first."""
    return {
        "lookup_order": lookup or otel_blackbox.stubbable(lookup_order),
        "refund_order": otel_blackbox.stubbable(refund_order),
    }


@dataclass
class LoopRun:
    answer: str
    returned: list[Any]  # what each tool call returned to the loop


def tool_loop(base_url: str, question: str, tools: Tools) -> LoopRun:
    """A hand-written tool loop on the OpenAI SDK; its tools may be sync or async."""
    offered: list[Any] = [
        {
            "type": "function",
            "function": {"name": name, "parameters": {"type": "object", "properties": SCHEMAS[name]}},
        }
        for name in tools
    ]
    messages: list[Any] = [{"role": "user", "content": question}]
    returned: list[Any] = []
    with openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0) as client:
        for _ in range(4):
            reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=offered)
            message = reply.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            calls = [c for c in message.tool_calls or [] if c.type == "function"]
            if not calls:
                return LoopRun(message.content or "", returned)
            for call in calls:
                value = tools[call.function.name](**json.loads(call.function.arguments))
                if inspect.iscoroutine(value):
                    value = asyncio.run(value)
                returned.append(value)
                content = value if isinstance(value, str) else json.dumps(value)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
    raise AssertionError("too many tool rounds")


@dataclass(frozen=True)
class Loops:
    refunds: Path  # lookup_order (sync) and refund_order (async), both in one turn
    status: Path  # order_status, a dict
    base_url: str
    refunds_run: LoopRun
    status_run: LoopRun
    calls: list[str]  # the tool bodies that ran while recording


@pytest.fixture(scope="module")
def loops(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loops]:
    folder = tmp_path_factory.mktemp("stubbable")
    refunds, status = folder / "refunds.json", folder / "status.json"
    CALLS.clear()
    with FakeLLMServer() as server:
        base_url = server.openai_base_url
        tools = refund_tools()
        # A recording never stubs, stub_tools or not: it is what a replay answers from.
        with otel_blackbox.session("record", refunds, stub_tools=True):
            refunds_run = tool_loop(base_url, QUESTION, tools)
        with otel_blackbox.session("record", status):
            status_run = tool_loop(
                base_url, STATUS_QUESTION, {"order_status": otel_blackbox.stubbable(order_status)}
            )
    calls = list(CALLS)
    CALLS.clear()
    yield Loops(refunds, status, base_url, refunds_run, status_run, calls)
    CALLS.clear()


@pytest.fixture
def calls(loops: Loops) -> Iterator[list[str]]:
    CALLS.clear()
    yield CALLS
    CALLS.clear()


def replayed(loops: Loops, cassette: Path, question: str, tools: Tools) -> LoopRun:
    with blocked_network() as attempts, otel_blackbox.session("replay", cassette, stub_tools=True):
        done = tool_loop(loops.base_url, question, tools)
    assert attempts == []
    return done


def test_the_loops_recorded_ran_their_tools(loops: Loops) -> None:
    assert loops.calls == ["lookup_order", "refund_order", "order_status"]
    assert loops.refunds_run.answer == ANSWER
    assert loops.status_run.returned == [STATUS]
    assert tool_call_sequence(load_cassette(loops.refunds)) == ["lookup_order", "refund_order"]


def test_a_stubbing_replay_answers_sync_and_async_tools_without_running_them(
    loops: Loops, calls: list[str]
) -> None:
    done = replayed(loops, loops.refunds, QUESTION, refund_tools())
    assert done.answer == loops.refunds_run.answer == ANSWER
    assert (
        done.returned
        == loops.refunds_run.returned
        == ["order Alpha: paid 12.00", "refunded 12.00 on order Alpha"]
    )
    assert calls == []


def test_a_replay_without_stub_tools_runs_them(loops: Loops, calls: list[str]) -> None:
    with blocked_network(), otel_blackbox.session("replay", loops.refunds):
        done = tool_loop(loops.base_url, QUESTION, refund_tools())
    assert done.answer == ANSWER
    assert calls == ["lookup_order", "refund_order"]


def test_outside_a_session_the_wrapper_is_the_function(calls: list[str]) -> None:
    wrapped, wrapped_async = otel_blackbox.stubbable(lookup_order), otel_blackbox.stubbable(refund_order)
    assert wrapped("Alpha") == lookup_order("Alpha") == "order Alpha: paid 12.00"
    assert asyncio.run(wrapped_async("Alpha", amount=3)) == "refunded 3.00 on order Alpha"
    assert calls == ["lookup_order", "lookup_order", "refund_order"]
    for original, wrapper in ((lookup_order, wrapped), (refund_order, wrapped_async)):
        assert (wrapper.__name__, wrapper.__doc__) == (original.__name__, original.__doc__)
        assert inspect.signature(wrapper) == inspect.signature(original)
    assert inspect.iscoroutinefunction(wrapped_async) and not inspect.iscoroutinefunction(wrapped)
    with pytest.raises(TypeError):
        wrapped()  # type: ignore[call-arg]  # a wrong call fails as the function's own would


def test_name_answers_the_recorded_calls_of_that_tool(loops: Loops, calls: list[str]) -> None:
    renamed = otel_blackbox.stubbable(name="lookup_order")(find_order)
    assert renamed.__name__ == "find_order"
    assert replayed(loops, loops.refunds, QUESTION, refund_tools(renamed)).answer == ANSWER
    assert calls == []

    # Under its own name, the recording has no call of it: the replay diverges, naming the call.
    unnamed = refund_tools(otel_blackbox.stubbable(find_order))
    with pytest.raises(ReplayDivergence, match=r"find_order\(.*Alpha.*\).*has no recorded result"):
        replayed(loops, loops.refunds, QUESTION, unnamed)
    assert "find_order" not in calls


def test_the_recorded_value_comes_back_in_the_annotated_type(loops: Loops, calls: list[str]) -> None:
    as_dict = replayed(
        loops, loops.status, STATUS_QUESTION, {"order_status": otel_blackbox.stubbable(order_status)}
    )
    assert as_dict.returned == [STATUS]  # -> dict: the JSON value
    assert as_dict.answer == loops.status_run.answer

    as_text = otel_blackbox.stubbable(name="order_status")(order_status_text)
    done = replayed(loops, loops.status, STATUS_QUESTION, {"order_status": as_text})
    assert done.returned == [json.dumps(STATUS)]  # -> str: the text
    assert done.answer == loops.status_run.answer
    assert calls == []
