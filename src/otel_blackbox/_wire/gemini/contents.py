"""A Gemini request's ``contents`` read in order: the neutral messages, and which call each function
response answers (``read_request`` and the fork's ``rewrite_request`` read them alike); and
``ModelParts``, how a model turn's parts are read, in a request's history and in a response alike.

Field names are read in both spellings the API's JSON takes (``functionCall``, ``function_call``);
the data below them is kept as sent.

* Role ``model`` is ``assistant``, any other is ``user``. A part holds one of ``text``,
  ``functionCall``, ``functionResponse``, ``inlineData``, ``fileData``, ``executableCode``,
  ``codeExecutionResult``, ``toolCall``, ``toolResponse``. A part with none of them is a
  ``ValueError``, as the API refuses it, unless it holds metadata only (``thought``,
  ``thoughtSignature``...).
* A model turn (the model contents that follow each other: a streamed chat keeps one a chunk) is
  read by ``ModelParts`` and canonicalized to the shape replay sends back. With none of the parts
  below (no thought, no signature, no hosted tool), as before: its texts joined, as a string when it
  made no call, else one leading text part (none when empty) then a ``tool_use`` part per
  ``functionCall`` (``args`` -> ``toolInput``). Otherwise a list, in the canonical order:

  * ``{type: reasoning, text?, signature?}`` per thought: the text of the ``thought: true`` parts
    joined until one carries a ``thoughtSignature``, which is the thought's and ends it (a thought
    part with no text, the signature alone, ends it too), or a part of another kind comes;
  * ``{type: hosted_tool, toolName, toolInput?, result?}`` per tool Gemini ran itself:
    ``executableCode`` (``toolName`` ``code_execution``, ``toolInput`` the part less its ``id``)
    with the ``codeExecutionResult`` that follows it (``result``, less its ``id``), and a server-side
    ``toolCall`` (``toolName`` its ``toolType`` in lower case, ``toolInput`` its ``args``) with its
    ``toolResponse`` (``result`` its ``response``); a result is paired by ``id`` when both carry one,
    else with the last such call still without one. Ids are not kept; neither is a signature or a
    ``thought`` flag on these parts;
  * ``{type: text, text, signature?}``: the texts joined, with the ``thoughtSignature`` of a text part
    (or of a part of metadata only, no ``thought`` flag: the signature the API sends last, alone)
    as ``signature``, the last one when several carry one; present when there is text or a signature;
  * ``tool_use`` parts, each with its part's ``thoughtSignature`` as ``signature``.

  Its other parts (``inlineData``...) are dropped, as responses are read without them. The order
  is not kept here (a program that sends back a response replayed in its order normalizes as the live
  one); ``ModelParts.order`` gives it to a response's reading.
* A user turn of one text part is a string, else a list: ``text`` -> ``{type: text, text}``,
  ``functionResponse`` -> ``{type: tool_result, toolCallId, toolName, result}``, any other part
  ``{type: KIND, KIND: value}``. ``result`` is ``response`` as sent, or what its only field holds when
  that is ``result`` or ``output`` (the API's fields for a function's output; the SDK's automatic
  function calling sends ``{result: ...}``); a lone ``error`` field is ``error``. Turns of results
  only that follow each other are one user turn. Thoughts in a user turn are dropped.

Ids. A call with an ``id`` uses it; one without (the usual case) is matched by ``CallIds.in_history``
with the calls the model made, by name and arguments. A ``functionResponse`` with an ``id`` answers
that call; without, the first unanswered call of its name in the model turn before it.

The other direction, neutral messages -> ``contents``, is write_request.py's.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from otel_blackbox._cassette.output import Hosted, Reasoning
from otel_blackbox._spans.messages import function_response_outcome
from otel_blackbox._types import JsonObject
from otel_blackbox._wire.call_ids import CallIds, call_signature
from otel_blackbox._wire.neutral_parts import add_tool_result, tool_use

__all__ = [
    "CODE_EXECUTION", "Call", "ModelParts", "call_of", "fields", "objects", "part_kind", "read_contents",
    "texts",
]  # fmt: skip

_DATA = (
    "text", "functionCall", "functionResponse", "inlineData", "fileData", "executableCode",
    "codeExecutionResult", "toolCall", "toolResponse",
)  # fmt: skip
_METADATA = frozenset({
    "thought", "thoughtSignature", "videoMetadata", "mediaResolution", "partMetadata", "audioTranscription",
    "mediaProcessing", "speechMetadata", "documentMetadata", "spreadsheetMetadata", "audioMetadata",
})  # fmt: skip
CODE_EXECUTION = "code_execution"  # the hostedTools name of executableCode / codeExecutionResult
# A call's name, arguments, id (None when it has none) and thoughtSignature (likewise).
Call = tuple[str, Any, str | None, str | None]


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


def _signature(found: JsonObject) -> str | None:
    signature = found.get("thoughtSignature")
    if signature is not None and not isinstance(signature, str):
        raise ValueError("a thoughtSignature is not a string (the API sends it in base64)")
    return signature


@dataclass
class _Thought:
    pieces: list[str] | None = None  # None: no text at all, only a signature
    signature: str | None = None

    def reasoning(self) -> Reasoning:
        return Reasoning(text=None if self.pieces is None else "".join(self.pieces), signature=self.signature)


@dataclass
class ModelParts:
    """A model turn's parts, in a request's history or in one response candidate (over a whole
    stream), read into the pieces of the canonical order: thoughts, hosted tools, text, calls; and
    (``order``) the order they came in.

    The module docstring says how each part is read; a request and a response read alike, so that a
    program sending back what it was handed normalizes as the response it came from.
    """

    thoughts: list[_Thought] = field(default_factory=list)
    hosted: list[Hosted] = field(default_factory=list)
    text_signature: str | None = None
    calls: list[Call] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)  # each part's kind, in wire order (see ``order``)
    _pieces: list[list[str]] = field(default_factory=list)  # each piece of text, as its parts came
    _open: _Thought | None = None  # the thought that goes on until a signature or another part ends it
    _hosted_ids: list[str | None] = field(default_factory=list)  # to pair results; never kept

    @property
    def reasoning(self) -> list[Reasoning]:
        return [t.reasoning() for t in self.thoughts]

    @property
    def text(self) -> str:
        return "".join(t for piece in self._pieces for t in piece)

    def order(self) -> tuple[list[str], list[str]]:
        """The kinds of the parts in wire order (``reasoning``, ``hosted``, ``text``, ``call``) and the
        text's pieces: text parts with no other part between them are one piece; an empty piece (a
        stream's last empty part, a signature alone) is no part."""
        kinds: list[str] = []
        found: list[str] = []
        pieces = iter(self._pieces)
        for kind in self.kinds:
            if kind == "text":
                piece = "".join(next(pieces))
                if not piece:
                    continue
                found.append(piece)
            kinds.append(kind)
        return kinds, found

    @property
    def plain(self) -> bool:
        """Nothing but text and unsigned calls: the shape a turn had before thoughts were kept."""
        signed = self.text_signature is not None or any(c[3] is not None for c in self.calls)
        return not (self.thoughts or self.hosted or signed)

    def add(self, part: Any, *, strict: bool = True) -> None:
        kind, value, found = part_kind(part, strict=strict)
        signature = _signature(found)
        if found.get("thought") and kind in (None, "text"):
            self._think(value, signature)
            return
        if kind == "text" or (kind is None and signature is not None and set(found) <= _METADATA):
            if not self.kinds or self.kinds[-1] != "text":
                self.kinds.append("text")
                self._pieces.append([])
            self._pieces[-1].append(value or "")  # a stream sends a piece in many parts
            self.text_signature = signature if signature is not None else self.text_signature
        elif kind == "functionCall":
            self.calls.append((*call_of(found), signature))
            self.kinds.append("call")
        elif kind in ("executableCode", "toolCall"):
            self._hosted_call(kind, fields(value, kind))
        elif kind in ("codeExecutionResult", "toolResponse"):
            self._hosted_result(kind, fields(value, kind))
        else:
            return  # a part that is not kept (inlineData...) ends nothing
        self._open = None  # another part ends the thought

    def _think(self, text: str | None, signature: str | None) -> None:
        if text is None and signature is None:
            return  # a bare thought flag says nothing
        if self._open is None:
            self._open = _Thought()
            self.thoughts.append(self._open)
            self.kinds.append("reasoning")
        if text is not None:  # a stream sends a thought in many pieces: appended, not copied
            self._open.pieces = self._open.pieces if self._open.pieces is not None else []
            self._open.pieces.append(text)
        if signature is not None:
            self._open.signature, self._open = signature, None

    def _hosted_call(self, kind: str, value: JsonObject) -> None:
        if kind == "executableCode":
            entry = Hosted(CODE_EXECUTION, tool_input={k: v for k, v in value.items() if k != "id"})
        else:
            entry = Hosted(_tool_type(value))
            if value.get("args") is not None:
                entry = replace(entry, tool_input=value["args"])
        self.hosted.append(entry)
        self._hosted_ids.append(_id_of(value))
        self.kinds.append("hosted")

    def _hosted_result(self, kind: str, value: JsonObject) -> None:
        result: Any = value.get("response")
        name = _tool_type(value)
        if kind == "codeExecutionResult":
            name, result = CODE_EXECUTION, {k: v for k, v in value.items() if k != "id"}
        at = self._call_for(name, _id_of(value), any_tool=kind == "toolResponse" and "toolType" not in value)
        if at is None:
            self.hosted.append(Hosted(name, result=result))
            self._hosted_ids.append(None)
            self.kinds.append("hosted")
        else:
            self.hosted[at] = replace(self.hosted[at], result=result)

    def _call_for(self, name: str, result_id: str | None, *, any_tool: bool) -> int | None:
        """The hosted call a result answers: the one of its id, else the last still unanswered."""
        waiting = [
            n
            for n, entry in enumerate(self.hosted)
            if not entry.has_result
            and (entry.tool_name == name or (any_tool and entry.tool_name != CODE_EXECUTION))
        ]
        if result_id is not None:
            by_id = [n for n in waiting if self._hosted_ids[n] == result_id]
            if by_id:
                return by_id[0]
        return waiting[-1] if waiting else None


def _tool_type(value: JsonObject) -> str:
    return str(value.get("toolType") or "TOOL_TYPE_UNSPECIFIED").lower()


def _id_of(value: JsonObject) -> str | None:
    found = value.get("id")
    return str(found) if found else None


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


def _assistant_content(turn: ModelParts, uses: list[JsonObject]) -> Any:
    """A model turn in the canonical shape (the module docstring), ``uses`` its numbered tool_use parts."""
    text = turn.text
    if turn.plain:
        return ([{"type": "text", "text": text}] if text else []) + uses if uses else text
    content: list[JsonObject] = [{"type": "reasoning", **r.to_json()} for r in turn.reasoning]
    content += [{"type": "hosted_tool", **h.to_json()} for h in turn.hosted]
    if text or turn.text_signature is not None:
        part: JsonObject = {"type": "text", "text": text}
        if turn.text_signature is not None:
            part["signature"] = turn.text_signature
        content.append(part)
    return content + uses


@dataclass
class _Reader:
    ids: CallIds
    history: Iterator[str]  # the neutral id of each call, in order
    messages: list[JsonObject] = field(default_factory=list)
    answered: list[tuple[JsonObject, str]] = field(default_factory=list)
    pending: list[tuple[str, str]] = field(default_factory=list)  # (name, id): the last turn's, unanswered
    turn: ModelParts | None = None  # the model turn being read
    uses: list[JsonObject] = field(default_factory=list)
    orphans: int = 0

    def model(self, parts: list[Any]) -> None:
        if self.turn is None:
            self.turn, self.pending = ModelParts(), []
        for part in parts:
            self.turn.add(part)
        for name, args, _, signature in self.turn.calls[len(self.uses) :]:
            call_id = next(self.history)
            use = tool_use(call_id, name, args)
            if signature is not None:
                use["signature"] = signature
            self.uses.append(use)
            self.pending.append((name, call_id))

    def end_model_turn(self) -> None:
        if self.turn is not None:
            self.messages.append({"role": "assistant", "content": _assistant_content(self.turn, self.uses)})
            self.turn, self.uses = None, []

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
