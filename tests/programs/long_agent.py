"""A long run: an OpenAI-SDK agent that takes N steps, one ``take_step`` tool call each, recorded by
the processor with OpenInference (the runs ``blame`` is measured on).

    python tests/programs/long_agent.py --base-url URL --steps N --db PATH [--model walker] [--ledger FILE]

``take_step`` accepts only the next step's number (an integer) and appends it to the ledger; any
other argument is an error the model sees. The program exits 1 unless every step was taken.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from openai import OpenAI
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.sdk.trace import SpanLimits, TracerProvider

from otel_blackbox import BlackboxSpanProcessor

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from weather_agent import agent_span, assistant_turn, run_tool

TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": "take_step",
            "description": "Take the next step of the walk.",
            "parameters": {
                "type": "object",
                "properties": {"step": {"type": "integer"}},
                "required": ["step"],
            },
        },
    }
]


class Walk:
    def __init__(self, ledger: Path | None) -> None:
        self.taken = 0
        self.ledger = ledger

    def take_step(self, step: Any) -> str:
        if not isinstance(step, int) or step != self.taken + 1:
            raise ValueError(f"step must be the number {self.taken + 1}, not {step!r}")
        self.taken = step
        if self.ledger is not None:
            with self.ledger.open("a", encoding="utf-8") as ledger:
                ledger.write(f"step {step}\n")
        return f"step {step} taken"

    def functions(self) -> dict[str, Any]:
        return {"take_step": self.take_step}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--db", required=True)
    parser.add_argument("--model", default="walker")
    parser.add_argument("--ledger", type=Path)
    args = parser.parse_args()
    # Every message of a long conversation is an attribute of its LLM span (OpenInference): more
    # than the SDK's default of 128 on a long run, whose first messages would be dropped.
    provider = TracerProvider(span_limits=SpanLimits(max_span_attributes=100_000))
    provider.add_span_processor(BlackboxSpanProcessor(db_path=args.db))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    tracer = provider.get_tracer(__name__)
    walk = Walk(args.ledger)
    question = f"Take {args.steps} steps, one at a time, then say so."
    messages: list[Any] = [{"role": "user", "content": question}]
    try:
        with (
            OpenAI(base_url=args.base_url, api_key="sk-long-not-a-real-key") as client,
            agent_span(tracer, "long-agent", question, "long"),
        ):
            for _ in range(args.steps + 3):
                message = client.chat.completions.create(model=args.model, messages=messages, tools=TOOLS)
                reply = message.choices[0].message
                messages.append(assistant_turn(reply))
                calls = [c for c in reply.tool_calls or [] if c.type == "function"]
                if not calls:
                    print(reply.content)
                    break
                for call in calls:
                    result = run_tool(tracer, walk, call.function.name, call.function.arguments)  # type: ignore[arg-type]
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    if walk.taken != args.steps:
        print(f"long-agent: {walk.taken} of {args.steps} steps taken", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
