"""The diff verdict on the refund incident rerun by every provider: each row of the table, for real.

The incident is the demo's: an OpenAI Agents SDK triage agent hands off to a refund agent whose
``refund_order`` rejects the sloppy model's ``"12.OO"`` (examples/handoff_agent.py, recorded by the
processor, made a cassette with ``cassette --run``). The built-in agent reruns it on each API with
the official SDK against the fake provider, whose model names script the child:

- ``thorough`` follows the handoff and calls ``refund_order``, answered by ``--stub``: fixed;
- ``hasty`` answers from the lookup and never calls ``refund_order`` (what other providers did in
  issue 35, where ``diff`` said fixed and no refund was made): avoided, not fixed;
- ``thorough`` with no ``--stub``: the refund it asks for was never recorded, the child fails:
  still failing;
- a contract kept beside the incident (``incident.contract.json``) decides, or ``--contract``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_llm import GEMINI_PATH, HASTY_MODEL, THOROUGH_MODEL, FakeLLMServer
from helpers import REFUND_STUB, refund_incident_cassette, run_cli

from otel_blackbox._cassette.io import load_cassette

STUB = REFUND_STUB
PROVIDERS = ["openai-chat", "openai-responses", "anthropic", "gemini"]
# The API a request reached the fake provider on, by its path (Gemini's names the model).
APIS = {
    "/v1/chat/completions": "openai-chat",
    "/v1/responses": "openai-responses",
    "/v1/messages": "anthropic",
}
FIXED = "outcome: failure fixed: tool error in refund_order → success"
AVOIDED = "outcome: failure avoided: refund_order not called (tool error in refund_order → success)"
STILL_FAILING = "outcome: still failing: tool error in refund_order → error"


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def incident(tmp_path_factory: pytest.TempPathFactory, llm: FakeLLMServer) -> Path:
    """The refund incident, recorded by the processor alone and made a cassette, as the demo does."""
    return refund_incident_cassette(tmp_path_factory.mktemp("incident"), llm.openai_base_url)[1]


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Made-up keys, for the SDKs to send (run_cli passes the environment on)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-verdict-not-a-real-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-verdict-not-a-real-key")
    monkeypatch.setenv("GEMINI_API_KEY", "verdict-not-a-real-key")


def rerun(
    llm: FakeLLMServer, incident: Path, provider: str, model: str, out: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    base = llm.openai_base_url if provider.startswith("openai") else llm.anthropic_base_url
    heard = len(llm.requests)
    done = run_cli(
        "rerun", str(incident), "--provider", provider, "--model", model, "--base-url", base,
        "-o", str(out), *extra,
    )  # fmt: skip
    # The provider's own SDK made the calls, on its own API.
    apis = {
        "gemini" if GEMINI_PATH.fullmatch(path) else APIS.get(path, path) for path, _ in llm.requests[heard:]
    }
    assert apis == {provider}, (apis, done.stderr)
    return done


def tool_results(path: Path) -> list[tuple[str, bool, bool]]:
    """(tool, an error, a stub) of each tool result of a cassette."""
    steps = load_cassette(path).steps_of("tool_result")
    return [(s.payload["toolName"], "error" in s.payload, bool(s.payload.get("stub"))) for s in steps]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_each_verdict_row_on_the_refund_incident_rerun_by_every_provider(
    tmp_path: Path, llm: FakeLLMServer, incident: Path, keys: None, provider: str
) -> None:
    # Fixed: the child called refund_order again, and the stub answered it without error.
    fixed = tmp_path / "fixed.json"
    assert rerun(llm, incident, provider, THOROUGH_MODEL, fixed, "--stub", STUB).returncode == 0
    assert tool_results(fixed)[-1] == ("refund_order", False, True)
    diff = run_cli("diff", str(incident), str(fixed))
    assert diff.returncode == 1 and diff.stdout.splitlines()[-1] == FIXED  # diverged: no contract
    outcome = json.loads(run_cli("diff", "--json", str(incident), str(fixed)).stdout)["outcome"]
    assert (outcome["kind"], outcome["fixed"], outcome["avoidedTools"]) == ("failure_fixed", True, [])

    # Avoided: the child answered from the lookup, refund_order never called: no refund, not fixed.
    avoided = tmp_path / "avoided.json"
    assert rerun(llm, incident, provider, HASTY_MODEL, avoided, "--stub", STUB).returncode == 0
    assert [name for name, _, _ in tool_results(avoided)] == ["lookup_order", "transfer_to_refund_agent"]
    assert "order Alpha: paid 12.00" in (load_cassette(avoided).steps[-1].payload["result"])
    diff = run_cli("diff", str(incident), str(avoided))
    assert diff.returncode == 1
    assert diff.stdout.splitlines()[-3:] == [
        "parent tools: lookup_order → transfer_to_refund_agent → refund_order",
        "child tools: lookup_order → transfer_to_refund_agent",
        AVOIDED,
    ]
    outcome = json.loads(run_cli("diff", "--json", str(incident), str(avoided)).stdout)["outcome"]
    assert (outcome["kind"], outcome["fixed"], outcome["avoidedTools"]) == (
        "failure_avoided",
        False,
        ["refund_order"],
    )

    # Still failing: the refund the child asked for was never recorded, and nothing answers it.
    failing = tmp_path / "failing.json"
    done = rerun(llm, incident, provider, THOROUGH_MODEL, failing)
    assert done.returncode == 1 and "unrecorded_tool_call" in done.stderr
    diff = run_cli("diff", str(incident), str(failing))
    assert diff.returncode == 1 and diff.stdout.splitlines()[-1] == STILL_FAILING

    # A contract kept beside the incident decides: the fixed child passes it, the avoided one not.
    decided = tmp_path / "decided"
    decided.mkdir()
    kept = decided / "incident.json"
    shutil.copyfile(incident, kept)
    run_cli("eval", "generate", str(fixed), "-o", str(decided / "incident.contract.json"), check=True)
    passed = run_cli("diff", str(kept), str(fixed))
    assert passed.returncode == 0, passed.stdout
    assert passed.stdout.splitlines()[-1] == "contract: pass"
    assert (
        f"contract {decided / 'incident.contract.json'} (beside the incident) on the child: " in passed.stdout
    )
    refused = run_cli("diff", str(kept), str(avoided))
    assert refused.returncode == 1 and AVOIDED in refused.stdout.splitlines()
    assert "FAIL tool refund_order called at least 1 time: called 0 times" in refused.stdout
    assert refused.stdout.splitlines()[-1] == "contract: fail"
    assert run_cli("diff", str(kept), str(failing)).stdout.splitlines()[-1] == (
        "contract: fail (the child did not complete)"
    )
    # --contract names the one that decides: this one asks only for the lookup.
    lenient = tmp_path / "lookup-only.json"
    lenient.write_text(
        json.dumps({"contractVersion": 1, "assertions": [{"kind": "tool_called", "tool": "lookup_order"}]})
    )
    named = run_cli("diff", str(kept), str(avoided), "--contract", str(lenient))
    assert named.returncode == 0 and named.stdout.splitlines()[-1] == "contract: pass"
    assert AVOIDED in named.stdout.splitlines()  # the verdict still says what it saw
