"""A recorded trace's stored spans as a cassette (``cassette.cassette_from_spans``); the modules
beside it read what each kind of span holds."""
