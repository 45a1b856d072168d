"""The Anthropic SDK's own spans (anthropic 2.x, scope ``com.anthropic.sdk.python``): one CLIENT span
per API call (``anthropic.messages.create``, ``gen_ai.operation.name`` chat), with the model, token
counts (``gen_ai.usage.*``, read by the GenAI reader) and ``anthropic.message.stop_reason``, and never
the conversation, whatever its content mode (that mode only covers URL query values).

Under an instrumentor's span of the same call (openinference-instrumentation-anthropic), it is that
call again (``_spans.view.trace`` counts it once, the instrumentor's span holding the content); alone,
it says how to record the messages.
"""

from __future__ import annotations

from otel_blackbox._spans.view.model import Reading
from otel_blackbox._store.queries import SpanRecord

__all__ = ["NAME", "SCOPE", "SUMMARY_KEYS", "read"]

NAME = "anthropic_sdk"
SCOPE = "com.anthropic.sdk.python"
SUMMARY_KEYS: tuple[str, ...] = ()
_STOP_REASON = "anthropic.message.stop_reason"
NO_CONTENT = (
    "the Anthropic SDK's own spans hold no messages: add openinference-instrumentation-anthropic "
    "(or OTEL_BLACKBOX_CAPTURE_HTTP=1) to record them"
)


def read(span: SpanRecord) -> Reading | None:
    if span.scope.get("name") != SCOPE:
        return None
    stop = span.attributes.get(_STOP_REASON)
    call = span.attributes.get("gen_ai.operation.name") == "chat"
    return Reading(
        provider="anthropic",
        finish_reasons=[str(stop)] if stop is not None else [],
        no_content=NO_CONTENT if call else None,
    )
