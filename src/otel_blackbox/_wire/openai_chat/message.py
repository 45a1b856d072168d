"""What a Chat assistant message holds besides its plain text, as a request's history and a
response's choices both carry it: its text and its refusal apart (``texts_and_refusal``), the
deprecated functions API's ``function_call`` (``LEGACY``), and the web-search annotations, which the
neutral payloads hold as the ``web_search`` hosted tool (``WEB_SEARCH``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["LEGACY", "WEB_SEARCH", "texts_and_refusal"]

LEGACY = "function_call"  # the deprecated functions API's finish reason and message field
WEB_SEARCH = "web_search"  # the hosted tool whose results are a message's annotations


def texts_and_refusal(content: Any) -> tuple[str, str]:
    """An assistant message's text and its refusal apart: the string itself, or the text parts and
    the refusal parts of a list, each joined (``text_of`` folds refusals into the text)."""
    if isinstance(content, str):
        return content, ""
    text: list[str] = []
    refusal: list[str] = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and part.get("type") in ("text", "input_text", "output_text"):
            text.append(str(part.get("text", "")))
        elif isinstance(part, dict) and part.get("type") == "refusal":
            refusal.append(str(part.get("refusal", "")))
    return "".join(text), "".join(refusal)
