"""The shapes every package shares."""

from __future__ import annotations

from typing import Any

__all__ = ["JsonObject"]

JsonObject = dict[str, Any]  # a JSON object, as json.loads gives it
