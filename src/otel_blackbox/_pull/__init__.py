"""Pulling spans back from a tracing backend's HTTP API, as OTLP/JSON documents `import` stores.

``phoenix_documents`` pages through a Phoenix server's REST span API. Standard library only
(urllib): the analysis commands never load an HTTP client, and none is a runtime dependency.
"""

from __future__ import annotations

from otel_blackbox._pull.phoenix import phoenix_documents

__all__ = ["phoenix_documents"]
