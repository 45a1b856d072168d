"""The built-in agent's request memo (``_wire/memo.py``): each turn's body is the one
``wire_request`` builds from scratch, byte for byte, on the four APIs, natively and not; a turn writes
only its new messages; a history that is not the last one extended starts over; the memo holds one
conversation."""

from __future__ import annotations

import json
from typing import Any

import pytest

from otel_blackbox._wire import memo as memo_module
from otel_blackbox._wire.memo import RequestMemo
from otel_blackbox._wire.protocol import Provider
from otel_blackbox._wire.registry import PROVIDERS

ROUNDS = 80
_BY_NAME = {p.name: p for p in PROVIDERS}


def _output(r: int) -> str:
    return "".join(chr(97 + (r * 7 + i) % 26) for i in range(2048))  # a 2 KB tool output


def conversation(rounds: int, *, images: bool = True) -> list[dict[str, Any]]:
    """A coding agent's history: text, tool uses (two in a row sometimes), results, a refusal, an image,
    an error, and two user turns in a row (Anthropic merges them when not native)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]
    for r in range(rounds):
        call = f"call-{r}"
        uses = [
            {
                "type": "tool_use",
                "toolCallId": call,
                "toolName": "read_file",
                "toolInput": {"path": f"f{r}.py"},
            }
        ]
        if r % 5 == 0:
            uses.append(
                {"type": "tool_use", "toolCallId": f"{call}b", "toolName": "grep", "toolInput": {"q": r}}
            )
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"Step {r}"}, *uses]})
        results: list[dict[str, Any]] = [
            {"type": "tool_result", "toolCallId": call, "toolName": "read_file", "result": _output(r)}
        ]
        if r % 5 == 0:
            results.append(
                {"type": "tool_result", "toolCallId": f"{call}b", "toolName": "grep", "error": "no match"}
            )
        messages.append({"role": "user", "content": results})
        if r % 17 == 3:
            messages.append({"role": "user", "content": [{"type": "text", "text": "Also check the docs."}]})
        if r % 23 == 4:
            messages.append({"role": "assistant", "content": [{"type": "refusal", "refusal": "No."}]})
            if images:  # a neutral image part, which Gemini's native contents have no way to say
                messages.append(
                    {"role": "user", "content": [{"type": "image", "url": "https://x.test/a.png"}]}
                )
    messages.append({"role": "assistant", "content": "Done."})
    return messages


SETTINGS: dict[str, Any] = {
    "model": "m-1",
    "systemPrompt": "You are a coding agent.",
    "tools": [{"name": "read_file", "description": "Read", "inputSchema": {"type": "object"}}],
    "params": {"temperature": 0.2, "maxTokens": 512, "seed": 7},
}


def _outcome(write: Any, *args: Any, **kwargs: Any) -> Any:
    """The body and the dropped phrases, as JSON text, or the error's message (a history this API
    cannot say natively, such as Gemini given an image URL)."""
    try:
        wire = write(*args, **kwargs)
    except ValueError as exc:
        return str(exc)
    return json.dumps(wire.body, ensure_ascii=False), wire.dropped


def _same(a: Any, b: Any) -> bool:
    return (
        json.dumps(a.body, ensure_ascii=False) == json.dumps(b.body, ensure_ascii=False)
        and a.dropped == b.dropped
    )


@pytest.mark.parametrize("native", [True, False], ids=["native", "other-api"])
@pytest.mark.parametrize("api", [p.name for p in PROVIDERS])
def test_each_turn_is_the_uncached_request_byte_for_byte(api: str, native: bool) -> None:
    provider = _BY_NAME[api]
    memo, history = RequestMemo(provider, native=native), []
    for n, message in enumerate(conversation(ROUNDS, images=not (api == "gemini" and native))):
        history.append(message)  # the agent loop's own list, only appended to
        model_input = {**SETTINGS, "messages": history}
        stream = n % 2 == 0
        cached = _outcome(memo.wire_request, model_input, stream=stream)
        assert cached == _outcome(provider.wire_request, model_input, stream=stream, native=native), (api, n)


@pytest.mark.parametrize("api", [p.name for p in PROVIDERS])
def test_a_turn_writes_only_its_new_messages(api: str, monkeypatch: pytest.MonkeyPatch) -> None:
    provider, written = _BY_NAME[api], [0]
    new_writer, request = memo_module._WRITERS[api]

    def counting(native: bool) -> Any:
        writer = new_writer(native)
        extended = writer.extended

        def counted(messages: Any) -> Any:
            written[0] += len(messages)
            return extended(messages)

        writer.extended = counted  # type: ignore[method-assign]
        return writer

    monkeypatch.setitem(memo_module._WRITERS, api, (counting, request))
    memo, history = RequestMemo(provider, native=True), []
    messages = conversation(40, images=api != "gemini")
    for message in messages:
        history.append(message)
        memo.wire_request({**SETTINGS, "messages": history}, stream=False)
    assert written[0] == len(messages)


def test_a_history_not_extended_starts_over_and_the_memo_holds_one_conversation() -> None:
    provider = _BY_NAME["openai-chat"]
    memo, messages = RequestMemo(provider, native=True), conversation(30)
    memo.wire_request({**SETTINGS, "messages": list(messages)}, stream=False)
    rewritten = [dict(m) for m in messages[:10]]  # equal messages, other objects: written again
    rewritten[3] = {"role": "user", "content": "changed"}
    wire = memo.wire_request({**SETTINGS, "messages": rewritten}, stream=False)
    assert _same(wire, provider.wire_request({**SETTINGS, "messages": rewritten}, stream=False, native=True))
    assert memo._count == 10 and memo._list is rewritten  # nothing of the first conversation is held
    flipped = [
        *rewritten,
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "toolCallId": "c", "toolName": "t", "toolInput": True}],
        },
    ]
    again = [*rewritten[:-1], {**rewritten[-1]}, flipped[-1]]  # an equal last message, another object
    assert _same(
        memo.wire_request({**SETTINGS, "messages": again}, stream=False),
        provider.wire_request({**SETTINGS, "messages": again}, stream=False, native=True),
    )


def test_an_error_is_the_translations_own_and_the_memo_goes_on() -> None:
    provider: Provider = _BY_NAME["anthropic"]
    memo = RequestMemo(provider, native=True)
    with pytest.raises(ValueError, match="Anthropic"):
        memo.wire_request({**SETTINGS, "messages": [{"content": "no role"}]}, stream=False)
    history = conversation(3)
    wire = memo.wire_request({**SETTINGS, "messages": history}, stream=False)
    assert _same(wire, provider.wire_request({**SETTINGS, "messages": history}, stream=False, native=True))
