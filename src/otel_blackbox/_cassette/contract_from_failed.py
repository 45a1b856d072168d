"""A contract from a failed run (``eval generate --from-failed``): what a good run must *not* do
again, never what the failed run did.

A failed run (``run_failure``: it ended in an error, never ended, or a tool answered with an error)
describes the failure, so copying it (its status, its tools' inputs) would require the failure: the
refund incident's ``"amount": "12.OO"`` made a requirement. Instead:

- ``status: success``: the run completes;
- ``no_tool_errors`` when a tool answered with an error, with ``tool_called`` for each such tool
  (proposed: a good run answers it rather than going round it) and a ``tool_input`` ``not_equals``
  the whole input of the call that failed (proposed: the input may not be what failed);
- ``answer_not_contains`` the answer the run failed on (its first ``MAX_NEGATED_ANSWER``
  characters) when the run ended in an error after the model's final answer (the program judged
  that answer), and, when that answer is a JSON object with an ``error`` key, ``answer_json``
  ``/error`` ``exists: false`` (proposed).

It fails the failed run and passes a run without that failure.
"""

from __future__ import annotations

from typing import Any

from otel_blackbox._cassette.answer_checks import parse_answer
from otel_blackbox._cassette.contract_checks import facts_of
from otel_blackbox._cassette.diff.outcome import answer_before_failure, run_failure
from otel_blackbox._cassette.evals import new_contract
from otel_blackbox._cassette.model import Cassette
from otel_blackbox.errors import BadArgument

__all__ = ["MAX_NEGATED_ANSWER", "contract_from_failed"]

MAX_NEGATED_ANSWER = 200

Contract = dict[str, Any]


def contract_from_failed(cassette: Cassette, name: str | None = None, *, source: str = "the run") -> Contract:
    """The negation of the run's failure (BadArgument, one line, for a run that did not fail)."""
    failure = run_failure(cassette)
    if failure is None:
        raise BadArgument(f"{source}: the run did not fail: a contract from it needs no --from-failed")
    facts = facts_of(cassette)
    assertions: list[Contract] = [{"kind": "status", "status": "success"}]
    if failure.tools:
        assertions.append({"kind": "no_tool_errors"})
        assertions += [{"kind": "tool_called", "tool": tool, "proposed": True} for tool in failure.tools]
        for call in facts.calls:
            if call.errored:
                assertions.append(
                    {
                        "kind": "tool_input",
                        "tool": call.tool,
                        "occurrence": call.occurrence,
                        "pointer": "",
                        "not_equals": call.input,
                        "proposed": True,
                    }
                )
    answer = answer_before_failure(cassette)  # the program raised on this answer
    if answer is not None and answer.strip():
        assertions.append({"kind": "answer_not_contains", "text": answer.strip()[:MAX_NEGATED_ANSWER]})
        parsed, value = parse_answer(answer)
        if parsed and isinstance(value, dict) and "error" in value:
            assertions.append({"kind": "answer_json", "pointer": "/error", "exists": False, "proposed": True})
    return new_contract(cassette, name, assertions)
