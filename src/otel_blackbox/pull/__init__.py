"""Pulling spans back from a tracing backend's HTTP API, as OTLP/JSON documents `import` stores.

``phoenix_documents`` pages through a Phoenix server's REST span API. Standard library only
(urllib): the analysis commands never load an HTTP client, and none is a runtime dependency.
"""

from __future__ import annotations

from .http_json import PullError
from .phoenix import phoenix_documents

__all__ = ["PullError", "phoenix_documents"]
