"""A script of neutral model outputs that answers a run's model calls instead of a live model.

``fork --script`` and ``rerun --script`` take one: each model call gets the next output, and is
recorded in the child as the live answer would have been.
"""

from __future__ import annotations

from typing import Any

from otel_blackbox._cassette.output import check_output
from otel_blackbox._playback.http.exchange import HttpResponse
from otel_blackbox._playback.interceptor import Diverged
from otel_blackbox._playback.record import Recorder
from otel_blackbox._wire.protocol import Provider
from otel_blackbox.errors import SessionError

__all__ = ["check_replies", "scripted_reply"]


def check_replies(replies: list[Any]) -> list[dict[str, Any]]:
    """A script of neutral model outputs, as given; SessionError naming the first that is not one."""
    for position, reply in enumerate(replies):
        kind = reply.get("type") if isinstance(reply, dict) else None
        if kind not in ("final_answer", "tool_calls", "tool_call"):
            raise SessionError(
                f"reply {position} of the script is not a model output "
                '({"type": "final_answer", "text": ...} or {"type": "tool_calls", "calls": [...]})'
            )
        try:
            check_output(reply)
        except ValueError as exc:
            raise SessionError(f"reply {position} of the script: {exc}") from None
    return replies


def scripted_reply(
    recorder: Recorder, replies: list[dict[str, Any]], provider: Provider, body: dict[str, Any]
) -> HttpResponse:
    """The script's next output for this model call, recorded; Diverged when the script has none left."""
    model_input = provider.model_input(body, recorder.ids)
    if not replies:
        raise Diverged("the script has no reply left for this model call")
    output = replies.pop(0)
    recorder.record_model(model_input, output)
    recorder.ids.learn(output)  # its calls, for a program that sends them back without ids
    wire = provider.wire_response(output, body)
    return HttpResponse(wire.status, wire.headers, wire.body)
