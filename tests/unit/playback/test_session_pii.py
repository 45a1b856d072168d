"""A recorded cassette masks the PII the user turned on, as the store does (and nothing by default)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from fake_llm import FakeLLMServer

from otel_blackbox._playback.session import session

QUESTION = "Mail the receipt to jane.doe@example.com, card 4111 1111 1111 1111, please."


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


def record(llm: FakeLLMServer, path: Path) -> str:
    with session(mode="record", cassette=path):
        client = openai.OpenAI(base_url=llm.openai_base_url, api_key="sk-pii-test-0123456789", max_retries=0)
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": QUESTION}])
        client.close()
    return path.read_text(encoding="utf-8")


def test_the_masks_turned_on_reach_the_cassette(
    llm: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_BLACKBOX_REDACT_PII", "email,card")
    text = record(llm, tmp_path / "masked.json")
    assert "jane.doe@example.com" not in text and "4111 1111 1111 1111" not in text
    assert "[REDACTED:email]" in text and "[REDACTED:card]" in text
    json.loads(text)  # still a JSON document


def test_nothing_is_masked_by_default(
    llm: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OTEL_BLACKBOX_REDACT_PII", raising=False)
    text = record(llm, tmp_path / "plain.json")
    assert "jane.doe@example.com" in text and "4111 1111 1111 1111" in text
    assert "[REDACTED:" not in text
