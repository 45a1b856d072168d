"""What a ``model_output`` may hold besides its text and calls, read and checked in one place.

Each field is absent when it says nothing new (a normal end, no refusal, no reasoning...), so a run
that uses none of them hashes as before:

* ``stopReason``: why the model stopped, when it was not the normal end or tool use. The neutral
  names are ``max_tokens``, ``content_filter``, ``refusal`` and ``stop_sequence``; any other reason
  keeps the provider's own value (``pause_turn``, ``RECITATION``...). ``stopSequence``: the sequence
  that matched, where the API says so (Anthropic).
* ``refusal``: the model's refusal text (OpenAI's ``refusal``), apart from its ``text``.
* ``reasoning``: the model's reasoning items, in order, each ``{text?, summary?, signature?,
  encryptedContent?, redacted?}``: visible thinking, its summary texts, the signature or encrypted
  content the API needs back, and redacted thinking's opaque data.
* ``hostedTools``: tools the provider ran itself (web search, file search, code execution), each
  ``{toolName, toolInput?, result?, status?, resultType?}``, in order. Their ids are not kept: no
  program answers them, and a replay makes its own.
* ``choices``: with ``n`` > 1 (Gemini's ``candidateCount``), every choice after the first, each a
  whole ``model_output`` of its own; the payload itself is the first.
* ``textSignature``, and ``signature`` on a call: the signature the API attached to that part
  (Gemini's ``thoughtSignature``).
* ``sequence`` and ``textParts``: the order the parts came in, when it is not the canonical one
  (reasoning, hosted tools, text, calls) or the text came in several pieces: ``sequence`` names each
  part's kind in wire order (``reasoning``, ``hosted``, ``text``, ``call``), each taking the next of
  its kind; ``textParts`` holds the text's pieces, whose join is ``text``. A replay hands the parts
  back in that order (Anthropic's text, web search, text; Gemini's text, code, result, text).
* ``tokenUsage``: the call's token counts (usage.py), which are not behaviour: no replay serves them.

``check_output`` names the first field that is not of its documented shape, so a replay refuses a
malformed cassette with one error naming the step, before it answers anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from otel_blackbox._cost.usage import check_usage
from otel_blackbox._types import JsonObject
from otel_blackbox.errors import CassetteError

if TYPE_CHECKING:
    from otel_blackbox._cassette.model import Cassette

__all__ = [
    "NEUTRAL_STOP_REASONS",
    "Extras",
    "Hosted",
    "Reasoning",
    "check_output",
    "check_outputs",
    "extras_of",
    "neutral_stop_reason",
    "ordered",
    "sequence_of",
    "with_extras",
]

NEUTRAL_STOP_REASONS = ("max_tokens", "content_filter", "refusal", "stop_sequence")

# Reasons as the GenAI conventions and the providers spell them: a normal end (not stored), and those
# with a neutral name. Any other reason is kept as it is spelt.
_NORMAL_ENDS = frozenset(
    {"stop", "end_turn", "tool_calls", "tool_call", "tool_use", "function_call", "STOP", "completed"}
)
_NEUTRAL_REASONS = {
    "length": "max_tokens",
    "max_tokens": "max_tokens",
    "max_output_tokens": "max_tokens",
    "MAX_TOKENS": "max_tokens",
    "content_filter": "content_filter",
    "SAFETY": "content_filter",
    "refusal": "refusal",
    "stop_sequence": "stop_sequence",
}
_EXTRA_KEYS = frozenset(
    {"stopReason", "stopSequence", "refusal", "reasoning", "hostedTools", "choices", "textSignature",
     "sequence", "textParts"}
)  # fmt: skip
PART_KINDS = ("reasoning", "hosted", "text", "call")
_REASONING_STRINGS = ("text", "signature", "encryptedContent", "redacted")
_HOSTED_STRINGS = ("status", "resultType")
_MISSING: Any = object()


@dataclass(frozen=True)
class Reasoning:
    """One reasoning item: thinking or redacted thinking, a Responses reasoning item, a Gemini thought."""

    text: str | None = None
    summary: list[str] | None = None
    signature: str | None = None
    encrypted_content: str | None = None
    redacted: str | None = None

    def to_json(self) -> JsonObject:
        item: JsonObject = {}
        for key, value in (
            ("text", self.text),
            ("summary", self.summary),
            ("signature", self.signature),
            ("encryptedContent", self.encrypted_content),
            ("redacted", self.redacted),
        ):
            if value is not None:
                item[key] = value
        return item


@dataclass(frozen=True)
class Hosted:
    """One call of a tool the provider ran itself, with what it returned."""

    tool_name: str
    tool_input: Any = _MISSING
    result: Any = _MISSING
    status: str | None = None
    result_type: str | None = None

    @property
    def has_input(self) -> bool:
        return self.tool_input is not _MISSING

    @property
    def has_result(self) -> bool:
        return self.result is not _MISSING

    def to_json(self) -> JsonObject:
        item: JsonObject = {"toolName": self.tool_name}
        if self.has_input:
            item["toolInput"] = self.tool_input
        if self.has_result:
            item["result"] = self.result
        if self.status is not None:
            item["status"] = self.status
        if self.result_type is not None:
            item["resultType"] = self.result_type
        return item


@dataclass
class Extras:
    """The optional fields of one model_output (see the module docstring), empty by default."""

    stop_reason: str | None = None
    stop_sequence: str | None = None
    refusal: str | None = None
    reasoning: list[Reasoning] = field(default_factory=list)
    hosted: list[Hosted] = field(default_factory=list)
    choices: list[JsonObject] = field(default_factory=list)
    text_signature: str | None = None
    sequence: list[str] | None = None
    text_parts: list[str] | None = None


def neutral_stop_reason(reason: str | None) -> str | None:
    """The ``stopReason`` for a reason as recorded (a span's finish reason): None for a normal end."""
    if not reason or reason in _NORMAL_ENDS:
        return None
    return _NEUTRAL_REASONS.get(reason, reason)


def with_extras(output: JsonObject, extras: Extras) -> JsonObject:
    """``output`` (a final_answer or tool_calls payload) with the extras that say something added."""
    if extras.stop_reason is not None:
        output["stopReason"] = extras.stop_reason
    if extras.stop_sequence is not None:
        output["stopSequence"] = extras.stop_sequence
    if extras.refusal is not None:
        output["refusal"] = extras.refusal
    if extras.reasoning:
        output["reasoning"] = [r.to_json() for r in extras.reasoning]
    if extras.hosted:
        output["hostedTools"] = [h.to_json() for h in extras.hosted]
    if extras.text_signature is not None:
        output["textSignature"] = extras.text_signature
    if extras.sequence is not None:
        output["sequence"] = list(extras.sequence)
    if extras.text_parts is not None:
        output["textParts"] = list(extras.text_parts)
    if extras.choices:
        output["choices"] = list(extras.choices)
    return output


def extras_of(output: Any) -> Extras:
    """The extras of a model_output; ValueError naming the first field of the wrong shape."""
    if not isinstance(output, dict) or _EXTRA_KEYS.isdisjoint(output):
        return Extras()  # the usual answer: nothing but text and calls
    return Extras(
        stop_reason=_string(output, "stopReason"),
        stop_sequence=_string(output, "stopSequence"),
        refusal=_string(output, "refusal"),
        reasoning=[_reasoning(item, f"reasoning[{n}]") for n, item in enumerate(_list(output, "reasoning"))],
        hosted=[_hosted(item, f"hostedTools[{n}]") for n, item in enumerate(_list(output, "hostedTools"))],
        choices=[_choice(item, f"choices[{n}]") for n, item in enumerate(_list(output, "choices"))],
        text_signature=_string(output, "textSignature"),
        **_order(output),
    )


def check_output(output: Any) -> None:
    """ValueError naming the first field of ``output`` that is not of its documented shape."""
    extras_of(output)
    check_usage(output)
    if isinstance(output, dict) and isinstance(output.get("calls"), list):
        for n, call in enumerate(output["calls"]):
            if isinstance(call, dict):
                _string(call, "signature", f"calls[{n}].")


def sequence_of(kinds: list[str], texts: list[str]) -> tuple[list[str] | None, list[str] | None]:
    """``sequence`` and ``textParts`` for parts that came in the order ``kinds`` (one of
    ``PART_KINDS`` each) with the text pieces ``texts``: (None, None) when that is the canonical order
    with at most one piece of text, so an ordinary answer carries neither."""
    if kinds == sorted(kinds, key=PART_KINDS.index) and kinds.count("text") <= 1:
        return None, None
    return list(kinds), (list(texts) if kinds.count("text") > 1 else None)


def ordered(output: JsonObject, extras: Extras, calls: list[Any]) -> list[tuple[str, Any]]:
    """The parts of ``output`` as (kind, value) in the order to send them: ``extras.sequence`` when the
    output has one, else the canonical order. A text part's value is its piece of the text."""
    text = output.get("text") if isinstance(output.get("text"), str) else ""
    texts = extras.text_parts if extras.text_parts is not None else ([text] if text else [])
    queues: dict[str, list[Any]] = {
        "reasoning": list(extras.reasoning),
        "hosted": list(extras.hosted),
        "text": list(texts),
        "call": list(calls),
    }
    if extras.sequence is None:
        return [(kind, value) for kind in PART_KINDS for value in queues[kind]]
    return [(kind, queues[kind].pop(0)) for kind in extras.sequence]


def check_outputs(cassette: Cassette, source: str) -> None:
    """CassetteError naming the first model_output step of ``cassette`` with a malformed field."""
    for step in cassette.steps_of("model_output"):
        try:
            check_output(step.payload)
        except ValueError as exc:
            raise CassetteError(f"{source}: step {step.index} (model_output): {exc}") from None


def _string(value: JsonObject, key: str, prefix: str = "") -> str | None:
    found = value.get(key)
    if found is None:
        return None
    if not isinstance(found, str):
        raise ValueError(f"field {prefix}{key!s} must be a string, not {type(found).__name__}")
    return found


def _list(value: JsonObject, key: str) -> list[Any]:
    found = value.get(key)
    if found is None:
        return []
    if not isinstance(found, list):
        raise ValueError(f"field {key} must be a list, not {type(found).__name__}")
    return found


def _object(item: Any, where: str) -> JsonObject:
    if not isinstance(item, dict):
        raise ValueError(f"field {where} must be an object, not {type(item).__name__}")
    return item


def _reasoning(item: Any, where: str) -> Reasoning:
    found = _object(item, where)
    strings = {key: _string(found, key, f"{where}.") for key in _REASONING_STRINGS}
    summary = found.get("summary")
    if summary is not None and not (isinstance(summary, list) and all(isinstance(s, str) for s in summary)):
        raise ValueError(f"field {where}.summary must be a list of strings")
    return Reasoning(
        text=strings["text"],
        summary=summary,
        signature=strings["signature"],
        encrypted_content=strings["encryptedContent"],
        redacted=strings["redacted"],
    )


def _hosted(item: Any, where: str) -> Hosted:
    found = _object(item, where)
    name = found.get("toolName")
    if not isinstance(name, str):
        raise ValueError(f"field {where}.toolName must be a string")
    strings = {key: _string(found, key, f"{where}.") for key in _HOSTED_STRINGS}
    return Hosted(
        tool_name=name,
        tool_input=found.get("toolInput", _MISSING),
        result=found.get("result", _MISSING),
        status=strings["status"],
        result_type=strings["resultType"],
    )


def _order(output: JsonObject) -> dict[str, Any]:
    """``sequence`` and ``textParts``, checked against the parts they order."""
    sequence, parts = output.get("sequence"), output.get("textParts")
    if sequence is None and parts is None:
        return {}
    if not (isinstance(sequence, list) and all(kind in PART_KINDS for kind in sequence)):
        raise ValueError(f"field sequence must be a list of {', '.join(PART_KINDS)}")
    if parts is not None and not (isinstance(parts, list) and all(isinstance(p, str) for p in parts)):
        raise ValueError("field textParts must be a list of strings")
    text = output.get("text") if isinstance(output.get("text"), str) else ""
    if parts is not None and "".join(parts) != text:
        raise ValueError("field textParts must join to the text")
    calls = output.get("calls") if output.get("type") == "tool_calls" else []
    calls = [output] if output.get("type") == "tool_call" else calls
    counts = {
        "reasoning": len(output.get("reasoning") or []),
        "hosted": len(output.get("hostedTools") or []),
        "text": len(parts) if parts is not None else (1 if text else 0),
        "call": len(calls) if isinstance(calls, list) else 0,
    }
    for kind, count in counts.items():
        if sequence.count(kind) != count:
            raise ValueError(
                f"field sequence names {sequence.count(kind)} {kind} parts, the output has {count}"
            )
    return {"sequence": sequence, "text_parts": parts}


def _choice(item: Any, where: str) -> JsonObject:
    found = _object(item, where)
    if found.get("type") not in ("final_answer", "tool_calls", "tool_call"):
        raise ValueError(f"field {where}.type must be final_answer or tool_calls")
    if "choices" in found:
        raise ValueError(f"field {where} holds choices of its own")
    try:
        check_output(found)
    except ValueError as exc:
        raise ValueError(f"{exc} (in {where})") from None
    return found
