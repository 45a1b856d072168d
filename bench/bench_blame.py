"""``blame``'s search: branches and model calls spent against the decision points of runs of 10, 30
and 100 steps, with the mistake planted late.

Run it as a script (it is not a test and asserts nothing about timing)::

    python bench/bench_blame.py [--steps 10 30 100] [--samples 2] [--json out.json]

For each length N: a fresh fake provider on 127.0.0.1 (examples/fake_llm.py), the long-run program
(tests/programs/long_agent.py: the OpenAI SDK, recorded by the processor with OpenInference) walking
N steps with the ``walker`` model, which sends step N-1 as text on every other such call (the
incident's included: it fails there), its trace made a cassette, then ``otel-blackbox blame`` with
the same model, ``--stub take_step='"done"'`` and ``--samples``. Reported: the decision points, the
points measured, the branches and model calls spent, whether the decisive step is the planted one,
and the wall time of the search.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

from fake_llm import WALKER_MODEL, FakeLLMServer  # noqa: E402 (examples/ is not a package)

CLI = [sys.executable, "-m", "otel_blackbox.cli"]


def measure(steps: int, samples: int, folder: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    db = folder / "long.db"
    with FakeLLMServer() as llm:
        program = [sys.executable, str(ROOT / "tests" / "programs" / "long_agent.py"), "--steps", str(steps)]
        program += ["--base-url", llm.openai_base_url, "--db", str(db)]
        subprocess.run(program, capture_output=True, env=env, timeout=600, check=False)
        listed = subprocess.run([*CLI, "--db", str(db), "list", "--json"], capture_output=True, check=True)
        trace = json.loads(listed.stdout)[0]["trace_id"]
        incident = folder / "incident.json"
        subprocess.run(
            [*CLI, "--db", str(db), "cassette", trace, "-o", str(incident)], capture_output=True, check=True
        )
        planted = next(
            s["index"]
            for s in json.loads(incident.read_text())["steps"]
            if s["type"] == "model_output" and f'"{steps - 1}th"' in json.dumps(s["payload"])
        )
        blame = [*CLI, "blame", str(incident), "--model", WALKER_MODEL, "--stub", 'take_step="done"']
        blame += ["--samples", str(samples), "--format", "json", "-o", str(folder / "branches")]
        env |= {"OPENAI_BASE_URL": llm.openai_base_url, "OPENAI_API_KEY": "sk-bench-not-a-key"}
        start = time.perf_counter()
        done = subprocess.run(blame, capture_output=True, text=True, env=env, timeout=1800)
        seconds = time.perf_counter() - start
    report = json.loads(done.stdout)
    return {
        "steps": steps,
        "decision_points": report["decisionPoints"],
        "points_measured": len(report["branches"]),
        "branches": report["branchCount"],
        "model_calls": report["modelCalls"],
        "found_the_planted_step": report["decisive"] is not None and report["decisive"]["index"] == planted,
        "seconds": round(seconds, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--steps", type=int, nargs="+", default=[10, 30, 100])
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = []
    for steps in args.steps:
        with tempfile.TemporaryDirectory(prefix="bench-blame-") as folder:
            rows.append(measure(steps, args.samples, Path(folder)))
        row = rows[-1]
        found = row["found_the_planted_step"]
        counts = (
            f"{row['points_measured']} measured, {row['branches']} branches, {row['model_calls']} model calls"
        )
        print(f"{steps:>4} steps: {row['decision_points']} decision points, {counts}, "
              f"planted step found: {found}, {row['seconds']} s", flush=True)  # fmt: skip
    if args.json is not None:
        figures = {"samples": args.samples, "runs": rows, "python": platform.python_version()}
        args.json.write_text(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
