"""The OpenAI Agents SDK's seam: ``FunctionTool.on_invoke_tool``.

Every function tool the SDK runs (an agent's own, a handed-off agent's, those of an agent used as a
tool, an MCP server's) is invoked through its ``on_invoke_tool``. While a stubbing session runs,
``FunctionTool`` has a data descriptor by that name: reading the attribute gives the tool's own
invoker wrapped, one wrapper per tool (the SDK compares invokers by identity), and writing it stores
the tool's own, as the dataclass always did. Removing the descriptor leaves every tool as it was.

The wrapper answers from the recording with the text the model was given; a recorded error is
raised again and goes through the tool's failure handler (``failure_error_function``), as the
error it records did. An agent used as a tool is not answered: it runs, so its model calls are
replayed and its own tools answered.
"""

from __future__ import annotations

import inspect
from types import ModuleType
from typing import Any

from otel_blackbox._stubbable import active_stubber

MODULE = "agents.tool"
FRAMEWORK = "openai-agents"
_FIELD = "on_invoke_tool"
_CACHE = "_blackbox_stub_invoker"
_tool_class: type | None = None


def install(module: ModuleType) -> str | None:
    global _tool_class
    tool_class = getattr(module, "FunctionTool", None)
    fields = getattr(tool_class, "__dataclass_fields__", {})
    if not isinstance(tool_class, type) or _FIELD not in fields or _FIELD in vars(tool_class):
        return "no FunctionTool.on_invoke_tool field"
    setattr(tool_class, _FIELD, _InvokerSeam())
    _tool_class = tool_class
    return None


def uninstall() -> None:
    global _tool_class
    if _tool_class is not None and isinstance(vars(_tool_class).get(_FIELD), _InvokerSeam):
        delattr(_tool_class, _FIELD)
    _tool_class = None


class _InvokerSeam:
    """``FunctionTool.on_invoke_tool`` while a stubbing session runs."""

    def __get__(self, tool: Any, owner: type | None = None) -> Any:
        if tool is None:
            return self
        try:
            own = tool.__dict__[_FIELD]
        except KeyError:
            raise AttributeError(_FIELD) from None
        if getattr(tool, "_is_agent_tool", False):
            return own
        cached = tool.__dict__.get(_CACHE)
        if isinstance(cached, _StubbedInvoker) and cached.own is own and cached.tool is tool:
            return cached
        wrapper = _StubbedInvoker(tool, own)
        tool.__dict__[_CACHE] = wrapper
        return wrapper

    def __set__(self, tool: Any, value: Any) -> None:
        tool.__dict__[_FIELD] = value


class _StubbedInvoker:
    """A tool's invoker, answered from the recording; everything else is the tool's own invoker's."""

    def __init__(self, tool: Any, own: Any) -> None:
        self.tool = tool
        self.own = own

    def __getattr__(self, name: str) -> Any:
        return getattr(self.own, name)

    async def __call__(self, ctx: Any, input: str) -> Any:
        stubber = active_stubber()
        if stubber is None:
            return await self.own(ctx, input)
        call_id = getattr(ctx, "tool_call_id", None)
        answer = stubber.answer(self.tool.name, input, call_id, framework=FRAMEWORK)
        if answer.runs:
            return await self.own(ctx, input)
        if answer.error is None:
            return answer.text
        error = answer.exception(Exception)
        handled = await _failure_output(self.tool, ctx, error)
        if handled is None:
            raise error
        return handled


async def _failure_output(tool: Any, ctx: Any, error: Exception) -> Any:
    """What the tool's failure handler makes of ``error`` for the model; None: the error propagates."""
    from agents import tool as sdk_tool

    handler = getattr(sdk_tool, "maybe_invoke_function_tool_failure_error_function", None)
    if handler is not None:
        return await handler(function_tool=tool, context=ctx, error=error)
    formatter = getattr(sdk_tool, "default_tool_error_function", None)  # older SDKs
    if formatter is None:
        return None
    result = formatter(ctx, error)
    return await result if inspect.isawaitable(result) else result
