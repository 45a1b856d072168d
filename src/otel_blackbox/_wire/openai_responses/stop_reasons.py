"""An incomplete response's reason as reading and writing one both name it: the table between
``incomplete_details.reason`` and the neutral ``stopReason``, and the ``stopReason`` of an incomplete
response whose details name no reason.
"""

from __future__ import annotations

__all__ = ["NO_REASON", "STOP_REASONS"]

# incomplete_details.reason <-> the neutral stopReason; any other reason is kept as sent.
STOP_REASONS = {"max_output_tokens": "max_tokens", "content_filter": "content_filter"}
NO_REASON = "incomplete"  # an incomplete response whose details name no reason
