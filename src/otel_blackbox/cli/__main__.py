"""``python -m otel_blackbox.cli``."""

from .app import main

main()
