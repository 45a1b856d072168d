"""What a tool returned, from the output value its span records."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["tool_output"]


def tool_output(value: Any) -> Any:
    """The tool's own result from a TOOL span's ``output.value``.

    LangChain's instrumentation records the ``ToolMessage`` LangChain made of the result, serialized
    (``{"type": "tool", "data": {"content": ..., "tool_call_id": ...}}``); its content is what the
    tool returned and what the model was sent. Any other value is the result itself.
    """
    if not isinstance(value, str) or not value.startswith("{"):
        return value
    try:
        parsed = json.loads(value)
    except ValueError:
        return value
    data = parsed.get("data") if isinstance(parsed, dict) else None
    if (
        parsed.get("type") == "tool"
        and isinstance(data, dict)
        and data.get("type") == "tool"
        and "content" in data
    ):
        return data["content"]
    return value
