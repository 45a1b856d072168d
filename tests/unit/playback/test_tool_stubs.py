"""``--stub-tools`` in process: how a session answers a tool call, and the seams on the real frameworks.

Fast unit tests, no subprocess, no network. ``ToolStubber`` is built from cassettes written with the
project's own ``Cassette.append`` and read back by its loader; the seams are installed on the real
OpenAI Agents SDK, LangChain and pydantic-ai (pydantic-ai's ``FunctionModel``: a model with no HTTP),
and every test leaves the frameworks as it found them (``_frameworks_restored`` checks it after each).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import sys
import threading
import types
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import Agent as SdkAgent
from agents import function_tool
from agents.run_context import RunContextWrapper
from agents.tool import FunctionTool, default_tool_error_function
from agents.tool_context import ToolContext
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, ToolException, tool
from openai.types.responses import ResponseFunctionToolCall
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, Span, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from otel_blackbox import _stubbable as stubbing
from otel_blackbox._cassette.io import load_cassette, save_cassette
from otel_blackbox._cassette.model import Cassette
from otel_blackbox._cassette.tool_output import tool_output
from otel_blackbox._playback import tool_stubs
from otel_blackbox._playback.agent.incident import RecordedResult, recorded_results
from otel_blackbox._playback.tool_stubs import marks
from otel_blackbox._playback.tool_stubs.answers import OnMiss, ToolAnswer, ToolStubber
from otel_blackbox._spans.semconv import ATTR_TOOL_STUBBED
from otel_blackbox._wire.call_ids import CallIds

QUESTION = "Look up order Alpha and refund 12 on it, both please."
Call = tuple[str, dict[str, Any], dict[str, Any]]  # tool, arguments, {"result": ...} or {"error": "..."}

# The recording most tests answer from: call-0 ... call-4, in this order.
LEDGER_CALLS: list[Call] = [
    ("lookup_order", {"order_id": "Alpha"}, {"result": "order Alpha: paid 12.00"}),
    ("refund_order", {"order_id": "Alpha", "amount": 12}, {"result": "refunded 12.00 on order Alpha"}),
    ("refund_order", {"order_id": "Beta", "amount": 5}, {"error": "ValueError: boom"}),
    (
        "refund_order",
        {"order_id": "Gamma", "amount": 1},
        {"error": "ToolException: the payments database is down"},
    ),
    ("order_status", {"order_id": "Alpha"}, {"result": {"status": "refunded", "amount": 12.0}}),
]
ALPHA = {"order_id": "Alpha"}
REFUND_ALPHA = {"order_id": "Alpha", "amount": 12}


def record(directory: Path, calls: list[Call], name: str = "tool-stubs") -> list[RecordedResult]:
    """A run that made ``calls`` in one model turn (ids call-0, call-1...), written as a cassette file
    and read back; its tool results, as a stubbing session reads them."""
    cassette = Cassette(id=name, created_at=1_700_000_000_000)
    clock = iter(range(1_700_000_000_001, 1_700_000_001_000))
    cassette.append("model_input", {"messages": [{"role": "user", "content": QUESTION}]}, next(clock))
    made = [
        {"toolCallId": f"call-{index}", "toolName": tool_name, "toolInput": arguments}
        for index, (tool_name, arguments, _) in enumerate(calls)
    ]
    cassette.append("model_output", {"type": "tool_calls", "calls": made}, next(clock))
    for call, (_, _, outcome) in zip(made, calls, strict=True):
        cassette.append("tool_call", call, next(clock))
        result = {"toolCallId": call["toolCallId"], "toolName": call["toolName"], **outcome}
        cassette.append("tool_result", result, next(clock))
    cassette.append("model_output", {"type": "final_answer", "text": "done"}, next(clock))
    cassette.append(
        "metadata", {"event": "run_completed", "status": "success", "result": "done"}, next(clock)
    )
    path = directory / f"{name}.v2.json"
    save_cassette(cassette, path)
    return recorded_results(load_cassette(path))


@pytest.fixture(autouse=True)
def no_event_loop_left_open() -> Iterator[None]:
    """pydantic-ai's ``run_sync`` makes an event loop the thread's current one and leaves it open; a
    later ``asyncio.run`` in this process drops it, and the garbage collector warns of it in
    whatever test runs then (a ResourceWarning, an error under ``filterwarnings = error``)."""
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:  # not the main thread, or no loop and none to be made
            return
    loop.close()
    asyncio.set_event_loop(None)


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> list[RecordedResult]:
    results = record(tmp_path_factory.mktemp("cassettes"), LEDGER_CALLS)
    assert [r.call_id for r in results] == [f"call-{i}" for i in range(len(LEDGER_CALLS))]
    return results


def stubber(
    results: list[RecordedResult],
    *,
    by: str = "id",
    on_miss: OnMiss = "diverge",
    ids: CallIds | None = None,
    diverged: list[str] | None = None,
    compare_arguments: bool = True,
) -> ToolStubber:
    """A session's answers: by call id (a replay) or by name and arguments (a rerun)."""
    return ToolStubber(
        ids=ids if ids is not None else CallIds(),
        by_id=results if by == "id" else [],
        by_arguments=results if by == "arguments" else [],
        on_miss=on_miss,
        recording="the parent run",
        diverge=diverged.append if diverged is not None else None,
        compare_arguments=compare_arguments,
    )


def answer(stubs: ToolStubber, name: str, arguments: Any, call_id: str | None) -> ToolAnswer:
    return stubs.answer(name, arguments, call_id, framework="tests")


@contextlib.contextmanager
def stubbing_session(stubs: ToolStubber) -> Iterator[ToolStubber]:
    """The seams installed as a session installs them, and removed as its ``stop_intercepting`` does."""
    tool_stubs.install(stubs)
    try:
        yield stubs
    finally:
        tool_stubs.uninstall()


OWN_RUN, OWN_ARUN = vars(BaseTool)["run"], vars(BaseTool)["arun"]
OWN_ITER = vars(PydanticAgent)["iter"]
OWN_SPAN_END = Span.end


@pytest.fixture(autouse=True)
def _frameworks_restored() -> Iterator[None]:
    """Every test leaves no seam behind: the other tests of this worker see the frameworks untouched."""
    meta_path = list(sys.meta_path)
    yield
    assert stubbing.active_stubber() is None
    assert "on_invoke_tool" not in vars(FunctionTool)
    assert vars(BaseTool)["run"] is OWN_RUN and vars(BaseTool)["arun"] is OWN_ARUN
    assert vars(PydanticAgent)["iter"] is OWN_ITER
    assert Span.end is OWN_SPAN_END  # the span marks are off
    assert sys.meta_path == meta_path


# -- ToolStubber: matching --------------------------------------------------------------------------------


def test_by_id_answers_the_recorded_result(ledger: list[RecordedResult]) -> None:
    stubs = stubber(ledger)
    found = answer(stubs, "lookup_order", '{"order_id": "Alpha"}', "call-0")  # the Agents SDK's JSON text
    assert found == ToolAnswer(value="order Alpha: paid 12.00")
    assert found.text == "order Alpha: paid 12.00"
    status = answer(stubs, "order_status", ALPHA, "call-4")
    assert status.value == {"status": "refunded", "amount": 12.0}
    assert json.loads(status.text) == {"status": "refunded", "amount": 12.0}  # what a framework hands on
    assert (stubs.answered, stubs.missed) == (2, 0)


def test_by_id_other_arguments_is_a_miss_unless_arguments_are_not_compared(
    ledger: list[RecordedResult],
) -> None:
    diverged: list[str] = []
    exact = stubber(ledger, diverged=diverged)
    missed = answer(exact, "refund_order", {"order_id": "Alpha", "amount": 13}, "call-1")
    assert missed.miss and missed.value is None
    assert missed.error is not None
    assert "tool call call-1 is refund_order(" in missed.error and '"amount":13' in missed.error
    assert '"amount":12' in missed.error and f"(step {ledger[1].step})" in missed.error
    assert diverged == [missed.error]

    loose = stubber(ledger, compare_arguments=False)
    found = answer(loose, "refund_order", {"order_id": "Alpha", "amount": 13}, "call-1")
    assert found == ToolAnswer(value="refunded 12.00 on order Alpha")
    other_tool = answer(loose, "lookup_order", ALPHA, "call-2")  # the name is always compared
    assert other_tool.miss and "call-2" in (other_tool.error or "")


def test_no_call_id_is_matched_by_name_and_arguments_among_the_calls_served(
    ledger: list[RecordedResult],
) -> None:
    stubs = stubber(ledger)
    found = answer(stubs, "refund_order", {"amount": 12, "order_id": "Alpha"}, None)  # key order is free
    assert found == ToolAnswer(value="refunded 12.00 on order Alpha")
    # That result is used: its own call id no longer has one.
    again = answer(stubs, "refund_order", REFUND_ALPHA, "call-1")
    assert (
        again.miss
        and "tool call call-1 " in (again.error or "")
        and "has no recorded result" in (again.error or "")
    )
    unknown = answer(stubs, "refund_order", {"order_id": "Alpha", "amount": 99}, None)
    assert (
        unknown.miss
        and unknown.error
        == '[blackbox] refund_order({"amount":99,"order_id":"Alpha"}) has no recorded result'
    )


def test_each_recorded_result_answers_once(ledger: list[RecordedResult]) -> None:
    by_id = stubber(ledger)
    assert answer(by_id, "lookup_order", ALPHA, "call-0").value == "order Alpha: paid 12.00"
    assert answer(by_id, "lookup_order", ALPHA, "call-0").miss
    assert answer(by_id, "lookup_order", ALPHA, None).miss

    by_arguments = stubber(ledger, by="arguments", on_miss="error")
    assert answer(by_arguments, "lookup_order", ALPHA, None).value == "order Alpha: paid 12.00"
    second = answer(by_arguments, "lookup_order", ALPHA, None)
    assert second.miss
    assert (by_arguments.answered, by_arguments.missed) == (1, 1)


def test_by_arguments_answers_in_recorded_order(tmp_path: Path) -> None:
    twice = record(
        tmp_path,
        [
            ("lookup_order", ALPHA, {"result": "first"}),
            ("lookup_order", {"order_id": "Beta"}, {"result": "beta"}),
            ("lookup_order", ALPHA, {"result": "second"}),
        ],
    )
    stubs = stubber(twice, by="arguments", on_miss="error")
    # A rerun's model numbers its calls its own way: the ids say nothing, the calls are matched.
    assert answer(stubs, "lookup_order", ALPHA, "call_provider_1").value == "first"
    assert answer(stubs, "lookup_order", ALPHA, None).value == "second"
    assert answer(stubs, "lookup_order", {"order_id": "Beta"}, None).value == "beta"
    used_up = answer(stubs, "lookup_order", ALPHA, None)
    assert used_up.miss and "every recorded result was already used" in (used_up.error or "")


def test_recorded_error_is_raised_again_as_recorded(ledger: list[RecordedResult]) -> None:
    stubs = stubber(ledger)
    failed = answer(stubs, "refund_order", {"order_id": "Beta", "amount": 5}, "call-2")
    assert failed == ToolAnswer(error="ValueError: boom")
    assert not failed.miss and not failed.runs

    raised = failed.exception(Exception)
    assert type(raised).__name__ == "ValueError" and str(raised) == "boom"
    assert isinstance(raised, Exception) and not isinstance(raised, ValueError)  # a name, not the class
    assert isinstance(failed.exception(RuntimeError), RuntimeError)

    class FrameworkToolError(Exception):
        pass

    own = failed.exception(Exception, kinds={"ValueError": FrameworkToolError})
    assert type(own) is FrameworkToolError and str(own) == "boom"
    assert type(failed.exception(Exception, kinds={"KeyError": FrameworkToolError})).__name__ == "ValueError"

    # A miss's message is no recorded error: raised whole, as the base class.
    missed = answer(stubs, "refund_order", {"order_id": "Beta", "amount": 5}, "call-2")
    assert missed.miss
    as_raised = missed.exception(RuntimeError)
    assert type(as_raised) is RuntimeError and str(as_raised) == missed.error


# -- ToolStubber: misses ----------------------------------------------------------------------------------


def test_miss_in_a_replay_diverges_naming_the_call_and_adds_no_note(ledger: list[RecordedResult]) -> None:
    diverged: list[str] = []
    stubs = stubber(ledger, diverged=diverged)
    missed = answer(stubs, "lookup_order", {"order_id": "Zeta"}, "call-9")
    assert missed.miss and missed.error is not None
    assert diverged == [missed.error]
    assert "call-9" in missed.error and 'lookup_order({"order_id":"Zeta"})' in missed.error
    assert stubs.notes() == []
    assert (stubs.answered, stubs.missed) == (0, 1)


def test_miss_in_a_rerun_is_a_tool_error_and_a_note_naming_the_call(ledger: list[RecordedResult]) -> None:
    diverged: list[str] = []
    stubs = stubber(ledger, by="arguments", on_miss="error", diverged=diverged)
    missed = answer(stubs, "lookup_order", {"order_id": "Beta"}, None)
    assert missed.miss and not missed.runs and missed.error is not None
    assert missed.error.startswith(
        '[blackbox] the model called lookup_order({"order_id":"Beta"}), which the parent run did not record'
    )
    assert f'closest recorded: step {ledger[0].step}, lookup_order({{"order_id":"Alpha"}})' in missed.error
    assert "--run-unrecorded-tools" in missed.error
    assert stubs.notes() == [missed.error]
    assert diverged == []  # only a replay diverges


def test_miss_with_run_unrecorded_tools_runs_it_and_says_so(ledger: list[RecordedResult]) -> None:
    stubs = stubber(ledger, by="arguments", on_miss="run")
    runs = answer(stubs, "refund_order", {"order_id": "Alpha", "amount": 13}, None)
    assert runs == ToolAnswer(runs=True)
    assert stubs.notes() == [
        '[blackbox] refund_order({"amount":13,"order_id":"Alpha"}) was not recorded: it ran for real '
        "(--run-unrecorded-tools)"
    ]
    assert stubs.answered == 0
    assert answer(stubs, "refund_order", REFUND_ALPHA, None).value == "refunded 12.00 on order Alpha"


def test_notes_are_deduplicated(ledger: list[RecordedResult]) -> None:
    stubs = stubber(ledger, by="arguments", on_miss="error")
    first = answer(stubs, "lookup_order", {"order_id": "Beta"}, None)
    answer(stubs, "lookup_order", {"order_id": "Beta"}, None)
    other = answer(stubs, "lookup_order", {"order_id": "Delta"}, None)
    assert stubs.notes() == [first.error, other.error]
    assert stubs.missed == 3


def test_provider_ids_unknown_to_the_run_are_not_numbered(ledger: list[RecordedResult]) -> None:
    ids = CallIds()
    stubs = stubber(ledger, ids=ids)
    # An id the run never saw is no neutral id: the call is matched by name and arguments.
    assert answer(stubs, "lookup_order", ALPHA, "toolu_01NeverSeen").value == "order Alpha: paid 12.00"
    assert ids.to_neutral == {}
    assert ids.known("toolu_01NeverSeen") is None and ids.to_neutral == {}

    # An id the run did see stands for its neutral id: call_b is call-1, a refund, not this lookup.
    seen = CallIds()
    assert (seen.neutral("call_a"), seen.neutral("call_b")) == ("call-0", "call-1")
    by_id = stubber(ledger, ids=seen)
    wrong = answer(by_id, "lookup_order", ALPHA, "call_b")
    assert wrong.miss and "tool call call-1 is lookup_order(" in (wrong.error or "")
    assert answer(by_id, "lookup_order", ALPHA, "call_a").value == "order Alpha: paid 12.00"
    assert seen.to_neutral == {"call_a": "call-0", "call_b": "call-1"}


@pytest.mark.parametrize("by", ["id", "arguments"])
def test_threads_answering_distinct_recorded_calls_get_distinct_results(tmp_path: Path, by: str) -> None:
    # By id: eight calls, eight ids. By arguments: eight identical calls racing for eight results.
    arguments = [{"order_id": f"O{i}"} if by == "id" else ALPHA for i in range(8)]
    results = record(
        tmp_path, [("lookup_order", a, {"result": f"result {i}"}) for i, a in enumerate(arguments)]
    )
    stubs = stubber(results, by=by, on_miss="error")
    start = threading.Barrier(8)
    got: dict[int, ToolAnswer] = {}

    def call(i: int) -> None:
        start.wait()
        got[i] = answer(stubs, "lookup_order", arguments[i], f"call-{i}" if by == "id" else None)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    values = [got[i].value for i in range(8)]
    assert sorted(values) == sorted(f"result {i}" for i in range(8))
    if by == "id":
        assert values == [f"result {i}" for i in range(8)]
    assert (stubs.answered, stubs.missed) == (8, 0)


# -- the seams on the real frameworks ---------------------------------------------------------------------


def test_install_puts_the_seams_in_and_uninstall_takes_them_out(ledger: list[RecordedResult]) -> None:
    assert "on_invoke_tool" not in vars(FunctionTool)
    stubs = stubber(ledger)
    with stubbing_session(stubs):
        assert stubbing.active_stubber() is stubs
        assert "on_invoke_tool" in vars(FunctionTool)
        assert vars(BaseTool)["run"] is not OWN_RUN and vars(BaseTool)["arun"] is not OWN_ARUN
        assert vars(PydanticAgent)["iter"] is not OWN_ITER
    assert stubbing.active_stubber() is None
    assert "on_invoke_tool" not in vars(FunctionTool)
    assert vars(BaseTool)["run"] is OWN_RUN and vars(BaseTool)["arun"] is OWN_ARUN
    assert vars(PydanticAgent)["iter"] is OWN_ITER


def sdk_context(name: str, call_id: str, arguments: str) -> ToolContext[None]:
    """The context the Agents SDK hands a function tool (as its tool execution makes it)."""
    call = ResponseFunctionToolCall(type="function_call", call_id=call_id, name=name, arguments=arguments)
    return ToolContext.from_agent_context(RunContextWrapper(context=None), call_id, tool_call=call)


def invoke_sdk_tool(function_tool_: FunctionTool, call_id: str, arguments: dict[str, Any]) -> Any:
    text = json.dumps(arguments)
    context = sdk_context(function_tool_.name, call_id, text)

    async def invoke() -> Any:
        return await function_tool_.on_invoke_tool(context, text)

    return asyncio.run(invoke())


def test_agents_sdk_function_tool_is_answered_and_left_as_it_was(ledger: list[RecordedResult]) -> None:
    ran: list[str] = []

    def lookup_order(order_id: str) -> str:
        """Look an order up."""
        ran.append(order_id)
        return f"order {order_id}: looked up for real"

    made_before = function_tool(lookup_order)  # a program's tools exist before the session starts
    own_invoker = vars(made_before)["on_invoke_tool"]
    with stubbing_session(stubber(ledger)) as stubs:
        made_during = function_tool(lookup_order)
        invoker = made_before.on_invoke_tool
        assert invoker is made_before.on_invoke_tool  # the SDK compares invokers by identity
        assert invoker is not own_invoker
        assert made_during.on_invoke_tool is made_during.on_invoke_tool
        assert invoke_sdk_tool(made_before, "call-0", ALPHA) == "order Alpha: paid 12.00"
        assert ran == []
        assert stubs.answered == 1
    assert vars(made_before)["on_invoke_tool"] is own_invoker
    assert made_before.on_invoke_tool is own_invoker
    assert invoke_sdk_tool(made_during, "call-0", ALPHA) == "order Alpha: looked up for real"
    assert ran == ["Alpha"]


def test_agents_sdk_recorded_error_goes_through_the_tools_failure_handler(
    ledger: list[RecordedResult],
) -> None:
    ran: list[str] = []

    def refund_order(order_id: str, amount: float) -> str:
        """Refund an amount on an order."""
        ran.append(order_id)
        return "refunded for real"

    def shown(context: RunContextWrapper[Any], error: Exception) -> str:
        return f"{type(error).__name__}: {error}"

    refund = function_tool(refund_order, name_override="refund_order", failure_error_function=shown)
    default = function_tool(refund_order, name_override="refund_order")
    diverged: list[str] = []
    with stubbing_session(stubber(ledger, diverged=diverged)):
        told = invoke_sdk_tool(refund, "call-2", {"order_id": "Beta", "amount": 5})
        missed = invoke_sdk_tool(refund, "call-7", {"order_id": "Beta", "amount": 5})
        hidden = invoke_sdk_tool(default, "call-3", {"order_id": "Gamma", "amount": 1})
    # The tool's failure handler sees the recorded error as it saw the first: a ValueError, "boom".
    assert told == "ValueError: boom"
    assert isinstance(missed, str) and missed.startswith("Exception: [blackbox] tool call call-7")
    assert len(diverged) == 1 and "call-7" in diverged[0]
    # The SDK's default handler: its own fixed text, whatever the error.
    assert hidden == default_tool_error_function(sdk_context("refund_order", "call-3", "{}"), ValueError("x"))
    assert ran == []


def test_agents_sdk_agent_used_as_a_tool_is_not_answered(ledger: list[RecordedResult]) -> None:
    refunds = SdkAgent(name="Refund Agent", instructions="You refund orders.")
    as_tool = refunds.as_tool(tool_name="refund_agent", tool_description="Refunds an order.")
    assert isinstance(as_tool, FunctionTool)
    plain = function_tool(lambda order_id: order_id, name_override="echo")
    with stubbing_session(stubber(ledger)):
        assert as_tool.on_invoke_tool is vars(as_tool)["on_invoke_tool"]  # it runs: its model is replayed
        assert plain.on_invoke_tool is not vars(plain)["on_invoke_tool"]


def langchain_tools(ran: list[str]) -> tuple[BaseTool, BaseTool]:
    @tool
    def lookup_order(order_id: str) -> str:
        """Look an order up."""
        ran.append(f"lookup {order_id}")
        return f"order {order_id}: looked up for real"

    @tool
    def refund_order(order_id: str, amount: float) -> str:
        """Refund an amount on an order."""
        ran.append(f"refund {order_id}")
        return "refunded for real"

    return lookup_order, refund_order


def tool_call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    """What a chat model's tool call hands a LangChain tool (``create_agent``, ToolNode)."""
    return {"name": name, "args": arguments, "id": call_id, "type": "tool_call"}


def test_langchain_tool_call_is_answered_with_a_tool_message(ledger: list[RecordedResult]) -> None:
    ran: list[str] = []
    lookup, refund = langchain_tools(ran)
    with stubbing_session(stubber(ledger)) as stubs:
        message = lookup.invoke(tool_call("lookup_order", ALPHA, "call-0"))
        refunded = asyncio.run(refund.ainvoke(tool_call("refund_order", REFUND_ALPHA, "call-1")))
        assert stubs.answered == 2
    assert isinstance(message, ToolMessage) and isinstance(refunded, ToolMessage)
    assert (message.content, message.tool_call_id, message.name) == (
        "order Alpha: paid 12.00",
        "call-0",
        "lookup_order",
    )
    assert message.status == "success"
    assert refunded.content == "refunded 12.00 on order Alpha"
    assert ran == []
    assert (
        lookup.invoke(tool_call("lookup_order", ALPHA, "call-0")).content == "order Alpha: looked up for real"
    )
    assert ran == ["lookup Alpha"]


def test_langchain_recorded_error_is_raised_again(ledger: list[RecordedResult]) -> None:
    ran: list[str] = []
    _, refund = langchain_tools(ran)
    handled = refund.model_copy(update={"handle_tool_error": True})
    with stubbing_session(stubber(ledger)):
        with pytest.raises(Exception, match=r"^boom$") as raised:
            refund.invoke(tool_call("refund_order", {"order_id": "Beta", "amount": 5}, "call-2"))
        assert type(raised.value).__name__ == "ValueError"
        # Recorded as a ToolException: LangChain's own error handling treats it as it did the first.
        message = handled.invoke(tool_call("refund_order", {"order_id": "Gamma", "amount": 1}, "call-3"))
    assert isinstance(message, ToolMessage)
    assert (message.status, message.content) == ("error", "the payments database is down")
    assert ran == []


def test_langchain_tool_exception_is_raised_as_langchains_own(ledger: list[RecordedResult]) -> None:
    ran: list[str] = []
    _, refund = langchain_tools(ran)
    with stubbing_session(stubber(ledger)), pytest.raises(ToolException, match="payments database is down"):
        refund.invoke(tool_call("refund_order", {"order_id": "Gamma", "amount": 1}, "call-3"))
    assert ran == []


def test_langchain_miss_is_an_error_tool_message_naming_the_call(ledger: list[RecordedResult]) -> None:
    ran: list[str] = []
    lookup, _ = langchain_tools(ran)
    with stubbing_session(stubber(ledger, by="arguments", on_miss="error")) as stubs:
        message = lookup.invoke(tool_call("lookup_order", {"order_id": "Beta"}, "call-5"))
        plain = lookup.invoke({"order_id": "Omega"})  # no tool call: no id, the text alone
    assert isinstance(message, ToolMessage)
    assert message.status == "error" and message.tool_call_id == "call-5"
    assert isinstance(message.content, str)
    assert message.content.startswith('[blackbox] the model called lookup_order({"order_id":"Beta"})')
    assert isinstance(plain, str) and plain.startswith(
        '[blackbox] the model called lookup_order({"order_id":"Omega"})'
    )
    assert stubs.notes() == [message.content, plain]
    assert ran == []


def scripted_model(calls: list[ToolCallPart], seen: list[list[ModelMessage]]) -> FunctionModel:
    """pydantic-ai's own test model: ``calls`` in its first response, then a final answer."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        if len(messages) == 1:  # the run's first request: the question alone
            return ModelResponse(parts=list(calls))
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(respond)


def tool_returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [part for message in messages for part in message.parts if isinstance(part, ToolReturnPart)]


def pydantic_agent(
    calls: list[ToolCallPart], seen: list[list[ModelMessage]], ran: list[str]
) -> PydanticAgent:
    agent = PydanticAgent(scripted_model(calls, seen))

    @agent.tool_plain
    def lookup_order(order_id: str) -> str:
        """Look an order up."""
        ran.append(order_id)
        return f"order {order_id}: looked up for real"

    return agent


def test_pydantic_ai_tool_is_answered_by_call_id(ledger: list[RecordedResult]) -> None:
    ran: list[str] = []
    seen: list[list[ModelMessage]] = []
    agent = pydantic_agent([ToolCallPart("lookup_order", ALPHA, tool_call_id="call-0")], seen, ran)
    with stubbing_session(stubber(ledger)) as stubs:
        result = agent.run_sync(QUESTION)
    assert result.output == "done"
    returned = tool_returns(result.all_messages())
    assert [(r.tool_name, r.content, r.tool_call_id) for r in returned] == [
        ("lookup_order", "order Alpha: paid 12.00", "call-0")
    ]
    assert tool_returns(seen[1]) == returned  # what the model was sent
    assert ran == [] and stubs.answered == 1
    assert (
        tool_returns(agent.run_sync(QUESTION).all_messages())[0].content == "order Alpha: looked up for real"
    )


def test_pydantic_ai_tool_is_answered_by_name_and_arguments(ledger: list[RecordedResult]) -> None:
    ran: list[str] = []
    seen: list[list[ModelMessage]] = []
    # pydantic-ai numbers the call itself (pyd_ai_...): no id the recording knows.
    agent = pydantic_agent([ToolCallPart("lookup_order", ALPHA)], seen, ran)
    with stubbing_session(stubber(ledger, by="arguments", on_miss="error")):
        result = agent.run_sync(QUESTION)
    [returned] = tool_returns(result.all_messages())
    assert returned.content == "order Alpha: paid 12.00"
    assert returned.tool_call_id.startswith("pyd_ai_")
    assert ran == []


def test_pydantic_ai_miss_tells_the_model(ledger: list[RecordedResult]) -> None:
    ran: list[str] = []
    seen: list[list[ModelMessage]] = []
    agent = pydantic_agent([ToolCallPart("lookup_order", {"order_id": "Beta"})], seen, ran)
    with stubbing_session(stubber(ledger, by="arguments", on_miss="error")) as stubs:
        result = agent.run_sync(QUESTION)
    assert result.output == "done"
    told = [part for part in seen[1][-1].parts if "[blackbox]" in str(getattr(part, "content", ""))]
    assert len(told) == 1 and 'lookup_order({"order_id":"Beta"})' in str(told[0].content)  # type: ignore[union-attr]
    assert len(stubs.notes()) == 1
    assert ran == []


# -- the post-import finder -------------------------------------------------------------------------------


class ThrowawaySeam:
    """A seam on a throwaway framework (a package written under tmp_path): ``Tool.run`` answered."""

    FRAMEWORK = "throwaway-framework"

    def __init__(self, module: str) -> None:
        self.MODULE = module
        self.installed_on: list[types.ModuleType] = []
        self.had_tool: list[bool] = []
        self._own: Any = None

    def install(self, module: types.ModuleType) -> str | None:
        self.installed_on.append(module)
        self.had_tool.append(hasattr(module, "Tool"))  # installed after the module ran, not before
        self._own = module.Tool.run
        module.Tool.run = lambda tool, arguments: "answered from the recording"
        return None

    def uninstall(self) -> None:
        for module in self.installed_on:
            module.Tool.run = self._own


@pytest.fixture
def throwaway_framework(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A package ``<name>`` with a module ``<name>.tools`` nothing imported yet; forgotten afterwards."""
    name = f"bbx_throwaway_{tmp_path.name.replace('-', '_')}"
    package = tmp_path / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "tools.py").write_text(
        "class Tool:\n    def run(self, arguments):\n        return 'ran for real'\n"
    )
    (package / "other.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    for module in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
        del sys.modules[module]


def test_a_framework_imported_after_install_gets_its_seam(
    throwaway_framework: str, ledger: list[RecordedResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    seam = ThrowawaySeam(f"{throwaway_framework}.tools")
    real_seams = tool_stubs._seams
    monkeypatch.setattr(tool_stubs, "_seams", lambda: [*real_seams(), seam])
    meta_path = list(sys.meta_path)
    with stubbing_session(stubber(ledger)):
        assert len(sys.meta_path) == len(meta_path) + 1  # the three real frameworks are imported already
        assert seam.installed_on == []
        importlib.import_module(f"{throwaway_framework}.other")
        assert seam.installed_on == []
        tools = importlib.import_module(f"{throwaway_framework}.tools")
        assert seam.installed_on == [tools] and seam.had_tool == [True]
        assert tools.Tool().run({}) == "answered from the recording"
        assert tools.__spec__ is not None and tools.__spec__.origin is not None
        assert Path(tools.__spec__.origin).name == "tools.py"
    assert sys.meta_path == meta_path
    assert tools.Tool().run({}) == "ran for real"


def test_the_finder_is_gone_after_uninstall(
    throwaway_framework: str, ledger: list[RecordedResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    seam = ThrowawaySeam(f"{throwaway_framework}.tools")
    real_seams = tool_stubs._seams
    monkeypatch.setattr(tool_stubs, "_seams", lambda: [*real_seams(), seam])
    with stubbing_session(stubber(ledger)):
        pass
    tools = importlib.import_module(f"{throwaway_framework}.tools")
    assert seam.installed_on == []
    assert tools.Tool().run({}) == "ran for real"


# -- a seam that cannot be installed ----------------------------------------------------------------------


def stub_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


def test_a_framework_without_the_seam_warns_once_and_the_others_are_answered(
    ledger: list[RecordedResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tool_stubs, "_warned", set())  # "once per process": this test's process
    # An Agents SDK whose FunctionTool has no on_invoke_tool field (a version without the seam).
    old_sdk = types.ModuleType("agents.tool")

    class OldFunctionTool:
        pass

    old_sdk.FunctionTool = OldFunctionTool  # type: ignore[attr-defined]
    ran: list[str] = []
    lookup, _ = langchain_tools(ran)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with monkeypatch.context() as patched:
            patched.setitem(sys.modules, "agents.tool", old_sdk)
            tool_stubs.install(stubber(ledger))
        try:
            assert stubbing.active_stubber() is not None
            assert "on_invoke_tool" not in vars(FunctionTool)
            message = lookup.invoke(tool_call("lookup_order", ALPHA, "call-0"))
            assert isinstance(message, ToolMessage) and message.content == "order Alpha: paid 12.00"
        finally:
            tool_stubs.uninstall()
        with monkeypatch.context() as patched:  # a second session in the same process: no second warning
            patched.setitem(sys.modules, "agents.tool", old_sdk)
            tool_stubs.install(stubber(ledger))
        tool_stubs.uninstall()
    [warned] = stub_warnings(caught)
    assert warned.startswith(
        "[blackbox] --stub-tools cannot answer openai-agents tools (no FunctionTool.on_invoke_tool field)"
    )
    assert "run for real" in warned
    assert ran == []


class BrokenSeam:
    """A seam whose framework has another shape than the one it knows."""

    def __init__(self, framework: str, *, reason: str | None = None) -> None:
        self.MODULE = "json"  # imported already: installed at once
        self.FRAMEWORK = framework
        self._reason = reason

    def install(self, module: types.ModuleType) -> str | None:
        if self._reason is None:
            raise TypeError(f"{module.__name__} is not what it was")
        return self._reason

    def uninstall(self) -> None:
        raise AssertionError("a seam that was not installed is not uninstalled")


def test_one_warning_per_framework_per_process(
    ledger: list[RecordedResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tool_stubs, "_warned", set())
    broken = [BrokenSeam("framework-a", reason="no hook"), BrokenSeam("framework-b")]
    real_seams = tool_stubs._seams
    monkeypatch.setattr(tool_stubs, "_seams", lambda: [*real_seams(), *broken])
    ran: list[str] = []
    lookup, _ = langchain_tools(ran)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            with stubbing_session(stubber(ledger)) as stubs:
                assert "on_invoke_tool" in vars(FunctionTool)  # the frameworks that have their seam
                assert (
                    lookup.invoke(tool_call("lookup_order", ALPHA, "call-0")).content
                    == "order Alpha: paid 12.00"
                )
                assert stubs.answered == 1
    warned = stub_warnings(caught)
    assert [w.partition(": they")[0] for w in warned] == [
        "[blackbox] --stub-tools cannot answer framework-a tools (no hook)",
        "[blackbox] --stub-tools cannot answer framework-b tools (TypeError: json is not what it was)",
    ]
    assert all("run for real" in w for w in warned)
    assert ran == []


def test_a_missing_seam_never_raises_into_the_program_when_warnings_are_errors(
    ledger: list[RecordedResult], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(tool_stubs, "_warned", set())
    real_seams = tool_stubs._seams
    monkeypatch.setattr(
        tool_stubs, "_seams", lambda: [*real_seams(), BrokenSeam("framework-c", reason="no hook")]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pytest's filterwarnings=error, as this project's own
        with stubbing_session(stubber(ledger)) as stubs:
            assert stubbing.active_stubber() is stubs
    assert "[blackbox] --stub-tools cannot answer framework-c tools (no hook)" in capsys.readouterr().err


# -- blackbox.tool.stubbed on the tool's span -------------------------------------------------------------


@pytest.fixture
def spans() -> Iterator[tuple[trace.Tracer, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    marks.start()
    try:
        yield provider.get_tracer("tests"), exporter
    finally:
        marks.stop()
        provider.shutdown()


def tool_span_attributes(name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    attributes: dict[str, Any] = {"openinference.span.kind": "TOOL", "tool.name": name}
    if arguments is not None:
        attributes["input.value"] = json.dumps(arguments)
    return attributes


def finished(exporter: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    return {span.name: span for span in exporter.get_finished_spans()}


def stubbed_mark(span: ReadableSpan) -> Any:
    return (span.attributes or {}).get(ATTR_TOOL_STUBBED)


def test_a_tool_span_ending_after_the_answer_is_marked(
    spans: tuple[trace.Tracer, InMemorySpanExporter],
) -> None:
    tracer, exporter = spans
    lookup = tracer.start_span("lookup span", attributes=tool_span_attributes("lookup_order", ALPHA))
    refund = tracer.start_span("refund span", attributes=tool_span_attributes("refund_order", REFUND_ALPHA))
    other_lookup = tracer.start_span(
        "other lookup span", attributes=tool_span_attributes("lookup_order", {"order_id": "Beta"})
    )
    plain = tracer.start_span("not a tool", attributes={"tool.name": "lookup_order"})
    marks.stubbed("lookup_order", ALPHA)  # the Agents SDK's way: the tool span is not the current one
    for span in (plain, refund, other_lookup, lookup):
        span.end()
    ended = finished(exporter)
    assert stubbed_mark(ended["lookup span"]) is True
    assert stubbed_mark(ended["refund span"]) is None  # another tool
    assert stubbed_mark(ended["other lookup span"]) is None  # the same tool, other arguments
    assert stubbed_mark(ended["not a tool"]) is None
    again = tracer.start_span("later lookup span", attributes=tool_span_attributes("lookup_order", ALPHA))
    again.end()
    assert stubbed_mark(finished(exporter)["later lookup span"]) is None  # one answer marks one span


def test_the_current_tool_span_is_marked_at_once(spans: tuple[trace.Tracer, InMemorySpanExporter]) -> None:
    tracer, exporter = spans
    with tracer.start_as_current_span("refund span", attributes=tool_span_attributes("refund_order")) as span:
        marks.stubbed("refund_order", REFUND_ALPHA)
        assert span.attributes is not None and span.attributes.get(ATTR_TOOL_STUBBED) is True  # type: ignore[attr-defined]
    after = tracer.start_span("next refund span", attributes=tool_span_attributes("refund_order"))
    after.end()
    ended = finished(exporter)
    assert stubbed_mark(ended["refund span"]) is True
    assert stubbed_mark(ended["next refund span"]) is None  # nothing left waiting


# -- a LangChain TOOL span's output, and tool_output ------------------------------------------------------


@pytest.fixture
def langchain_spans() -> Iterator[InMemorySpanExporter]:
    """OpenInference's LangChain instrumentation, on a provider of this test's own."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield exporter
    finally:
        instrumentor.uninstrument()
        provider.shutdown()


def test_langchain_tool_span_output_gives_the_tools_content(
    langchain_spans: InMemorySpanExporter, ledger: list[RecordedResult]
) -> None:
    ran: list[str] = []
    lookup, _ = langchain_tools(ran)
    lookup.invoke(tool_call("lookup_order", {"order_id": "Zoë"}, "call-0"))
    with stubbing_session(stubber(ledger)):
        lookup.invoke(tool_call("lookup_order", ALPHA, "call-0"))
    real, answered = (s for s in langchain_spans.get_finished_spans() if s.name == "lookup_order")
    for span in (real, answered):
        assert (span.attributes or {}).get("openinference.span.kind") == "TOOL"
    output = (real.attributes or {}).get("output.value")
    assert isinstance(output, str)
    recorded = json.loads(output)  # the ToolMessage, as the instrumentation serialized it
    assert recorded["type"] == "tool" and recorded["data"]["tool_call_id"] == "call-0"
    assert tool_output(output) == "order Zoë: looked up for real"
    assert tool_output((answered.attributes or {}).get("output.value")) == "order Alpha: paid 12.00"
    # The framework's own span still happens for an answered call, and says so.
    assert stubbed_mark(answered) is True and stubbed_mark(real) is None
    assert ran == ["lookup Zoë"]


@pytest.mark.parametrize(
    "value",
    [
        "order Alpha: paid 12.00",
        '{"status": "refunded", "amount": 12.0}',
        '{"type": "tool", "content": "no data"}',
        '{"type": "tool", "data": {"type": "ai", "content": "an AI message"}}',
        '{"type": "tool", "data": "not an object"}',
        "{not json",
        "[1, 2]",
        "",
        None,
        {"type": "tool", "data": {"type": "tool", "content": "not a string"}},
        12,
    ],
)
def test_tool_output_passes_other_values_through(value: Any) -> None:
    assert tool_output(value) == value


def test_tool_output_of_a_tool_message_with_json_content() -> None:
    from langchain_core.messages import message_to_dict  # what OpenInference's encoder calls

    message = ToolMessage(content='{"status": "refunded"}', tool_call_id="call-1", name="refund_order")
    serialized = json.dumps(message_to_dict(message), ensure_ascii=False)
    assert tool_output(serialized) == '{"status": "refunded"}'


def test_stubbable_gives_text_to_a_function_that_returns_optional_text(tmp_path: Path) -> None:
    """``-> str | None`` and ``-> Optional[str]`` are text: a recorded "12" stays "12"; ``-> int`` gets 12."""
    from typing import Optional

    results = record(tmp_path, [("code", {"order_id": "Alpha"}, {"result": "12"})] * 4)

    def maybe_text(order_id: str) -> str | None:
        raise AssertionError("answered from the recording")

    def optional_text(order_id: str) -> Optional[str]:  # noqa: UP045 (the spelling under test)
        raise AssertionError("answered from the recording")

    def number(order_id: str) -> int:
        raise AssertionError("answered from the recording")

    def unannotated(order_id):  # type: ignore[no-untyped-def]
        raise AssertionError("answered from the recording")

    with stubbing_session(stubber(results, by="arguments", on_miss="error")):
        got = [
            stubbing.stubbable(name="code")(f)("Alpha")
            for f in (maybe_text, optional_text, number, unannotated)
        ]
    assert got == ["12", "12", 12, "12"]
