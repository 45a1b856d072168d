"""pydantic-ai's seam: a capability whose ``wrap_tool_execute`` hook answers from the recording.

While a stubbing session runs, ``Agent.iter`` (which ``run``, ``run_sync`` and ``run_stream`` go
through) adds the capability to the run's own ``capabilities``. The hook sees every tool of every
toolset once pydantic-ai has validated its arguments; returning without calling the handler skips
the tool's function. Its own instrumentation (the tool span) is outside the hook and still happens.

A recorded error is raised again (``ModelRetry`` when it was one, so the model is asked again as it
was); a call with no recorded answer raises ``ModelRetry`` naming the call, so the model is told.
Versions without capabilities (before 1.80) get one warning, and their tools run.
"""

from __future__ import annotations

import functools
import inspect
from types import ModuleType
from typing import Any

from otel_blackbox._stubbable import active_stubber

MODULE = "pydantic_ai.agent"
FRAMEWORK = "pydantic-ai"
_agent_class: Any = None
_own_iter: Any = None


def install(module: ModuleType) -> str | None:
    global _agent_class, _own_iter
    agent_class: Any = getattr(module, "Agent", None)
    try:
        from pydantic_ai.capabilities import AbstractCapability
    except ImportError:
        return "no capabilities (pydantic-ai >= 1.80 has them)"
    own_iter = getattr(agent_class, "iter", None)
    if own_iter is None or not hasattr(AbstractCapability, "wrap_tool_execute"):
        return "no wrap_tool_execute capability hook"
    if "capabilities" not in inspect.signature(own_iter).parameters:
        return "Agent.iter takes no capabilities"
    capability = _capability(AbstractCapability)

    @functools.wraps(own_iter)
    def iter(self: Any, *args: Any, capabilities: Any = None, **kwargs: Any) -> Any:
        return own_iter(self, *args, capabilities=[*(capabilities or ()), capability], **kwargs)

    agent_class.iter = iter
    _agent_class, _own_iter = agent_class, own_iter
    return None


def uninstall() -> None:
    global _agent_class, _own_iter
    if _agent_class is not None:
        _agent_class.iter = _own_iter
    _agent_class = _own_iter = None


def _capability(base: type) -> Any:
    from pydantic_ai.exceptions import ModelRetry

    class StubTools(base):  # type: ignore[misc]
        """Answers each tool call from the recording (otel-blackbox --stub-tools)."""

        async def wrap_tool_execute(
            self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any
        ) -> Any:
            stubber = active_stubber()
            if stubber is None:
                return await handler(args)
            arguments = call.args_as_dict() if hasattr(call, "args_as_dict") else args
            answer = stubber.answer(call.tool_name, arguments, call.tool_call_id, framework=FRAMEWORK)
            if answer.runs:
                return await handler(args)
            if answer.miss:
                raise ModelRetry(answer.error or "")
            if answer.error is not None:
                raise answer.exception(Exception, kinds={"ModelRetry": ModelRetry})
            return answer.value

    return StubTools()
