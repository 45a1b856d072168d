"""The official SDKs the built-in agent calls, one client per API, behind one small interface.

Each client sends a request body (``WireRequest.body``) through its SDK, so the SDK's own retries,
streaming and errors are the ones a program would meet, and returns once the whole response has
been read (a stream consumed to its end and closed): by then the session has seen the exchange and
knows the neutral output. An error response raises the SDK's own exception. Credentials and the
base URL come from the SDK's own environment variables, or ``base_url``; a key is never passed
anywhere else.

The SDKs are an optional extra (``pip install 'otel-blackbox[agent]'``): a missing one is
``MissingSDK``, whose message names the pip command.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import socket
from collections.abc import Mapping
from typing import Protocol

from otel_blackbox._types import JsonObject
from otel_blackbox._urls import http_url
from otel_blackbox._wire.apis import SDK_PACKAGES
from otel_blackbox.errors import BlackboxError, MissingSDK

__all__ = ["ModelClient", "available_apis", "make_client"]


EXTRA = "otel-blackbox[agent]"
_CONNECT_TIMEOUT_S = 10.0
# The importable module of each API's SDK, and the variables its client starts from (a key or a base URL).
_SDK_MODULES = {"openai": "openai", "anthropic": "anthropic", "google-genai": "google.genai"}
_SDK_VARIABLES = {
    "openai-chat": ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "openai-responses": ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"),
    "gemini": ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENAI_USE_VERTEXAI"),
}


class ModelClient(Protocol):
    def send(self, body: JsonObject, *, model: str, stream: bool) -> None:
        """One model call through the SDK; returns once the response was read whole (SDK errors raise)."""

    def close(self) -> None:
        """Let go of the SDK client's connections."""


def available_apis(environ: Mapping[str, str] | None = None) -> list[str]:
    """The APIs the built-in agent can call from here: the SDK installed, and a key or a base URL set
    in ``environ`` (default: this process's) for it to start from. Only names: never a value."""
    env = os.environ if environ is None else environ
    found = []
    for api, variables in _SDK_VARIABLES.items():
        module = _SDK_MODULES[SDK_PACKAGES[api]]
        try:
            installed = importlib.util.find_spec(module) is not None
        except ImportError:  # google.genai's parent package is missing
            installed = False
        if installed and any(env.get(name) for name in variables):
            found.append(api)
    return found


def make_client(api: str, *, base_url: str | None) -> ModelClient:
    """The client of ``api`` (one of API_NAMES); MissingSDK when its SDK is not installed."""
    module, factory = {
        "openai-chat": ("sdk_openai", "ChatClient"),
        "openai-responses": ("sdk_openai", "ResponsesClient"),
        "anthropic": ("sdk_anthropic", "AnthropicClient"),
        "gemini": ("sdk_gemini", "GeminiClient"),
    }[api]
    try:
        loaded = importlib.import_module(f"{__package__}.{module}")
    except ImportError as exc:
        package = SDK_PACKAGES[api]
        raise MissingSDK(
            f"the built-in agent needs the {package} SDK for --provider {api} ({exc.name or package} is not "
            f"installed): pip install '{EXTRA}'"
        ) from None
    try:
        client: ModelClient = getattr(loaded, factory)(base_url=base_url)
    except Exception as exc:  # the SDK refuses to start: no API key set, a malformed base URL
        raise BlackboxError(f"--provider {api}: the {SDK_PACKAGES[api]} SDK could not start: {exc}") from None
    if base_url is not None:
        try:
            _check_listening(base_url)
        except BlackboxError:
            client.close()
            raise
    return client


def _check_listening(base_url: str) -> None:
    """A --base-url nothing listens at is refused before any call (exit 2), as a missing key is,
    instead of a connection error after the SDK's retries."""
    try:
        parts = http_url(base_url)
    except ValueError as exc:
        raise BlackboxError(f"--base-url: {exc}") from None
    host, port = parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((host, port), timeout=_CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise BlackboxError(f"--base-url {base_url}: nothing answers at {host}:{port} ({reason})") from None
