"""The local web viewer over the span database (``otel-blackbox ui``)."""
