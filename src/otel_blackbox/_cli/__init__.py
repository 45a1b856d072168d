"""The commands of ``otel-blackbox`` (its entry point is ``otel_blackbox.cli.main``): thin commands
that parse, call the library, and print. ``app`` is the group; each command's module is imported
when that command runs (``app.COMMANDS``)."""
