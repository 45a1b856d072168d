"""A Gemini request's ``contents`` read in order: the neutral messages, and which call each function
response answers (gemini.py's ``model_input`` and the fork's rewrite read them alike).

Field names are read in both spellings the API's JSON takes (``functionCall``, ``function_call``);
the data below them is kept as sent.

* Role ``model`` is ``assistant``, any other is ``user``. A part holds one of ``text``,
  ``functionCall``, ``functionResponse``, ``inlineData``, ``fileData``, ``executableCode``,
  ``codeExecutionResult``, ``toolCall``, ``toolResponse``. A part with none of them is a
  ``ValueError``, as the API refuses it, unless it holds metadata only (a lone ``thoughtSignature``):
  then it is skipped. Thoughts (``thought: true``) are dropped.
* A model turn (the model contents that follow each other: a streamed chat keeps one a chunk) is
  canonicalized to the shape replay sends back: its texts joined, as a string when it made no call,
  else one leading text part (none when empty) then a ``tool_use`` part per ``functionCall``
  (``args`` -> ``toolInput``). Its other parts (``executableCode``...) are dropped, as responses are
  read without them.
* A user turn of one text part is a string, else a list: ``text`` -> ``{type: text, text}``,
  ``functionResponse`` -> ``{type: tool_result, toolCallId, toolName, result}``, any other part
  ``{type: KIND, KIND: value}``. ``result`` is ``response`` as sent, or what its only field holds when
  that is ``result`` or ``output`` (the API's fields for a function's output; the SDK's automatic
  function calling sends ``{result: ...}``); a lone ``error`` field is ``error``. Turns of results
  only that follow each other are one user turn.

Ids. A call with an ``id`` uses it; one without (the usual case) is matched by ``CallIds.in_history``
with the calls the model made, by name and arguments. A ``functionResponse`` with an ``id`` answers
that call; without, the first unanswered call of its name in the model turn before it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ...messages import function_response_outcome
from .base import CallIds, JsonObject, call_signature
from .openai_chat import add_tool_result, tool_use

__all__ = ["call_of", "fields", "objects", "part_kind", "read_contents", "texts"]

_DATA = (
    "text", "functionCall", "functionResponse", "inlineData", "fileData", "executableCode",
    "codeExecutionResult", "toolCall", "toolResponse",
)  # fmt: skip
_METADATA = frozenset({
    "thought", "thoughtSignature", "videoMetadata", "mediaResolution", "partMetadata", "audioTranscription",
    "mediaProcessing", "speechMetadata", "documentMetadata", "spreadsheetMetadata", "audioMetadata",
})  # fmt: skip


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def fields(value: Any, what: str) -> JsonObject:
    """A wire object with its field names as the API spells them (JSON also takes snake_case)."""
    if not isinstance(value, dict):
        raise ValueError(f"{what} is not a JSON object")
    return {_camel(str(k)) if "_" in str(k) else str(k): v for k, v in value.items()}


def objects(value: Any, what: str) -> list[Any]:
    """A list field; nothing when it is absent."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{what} is not a list")
    return value


def part_kind(part: Any, *, strict: bool = True) -> tuple[str | None, Any, JsonObject]:
    """(kind, value, fields) of a part; the kind is None for a part of metadata only or, in a response
    (not ``strict``), of a kind this version does not know."""
    found = fields(part, "a part")
    kind = next((k for k in _DATA if k in found), None)
    if kind is not None:
        if kind == "text" and not isinstance(found[kind], str):
            raise ValueError("a text part's text is not a string")
        return kind, found[kind], found
    unknown = sorted(k for k in found if k not in _METADATA)
    if strict and (unknown or not found):
        raise ValueError(f"a part of a kind Gemini does not have: {', '.join(unknown) or 'an empty part'}")
    return None, None, found


def texts(parts: list[Any], *, strict: bool = True) -> Iterator[str]:
    """The text of the parts that are text and not thoughts."""
    for part in parts:
        kind, value, found = part_kind(part, strict=strict)
        if kind == "text" and not found.get("thought"):
            yield value


def call_of(part: JsonObject) -> tuple[str, Any, str | None]:
    """A functionCall part's name, arguments and id (None when it has none)."""
    call = fields(part["functionCall"], "a functionCall")
    args, provider_id = call.get("args"), call.get("id")
    return str(call.get("name", "")), {} if args is None else args, str(provider_id) if provider_id else None


def read_contents(value: Any, ids: CallIds) -> tuple[list[JsonObject], list[tuple[JsonObject, str]]]:
    """The neutral messages, and each functionResponse object (as in ``value``) with its call's id."""
    contents = [fields(c, "a content") for c in objects(value, "contents")]
    calls = [
        call_of(found)
        for content in contents
        if content.get("role") == "model"
        for kind, _, found in map(part_kind, objects(content.get("parts"), "parts"))
        if kind == "functionCall"
    ]
    history = ids.in_history([(call_signature(name, args), provider_id) for name, args, provider_id in calls])
    reader = _Reader(ids, iter(history))
    for content in contents:
        parts = objects(content.get("parts"), "parts")
        if content.get("role") == "model":
            reader.model(parts)
        else:
            reader.user(parts)
    reader.end_model_turn()
    return reader.messages, reader.answered


@dataclass
class _Reader:
    ids: CallIds
    history: Iterator[str]  # the neutral id of each call, in order
    messages: list[JsonObject] = field(default_factory=list)
    answered: list[tuple[JsonObject, str]] = field(default_factory=list)
    pending: list[tuple[str, str]] = field(default_factory=list)  # (name, id): the last turn's, unanswered
    texts: list[str] = field(default_factory=list)  # of the model turn being read
    uses: list[JsonObject] = field(default_factory=list)
    in_model_turn: bool = False
    orphans: int = 0

    def model(self, parts: list[Any]) -> None:
        if not self.in_model_turn:
            self.in_model_turn, self.pending = True, []
        for part in parts:
            kind, value, found = part_kind(part)
            if kind == "text" and not found.get("thought"):
                self.texts.append(value)
            elif kind == "functionCall":
                name, args, _ = call_of(found)
                call_id = next(self.history)
                self.uses.append(tool_use(call_id, name, args))
                self.pending.append((name, call_id))

    def end_model_turn(self) -> None:
        if self.in_model_turn:
            text = "".join(self.texts)
            content: Any = (
                ([{"type": "text", "text": text}] if text else []) + self.uses if self.uses else text
            )
            self.messages.append({"role": "assistant", "content": content})
            self.texts, self.uses, self.in_model_turn = [], [], False

    def user(self, parts: list[Any]) -> None:
        self.end_model_turn()
        out: list[JsonObject] = []
        for part in parts:
            kind, value, found = part_kind(part)
            if kind == "text" and not found.get("thought"):
                out.append({"type": "text", "text": value})
            elif kind == "functionResponse":
                out.append(self._result(value))
            elif kind is not None and kind != "text":
                out.append({"type": kind, kind: value})
        if out and all(p["type"] == "tool_result" for p in out):
            for result in out:
                add_tool_result(self.messages, result)
        elif len(out) == 1 and out[0]["type"] == "text":
            self.messages.append({"role": "user", "content": out[0]["text"]})
        else:
            self.messages.append({"role": "user", "content": out or ""})

    def _result(self, value: Any) -> JsonObject:
        response = fields(value, "a functionResponse")
        name, provider_id = str(response.get("name", "")), response.get("id")
        if provider_id:
            call_id = self.ids.neutral(str(provider_id))
        else:
            call_id = next((c for n, c in self.pending if n == name), "")
            if not call_id:  # it answers no call: numbered on, once
                self.orphans += 1
                call_id = self.ids.neutral(f"{name}\x00answer#{self.orphans}")
        self.pending = [(n, c) for n, c in self.pending if c != call_id]
        self.answered.append((value, call_id))
        part: JsonObject = {"type": "tool_result", "toolCallId": call_id, "toolName": name}
        return {**part, **function_response_outcome(response.get("response"))}  # JSON as sent, null kept
