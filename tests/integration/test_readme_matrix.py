"""The fidelity matrix of the guide (docs/playback.md) names exactly the cells the tests run: no row
without its tests, no feature cell the guide does not show."""

from __future__ import annotations

import re

import test_features_anthropic
import test_features_chat
import test_features_gemini
import test_features_responses
import test_fidelity_matrix
from helpers import ROOT

FEATURE_FILES = {
    "chat": test_features_chat,
    "responses": test_features_responses,
    "anthropic": test_features_anthropic,
    "gemini": test_features_gemini,
}


def _cells_in_guide() -> set[str]:
    page = (ROOT / "docs" / "playback.md").read_text()
    start = page.index("**The fidelity matrix.**")
    matrix = page[start : page.index("\n- **", start + 1)]
    return {
        cell
        for row in matrix.splitlines()
        if row.lstrip().startswith("|")
        for cell in re.findall(r"`([a-z0-9_-]+-(?:sync|async)-(?:json|sse))`", row)
    }


def test_the_guide_matrix_names_every_cell_and_only_those() -> None:
    run = {"-".join(cell) for cell in test_fidelity_matrix.CELLS}
    for provider, module in FEATURE_FILES.items():
        run |= {f"{provider}-{'-'.join(cell)}" for cell in module.CELLS}
    shown = _cells_in_guide()
    assert len(run) == 16 + 4 * (4 + 4 + 4 + 5)  # the provider cells, then four modes per feature
    assert shown == run, (sorted(shown - run), sorted(run - shown))
