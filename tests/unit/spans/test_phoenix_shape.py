"""The OpenInference JSONL export flattens into Phoenix's span columns with pandas.json_normalize.

(`make interop` loads the same files into a real Phoenix server.)"""

from __future__ import annotations

import json
from pathlib import Path

import pandas
from helpers import Recorder, run_cli

# The columns Phoenix's spans dataframe uses (phoenix.client ... get_spans_dataframe / log_spans_dataframe).
PHOENIX_COLUMNS = {
    "name", "span_kind", "parent_id", "start_time", "end_time", "status_code", "status_message",
    "events", "context.span_id", "context.trace_id",
}  # fmt: skip


def test_json_normalize_gives_phoenix_column_names(recorder: Recorder, tmp_path: Path) -> None:
    attributes: dict[str, str | int] = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "gpt-x",
        "llm.token_count.total": 12,
    }
    with (
        recorder.tracer.start_as_current_span("agent"),
        recorder.tracer.start_as_current_span("llm", attributes=attributes),
    ):
        pass
    recorder.flush()
    out = tmp_path / "spans.jsonl"
    run_cli("export", "-o", str(out), db=recorder.db_path, check=True)
    frame = pandas.json_normalize([json.loads(line) for line in out.read_text().splitlines()])
    assert set(frame.columns) >= PHOENIX_COLUMNS
    llm = frame[frame["name"] == "llm"].iloc[0]
    assert llm["span_kind"] == "LLM" and llm["attributes.llm.token_count.total"] == 12
    assert llm["parent_id"] == frame[frame["name"] == "agent"].iloc[0]["context.span_id"]
