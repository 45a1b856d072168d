"""LangChain's seam: ``BaseTool.run`` and ``arun``.

Every LangChain tool runs through them: ``tool.invoke(...)``, ``create_agent``'s tools, LangGraph's
``ToolNode``. While a stubbing session runs they are replaced on ``BaseTool``; each asks the session
first, and for an answered call runs LangChain's own ``run`` on a copy of the tool whose ``_run``
gives the answer. LangChain therefore still validates the input, fires its callbacks (the tool's
span) and wraps the content in a ``ToolMessage`` as it does for a real call.

A recorded error is raised again (as ``ToolException`` when it was one), so the tool's and the
ToolNode's error handling treat it as they treated the first. A call with no recorded answer gives
the model an error ``ToolMessage`` naming the call (the text alone when the call has no id).
"""

from __future__ import annotations

import copy
from types import ModuleType
from typing import Any

from otel_blackbox._playback.tool_stubs.answers import ToolAnswer
from otel_blackbox._stubbable import active_stubber

MODULE = "langchain_core.tools.base"
FRAMEWORK = "langchain-core"
_base: Any = None
_own: tuple[Any, Any] | None = None  # BaseTool's own run and arun


def install(module: ModuleType) -> str | None:
    global _base, _own
    base = getattr(module, "BaseTool", None)
    if base is None or not callable(getattr(base, "run", None)) or not callable(getattr(base, "arun", None)):
        return "no BaseTool.run / arun"
    own_run, own_arun = base.run, base.arun

    def run(self: Any, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
        stand_in = _stand_in(self, tool_input, kwargs.get("tool_call_id"))
        return own_run(stand_in, tool_input, *args, **kwargs)

    async def arun(self: Any, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
        stand_in = _stand_in(self, tool_input, kwargs.get("tool_call_id"))
        return await own_arun(stand_in, tool_input, *args, **kwargs)

    base.run, base.arun = run, arun
    _base, _own = base, (own_run, own_arun)
    return None


def uninstall() -> None:
    global _base, _own
    if _base is not None and _own is not None:
        _base.run, _base.arun = _own
    _base = _own = None


def _stand_in(tool: Any, tool_input: Any, call_id: str | None) -> Any:
    """``tool`` itself when it must run, else a copy whose ``_run`` / ``_arun`` give the answer."""
    stubber = active_stubber()
    if stubber is None:
        return tool
    answer = stubber.answer(tool.name, _arguments(tool, tool_input), call_id, framework=FRAMEWORK)
    if answer.runs:
        return tool

    def answered(*_args: Any, **_kwargs: Any) -> Any:
        return _content(tool, answer, call_id)

    async def answered_async(*_args: Any, **_kwargs: Any) -> Any:
        return _content(tool, answer, call_id)

    stand_in = copy.copy(tool)
    object.__setattr__(stand_in, "_run", answered)  # the instance's, not the class's: this call only
    object.__setattr__(stand_in, "_arun", answered_async)
    return stand_in


def _arguments(tool: Any, tool_input: Any) -> Any:
    """The call's arguments as the model gave them: without the arguments LangChain injects."""
    if isinstance(tool_input, dict):
        filtered = getattr(tool, "_filter_injected_args", None)
        return filtered(tool_input) if callable(filtered) else tool_input
    return tool_input


def _content(tool: Any, answer: ToolAnswer, call_id: str | None) -> Any:
    from langchain_core.messages import ToolMessage
    from langchain_core.tools import ToolException

    if answer.miss:
        if call_id is None:
            return answer.error
        return ToolMessage(content=answer.error or "", tool_call_id=call_id, name=tool.name, status="error")
    if answer.error is not None:
        raise answer.exception(Exception, kinds={"ToolException": ToolException})
    if getattr(tool, "response_format", "content") == "content_and_artifact":
        return answer.text, None  # the artifact never reached the model, nor the recording
    return answer.text
