"""What the workbench shows and writes holds no secret of its process: the one home of its masking.

A secret is the value of one of this process's ``*KEY*`` / ``*TOKEN*`` / ``*SECRET*`` /
``*PASSWORD*`` / ``*CREDENTIAL*`` variables (six characters or more), a URL's credentials, or what
the redactor's patterns (``OTEL_BLACKBOX_REDACT_*``) find. The database may hold such a value (it was
recorded before the key was set, or under other settings): so the spans a page or a workspace file is
made from are masked when they are read (``mask_spans``), a job's lines and records as they come
(``masked``), and every answer's body once more as it is sent (``mask_page``: the literal values and
URL credentials only, which cannot break the page's markup or script).
"""

from __future__ import annotations

import dataclasses
import functools
import html
import json
import os
import re
from collections.abc import Iterable
from typing import Any

from otel_blackbox._config import BlackboxConfig
from otel_blackbox._spans.redact import Redactor, redactor_for
from otel_blackbox._store.queries import SpanRecord

__all__ = ["ENV_MASK", "mask", "mask_page", "mask_spans", "masked"]

ENV_MASK = "[REDACTED:env]"
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)", re.IGNORECASE)
_URL_CREDENTIALS = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s@]+@")
_PAGE_URL_CREDENTIALS = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s@<>\"'&]+@")  # within an attribute
_MIN_SECRET = 6


def _secret_values() -> list[str]:
    """The values of this process's secret variables, longest first (one inside another: the whole)."""
    found = {
        value for name, value in os.environ.items() if _SECRET_NAME.search(name) and len(value) >= _MIN_SECRET
    }
    return sorted(found, key=len, reverse=True)


def _replace_values(text: str, spellings: Iterable[str]) -> str:
    for value in spellings:
        if value in text:
            text = text.replace(value, ENV_MASK)
    return text


def mask(text: str) -> str:
    """``text`` fit for a page or a file: no secret variable's value, no URL credentials, the
    redactor applied."""
    text = _replace_values(text, _secret_values())
    text = _URL_CREDENTIALS.sub(r"\1[REDACTED]@", text)
    settings = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("OTEL_BLACKBOX_REDACT")))
    return _redactor(settings).redact_text(text)


@functools.lru_cache(maxsize=4)
def _redactor(_settings: tuple[tuple[str, str], ...]) -> Redactor:
    """The redactor of these OTEL_BLACKBOX_REDACT_* settings, made once (they rarely change)."""
    return redactor_for(BlackboxConfig.from_env())


def masked(value: Any) -> Any:
    """A JSON-like value with every string in it (keys kept) masked."""
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        return {k: masked(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [masked(v) for v in value]
    return value


def mask_spans(spans: list[SpanRecord]) -> list[SpanRecord]:
    """Copies of the spans with their content masked (names, status, attributes, events, links,
    resource, the log records joined to them); ids, times and counts kept."""
    return [
        dataclasses.replace(
            span,
            name=mask(span.name),
            status_message=None if span.status_message is None else mask(span.status_message),
            attributes=masked(span.attributes),
            events=masked(span.events),
            links=masked(span.links),
            resource=masked(span.resource),
            logs=masked(span.logs),
            view=None,  # what the span means is read again, from the masked content
        )
        for span in spans
    ]


def mask_page(body: str) -> str:
    """A page or a JSON answer as it is sent: each secret value (as written, HTML-escaped or
    JSON-escaped) and each URL's credentials masked; the markup and the script left whole."""
    values = _secret_values()
    if values:
        spellings: dict[str, None] = {}
        for value in values:
            spellings[value] = None
            spellings[html.escape(value)] = None
            spellings[json.dumps(value)[1:-1]] = None
            spellings[json.dumps(value, ensure_ascii=False)[1:-1]] = None
        body = _replace_values(body, spellings)
    if "://" in body:
        body = _PAGE_URL_CREDENTIALS.sub(r"\1[REDACTED]@", body)
    return body
