"""Zero-code recording: the ``opentelemetry_pre_instrument`` hook behind ``opentelemetry-instrument``.

``opentelemetry-instrument python agent.py`` configures the SDK (the distro's configurator sets the
global TracerProvider), then calls every ``opentelemetry_pre_instrument`` entry point with no
arguments, then loads the instrumentors. Ours, :func:`pre_instrument`, adds a BlackboxSpanProcessor
to that provider when ``OTEL_BLACKBOX_DB`` is set or ``OTEL_BLACKBOX_ENABLED`` is true, so every span
is on disk from the moment it starts. ``OTEL_BLACKBOX_ENABLED=false`` turns it off either way.
Its settings come from the OTEL_BLACKBOX_* variables, ``OTEL_BLACKBOX_CAPTURE_HTTP=true`` among them:
then the processor also records each HTTP exchange of the program (capture.py).

It adds nothing when ``OTEL_TRACES_EXPORTER`` names ``blackbox``: the user chose the end-only
exporter for that database. It never raises into the host (an exception from a pre-instrument hook
would stop opentelemetry-instrument from loading any instrumentor); when it cannot record it says
why in one warning line on the ``otel_blackbox`` logger.

One recorder per database: if the program then adds its own BlackboxSpanProcessor for the same file
to the same provider, the program's takes over (code wins over the environment, as in BlackboxConfig)
and the auto-added one is flushed and shut down, so no span is written twice. A program that builds
its own TracerProvider keeps it: a span goes through one provider only, so again none is doubled.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from opentelemetry import trace
from opentelemetry.environment_variables import OTEL_TRACES_EXPORTER
from opentelemetry.sdk.environment_variables import (
    OTEL_ATTRIBUTE_COUNT_LIMIT,
    OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT,
    OTEL_SDK_DISABLED,
    OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT,
    OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT,
    OTEL_SPAN_EVENT_COUNT_LIMIT,
)
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider

from otel_blackbox._config import ENV_VARS, BlackboxConfig
from otel_blackbox._recorder.processor import BlackboxSpanProcessor
from otel_blackbox.errors import ConfigError

__all__ = ["AGENT_SPAN_LIMIT", "ENV_ENABLED", "install", "installed", "pre_instrument"]

logger = logging.getLogger("otel_blackbox")

ENV_ENABLED = "OTEL_BLACKBOX_ENABLED"
ENV_DB = "OTEL_BLACKBOX_DB"
_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})
# The SDK keeps 128 attributes and 128 events a span by default and drops the oldest past that: an
# OpenInference model call passes 128 attributes after about 40 messages. Unless the user set the
# limit, the zero-code setup raises each to this (a span's stored attributes are bounded apart, by
# the writer: docs/recording.md, "Size of a span").
AGENT_SPAN_LIMIT = 100_000
# BlackboxConfig names a field when the value parsed but is out of range: map it back to its variable.
_VAR_OF_FIELD = {field: var for var, (field, _doc) in ENV_VARS.items()}


@dataclass
class _Auto:
    processor: BlackboxSpanProcessor
    path: str
    retired: bool = False


_lock = threading.Lock()
_by_provider: weakref.WeakKeyDictionary[TracerProvider, _Auto] = weakref.WeakKeyDictionary()


def pre_instrument() -> None:
    """The ``opentelemetry_pre_instrument`` entry point: opentelemetry-instrument calls it, no arguments."""
    install()


def install(
    tracer_provider: trace.TracerProvider | None = None, environ: Mapping[str, str] | None = None
) -> BlackboxSpanProcessor | None:
    """Add a BlackboxSpanProcessor to ``tracer_provider`` (default: the global one) if the environment asks.

    Returns the processor added (or added by an earlier call), None when there is nothing to do or
    it cannot record; the latter is logged as one warning line. Never raises.
    """
    env = os.environ if environ is None else environ
    try:
        return _install(tracer_provider, env)
    except ConfigError as exc:
        logger.warning("otel-blackbox: not recording: %s", _name_variable(str(exc), env))
    except Exception as exc:  # the host program comes first: one line, no traceback
        logger.warning("otel-blackbox: not recording: %s: %s", type(exc).__name__, exc)
    return None


def installed(tracer_provider: trace.TracerProvider | None = None) -> BlackboxSpanProcessor | None:
    """The processor install() added to this provider (default: the global one) while it is recording.

    None if it never added one, or if the program's own BlackboxSpanProcessor took its place.
    """
    provider = tracer_provider or trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        return None
    with _lock:
        auto = _by_provider.get(provider)
        return auto.processor if auto is not None and not auto.retired else None


def _install(
    tracer_provider: trace.TracerProvider | None, env: Mapping[str, str]
) -> BlackboxSpanProcessor | None:
    if not _wanted(env):
        return None
    if "blackbox" in [name.strip().lower() for name in env.get(OTEL_TRACES_EXPORTER, "").split(",")]:
        logger.debug("otel-blackbox: OTEL_TRACES_EXPORTER selects the blackbox exporter; no processor added")
        return None
    # Validate before looking at the provider: a bad value is worth reporting whatever else is wrong.
    config = BlackboxConfig.from_env(env)
    if env.get(OTEL_SDK_DISABLED, "").strip().lower() == "true":
        logger.warning(
            "otel-blackbox: not recording: %s=true turns the OpenTelemetry SDK off", OTEL_SDK_DISABLED
        )
        return None
    provider = tracer_provider or trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        logger.warning(
            "otel-blackbox: not recording: the tracer provider is a %s, not an OpenTelemetry SDK "
            "TracerProvider (install opentelemetry-distro, or add BlackboxSpanProcessor in code)",
            type(provider).__name__,
        )
        return None
    _fit_span_limits(provider, env)
    with _lock:
        auto = _by_provider.get(provider)
        if auto is not None:  # called twice: one recorder is enough
            return None if auto.retired else auto.processor
        processor = BlackboxSpanProcessor(config=config)
        _by_provider[provider] = _Auto(processor, _resolved(config.db_path))
    _watch_additions(provider)
    try:
        provider.add_span_processor(processor)
    except BaseException:
        with _lock:
            _by_provider.pop(provider, None)
        processor.shutdown()  # its writer thread must not outlive a failed install
        raise
    return processor


def _fit_span_limits(provider: TracerProvider, env: Mapping[str, str]) -> None:
    """Raise the SDK's attribute and event limits to AGENT_SPAN_LIMIT where the user set none; say
    once when a value length limit is set (it cuts values and counts nothing).

    The provider read its limits from the environment when the distro created it, before this hook
    runs: its SpanLimits object, which every tracer it hands out shares, is changed in place, so the
    spans started from now on get the new limits.
    """
    limits = getattr(provider, "_span_limits", None)
    if limits is None:  # not the SDK's TracerProvider as we know it: leave it as it is
        return
    for field, settings in (
        ("max_span_attributes", (OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT, OTEL_ATTRIBUTE_COUNT_LIMIT)),
        ("max_events", (OTEL_SPAN_EVENT_COUNT_LIMIT,)),
    ):
        value = getattr(limits, field, None)  # None: no limit at all
        if not any(name in env for name in settings) and isinstance(value, int) and value < AGENT_SPAN_LIMIT:
            setattr(limits, field, AGENT_SPAN_LIMIT)
    if getattr(limits, "max_span_attribute_length", None) is not None:
        logger.warning(
            "otel-blackbox: %s / %s is %s: the SDK cuts longer attribute values (messages among "
            "them) and counts nothing; unset it to record them whole",
            OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT,
            OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT,
            limits.max_span_attribute_length,
        )


def _wanted(env: Mapping[str, str]) -> bool:
    enabled = env.get(ENV_ENABLED, "").strip().lower()
    if enabled in _FALSE:
        return False
    if enabled and enabled not in _TRUE:
        raise ConfigError(f"{ENV_ENABLED}: expected true or false, got {env[ENV_ENABLED].strip()!r}")
    return enabled in _TRUE or bool(env.get(ENV_DB, "").strip())


def _watch_additions(provider: TracerProvider) -> None:
    """Wrap this provider's add_span_processor so the program's own recorder can take over."""
    add = provider.add_span_processor

    def add_span_processor(span_processor: SpanProcessor) -> None:
        # The newcomer goes in first, so no span ends while neither processor is listening.
        add(span_processor)
        if isinstance(span_processor, BlackboxSpanProcessor):
            _maybe_retire(provider, span_processor)

    provider.add_span_processor = add_span_processor  # type: ignore[method-assign]


def _maybe_retire(provider: TracerProvider, newcomer: BlackboxSpanProcessor) -> None:
    try:
        with _lock:
            auto = _by_provider.get(provider)
            if auto is None or auto.retired or newcomer is auto.processor:
                return
            if _resolved(newcomer.config.db_path) != auto.path:
                return  # another file: the program asked for a second copy, it gets one
            auto.retired = True
        # Writes what it has queued (open rows never overwrite the newcomer's final ones), then
        # ignores spans: on_start / on_end return at once after shutdown.
        auto.processor.shutdown()
        logger.debug(
            "otel-blackbox: the program's BlackboxSpanProcessor for %s replaces the auto one", auto.path
        )
    except Exception as exc:  # never fail the program's add_span_processor call
        logger.warning(
            "otel-blackbox: could not retire the auto-added processor: %s: %s", type(exc).__name__, exc
        )


def _resolved(path: str | Path) -> str:
    return os.path.realpath(os.fspath(path))


def _name_variable(message: str, env: Mapping[str, str]) -> str:
    field, sep, rest = message.partition(":")
    var = _VAR_OF_FIELD.get(field)
    if sep and var is not None and var in env:
        return f"{var}:{rest}"
    return message
