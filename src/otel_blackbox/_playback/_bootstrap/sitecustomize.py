"""Loaded by Python at start-up in a program run by ``otel-blackbox record|replay -- CMD``."""

from otel_blackbox._playback.launch import bootstrap_from_env

bootstrap_from_env()
