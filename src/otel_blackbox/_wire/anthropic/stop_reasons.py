"""The stop reasons of an Anthropic message that ends as its blocks say (its turn done, or its tool
uses): reading a response keeps no ``stopReason`` for them, and writing one sends them when the
output names none.
"""

from __future__ import annotations

__all__ = ["DEFAULT_STOPS"]

DEFAULT_STOPS = ("end_turn", "tool_use")
