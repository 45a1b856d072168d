"""The Collector example of docs/scaling.md: ``side_by_side`` (importable) and ``otel-collector.yaml``."""
