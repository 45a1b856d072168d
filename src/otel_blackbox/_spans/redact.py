"""Masking of credentials and bounding of huge values, applied before anything is persisted.

Runs on the writer thread (never on the agent's), over span attributes, event attributes and the
resource. Three rules:

* a value that looks like a credential (OpenAI / Anthropic keys, bearer tokens, AWS access key ids,
  GitHub tokens, JWTs, passwords in URLs, or a user regex) is replaced by ``[REDACTED:<kind>]``; an
  attribute or JSON field whose name is a secret's (``password``, ``api_key``, ``authorization``...
  plus the user's names) is masked whole, and so is the value given to such a name in text
  (``aws_secret_access_key = ...``, ``Authorization: Basic ...``, ``?api_key=...``) or in JSON held
  inside a JSON string (a request body's tool arguments);
* the PII masks the user turned on (``pii``: e-mail addresses, card numbers, phone numbers, IBANs;
  none by default, pii.py) replace what they match by ``[REDACTED:<kind>]``, after the credential
  rules, wherever those run, and independently of ``enabled``;
* a value larger than ``max_bytes`` becomes a JSON truncation marker that keeps the original size
  and the SHA-256 of the original, so two huge values can still be compared.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from otel_blackbox._spans.pii import PiiMasks

if TYPE_CHECKING:
    from otel_blackbox._config import BlackboxConfig

__all__ = ["DEFAULT_SECRET_FIELDS", "TRUNCATION_KEY", "Redactor", "redactor_for"]

TRUNCATION_KEY = "blackbox.truncated"
_HEAD_CHARS = 1024
_MIN_SECRET_LEN = 8  # no pattern below matches a shorter string: skip the regex entirely

DEFAULT_SECRET_FIELDS = (
    "password", "passwd", "secret", "client_secret", "api_key", "apikey", "x_api_key", "api_token",
    "authorization", "proxy_authorization", "access_token", "refresh_token", "id_token", "auth_token",
    "cookie", "set_cookie", "private_key", "aws_secret_access_key", "secret_access_key", "secret_key",
    "passphrase",
)  # fmt: skip
# A name is also a secret's when it ends in _<one of the names> (db_password, openai_api_key,
# x-goog-api-key) or in _token (hf_token, github_token, slack_bot_token). The plural _tokens is a
# count (prompt_tokens), and "token" alone is too often a word of prose: neither is masked.
_SECRET_SUFFIXES = ("_token",)

# (kind, regex). Order matters: the Anthropic rule must win over the generic OpenAI one.
_BUILTIN_PATTERNS: tuple[tuple[str, str], ...] = (
    ("anthropic-key", r"\bsk-ant-[A-Za-z0-9_\-]{16,}"),
    ("openai-key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}"),
    ("bearer", r"(?i:bearer)\s+[A-Za-z0-9\-._~+/]{8,}=*"),
    ("aws-key", r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b"),
    ("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}"),
    ("url-password", r"(?<=://)[^/\s:@]+:[^/\s@]+@"),
    # An API key given in a URL's query (Google's APIs take ?key=...): the value only.
    ("url-key", r"(?<=[?&]key=)[^&#\s\"'<>]{8,}"),
)


# "key": "string value" in JSON text; the key's name decides whether the value is masked.
_JSON_STRING_PAIR = re.compile(r'"([^"\\]{1,200})"(\s*:\s*)"(?:[^"\\]|\\.)*"')
# The same pair in JSON text that is itself inside a JSON string (tool arguments in a request body):
# each quote is \" there, and each escape of the inner string is \\ followed by the escaped character.
_ESCAPED_STRING_PAIR = re.compile(
    r'\\"([^"\\]{1,200})\\"(\s*:\s*)\\"(?:[^"\\]|\\\\(?:\\["\\]|[^"\\])|\\u[0-9a-fA-F]{4})*\\"'
)
# name = value, name: value in plain text (ini and env files, YAML, headers, query strings, a
# Python repr); the name decides. The value is a quoted string, or a run without spaces that
# includes an authorization scheme. A name followed by a double quote is JSON's: left to the rules
# above, which keep the JSON valid; a value a pattern already masked (Bearer [REDACTED:bearer]) stays.
# (?=(name))\1 takes each word whole, once (an atomic group, which Python 3.10 lacks): without it
# every word of the text is backtracked through, a few times slower.
_SCHEME = r"(?i:bearer|basic|token|digest)\s+"
_ASSIGNMENT = re.compile(
    r"(?<![\w.\-])(?=([A-Za-z][\w.\-]{0,100}))\1('?\s*[:=]\s*)"
    rf"(?:\"([^\"\n]*)\"|'([^'\n]*)'|(?!{_SCHEME}\[)((?:{_SCHEME})?[^\s\"'`,;&<>()\[\]{{}}]+))"
)

# A Cookie: header line in text holds several name=value pairs (session=..., csrftoken=...): the
# whole value is masked, up to the end of the line, a double quote or a backslash (a cookie holds
# neither), so in JSON text the mask ends where the string or its line does and the JSON stays valid.
_COOKIE_LINE = re.compile(r"(?im)(?<![\w.\-])((?:set[-_])?cookie[ \t]*:[ \t]*)(?![\"'\[ \t])[^\r\n\"\\]+")


def _fragment(field: str) -> str:
    """The part of a secret field name that any spelling of it contains (api_key -> key)."""
    return field.rsplit("_", 1)[-1]


def _normalize_field(name: str) -> str:
    return name.rsplit(".", 1)[-1].strip().lower().replace("-", "_")


# Every built-in credential pattern matches only text containing one of these literals (case as
# written: keys and tokens have a fixed case; "bearer" is checked in its three usual spellings).
# One scan for them is several times cheaper than the full patterns, and most text has none.
_TRIGGERS = (
    "sk-", "eyJ", "://", "bearer", "Bearer", "BEARER", "AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA",
    "ANVA", "AIPA", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "key=",
)  # fmt: skip
_FIELD_CACHE_MAX = 10_000
# Texts this long are redacted once and remembered (a conversation repeats its messages on every
# model call), up to _MEMO_MAX_CHARS characters remembered at a time.
_MEMO_MIN_CHARS = 256
_MEMO_MAX_CHARS = 16 * 1024 * 1024


class Redactor:
    """Applies the masking and size rules; one instance per processor, used by one thread."""

    def __init__(
        self,
        *,
        enabled: bool = True,
        patterns: Iterable[str] = (),
        fields: Iterable[str] = (),
        max_bytes: int = 256 * 1024,
        pii: Iterable[str] = (),
    ) -> None:
        self.enabled = enabled
        pii = tuple(pii)
        # None when no PII mask is on: then nothing of pii.py runs.
        self._pii = PiiMasks(pii) if pii else None
        self.max_bytes = max_bytes
        self._kinds = [kind for kind, _ in _BUILTIN_PATTERNS]
        self._values = re.compile("|".join(f"(?P<g{i}>{rx})" for i, (_, rx) in enumerate(_BUILTIN_PATTERNS)))
        # User patterns cannot be prefiltered: they run on every string.
        custom = [f"(?:{p})" for p in patterns]
        self._custom = re.compile("|".join(custom)) if custom else None
        self._fields = frozenset({*DEFAULT_SECRET_FIELDS, *(_normalize_field(f) for f in fields)})
        self._suffixes = tuple(sorted({*(f"_{f}" for f in self._fields), *_SECRET_SUFFIXES}))
        # What any secret's name contains, spelt as is_secret_field reads it: text without one has none.
        self._name_needles = tuple(sorted({*self._fields, *_SECRET_SUFFIXES}))
        self._field_cache: dict[str, bool] = {}
        self._memo: dict[str, str] = {}  # long texts redacted, as a conversation repeats them
        self._memo_chars = 0
        # Each needle contains one of these (lower-cased): JSON text without any skips the pair scan.
        self._field_fragments = tuple(sorted({_fragment(f) for f in self._name_needles}))
        self._trigger = re.compile("|".join(re.escape(t) for t in _TRIGGERS))

    # -- strings ---------------------------------------------------------------------------------

    def _mask(self, match: re.Match[str]) -> str:
        kind = self._kinds[int(match.lastgroup[1:])] if match.lastgroup else "secret"
        if kind == "bearer":
            return "Bearer [REDACTED:bearer]"
        if kind == "url-password":
            return match.group(0).split(":", 1)[0] + ":[REDACTED]@"
        return f"[REDACTED:{kind}]"

    def redact_text(self, text: str) -> str:
        if len(text) < _MEMO_MIN_CHARS:
            return self._redact_text(text)
        # A long conversation sends its messages again on every model call: each is read once.
        done = self._memo.get(text)
        if done is None:
            done = self._redact_text(text)
            self._memo_chars += len(text)
            if self._memo_chars > _MEMO_MAX_CHARS:
                self._memo.clear()
                self._memo_chars = len(text)
            self._memo[text] = done
        return done

    def _redact_text(self, text: str) -> str:
        if not self.enabled or len(text) < _MIN_SECRET_LEN:
            return text if self._pii is None else self._pii.mask(text)
        if self._custom is not None:
            text = self._custom.sub("[REDACTED:custom]", text)
        if self._trigger.search(text) is not None:
            text = self._values.sub(self._mask, text)
        json_text = '"' in text
        assigns = ":" in text or "=" in text
        if (json_text or assigns) and self._names_a_field(text):  # values given to a secret's name
            if json_text:
                text = _JSON_STRING_PAIR.sub(self._mask_pair, text)
                if '\\"' in text:
                    text = _ESCAPED_STRING_PAIR.sub(self._mask_escaped_pair, text)
            if assigns:
                if "cookie" in text.lower():
                    text = _COOKIE_LINE.sub(r"\1[REDACTED]", text)
                text = _ASSIGNMENT.sub(self._mask_assignment, text)
        if self._pii is not None:
            text = self._pii.mask(text)
        return text

    def _names_a_field(self, text: str) -> bool:
        """Whether a secret field's name may be in ``text``: a cheap look for the fragments every
        name holds, then for the names themselves, spelt as is_secret_field reads them."""
        lowered = text.lower()
        if not any(fragment in lowered for fragment in self._field_fragments):
            return False
        normalized = lowered.replace("-", "_")
        return any(name in normalized for name in self._name_needles)

    def _mask_pair(self, match: re.Match[str]) -> str:
        if self.is_secret_field(match.group(1)):
            return f'"{match.group(1)}"{match.group(2)}"[REDACTED]"'
        return match.group(0)

    def _mask_escaped_pair(self, match: re.Match[str]) -> str:
        if self.is_secret_field(match.group(1)):
            return f'\\"{match.group(1)}\\"{match.group(2)}\\"[REDACTED]\\"'
        return match.group(0)

    def _mask_assignment(self, match: re.Match[str]) -> str:
        double, single, bare = match.group(3, 4, 5)
        value = next(v for v in (double, single, bare) if v is not None)
        if value.startswith("[REDACTED") or not self.is_secret_field(match.group(1)):
            return match.group(0)
        quote = '"' if double is not None else "'" if single is not None else ""
        return f"{match.group(1)}{match.group(2)}{quote}[REDACTED]{quote}"

    def might_redact(self, text: str) -> bool:
        """False only when ``redact_text`` would leave ``text`` as it is; cheap, for prefilters.

        Also holds for JSON text that *contains* strings: their escaped quotes keep every trigger
        and field fragment visible.
        """
        if self._pii is not None and self._pii.might_mask(text):
            return True
        if not self.enabled or len(text) < _MIN_SECRET_LEN:
            return False
        if self._custom is not None or self._trigger.search(text) is not None:
            return True
        return ('"' in text or ":" in text or "=" in text) and self._names_a_field(text)

    def is_secret_field(self, name: str) -> bool:
        if not self.enabled:
            return False
        hit = self._field_cache.get(name)
        if hit is None:
            if len(self._field_cache) >= _FIELD_CACHE_MAX:
                self._field_cache.clear()
            normalized = _normalize_field(name)
            hit = self._field_cache[name] = normalized in self._fields or normalized.endswith(self._suffixes)
        return hit

    # -- attribute values ------------------------------------------------------------------------

    def bounded(self, value: Any) -> Any:
        """Replace a value over max_bytes by its truncation marker (a JSON string)."""
        if isinstance(value, str):
            if len(value) * 4 <= self.max_bytes:  # cannot be over the limit: skip the encode
                return value
            raw = value.encode("utf-8", "surrogatepass")
            head = value[:_HEAD_CHARS]
        elif isinstance(value, (list, tuple)) and value and isinstance(value[0], str):
            if sum(len(v) for v in value if isinstance(v, str)) * 4 <= self.max_bytes:
                return value
            raw = json.dumps(list(value), ensure_ascii=False).encode("utf-8", "surrogatepass")
            head = raw[: _HEAD_CHARS * 4].decode("utf-8", "ignore")[:_HEAD_CHARS]
        else:
            return value
        if len(raw) <= self.max_bytes:
            return value
        marker = {
            TRUNCATION_KEY: True,
            "original_bytes": len(raw),
            "sha256": hashlib.sha256(raw).hexdigest(),
            "head": self.redact_text(head),
        }
        return json.dumps(marker, ensure_ascii=False)

    def value(self, key: str, value: Any) -> Any:
        if self.is_secret_field(key):
            return "[REDACTED]"
        if isinstance(value, (bool, int, float)):  # the common case: nothing to bound or mask
            return value if self._pii is None else self.number(value)
        value = self.bounded(value)
        if isinstance(value, str):
            return self.redact_text(value)
        if isinstance(value, (list, tuple)):
            return [self.redact_text(v) if isinstance(v, str) else v for v in value]
        return value

    def number(self, value: Any) -> Any:
        """A number as stored: a whole number that is a card number masked (the card mask on)."""
        if self._pii is not None and type(value) is int:
            return self._pii.number(value)
        return value

    def attributes(self, attributes: Mapping[str, Any] | None) -> dict[str, Any]:
        if not attributes:
            return {}
        return {key: self.value(key, val) for key, val in attributes.items()}


def redactor_for(config: BlackboxConfig) -> Redactor:
    """The Redactor of a configuration, as the writer applies it to every stored span."""
    return Redactor(
        enabled=config.redact,
        patterns=config.redact_patterns,
        fields=config.redact_fields,
        max_bytes=config.max_attribute_bytes,
        pii=config.redact_pii,
    )
