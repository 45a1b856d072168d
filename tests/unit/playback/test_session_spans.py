"""Spans still flow in every mode, whatever order the OTel httpx instrumentation was installed in,
and the spans of a replayed run land in the SQLite store tagged as replayed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import openai
import pytest
import weather_agent  # examples/ is on sys.path (conftest.py)
from fake_llm import FakeLLMServer
from helpers import Recorder
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.instrumentation.httpx import HTTPX2ClientInstrumentor

import otel_blackbox
from otel_blackbox._spans.semconv import ATTR_CASSETTE_STEP, ATTR_SESSION_MODE

QUESTION = "What's the weather in Lisbon, and the 2 day forecast? I need both."


def _run(recorder: Recorder, base_url: str) -> str:
    with openai.OpenAI(base_url=base_url, api_key="sk-test-0123456789", max_retries=0) as client:
        answer, _ = weather_agent.run_agent(client, recorder.tracer, QUESTION)
    return answer


def _spans(recorder: Recorder) -> list[dict[str, object]]:
    recorder.flush()
    rows = recorder.rows("SELECT name, oi_span_kind, span_kind, attributes FROM spans ORDER BY start_ns")
    return [
        {"name": r["name"], "kind": r["oi_span_kind"] or r["span_kind"], **json.loads(r["attributes"])}
        for r in rows
    ]


@pytest.mark.parametrize("otel_http_first", [True, False])
def test_llm_and_http_spans_in_record_and_replay(
    tmp_path: Path, make_recorder: Callable[..., Recorder], otel_http_first: bool
) -> None:
    cassette = tmp_path / "run.json"
    live = make_recorder(path=tmp_path / "live.db")
    replayed = make_recorder(path=tmp_path / "replay.db")
    runs: list[tuple[Recorder, Literal["record", "replay"]]] = [(live, "record"), (replayed, "replay")]
    http = HTTPX2ClientInstrumentor()
    try:
        for recorder, mode in runs:
            OpenAIInstrumentor().instrument(tracer_provider=recorder.provider)
            if otel_http_first:
                http.instrument(tracer_provider=recorder.provider)
            with FakeLLMServer() as server, otel_blackbox.session(mode=mode, cassette=cassette):
                if not otel_http_first:
                    http.instrument(tracer_provider=recorder.provider)
                _run(recorder, server.openai_base_url)
            http.uninstrument()
            OpenAIInstrumentor().uninstrument()
    finally:
        http.uninstrument()
    for recorder, mode in runs:
        spans = _spans(recorder)
        llm = [s for s in spans if s["kind"] == "LLM"]
        client = [s for s in spans if s["kind"] == "CLIENT"]
        assert len(llm) == 2 and len(client) == 2, [(s["name"], s["kind"]) for s in spans]
        assert all(s[ATTR_SESSION_MODE] == mode for s in spans)
    replayed_http = [s for s in _spans(replayed) if s["kind"] == "CLIENT"]
    assert [s[ATTR_CASSETTE_STEP] for s in replayed_http] == [0, 6]
