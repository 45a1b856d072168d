"""The semconv/ registry documents what the code does: the two must agree."""

from __future__ import annotations

import re

import yaml
from helpers import ROOT

from otel_blackbox._spans import semconv
from otel_blackbox._spans.redact import TRUNCATION_KEY
from otel_blackbox._store.schema import SPAN_COLUMNS


def _load(name: str) -> dict:  # type: ignore[type-arg]
    data = yaml.safe_load((ROOT / "semconv" / name).read_text())
    assert isinstance(data, dict)
    return data


def test_column_mapping_matches_code() -> None:
    columns = _load("columns.yaml")["columns"]
    assert {name: tuple(c["sources"]) for name, c in columns.items()} == semconv.COLUMN_SOURCES
    assert set(columns) <= set(SPAN_COLUMNS)
    fallback = columns["oi_span_kind"]["fallback"]
    for operation, kind in semconv.GEN_AI_OPERATION_KINDS.items():
        assert re.search(rf"\b{operation}\b[^;]*-> {kind}", fallback), operation


def test_every_blackbox_attribute_in_code_is_registered() -> None:
    registered = {a["id"] for group in _load("registry.yaml")["groups"] for a in group["attributes"]}
    source = "\n".join(p.read_text() for p in (ROOT / "src").rglob("*.py"))
    used = set(re.findall(r"\"(blackbox\.[a-z_.]+)\"", source)) - {"blackbox.db"}  # the file name
    assert used == registered
    assert semconv.ATTR_SPAN_OPEN in registered and TRUNCATION_KEY in registered


def test_the_schema_page_documents_every_column() -> None:
    page = (ROOT / "docs" / "schema.md").read_text()
    for column in ("id", *SPAN_COLUMNS):
        assert f"`{column}`" in page, column
