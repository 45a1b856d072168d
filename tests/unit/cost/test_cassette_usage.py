"""A model call's token counts in its model_output (``tokenUsage``), and what a cassette cost.

Recorded at the HTTP boundary from the real SDKs against the fake provider (whose answers count
tokens as a real API does), and from hand-written responses that carry cached, cache-write and
reasoning tokens, sent over real HTTP by a canned provider on 127.0.0.1; built from the spans a real
BlackboxSpanProcessor stored. The counts are not behaviour: a replay never serves them, diff
--semantic ignores them, verify accepts them. They price the cassette with genai-prices.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from anthropic.types import MessageParam
from fake_llm import FakeLLMServer
from genai_prices import Usage, calc_price
from google import genai
from google.genai import types as gtypes
from helpers import PROGRAMS, CannedProvider, LoopbackAPI, Raw, Recorder, run_cli
from openai.types.chat import ChatCompletionMessageParam
from openai.types.responses import ResponseCompletedEvent, ResponseInputItemParam
from openinference.instrumentation.openai import OpenAIInstrumentor

import otel_blackbox
from otel_blackbox._cassette.from_spans.cassette import cassette_from_spans
from otel_blackbox._cassette.io import load_cassette, save_cassette
from otel_blackbox._cassette.model import Cassette
from otel_blackbox._cassette.verify import verify_cassette
from otel_blackbox._cost.cassettes import cassette_cost
from otel_blackbox._cost.usage import without_usage
from otel_blackbox._store.connection import connect_reader
from otel_blackbox._store.queries import trace_spans
from otel_blackbox._wire.anthropic.translation import AnthropicMessages
from otel_blackbox._wire.gemini.translation import GeminiGenerateContent
from otel_blackbox._wire.openai_chat.translation import OpenAIChat
from otel_blackbox._wire.openai_responses.translation import OpenAIResponses
from otel_blackbox._wire.protocol import Provider

KEYS = {"openai": "sk-usage-test-0123456789", "anthropic": "sk-ant-usage-test-0123456789"}
GEMINI_KEY = "AIzaSy-usage-test-0123456789"
QUESTION = "Hello there, how are you today?"
USER: list[Any] = [{"role": "user", "content": QUESTION}]
CHAT_USER: list[ChatCompletionMessageParam] = [{"role": "user", "content": QUESTION}]
RESPONSES_USER: list[ResponseInputItemParam] = [{"role": "user", "content": QUESTION}]
CLAUDE_USER: list[MessageParam] = [{"role": "user", "content": QUESTION}]


def outputs(path: Path) -> list[dict[str, Any]]:
    return [s.payload for s in load_cassette(path).steps if s.type == "model_output"]


# --- recorded from each SDK: tokenUsage is what the SDK was told -------------------------------------


def chat_call(srv: FakeLLMServer, stream: bool) -> tuple[int, int]:
    with openai.OpenAI(base_url=srv.openai_base_url, api_key=KEYS["openai"], max_retries=0) as client:
        if not stream:
            usage = client.chat.completions.create(model="gpt-4o-mini", messages=CHAT_USER).usage
            assert usage is not None
            return usage.prompt_tokens, usage.completion_tokens
        chunks = list(
            client.chat.completions.create(
                model="gpt-4o-mini",
                messages=CHAT_USER,
                stream=True,
                stream_options={"include_usage": True},
            )
        )
        last = chunks[-1].usage
        assert last is not None
        return last.prompt_tokens, last.completion_tokens


def responses_call(srv: FakeLLMServer, stream: bool) -> tuple[int, int]:
    with openai.OpenAI(base_url=srv.openai_base_url, api_key=KEYS["openai"], max_retries=0) as client:
        if not stream:
            usage = client.responses.create(model="gpt-4.1-mini", input=RESPONSES_USER).usage
        else:
            events = list(client.responses.create(model="gpt-4.1-mini", input=RESPONSES_USER, stream=True))
            usage = next(e.response.usage for e in events if isinstance(e, ResponseCompletedEvent))
        assert usage is not None
        return usage.input_tokens, usage.output_tokens


def anthropic_call(srv: FakeLLMServer, stream: bool) -> tuple[int, int]:
    with anthropic.Anthropic(
        base_url=srv.anthropic_base_url, api_key=KEYS["anthropic"], max_retries=0
    ) as client:
        if not stream:
            usage = client.messages.create(
                model="claude-sonnet-4-5", max_tokens=64, messages=CLAUDE_USER
            ).usage
            return usage.input_tokens, usage.output_tokens
        with client.messages.stream(model="claude-sonnet-4-5", max_tokens=64, messages=CLAUDE_USER) as events:
            final = events.get_final_message().usage
        return final.input_tokens, final.output_tokens


def gemini_call(srv: FakeLLMServer, stream: bool) -> tuple[int, int]:
    options = gtypes.HttpOptions(base_url=srv.gemini_base_url)
    with genai.Client(api_key=GEMINI_KEY, http_options=options) as client:
        if stream:
            chunks = list(
                client.models.generate_content_stream(model="gemini-2.5-flash", contents="Hello there")
            )
            usage = chunks[-1].usage_metadata
        else:
            usage = client.models.generate_content(
                model="gemini-2.5-flash", contents="Hello there"
            ).usage_metadata
    assert usage is not None and usage.prompt_token_count and usage.candidates_token_count
    return usage.prompt_token_count, usage.candidates_token_count


CALLS: dict[str, Callable[[FakeLLMServer, bool], tuple[int, int]]] = {
    "openai-chat": chat_call,
    "openai-responses": responses_call,
    "anthropic": anthropic_call,
    "gemini": gemini_call,
}
CELLS = [(api, stream) for api in CALLS for stream in (False, True)]


@pytest.mark.parametrize(("api", "stream"), CELLS, ids=[f"{a}-{'sse' if s else 'json'}" for a, s in CELLS])
def test_a_recording_keeps_the_token_counts_the_sdk_received(
    fake_llm: FakeLLMServer, tmp_path: Path, api: str, stream: bool
) -> None:
    path = tmp_path / "run.json"
    with otel_blackbox.session(mode="record", cassette=path):
        prompt, completion = CALLS[api](fake_llm, stream)
    (output,) = outputs(path)
    assert output["tokenUsage"] == {"inputTokens": prompt, "outputTokens": completion}
    cassette = load_cassette(path)
    assert verify_cassette(cassette).passed  # tokenUsage is no provider key
    cost = cassette_cost(cassette)
    assert cost.usd is not None and cost.usd > 0 and not cost.unpriced


def test_a_chat_stream_without_its_usage_chunk_records_no_counts_and_no_cost(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    path = tmp_path / "run.json"
    with (
        otel_blackbox.session(mode="record", cassette=path),
        openai.OpenAI(base_url=fake_llm.openai_base_url, api_key=KEYS["openai"], max_retries=0) as client,
    ):
        list(client.chat.completions.create(model="gpt-4o-mini", messages=CHAT_USER, stream=True))
    (output,) = outputs(path)
    assert "tokenUsage" not in output
    cost = cassette_cost(load_cassette(path))
    assert cost.usd is None and cost.describe() == "- (no token counts recorded)"  # never $0


# --- cached, cache-write and reasoning tokens, and their price -------------------------------------


def sse(*events: tuple[str, dict[str, Any]]) -> Raw:
    text = "".join(f"event: {kind}\ndata: {json.dumps(data)}\n\n" for kind, data in events)
    return Raw("text/event-stream", text.encode())


ANTHROPIC_USAGE = {
    "input_tokens": 100,
    "cache_read_input_tokens": 1000,
    "cache_creation_input_tokens": 200,
    "output_tokens": 50,
}
MESSAGE = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
           "content": [{"type": "text", "text": "Hi"}], "stop_reason": "end_turn",
           "stop_sequence": None}  # fmt: skip
ANTHROPIC_STREAM = sse(
    ("message_start", {"type": "message_start", "message": {
        **MESSAGE, "content": [], "stop_reason": None, "usage": {**ANTHROPIC_USAGE, "output_tokens": 1}}}),
    ("content_block_start", {"type": "content_block_start", "index": 0,
                             "content_block": {"type": "text", "text": ""}}),
    ("content_block_delta", {"type": "content_block_delta", "index": 0,
                             "delta": {"type": "text_delta", "text": "Hi"}}),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                       "usage": {"output_tokens": 50}}),
    ("message_stop", {"type": "message_stop"}),
)  # fmt: skip
CHAT_USAGE = {
    "prompt_tokens": 2000,
    "completion_tokens": 100,
    "total_tokens": 2100,
    "prompt_tokens_details": {"cached_tokens": 1500},
    "completion_tokens_details": {"reasoning_tokens": 40},  # part of completion_tokens
}
CHAT = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"},
                     "finish_reason": "stop"}]}  # fmt: skip
CHAT_STREAM = Raw(
    "text/event-stream",
    (
        "".join(
            f"data: {json.dumps(chunk)}\n\n"
            for chunk in (
                {"id": "c", "object": "chat.completion.chunk", "usage": None,
                 "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi"},
                              "finish_reason": None}]},
                {"id": "c", "object": "chat.completion.chunk", "usage": None,
                 "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                {"id": "c", "object": "chat.completion.chunk", "choices": [], "usage": CHAT_USAGE},
            )
        )
        + "data: [DONE]\n\n"
    ).encode(),
)  # fmt: skip
RESPONSES_USAGE = {
    "input_tokens": 2000,
    "input_tokens_details": {"cached_tokens": 1500},
    "output_tokens": 300,
    "output_tokens_details": {"reasoning_tokens": 200},  # part of output_tokens
    "total_tokens": 2300,
}
RESPONSE = {"id": "resp_1", "object": "response", "status": "completed", "model": "o4-mini",
            "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": "Hi", "annotations": []}]}]}  # fmt: skip
GEMINI_USAGE = {
    "promptTokenCount": 2000,
    "cachedContentTokenCount": 1500,
    "candidatesTokenCount": 100,
    "thoughtsTokenCount": 250,  # not part of candidatesTokenCount
    "totalTokenCount": 2350,
}
GEMINI_ANSWER = {
    "candidates": [{"content": {"role": "model", "parts": [{"text": "Hi"}]}, "finishReason": "STOP"}]
}


CLAUDE = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": USER}
CLAUDE_COUNTS = {"inputTokens": 1300, "outputTokens": 50, "cacheReadTokens": 1000, "cacheWriteTokens": 200}
OPENAI_COUNTS = {"inputTokens": 2000, "outputTokens": 100, "cacheReadTokens": 1500}
GEMINI_URL = "/v1beta/models/gemini-2.5-flash:generateContent"
GEMINI_REQUEST = {"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}
CHAT_STREAMED = {
    "model": "gpt-4o",
    "messages": USER,
    "stream": True,
    "stream_options": {"include_usage": True},
}
CANNED = [
    pytest.param("/v1/messages", CLAUDE, {**MESSAGE, "usage": ANTHROPIC_USAGE}, CLAUDE_COUNTS,
                 "claude-sonnet-4-5", "anthropic", id="anthropic-json"),
    pytest.param("/v1/messages", {**CLAUDE, "stream": True}, ANTHROPIC_STREAM, CLAUDE_COUNTS,
                 "claude-sonnet-4-5", "anthropic", id="anthropic-sse"),
    pytest.param("/v1/chat/completions", {"model": "gpt-4o", "messages": USER}, {**CHAT, "usage": CHAT_USAGE},
                 OPENAI_COUNTS, "gpt-4o", "openai", id="chat-json"),
    pytest.param("/v1/chat/completions", CHAT_STREAMED, CHAT_STREAM, OPENAI_COUNTS, "gpt-4o", "openai",
                 id="chat-sse"),
    pytest.param("/v1/responses", {"model": "o4-mini", "input": USER}, {**RESPONSE, "usage": RESPONSES_USAGE},
                 {**OPENAI_COUNTS, "outputTokens": 300}, "o4-mini", "openai", id="responses-json"),
    pytest.param(GEMINI_URL, GEMINI_REQUEST, {**GEMINI_ANSWER, "usageMetadata": GEMINI_USAGE},
                 {**OPENAI_COUNTS, "outputTokens": 350}, "gemini-2.5-flash", "google", id="gemini-json"),
]  # fmt: skip


@pytest.mark.parametrize(("path", "request_body", "response", "usage", "model", "provider"), CANNED)
def test_cached_and_reasoning_tokens_are_counted_as_the_price_data_counts_them(
    tmp_path: Path,
    path: str,
    request_body: dict[str, Any],
    response: Any,
    usage: dict[str, int],
    model: str,
    provider: str,
) -> None:
    """Input includes the cached tokens (Anthropic's input_tokens does not: they are added), output
    the reasoning (Gemini's candidatesTokenCount does not: the thoughts are added), and the cassette's
    cost is genai-prices' own calc_price of those tokens."""
    cassette_path = tmp_path / "run.json"
    with CannedProvider([response]) as canned, otel_blackbox.session(mode="record", cassette=cassette_path):
        answered = httpx.post(canned.url + path, json=request_body, timeout=10)
        assert answered.status_code == 200
    (output,) = outputs(cassette_path)
    assert output["tokenUsage"] == usage
    assert output["text"] == "Hi"
    cassette = load_cassette(cassette_path)
    assert verify_cassette(cassette).passed
    expected = calc_price(
        Usage(
            input_tokens=usage["inputTokens"],
            output_tokens=usage["outputTokens"],
            cache_read_tokens=usage.get("cacheReadTokens"),
            cache_write_tokens=usage.get("cacheWriteTokens"),
        ),
        model,
        provider_id=provider,
    ).total_price
    assert cassette_cost(cassette).usd == expected > 0


# --- not behaviour: never served back, never a divergence ----------------------------------------------


REQUESTS: list[tuple[Provider, dict[str, Any]]] = [
    (OpenAIChat(), {"model": "gpt-4o", "messages": USER}),
    (OpenAIChat(), CHAT_STREAMED),
    (OpenAIResponses(), {"model": "o4-mini", "input": USER}),
    (OpenAIResponses(), {"model": "o4-mini", "input": USER, "stream": True}),
    (AnthropicMessages(), {"model": "claude-sonnet-4-5", "messages": USER}),
    (AnthropicMessages(), {"model": "claude-sonnet-4-5", "messages": USER, "stream": True}),
    (GeminiGenerateContent("http://g/v1beta/models/gemini-2.5-flash:generateContent"), {"contents": []}),
    (GeminiGenerateContent("http://g/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"), {}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("provider", "request_body"), REQUESTS, ids=[f"{p.name}-{n}" for n, (p, _) in enumerate(REQUESTS)]
)
def test_a_replay_serves_the_same_bytes_with_or_without_the_counts(
    provider: Provider, request_body: dict[str, Any]
) -> None:
    """Ids are derived from the output: the counts must not change them, nor be sent (zero usage)."""
    output = {"type": "final_answer", "text": "Hi", "tokenUsage": {"inputTokens": 2000, "outputTokens": 100}}
    served = provider.wire_response(output, request_body)
    assert served.body == provider.wire_response(without_usage(output), request_body).body
    assert b"2000" not in served.body
    read_back = provider.model_output(served.body, streamed=provider.is_streaming(request_body), ids=_ids())
    assert read_back == {"type": "final_answer", "text": "Hi"}
    assert provider.usage(served.body, streamed=provider.is_streaming(request_body)) is None  # 0 and 0: none


def _ids() -> Any:
    from otel_blackbox._wire.call_ids import CallIds

    return CallIds()


def test_the_sdk_replaying_a_recording_sees_zero_usage(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    with otel_blackbox.session(mode="record", cassette=path):
        chat_call(fake_llm, stream=False)
    assert outputs(path)[0]["tokenUsage"]["inputTokens"] > 0
    sent = len(fake_llm.requests)
    with (
        otel_blackbox.session(mode="replay", cassette=path),
        openai.OpenAI(base_url=fake_llm.openai_base_url, api_key=KEYS["openai"], max_retries=0) as client,
    ):
        completion = client.chat.completions.create(model="gpt-4o-mini", messages=CHAT_USER)
    assert len(fake_llm.requests) == sent
    assert completion.usage is not None and completion.usage.prompt_tokens == 0


def rewritten(cassette: Cassette, cassette_id: str, change: Callable[[dict[str, Any]], Any]) -> Cassette:
    """A copy of ``cassette`` whose model_outputs went through ``change``, hashed again."""
    copy = Cassette(cassette_id, cassette.created_at, api=cassette.api)
    for step in cassette.steps:
        payload = change(dict(step.payload)) if step.type == "model_output" else step.payload
        copy.append(step.type, payload, step.timestamp)
    return copy


def test_diff_prices_both_sides_and_ignores_the_counts_when_it_compares(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    parent_path, child_path = tmp_path / "parent.json", tmp_path / "child.json"
    with otel_blackbox.session(mode="record", cassette=parent_path):
        chat_call(fake_llm, stream=False)
    parent = load_cassette(parent_path)

    def doubled(output: dict[str, Any]) -> dict[str, Any]:
        usage = output["tokenUsage"]
        return {**output, "tokenUsage": {k: 2 * v for k, v in usage.items()}}

    child = rewritten(parent, "child", doubled)
    save_cassette(child, child_path)
    same = run_cli("diff", "--semantic", str(parent_path), str(child_path))
    assert same.returncode == 0, same.stdout  # the same answer at other counts: no divergence
    assert f"no divergence: all {len(parent.steps)} steps are equal" in same.stdout
    parent_cost, child_cost = cassette_cost(parent), cassette_cost(child)
    assert parent_cost.usd is not None and child_cost.usd == 2 * parent_cost.usd
    assert f"cost: parent {parent_cost.describe()}, child {child_cost.describe()}" in same.stdout.splitlines()
    data = json.loads(run_cli("diff", "--semantic", "--json", str(parent_path), str(child_path)).stdout)
    assert data["cost_usd"] == {"parent": float(parent_cost.usd), "child": float(child_cost.usd)}
    assert data["index"] is None

    # What the model said still diverges, at its path, not at the counts.
    changed = rewritten(parent, "changed", lambda o: {**doubled(o), "text": "Something else"})
    save_cassette(changed, tmp_path / "changed.json")
    differs = run_cli("diff", "--semantic", str(parent_path), str(tmp_path / "changed.json"))
    assert differs.returncode == 1 and "differs at: $.payload.text" in differs.stdout

    unpriced = rewritten(parent, "bare", lambda o: without_usage(o))
    save_cassette(unpriced, tmp_path / "bare.json")
    bare = json.loads(run_cli("diff", "--json", str(parent_path), str(tmp_path / "bare.json")).stdout)
    assert bare["cost_usd"] == {"parent": float(parent_cost.usd), "child": None}  # no counts: no cost, not $0

    shown = run_cli("inspect", str(child_path), check=True).stdout.splitlines()
    assert shown[1:4] == [
        "recorded on: openai-chat (not streamed)",
        f"cost: {child_cost.describe()}",
        shown[3],
    ]
    assert shown[3].startswith("#0")  # in the header, before the steps


@pytest.mark.parametrize(
    "usage",
    ["12", {"inputTokens": -1}, {"inputTokens": 1.5}, {"outputTokens": True}, {"inputTokens": "12"}],
    ids=["string", "negative", "float", "bool", "string-count"],
)
def test_a_malformed_token_count_makes_the_cassette_unfit_to_replay(
    fake_llm: FakeLLMServer, tmp_path: Path, usage: Any
) -> None:
    good = tmp_path / "good.json"
    with otel_blackbox.session(mode="record", cassette=good):
        chat_call(fake_llm, stream=False)
    bad = tmp_path / "bad.json"
    save_cassette(rewritten(load_cassette(good), "bad", lambda o: {**o, "tokenUsage": usage}), bad)
    replayed = run_cli("replay", str(bad), "--", "python", "-c", "pass")
    assert replayed.returncode == 2
    lines = replayed.stderr.splitlines()
    assert len(lines) == 1 and "step 1 (model_output)" in lines[0] and "tokenUsage" in lines[0], lines
    assert "Traceback" not in replayed.stderr


# --- built from spans --------------------------------------------------------------------------------


@pytest.fixture
def openai_recorder(recorder: Recorder) -> Iterator[Recorder]:
    OpenAIInstrumentor().instrument(tracer_provider=recorder.provider)
    yield recorder
    OpenAIInstrumentor().uninstrument()


def test_a_cassette_from_spans_keeps_each_llm_spans_token_counts(
    openai_recorder: Recorder, fake_llm: FakeLLMServer
) -> None:
    with openai_recorder.tracer.start_as_current_span("agent") as root:
        prompt, completion = chat_call(fake_llm, stream=False)
        trace_id = format(root.get_span_context().trace_id, "032x")
    openai_recorder.flush()
    conn = connect_reader(openai_recorder.db_path)
    try:
        spans = trace_spans(conn, trace_id)
    finally:
        conn.close()
    cassette = cassette_from_spans(spans)
    (output,) = [s.payload for s in cassette.steps if s.type == "model_output"]
    assert output["tokenUsage"] == {"inputTokens": prompt, "outputTokens": completion}
    assert verify_cassette(cassette).passed
    assert (
        cassette_cost(cassette).usd
        == calc_price(
            Usage(input_tokens=prompt, output_tokens=completion), "gpt-4o-mini", provider_id="openai"
        ).total_price
    )


def test_a_cassette_from_spans_keeps_the_cached_and_reasoning_details(recorder: Recorder) -> None:
    """OpenInference's cache details, and a Gemini-style completion count that leaves the reasoning out
    (the total says so)."""
    attributes: dict[str, str | int] = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "gemini-2.5-flash",
        "llm.provider": "google",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "Hi",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": "Hello",
        "llm.token_count.prompt": 2000,
        "llm.token_count.completion": 100,
        "llm.token_count.total": 2350,
        "llm.token_count.prompt_details.cache_read": 1500,
        "llm.token_count.completion_details.reasoning": 250,
    }
    with recorder.tracer.start_as_current_span("generate", attributes=attributes) as span:
        trace_id = format(span.get_span_context().trace_id, "032x")
    recorder.flush()
    conn = connect_reader(recorder.db_path)
    try:
        cassette = cassette_from_spans(trace_spans(conn, trace_id))
    finally:
        conn.close()
    (output,) = [s.payload for s in cassette.steps if s.type == "model_output"]
    assert output == {
        "type": "final_answer",
        "text": "Hello",
        "tokenUsage": {"inputTokens": 2000, "outputTokens": 350, "cacheReadTokens": 1500},
    }
    assert verify_cassette(cassette).passed
    assert cassette_cost(cassette).usd == Decimal(
        calc_price(
            Usage(input_tokens=2000, output_tokens=350, cache_read_tokens=1500),
            "gemini-2.5-flash",
            provider_id="google",
        ).total_price
    )


def test_a_cassette_from_a_production_run_with_http_capture_has_the_wire_counts(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    """The processor alone, HTTP capture on (tests/programs/rerun_agent.py --db): each captured model call's
    output carries the response's counts, so the incident built from the run has a cost."""
    db, incident = tmp_path / "prod.db", tmp_path / "incident.json"
    with LoopbackAPI(lambda method, path, body: (200, {"order_id": 42, "status": "shipped"})) as orders:
        agent = [sys.executable, str(PROGRAMS / "rerun_agent.py"), "--base-url",
                 fake_llm.openai_base_url, "--tool-url", orders.url, "--model", "gpt-4o-mini",
                 "--db", str(db)]  # fmt: skip
        ran = subprocess.run(agent, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    (run,) = json.loads(run_cli("runs", "--json", db=db, check=True).stdout)
    run_cli("cassette", "--run", run["run_id"], "-o", str(incident), db=db, check=True)
    counts = [o.get("tokenUsage") for o in outputs(incident)]
    assert len(counts) == 2 and all(c and c["inputTokens"] > 0 and c["outputTokens"] > 0 for c in counts)
    cost = cassette_cost(load_cassette(incident))
    assert cost.usd is not None and not cost.unpriced
    assert f"cost: {cost.describe()}" in run_cli("inspect", str(incident), check=True).stdout.splitlines()
