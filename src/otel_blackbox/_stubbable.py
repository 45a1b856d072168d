"""``stubbable``: a plain function a stubbing session may answer from the recording instead of running.

A framework's tools are answered through the framework's own seam (_playback/tool_stubs/). A
hand-written loop on a plain SDK has no seam: its tool functions are plain Python. Wrapping one::

    @otel_blackbox.stubbable
    def refund_order(order_id: str, amount: float) -> str: ...

changes nothing, and costs one global read per call, until a session runs with ``stub_tools``
(``replay --stub-tools``, ``@pytest.mark.blackbox(stub_tools=True)``...). Then a call is answered
from the cassette's recorded result for it, and the function does not run. Nothing is recorded by
it, in any session: the recording takes tool results from spans and requests, as before.

The module imports nothing of the project, so ``otel_blackbox.stubbable`` is free to import.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import re
import types
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, overload

if TYPE_CHECKING:
    from otel_blackbox._playback.tool_stubs.answers import ToolStubber

__all__ = ["active_stubber", "stubbable"]

F = TypeVar("F", bound=Callable[..., Any])
_TEXT_ANNOTATION = re.compile(r"str|str\|None|None\|str|(typing\.)?Optional\[str\]")  # as written, unresolved
_active: ToolStubber | None = None  # set by a stubbing session for its duration


def active_stubber() -> ToolStubber | None:
    """The stubbing session's answers, or None when no session stubs tools."""
    return _active


def set_active_stubber(stubber: ToolStubber | None) -> None:
    global _active
    _active = stubber


@overload
def stubbable(function: F, /) -> F: ...
@overload
def stubbable(*, name: str | None = None) -> Callable[[F], F]: ...


def stubbable(function: F | None = None, /, *, name: str | None = None) -> F | Callable[[F], F]:
    """Make ``function`` answerable from the recording in a stubbing session (``name``: the tool's
    name as the model calls it, when it is not the function's own)."""

    def wrap(inner: F) -> F:
        return _stubbable(inner, name or inner.__name__)

    return wrap(function) if function is not None else wrap


def _stubbable(function: F, tool_name: str) -> F:
    signature = inspect.signature(function)
    returns = _returns_text(function, signature.return_annotation)

    def answered(args: tuple[Any, ...], kwargs: dict[str, Any], stubber: ToolStubber) -> tuple[bool, Any]:
        try:
            arguments = dict(signature.bind(*args, **kwargs).arguments)  # what the caller passed, by name
        except TypeError:
            return False, None  # the call itself is wrong: the function raises as it always would
        answer = stubber.answer(tool_name, arguments, None, framework="stubbable")
        if answer.runs:
            return False, None
        if answer.error is not None:
            raise answer.exception(Exception)
        return True, _as_returned(answer.value, returns)

    if inspect.iscoroutinefunction(function):

        @functools.wraps(function)
        async def call_async(*args: Any, **kwargs: Any) -> Any:
            stubber = _active
            if stubber is not None:
                done, value = answered(args, kwargs, stubber)
                if done:
                    return value
            return await function(*args, **kwargs)

        return call_async  # type: ignore[return-value]

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        stubber = _active
        if stubber is not None:
            done, value = answered(args, kwargs, stubber)
            if done:
                return value
        return function(*args, **kwargs)

    return call  # type: ignore[return-value]


def _returns_text(function: Callable[..., Any], annotation: Any) -> bool | None:
    """Whether the function returns text (``str``, ``str | None``...), another type (False), or does
    not say (None)."""
    if annotation is inspect.Signature.empty:
        return None
    with contextlib.suppress(Exception):  # an annotation that does not resolve here: read as written
        annotation = typing.get_type_hints(function).get("return", annotation)
    if isinstance(annotation, str):
        return _TEXT_ANNOTATION.fullmatch(annotation.replace(" ", "")) is not None
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):  # str | None, Optional[str]
        return str in typing.get_args(annotation)
    return annotation is str


def _as_returned(value: Any, returns_text: bool | None) -> Any:
    """The recorded value in the type the function says it returns: text for ``-> str``, the JSON
    value for another annotation when the recording holds its text, else as recorded."""
    if returns_text:
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if returns_text is None or not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value
