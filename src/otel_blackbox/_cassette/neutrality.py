"""Provider neutrality: find what a provider, not the format, put into a cassette.

Two levels of strictness, as the TypeScript Blackbox applies them:

* structural places (ids, ``toolCallId``, object keys, ``type`` / ``event`` / ``status``, metadata,
  message roles): provider ids (``toolu_01…``, ``call_…``, ``chatcmpl-…``, ``msg_01…``, ``resp_…``,
  ``fc_…``), provider response keys (``usage``, ``stop_reason``, ``finish_reason``…, and ``id`` inside a
  model_output) and API-key environment-variable names;
* user data (everything below ``toolInput``, ``result``, ``error``, ``inputSchema``, ``text``,
  ``content``, ``systemPrompt``): only realistic credentials, with the patterns of
  :mod:`otel_blackbox._spans.redact`. A tool may legitimately return ``{"usage": 42}`` or source code that
  mentions ``toolu_``; it may not return an API key.

Findings never echo a credential: they show a short prefix and its length.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from otel_blackbox._cassette.model import Cassette
from otel_blackbox._spans.redact import Redactor

__all__ = ["NeutralityFinding", "audit_neutrality", "find_credential"]

FindingKind = Literal["provider-id", "provider-key", "env-var", "credential"]

# Keys whose values are the user's own data; the same set as the TypeScript tool.
USER_DATA_KEYS = frozenset({"toolInput", "result", "error", "inputSchema", "text", "content", "systemPrompt"})

# Keys of raw provider responses (usage accounting, stop metadata), flagged only at structural places.
PROVIDER_KEYS = frozenset(
    {
        "usage", "stop_reason", "stop_sequence", "finish_reason", "system_fingerprint", "logprobs",
        "input_tokens", "output_tokens", "prompt_tokens", "completion_tokens", "total_tokens",
    }
)  # fmt: skip
# A model_output payload holds neutral fields only: an ``id`` there is a provider object's.
MODEL_OUTPUT_KEYS = frozenset({"id"})

# ASCII word boundaries as in JavaScript, so ``send_msg_to_user`` is not an id. Ids need a digit or a
# long run, so a tool named ``toolu_helper`` is not one either; the format's own ids are ``call-N``.
_PROVIDER_IDS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (label, re.compile(rx, re.ASCII))
    for label, rx in (
        ("toolu_", r"\btoolu_[A-Za-z0-9]*\d"),
        ("msg_", r"\bmsg_[A-Za-z0-9]*\d"),
        ("call_", r"\bcall_[A-Za-z0-9]{20,}"),
        ("chatcmpl-", r"\bchatcmpl-[A-Za-z0-9]{8,}"),
        ("resp_", r"\bresp_[A-Za-z0-9]{16,}"),
        ("fc_", r"\bfc_[A-Za-z0-9]{16,}"),
    )
)
_ENV_VAR = re.compile(r"\b[A-Z][A-Z0-9_]*_API_KEY\b", re.ASCII)

_MARKER = re.compile(r"\[REDACTED(?::([a-z-]+))?\]")
_SECRET_RUN = re.compile(r"""[^\s"'@,;)\]}]*""")
_MIN_PLAIN_SECRET = 8  # a masked field or URL password shorter than this is a placeholder, not a secret
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)


@dataclass(frozen=True)
class NeutralityFinding:
    """One provider-specific thing: where it is (step and JSON path) and what it is, shown safely."""

    step_index: int | None
    path: str
    kind: FindingKind
    found: str

    def describe(self) -> str:
        label = {
            "provider-id": "provider id",
            "provider-key": "provider response key",
            "env-var": "API key variable name",
            "credential": "credential",
        }[self.kind]
        return f"{label} {self.found} at {self.path}"


def _common_prefix(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def _masked(secret: str) -> str:
    return f"{secret[: min(6, len(secret) // 4)]}… ({len(secret)} chars)"


def find_credential(text: str, redactor: Redactor | None = None) -> str | None:
    """The first realistic credential in ``text``, as "<kind> <masked prefix>", or None.

    Detection is :meth:`Redactor.redact_text` changing the text; where it changed locates the secret.
    """
    redactor = redactor or Redactor()
    rest = text
    while True:
        redacted = redactor.redact_text(rest)
        if redacted == rest:
            return None
        start = _common_prefix(rest, redacted)
        marker = _MARKER.search(redacted, start)
        kind = (marker.group(1) if marker else None) or "password"
        match = _SECRET_RUN.match(rest, start)
        secret = match.group(0) if match else ""
        placeholder = kind == "password" and len(secret) < _MIN_PLAIN_SECRET
        if not placeholder:
            return f"{kind} {_masked(secret)}"
        rest = rest[start + max(len(secret), 1) :]


def _child_path(path: str, key: str) -> str:
    if _IDENTIFIER.fullmatch(key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key)}]"


def _short(text: str, limit: int = 16) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


class _Audit:
    def __init__(self) -> None:
        self.redactor = Redactor()
        self.findings: list[NeutralityFinding] = []

    def add(self, step: int | None, path: str, kind: FindingKind, found: str) -> None:
        self.findings.append(NeutralityFinding(step, path, kind, found))

    def string(self, text: str, path: str, step: int | None, user_data: bool) -> None:
        if not user_data:
            for label, pattern in _PROVIDER_IDS:
                hit = pattern.search(text)
                if hit:
                    self.add(step, path, "provider-id", f"{label} ({_short(hit.group(0))})")
            env = _ENV_VAR.search(text)
            if env:
                self.add(step, path, "env-var", env.group(0))
        credential = find_credential(text, self.redactor)
        if credential:
            self.add(step, path, "credential", credential)

    def key(self, key: str, path: str, step: int | None, user_data: bool, forbidden: frozenset[str]) -> None:
        if not user_data and (key in PROVIDER_KEYS or key in forbidden):
            self.add(step, path, "provider-key", json.dumps(key))
        self.string(key, path, step, user_data)

    def walk(
        self,
        root: Any,
        root_path: str,
        step: int | None,
        forbidden: frozenset[str] = frozenset(),
        user_data: bool = False,
    ) -> None:
        """Depth-first in document order, without recursion (a payload may be deeply nested)."""
        # Each task: (is_key, value, path, user_data); a key's task runs before its value's.
        tasks: list[tuple[bool, Any, str, bool]] = [(False, root, root_path, user_data)]
        while tasks:
            is_key, value, path, user_data = tasks.pop()
            if is_key:
                self.key(value, path, step, user_data, forbidden)
            elif isinstance(value, str):
                self.string(value, path, step, user_data)
            elif isinstance(value, list):
                tasks.extend(
                    (False, item, f"{path}[{i}]", user_data) for i, item in reversed(list(enumerate(value)))
                )
            elif isinstance(value, dict):
                tasks.extend(_dict_tasks(value, path, user_data))


def _dict_tasks(obj: dict[Any, Any], path: str, user_data: bool) -> Iterator[tuple[bool, Any, str, bool]]:
    for key, child in reversed(list(obj.items())):
        key_text = str(key)
        child_path = _child_path(path, key_text)
        yield (False, child, child_path, user_data or key_text in USER_DATA_KEYS)
        yield (True, key_text, child_path, user_data)


def audit_neutrality(cassette: Cassette) -> list[NeutralityFinding]:
    """Every provider-specific id, key or credential in the cassette, in document order."""
    audit = _Audit()
    shared = _Clean()
    for field, value in (
        ("id", cassette.id),
        ("parentId", cassette.parent_id),
        ("forkedFromStepId", cassette.forked_from_step_id),
    ):
        if isinstance(value, str):
            audit.string(value, f"$.{field}", None, user_data=False)
    for position, step in enumerate(cassette.steps):
        base = f"$.steps[{position}]"
        audit.string(step.id, f"{base}.id", position, user_data=False)
        audit.string(step.type, f"{base}.type", position, user_data=False)
        forbidden = MODEL_OUTPUT_KEYS if step.type == "model_output" else frozenset()
        if step.type == "model_input" and isinstance(step.payload, dict):
            _walk_input(audit, step.payload, f"{base}.payload", position, shared)
        elif _might_have_findings(step.payload, forbidden, audit.redactor):
            audit.walk(step.payload, f"{base}.payload", position, forbidden)
    return audit.findings


def _walk_input(audit: _Audit, payload: dict[Any, Any], path: str, step: int, shared: _Clean) -> None:
    """A model_input member by member, and its messages one by one: a value already found clean at
    an earlier step (the same object: a compact cassette's shared messages, its tools) is not looked
    at again, so a long run costs its messages once, not once per model call. Same findings, same
    order as the walk of the whole payload."""
    for key, value in payload.items():
        key_text = str(key)
        member = _child_path(path, key_text)
        audit.key(key_text, member, step, False, frozenset())
        user_data = key_text in USER_DATA_KEYS
        if key_text == "messages" and isinstance(value, list):
            for i, message in enumerate(value):
                shared.walk(audit, message, f"{member}[{i}]", step, user_data)
        else:
            shared.walk(audit, value, member, step, user_data)


class _Clean:
    """Values walked without a finding, by identity (each kept alive, so that no id is reused)."""

    def __init__(self) -> None:
        self.seen: dict[tuple[int, bool], Any] = {}

    def walk(self, audit: _Audit, value: Any, path: str, step: int, user_data: bool) -> None:
        if (id(value), user_data) in self.seen:
            return
        before = len(audit.findings)
        if _might_have_findings(value, frozenset(), audit.redactor):
            audit.walk(value, path, step, user_data=user_data)
        if len(audit.findings) == before and isinstance(value, (dict, list, str)):
            self.seen[(id(value), user_data)] = value


# Every finding's text appears in the payload's JSON: a provider id's prefix, a provider key as a
# quoted name, an API-key variable's suffix, or what the redactor reacts to.
_SCREEN = re.compile(
    "|".join(
        [*(re.escape(label) for label, _ in _PROVIDER_IDS), "_API_KEY"]
        + [re.escape(f'"{key}"') for key in sorted(PROVIDER_KEYS)]
    )
)


def _might_have_findings(payload: Any, forbidden: frozenset[str], redactor: Redactor) -> bool:
    """A cheap look at the whole payload, so most steps skip the per-value walk."""
    try:
        text = json.dumps(payload, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return True  # odd content: let the walk look at every value
    if _SCREEN.search(text) or redactor.might_redact(text):
        return True
    return any(f'"{key}"' in text for key in forbidden)
