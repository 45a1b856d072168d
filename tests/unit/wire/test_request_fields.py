"""Every request field that can change what the model does is compared; transport-only fields are not.

Generated from each translation's own field table (``REQUEST_FIELDS``), plus a field no table knows:
for OpenAI Chat Completions, OpenAI Responses and Anthropic Messages, JSON and SSE, a run is
recorded through the real SDK with every field of the table set (``extra_body``, as a program or a
framework sends a setting the SDK has no argument for), then replayed offline with one field
changed. A behaviour field (neutral name, own name, a nested object's keys, the unknown one)
diverges naming its path and both values; a transport-only field replays.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from fake_llm import FakeLLMServer
from helpers import blocked_network

import otel_blackbox
from otel_blackbox._wire.anthropic.fields import ANTHROPIC_FIELDS
from otel_blackbox._wire.openai_chat.fields import CHAT_FIELDS
from otel_blackbox._wire.openai_responses.fields import RESPONSES_FIELDS
from otel_blackbox._wire.request_fields import RequestFields
from otel_blackbox.errors import ReplayDivergence

KEY = "sk-fake-fields-0123456789"
ANTHROPIC_KEY = "sk-ant-fake-fields-0123456789"
UNKNOWN = "blackbox_unknown_setting"  # a field no translation knows: compared under its own name
# `stream` chooses the wire (JSON or SSE) itself: tests/integration/test_fidelity_matrix.py and the
# cases below record one and replay the other.
NOT_SET = ("stream",)
# `stream_options` goes with a stream only.
SSE_ONLY = ("stream_options",)

Send = Callable[[str, bool, dict[str, Any]], Any]


def recorded_value(name: str) -> Any:
    return {"blackbox": f"recorded {name}"}


def changed_value(name: str) -> Any:
    return {"blackbox": f"changed {name}"}


def _chat(base_url: str, stream: bool, extra: dict[str, Any]) -> Any:
    with openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0) as client:
        kwargs: dict[str, Any] = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]}
        if not stream:
            return client.chat.completions.create(**kwargs, extra_body=extra).choices[0].message.content
        chunks = client.chat.completions.create(**kwargs, stream=True, extra_body=extra)
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


def _responses(base_url: str, stream: bool, extra: dict[str, Any]) -> Any:
    with openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0) as client:
        if not stream:
            return client.responses.create(model="gpt-4o-mini", input="Hi", extra_body=extra).output_text
        events = client.responses.create(model="gpt-4o-mini", input="Hi", stream=True, extra_body=extra)
        return "".join(e.delta for e in events if e.type == "response.output_text.delta")


def _anthropic(base_url: str, stream: bool, extra: dict[str, Any]) -> Any:
    with anthropic.Anthropic(base_url=base_url, api_key=ANTHROPIC_KEY, max_retries=0) as client:
        kwargs: dict[str, Any] = {
            "model": "claude-haiku-4-5",
            "max_tokens": 64,
            "messages": [{"role": "user", "content": "Hi"}],
        }
        if not stream:
            blocks = client.messages.create(**kwargs, extra_body=extra).content
            return "".join(getattr(b, "text", "") for b in blocks)  # a tool use has none
        events = client.messages.create(**kwargs, stream=True, extra_body=extra)
        return "".join(getattr(e.delta, "text", "") for e in events if e.type == "content_block_delta")


PROVIDERS: dict[str, tuple[RequestFields, Send, Callable[[FakeLLMServer], str]]] = {
    "chat": (CHAT_FIELDS, _chat, lambda fake: fake.openai_base_url),
    "responses": (RESPONSES_FIELDS, _responses, lambda fake: fake.openai_base_url),
    "anthropic": (ANTHROPIC_FIELDS, _anthropic, lambda fake: fake.anthropic_base_url),
}
WIRES = ("json", "sse")


def _first_of_each_neutral(table: RequestFields) -> dict[str, str]:
    """One wire field per neutral name (Chat's max_tokens and max_completion_tokens are both maxTokens)."""
    first: dict[str, str] = {}
    for field, neutral in table.neutral.items():
        first.setdefault(neutral, field)
    return first


Case = tuple[str, dict[str, Any], tuple[str, ...], str]


def behaviour_cases(table: RequestFields) -> list[Case]:
    """(what changes, the fields set as changed, the fields no longer sent, the path the divergence names)."""
    first = _first_of_each_neutral(table)
    cases: list[Case] = []
    for field, neutral in table.neutral.items():
        # A second wire name of the same setting replaces the first one, with another value.
        dropped = (first[neutral],) if first[neutral] != field else ()
        cases.append((field, {field: changed_value(field)}, dropped, f"$.params.{neutral}"))
    cases += [(name, {name: changed_value(name)}, (), f"$.params.{name}") for name in table.behaviour]
    for name, (inner, neutral) in table.nested.items():
        changed_inner = {name: {inner: changed_value(name), "other": "recorded"}}
        changed_other = {name: {inner: recorded_value(name), "other": "changed"}}
        cases.append((f"{name}.{inner}", changed_inner, (), f"$.params.{neutral}"))
        cases.append((f"{name}.other", changed_other, (), f"$.params.{name}.other"))
    cases.append((UNKNOWN, {UNKNOWN: changed_value(UNKNOWN)}, (), f"$.params.{UNKNOWN}"))
    return cases


def all_fields(table: RequestFields, wire: str) -> dict[str, Any]:
    """Every field of the table (and the unknown one) set to its recorded value."""
    names = (*_first_of_each_neutral(table).values(), *table.behaviour, UNKNOWN)
    fields: dict[str, Any] = {name: recorded_value(name) for name in names}
    fields.update(
        {
            name: {inner: recorded_value(name), "other": "recorded"}
            for name, (inner, _) in table.nested.items()
        }
    )
    fields.update({name: recorded_value(name) for name in table.transport if name not in NOT_SET})
    if wire == "json":
        for name in SSE_ONLY:
            fields.pop(name, None)
    return fields


def _cases(kind: str) -> list[Any]:
    params = []
    for provider, (table, _, _) in PROVIDERS.items():
        for wire in WIRES:
            if kind == "behaviour":
                params += [
                    pytest.param(provider, wire, *case, id=f"{provider}-{wire}-{case[0]}")
                    for case in behaviour_cases(table)
                ]
            else:
                names = [
                    n for n in table.transport if n not in NOT_SET and (wire == "sse" or n not in SSE_ONLY)
                ]
                params += [
                    pytest.param(provider, wire, name, id=f"{provider}-{wire}-{name}") for name in names
                ]
    return params


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], tuple[Path, str, Any]]:
    """One recording per provider and wire, every field set: (cassette, base URL, answer)."""
    made = {}
    folder = tmp_path_factory.mktemp("fields")
    with FakeLLMServer() as fake:
        for provider, (table, send, base_url) in PROVIDERS.items():
            for wire in WIRES:
                path = folder / f"{provider}-{wire}.json"
                with otel_blackbox.session(mode="record", cassette=path):
                    answer = send(base_url(fake), wire == "sse", all_fields(table, wire))
                made[(provider, wire)] = (path, base_url(fake), answer)
    return made


def _replay(recording: tuple[Path, str, Any], provider: str, wire: str, fields: dict[str, Any]) -> Any:
    path, base_url, _ = recording
    with blocked_network() as attempts, otel_blackbox.session(mode="replay", cassette=path):
        answer = PROVIDERS[provider][1](base_url, wire == "sse", fields)
    assert attempts == []
    return answer


@pytest.mark.parametrize(("provider", "wire"), [(p, w) for p in PROVIDERS for w in WIRES])
def test_the_same_fields_replay_and_every_one_is_in_the_recording(
    recordings: dict[tuple[str, str], tuple[Path, str, Any]], provider: str, wire: str
) -> None:
    table = PROVIDERS[provider][0]
    recording = recordings[(provider, wire)]
    assert _replay(recording, provider, wire, all_fields(table, wire)) == recording[2]
    model_input = json.loads(recording[0].read_text())["steps"][0]["payload"]
    kept = {k for k in model_input["params"]}
    assert kept == {
        *table.neutral.values(),
        *table.behaviour,
        *table.nested,
        *(n for _, n in table.nested.values()),
        UNKNOWN,
    }
    assert not kept & set(table.transport)  # transport-only fields are not in the payload at all


@pytest.mark.parametrize(("provider", "wire", "changed", "fields", "dropped", "path"), _cases("behaviour"))
def test_a_changed_behaviour_field_diverges_naming_both_values(
    recordings: dict[tuple[str, str], tuple[Path, str, Any]],
    provider: str,
    wire: str,
    changed: str,
    fields: dict[str, Any],
    dropped: tuple[str, ...],
    path: str,
) -> None:
    table = PROVIDERS[provider][0]
    sent = {**{k: v for k, v in all_fields(table, wire).items() if k not in dropped}, **fields}
    with pytest.raises(ReplayDivergence) as diverged:
        _replay(recordings[(provider, wire)], provider, wire, sent)
    message = str(diverged.value)
    assert f"step 0 (model_input) differs at {path}" in message, message
    assert "recorded " in message and "changed" in message


@pytest.mark.parametrize(("provider", "wire", "name"), _cases("transport"))
def test_a_changed_transport_field_replays(
    recordings: dict[tuple[str, str], tuple[Path, str, Any]], provider: str, wire: str, name: str
) -> None:
    table = PROVIDERS[provider][0]
    recording = recordings[(provider, wire)]
    assert (
        _replay(recording, provider, wire, {**all_fields(table, wire), name: changed_value(name)})
        == recording[2]
    )
    # and sent not at all
    without = {k: v for k, v in all_fields(table, wire).items() if k != name}
    assert _replay(recording, provider, wire, without) == recording[2]


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_every_transport_field_has_a_reason(provider: str) -> None:
    table = PROVIDERS[provider][0]
    assert table.transport and all(isinstance(r, str) and len(r) > 10 for r in table.transport.values())
    # No field is in two places of the table.
    groups = [
        set(table.read),
        set(table.neutral),
        set(table.transport),
        set(table.behaviour),
        set(table.nested),
    ]
    assert sum(len(g) for g in groups) == len(set().union(*groups))


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_a_recording_replays_in_the_other_wire(tmp_path: Path, provider: str) -> None:
    """``stream`` is transport: a run recorded as JSON replays streamed, and the other way round."""
    _, send, base_url = PROVIDERS[provider]
    for recorded_wire, replayed_wire in (("json", "sse"), ("sse", "json")):
        path = tmp_path / f"{recorded_wire}.json"
        with FakeLLMServer() as fake:
            url = base_url(fake)
            with otel_blackbox.session(mode="record", cassette=path):
                answer = send(url, recorded_wire == "sse", {})
        assert _replay((path, url, answer), provider, replayed_wire, {}) == answer


WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
# A tool definition's own settings (strict here), in each API's shape.
TOOLS_WITH: dict[str, Callable[[Any], list[dict[str, Any]]]] = {
    "chat": lambda strict: [
        {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER, "strict": strict}}
    ],
    "responses": lambda strict: [
        {"type": "function", "name": "get_weather", "parameters": WEATHER, "strict": strict}
    ],
    "anthropic": lambda strict: [{"name": "get_weather", "input_schema": WEATHER, "strict": strict}],
}


@pytest.mark.parametrize(("provider", "wire"), [(p, w) for p in PROVIDERS for w in WIRES])
def test_a_changed_tool_setting_diverges_and_a_cache_marker_does_not(
    tmp_path: Path, provider: str, wire: str
) -> None:
    """A tool's settings (strict, a server tool's limits...) change what the model does with it."""
    _, send, base_url = PROVIDERS[provider]
    path = tmp_path / "tools.json"
    with FakeLLMServer() as fake:
        url = base_url(fake)
        with otel_blackbox.session(mode="record", cassette=path):
            answer = send(url, wire == "sse", {"tools": TOOLS_WITH[provider](True)})
    assert _replay((path, url, answer), provider, wire, {"tools": TOOLS_WITH[provider](True)}) == answer
    if provider == "anthropic":  # a prompt-cache marker on a tool is transport
        cached = [{**TOOLS_WITH[provider](True)[0], "cache_control": {"type": "ephemeral"}}]
        assert _replay((path, url, answer), provider, wire, {"tools": cached}) == answer
    with pytest.raises(ReplayDivergence) as diverged:
        _replay((path, url, answer), provider, wire, {"tools": TOOLS_WITH[provider](False)})
    assert "step 0 (model_input) differs at $.tools[0].settings.strict: recorded true, got false" in str(
        diverged.value
    )
