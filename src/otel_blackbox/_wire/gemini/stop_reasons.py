"""The neutral ``stopReason`` of a prompt Gemini blocked outright, as reading and writing a response
both name it: ``prompt_blocked:<blockReason>``.
"""

from __future__ import annotations

__all__ = ["BLOCKED"]

BLOCKED = "prompt_blocked:"  # the stopReason of a prompt blocked outright, before its blockReason
