"""What a provider translation is: pure functions between one LLM API's wire format and the
neutral v2 payloads (``model_input`` / ``model_output``), both ways.

No I/O, no clock, no randomness: the same request always normalizes to the same ``model_input``,
so replay can compare a new request with a recorded step by canonical JSON.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ParamSpec, Protocol, TypeVar

from otel_blackbox._types import JsonObject
from otel_blackbox._wire.call_ids import CallIds

__all__ = [
    "REQUEST_EDITS",
    "Pieces",
    "Provider",
    "RequestShape",
    "WireRequest",
    "WireResponse",
    "add_piece",
    "content_saying",
    "edited_request",
    "join_pieces",
    "list_field",
    "read_usage",
    "replaced_content",
    "rewritten",
    "tool_settings",
    "wire_errors",
]


@dataclass
class WireResponse:
    """A synthesized HTTP response: what the SDK receives instead of the provider's."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes


@dataclass
class WireRequest:
    """A request body built from a neutral ``model_input``: what the built-in agent hands the SDK.

    ``dropped`` names, one short phrase each, what of the model_input this API has no way to say
    (``params.seed``, ``a reasoning part``): the agent prints them in one warning line."""

    body: JsonObject
    dropped: list[str]


class Provider(Protocol):
    """One LLM API (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages, Gemini).

    Where an API names the model in the URL (Gemini), ``registry.provider_for`` hands out the
    translation bound to the request's URL, so the methods below read it there.

    Whatever they are given (bytes that are not UTF-8 or not JSON, a stream cut short, unknown
    events, a field of the wrong type, nesting past the recursion limit), the translations raise
    ``ValueError`` and nothing else.
    """

    name: str

    def handles(self, method: str, path: str) -> bool:
        """True for the endpoint this translation understands (e.g. POST .../chat/completions)."""

    def model_input(self, request: JsonObject, ids: CallIds) -> JsonObject:
        """Wire request body -> neutral ``model_input`` (messages, tools, systemPrompt, model, params)."""

    def is_streaming(self, request: JsonObject) -> bool:
        """Whether the request asked for a streamed (SSE) response."""

    def model_output(self, body: bytes, *, streamed: bool, ids: CallIds) -> JsonObject:
        """Wire response (JSON, or the whole SSE stream) -> neutral ``model_output`` payload."""

    def usage(self, body: bytes, *, streamed: bool) -> JsonObject | None:
        """The response's token counts as a ``tokenUsage`` (``_cost/usage.py``: input including the
        cached tokens, output including the reasoning), or None when it carries none. Apart from
        ``model_output``: the counts are not what the model said; a recording adds them to it."""

    def wire_response(self, output: JsonObject, request: JsonObject) -> WireResponse:
        """Neutral ``model_output`` -> a response in the shape the request asked for (JSON or SSE),
        carrying the neutral ``call-N`` ids, that the real SDK accepts. Its ``tokenUsage`` is not
        sent: a synthesized response carries zero usage."""

    def wire_request(self, model_input: JsonObject, *, stream: bool, native: bool) -> WireRequest:
        """Neutral ``model_input`` -> this API's request body (the other direction of ``model_input``).

        ``model_input`` may come from any of the four APIs; ``native`` says it was recorded on this
        one, so its settings under their own names are this API's and are sent as they are. The
        messages, tool uses and results (with their neutral ids), the system prompt, the tools and
        the neutral settings (``settings.py``) are written in this API's shape; what has no
        equivalent is left out and named in ``dropped``. The body is one the official SDK sends as
        it is, asking for a stream when ``stream``; for Gemini, whose model is in the URL, it holds
        no model. Round trip: ``model_input(wire_request(m).body)`` is ``m`` for a model_input
        recorded on this API, ids included. Raises ValueError only.
        """

    def replace_tool_result(
        self, request: JsonObject, tool_call_id: str, result: Any, *, error: bool = False
    ) -> JsonObject | None:
        """A fork's rewrite: a new request body in which the tool result for ``tool_call_id`` carries
        ``result`` instead of what the agent sent, or None when the request holds no result for it.

        The id is compared with the wire id as sent: in replay the agent was handed the neutral
        ``call-N`` ids, so that is what its request carries. The input is never mutated; the copy
        shares nothing with it. Every result with that id is replaced (a run's ids are unique, so
        normally one), and nothing else changes. The replacement keeps the wire shape the agent
        used (see ``replaced_content``): where it sent a string, the string is the result's text;
        where it sent a list of content parts, one text part holds that text.

        With ``error``, ``result`` is the text of an error the tool failed with, marked as the
        built-in agent's ``wire_request`` marks a neutral ``{"error": ...}`` (Anthropic's
        ``is_error``, Gemini's ``{"error": ...}`` response; the OpenAI APIs have no mark: the text).
        """

    def edit_request(self, request: JsonObject, kind: str, value: Any) -> JsonObject | None:
        """A fork's rewrite of a request at or after its ``model_input`` change (``REQUEST_EDITS``,
        edit.py's kinds): a new request body, or None when this one has nothing to change.

        ``system_prompt`` (``value`` the text): the request's system prompt, in the field this API
        keeps it in, is the text. ``tool_definition`` (``{"name", "definition": {"description"?,
        "inputSchema"?}}``): the function tool of that name gets that description and input schema.
        ``user_message`` (``{"text", "insert": bool, "since"?: request}``): the last message a user
        wrote (not a tool round's results) says the text, or with ``insert`` a user message saying it
        is appended. With ``since`` (the request the change was made at, as the program sent it),
        the change is made again in a later request of the same conversation: at the same place, when
        ``since``'s messages begin this request's (None otherwise). The input is never mutated.
        """


def read_usage(provider: Provider, body: bytes, *, streamed: bool) -> JsonObject | None:
    """``provider.usage``, or None when the response's counts are not in a shape it reads: the token
    counts are never a reason to lose a recording."""
    try:
        return provider.usage(body, streamed=streamed)
    except Exception:  # any shape it does not read (a KeyError, a TypeError...): the recording goes on
        return None


def tool_settings(neutral: JsonObject, definition: JsonObject, taken: tuple[str, ...]) -> JsonObject:
    """``neutral`` (a tool's name, description and schema) with the definition's other fields, those
    that change what the model does with the tool (``strict``, a built-in tool's options, a server
    tool's version and limits), under ``settings``; a tool with none is as it always was."""
    settings = {key: value for key, value in definition.items() if key not in taken and value is not None}
    return {**neutral, "settings": settings} if settings else neutral


def replaced_content(sent: Any, result: Any, text_type: str) -> Any:
    """What a tool result's content becomes in the shape the agent sent it.

    The text is ``result`` itself when it is a string, else its compact JSON (non-ASCII kept as is).
    A list (structured content: parts or blocks) becomes a single ``{type: text_type, text}`` part;
    anything else (a string, or nothing) becomes the text.
    """
    text = (
        result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, separators=(",", ":"))
    )
    return [{"type": text_type, "text": text}] if isinstance(sent, list) else text


def rewritten(
    request: JsonObject,
    targets: Callable[[JsonObject], list[JsonObject]],
    rewrite: Callable[[JsonObject], None],
) -> JsonObject | None:
    """A deep copy of ``request`` with ``rewrite`` applied to each of ``targets(copy)``, or None when
    there are none: the input is never touched and the copy shares nothing with it."""
    copied = copy.deepcopy(request)
    found = targets(copied)
    for target in found:
        rewrite(target)
    return copied if found else None


# The changes a fork makes in a request (``Provider.edit_request``): edit.py's model_input kinds.
REQUEST_EDITS = ("user_message", "system_prompt", "tool_definition")


@dataclass(frozen=True)
class RequestShape:
    """Where one API's request keeps what ``edit_request`` changes (each API's rewrite_request.py)."""

    conversation: Callable[[JsonObject], list[Any]]  # the messages, a list in the body (made one if not)
    said: Callable[[JsonObject], bool]  # a message a user wrote: not a tool round's results
    saying: Callable[[JsonObject | None, str], JsonObject]  # that message (None: a new one) saying this
    system: Callable[[JsonObject, str], None]  # puts the system prompt into the body
    functions: Callable[[JsonObject], list[JsonObject]]  # the body's function tool definitions
    schema_keys: tuple[str, ...]  # where a definition keeps its input schema: the first, the others removed


def edited_request(request: JsonObject, kind: str, value: Any, shape: RequestShape) -> JsonObject | None:
    """``Provider.edit_request`` for an API of this ``shape``: a deep copy of ``request`` changed, or
    None when nothing changed."""
    copied = copy.deepcopy(request)
    if kind == "system_prompt":
        shape.system(copied, str(value))
    elif kind == "tool_definition":
        _define_tool(copied, value, shape)
    elif kind == "user_message":
        if not _edit_user(copied, value, shape):
            return None
    else:
        raise ValueError(f"{kind!r}: not a change of a request (one of: {', '.join(REQUEST_EDITS)})")
    return None if copied == request else copied


def _define_tool(body: JsonObject, value: Any, shape: RequestShape) -> None:
    name, definition = value.get("name"), value.get("definition") or {}
    for function in shape.functions(body):
        if function.get("name") != name:
            continue
        if "description" in definition:
            function["description"] = definition["description"]
        if "inputSchema" in definition:
            for key in shape.schema_keys:
                function.pop(key, None)
            function[shape.schema_keys[0]] = copy.deepcopy(definition["inputSchema"])


def _edit_user(body: JsonObject, value: Any, shape: RequestShape) -> bool:
    """The user's last message replaced, or one appended: among the messages ``since`` held when the
    change is made again in a later request (none when ``since``'s messages do not begin these)."""
    text, since = str(value.get("text", "")), value.get("since")
    messages = shape.conversation(body)
    upto = len(messages)
    if since is not None:
        before = shape.conversation(copy.deepcopy(since))
        if messages[: len(before)] != before:
            return False
        upto = len(before)
    if value.get("insert"):
        messages.insert(upto, shape.saying(None, text))
        return True
    said = [n for n in range(upto) if isinstance(messages[n], dict) and shape.said(messages[n])]
    if said:
        messages[said[-1]] = shape.saying(messages[said[-1]], text)
    return bool(said)


def list_field(key: str) -> Callable[[JsonObject], list[Any]]:
    """A ``RequestShape.conversation`` for an API that keeps its messages as a list under ``key``."""

    def conversation(body: JsonObject) -> list[Any]:
        if not isinstance(body.get(key), list):
            body[key] = []
        found: list[Any] = body[key]
        return found

    return conversation


def content_saying(message: JsonObject | None, text: str) -> JsonObject:
    """A ``RequestShape.saying`` for an API whose message says its text as ``content``."""
    return {**(message or {"role": "user"}), "content": text}


class Pieces(list[Any]):
    """A string a stream delivers in deltas, kept as its pieces until the stream ends: appending
    each delta to a growing string would make a stream of many small deltas cost quadratic time."""


def add_piece(target: JsonObject, key: str, piece: Any) -> None:
    """Append a delta to ``target[key]`` (a string so far, or nothing)."""
    current = target.get(key, "")
    if not isinstance(current, Pieces):
        current = target[key] = Pieces([current])
    current.append(piece)


def join_pieces(target: JsonObject, key: str) -> None:
    """``target[key]`` as one string again, once no more deltas can come."""
    value = target.get(key)
    if isinstance(value, Pieces):
        target[key] = "".join(value)


_P = ParamSpec("_P")
_R = TypeVar("_R")


def wire_errors(what: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Make a translation raise only ValueError, naming ``what`` could not be read and why.

    The translations read wire data the way the API documents it; data of another shape surfaces
    as the KeyError, TypeError... of the first lookup that does not fit. Those (and bytes that are
    not UTF-8, JSON nested past the recursion limit) become one ValueError here, so callers need
    to expect one exception type only. A ValueError the translation raises itself passes unchanged.
    """

    def wrap(method: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(method)
        def checked(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                return method(*args, **kwargs)
            except UnicodeDecodeError as exc:
                raise ValueError(f"{what} is not UTF-8 text (byte {exc.start})") from exc
            except json.JSONDecodeError as exc:
                raise ValueError(
                    f"{what} is not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
                ) from exc
            except RecursionError as exc:
                raise ValueError(f"{what} is nested too deeply") from exc
            except (KeyError, IndexError, TypeError, AttributeError) as exc:
                reason = f"{type(exc).__name__}: {exc}"[:200]
                raise ValueError(f"{what} is not in the shape the API documents ({reason})") from exc

        return checked

    return wrap
