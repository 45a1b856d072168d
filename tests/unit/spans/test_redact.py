"""Redaction before persistence: credentials, secret fields, user patterns, the size marker."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

import pytest
from helpers import Recorder, fuzz_examples
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_blackbox._spans.redact import TRUNCATION_KEY, Redactor

# Realistic shapes; none is a live credential.
SECRETS = {
    "openai-key": "sk-abcdefghijklmnopqrstuvwxyz0123456789ABCD",
    "openai-project-key": "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
    "anthropic-key": "sk-ant-api03-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAA",
    "bearer": "Bearer eyJhbGciOiJIUzI1NiJ9abcdefgh12345678",
    "aws-key": "AKIAIOSFODNN7EXAMPLE",
    "github-token": "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "jwt": (
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"
        ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
    ),
    "url-password": "postgres://admin:hunter2secret@db.internal:5432/prod",
    "url-key": "https://generativelanguage.googleapis.com/v1beta/models?key=AIzaSyD3mo-Ex4mple_K3y0123456789abcdef",
}
SECRET_CORES = [
    "abcdefghijklmnopqrstuvwxyz0123456789ABCD",
    "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
    "eyJhbGciOiJIUzI1NiJ9abcdefgh12345678",
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "hunter2secret",
    "AIzaSyD3mo-Ex4mple_K3y0123456789abcdef",
]


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_credential_shape_is_masked(kind: str) -> None:
    text = f"calling with {SECRETS[kind]} now"
    masked = Redactor().redact_text(text)
    assert "[REDACTED" in masked and masked.startswith("calling with ") and masked.endswith(" now")
    for core in SECRET_CORES:
        assert core not in masked


def test_a_key_in_a_url_query_is_masked_and_the_url_kept() -> None:
    redactor = Redactor()
    url = "http://127.0.0.1:9/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&key=AIzaSy-0123456789&x=1"
    assert redactor.redact_text(url) == (
        "http://127.0.0.1:9/v1beta/models/gemini-2.5-flash:streamGenerateContent"
        "?alt=sse&key=[REDACTED:url-key]&x=1"
    )
    assert redactor.redact_text("/models?key=AIzaSy-0123456789") == "/models?key=[REDACTED:url-key]"
    for text in ("/search?monkey=bananas123", "primary key=12345678", "/models?key=short"):
        assert redactor.redact_text(text) == text


def test_ordinary_text_is_untouched() -> None:
    redactor = Redactor()
    for text in [
        "What is the weather in Paris?",
        "task-1234 skipped",
        '{"city": "Paris", "days": 3}',
        "sk-short",
    ]:
        assert redactor.redact_text(text) == text


def test_secret_fields_attributes_and_json_text() -> None:
    redactor = Redactor(fields=["customer_ssn"])
    attrs = redactor.attributes(
        {
            "http.request.header.authorization": "whatever-value",
            "app.password": "pw",
            "app.customer-ssn": "123-45-6789",
            "input.value": json.dumps(
                {"query": "hi", "api_key": "plain-but-named", "nested": {"password": "p@ss"}}
            ),
            "llm.token_count.prompt": 12,
        }
    )
    assert attrs["http.request.header.authorization"] == "[REDACTED]"
    assert attrs["app.password"] == "[REDACTED]" and attrs["app.customer-ssn"] == "[REDACTED]"
    parsed = json.loads(attrs["input.value"])  # still valid JSON after masking inside it
    assert parsed == {"query": "hi", "api_key": "[REDACTED]", "nested": {"password": "[REDACTED]"}}
    assert attrs["llm.token_count.prompt"] == 12


def test_user_patterns_and_disabling() -> None:
    assert Redactor(patterns=[r"ACME-\d{6}"]).redact_text("ticket ACME-123456 opened") == (
        "ticket [REDACTED:custom] opened"
    )
    assert Redactor(enabled=False).redact_text(SECRETS["openai-key"]) == SECRETS["openai-key"]


def test_oversized_value_becomes_a_marker_with_size_and_hash() -> None:
    big = "é" * 200_000  # 400,000 bytes in UTF-8
    value = Redactor(max_bytes=256 * 1024).value("output.value", big)
    marker = json.loads(value)
    assert marker[TRUNCATION_KEY] is True
    assert marker["original_bytes"] == 400_000
    assert marker["sha256"] == hashlib.sha256(big.encode()).hexdigest()
    assert marker["head"] == "é" * 1024
    assert len(value.encode()) < 4096


def test_nothing_secret_reaches_the_database(make_recorder: Callable[..., Recorder]) -> None:
    rec = make_recorder(redact_fields=("session_token",))
    secrets = list(SECRETS.values())
    with rec.tracer.start_as_current_span(
        "agent", attributes={"input.value": " ".join(secrets), "app.session_token": "opaque-value-123"}
    ) as span:
        span.add_event("log", {"message": f"retrying with {secrets[0]}"})
        try:
            raise RuntimeError(f"auth failed for {secrets[2]}")
        except RuntimeError as exc:
            span.record_exception(exc)
    rec.flush()
    dump = rec.db_path.read_bytes() + (rec.db_path.with_name(rec.db_path.name + "-wal").read_bytes())
    for core in [*SECRET_CORES, "opaque-value-123"]:
        assert core.encode() not in dump
    (row,) = rec.rows()
    assert "[REDACTED:anthropic-key]" in row["events"]


def test_values_given_to_secret_names_in_text_and_in_json_inside_json() -> None:
    redactor = Redactor(fields=["x-acme-key"])
    cases = {
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n": (
            "aws_secret_access_key = [REDACTED]\n"
        ),
        "PASSWD=hunter2; password: 'two words' ok": "PASSWD=[REDACTED]; password: '[REDACTED]' ok",
        "Authorization: Basic dXNlcjpwYXNzd29yZA==": "Authorization: [REDACTED]",
        "Authorization: Bearer abcdefgh12345678": "Authorization: Bearer [REDACTED:bearer]",
        "X-Acme-Key: 5f3c9a0d1e2b": "X-Acme-Key: [REDACTED]",
        "GET /v1?api_key=abc123&city=Paris": "GET /v1?api_key=[REDACTED]&city=Paris",
        "{'password': 'hunter2', 'n': None}": "{'password': '[REDACTED]', 'n': None}",
        "Plan the next step: look up the weather = sunny": "Plan the next step: look up the weather = sunny",
    }
    for text, masked in cases.items():
        assert redactor.redact_text(text) == masked
    # Tool arguments inside a request body: JSON text in a JSON string, still valid JSON after.
    arguments = json.dumps({"x-acme-key": 'a"b\\c é', "password": "pw", "city": "Paris"})
    body = json.dumps({"messages": [{"tool_calls": [{"arguments": arguments}]}], "api_key": None})
    masked_body = json.loads(redactor.redact_text(body))
    assert json.loads(masked_body["messages"][0]["tool_calls"][0]["arguments"]) == {
        "x-acme-key": "[REDACTED]",
        "password": "[REDACTED]",
        "city": "Paris",
    }
    assert masked_body["api_key"] is None  # not a string: left as it is, the JSON stays valid


def test_names_that_end_in_a_secret_name_and_whole_cookie_lines() -> None:
    redactor = Redactor(fields=["x-acme-key"])
    cases = {
        "DB_PASSWORD=hunter2": "DB_PASSWORD=[REDACTED]",
        "export OPENAI_API_KEY=abcd1234efgh": "export OPENAI_API_KEY=[REDACTED]",
        "HF_TOKEN=hf_abcdefghijkl and GITHUB_TOKEN: abc123def456": (
            "HF_TOKEN=[REDACTED] and GITHUB_TOKEN: [REDACTED]"
        ),
        "x-goog-api-key: AIzaabcdefgh": "x-goog-api-key: [REDACTED]",
        'SECRET_KEY = "django-insecure-abc"': 'SECRET_KEY = "[REDACTED]"',
        "my_x_acme_key=5f3c9a0d1e2b": "my_x_acme_key=[REDACTED]",  # the user's names too
        "Cookie: a=1; session=abcdef123456; csrftoken=zzz\r\nHost: example.com": (
            "Cookie: [REDACTED]\r\nHost: example.com"
        ),
        "set-cookie: id=abcdefgh; Path=/; HttpOnly": "set-cookie: [REDACTED]",
        # Counts and words are not secrets: plural _tokens, "token" alone, a name merely containing one.
        "prompt_tokens: 12345678, max_tokens=4096": "prompt_tokens: 12345678, max_tokens=4096",
        "each token: 12345678 ms": "each token: 12345678 ms",
        "keyboard_layout = qwerty-us": "keyboard_layout = qwerty-us",
    }
    for text, masked in cases.items():
        assert redactor.redact_text(text) == masked, text
    # A Cookie header inside JSON text: masked up to the closing quote, the JSON still valid.
    body = json.dumps({"headers": "Cookie: a=1; session=abcdef123456", "n": 1})
    assert json.loads(redactor.redact_text(body)) == {"headers": "Cookie: [REDACTED]", "n": 1}
    attributes = redactor.attributes(
        {
            "app.db_password": "x",
            "env.OPENAI_API_KEY": "abcdefgh",
            "llm.token_count.prompt": 3,
            "gen_ai.usage.input_tokens": 5,
        }
    )
    assert attributes == {
        "app.db_password": "[REDACTED]",
        "env.OPENAI_API_KEY": "[REDACTED]",
        "llm.token_count.prompt": 3,
        "gen_ai.usage.input_tokens": 5,
    }


# Texts made of "name sep value end" pieces that meet the rules above, and loose pieces between.
_NAMES = ["Cookie", "set-cookie", "DB_PASSWORD", "api_key", "HF_TOKEN", "token", "prompt_tokens",
          "x-acme-key", "Authorization", "city", '"password"', "'secret'"]  # fmt: skip
_SEPARATORS = [":", "=", ": ", " = ", ":  ", " :", ":\t"]
_VALUES = ["abc123def456", "theme=dark; sid=abcdefgh1234", "Bearer abcdefgh12345678", "Basic dXNlcjpw",
           '"quoted value"', "'single'", "[REDACTED]", "sk-abcdefghijklmnopqrstuvwxyz12", "",
           "postgres://app:pw12345678@db/prod", "AKIAIOSFODNN7EXAMPLE", "x\\y"]  # fmt: skip
_ENDS = ["", "\n", "\r\n", "; ", " ", ", ", '"', "&", "}"]
_PIECE = st.tuples(*(st.sampled_from(options) for options in (_NAMES, _SEPARATORS, _VALUES, _ENDS))).map(
    "".join
) | st.sampled_from(["hello world", "{", "\\", "'", '"', "?", " "])


@settings(max_examples=fuzz_examples(300), deadline=None)
@given(st.lists(_PIECE, max_size=8).map("".join))
def test_masking_masked_text_changes_nothing(text: str) -> None:
    # A replay compares its request, masked, with a recording masked when it was made: masking
    # twice must give what masking once gave.
    redactor = Redactor(fields=["x-acme-key"])
    once = redactor.redact_text(text)
    assert redactor.redact_text(once) == once
    as_json = json.dumps({"body": text})
    once = redactor.redact_text(as_json)
    assert redactor.redact_text(once) == once
