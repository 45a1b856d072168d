"""OTLP in: OTLP/JSON documents and OTLP/protobuf requests decoded into the store's span snapshots
(``decoder``), read from files by ``documents``."""
