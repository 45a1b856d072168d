"""LiteLLM (.venv-conformance/litellm): a ``litellm.completion`` tool loop on model
``openai/<model>`` with ``api_base`` the fake provider, one ``get_weather`` tool, under
openinference-instrumentation-litellm.

It writes an LLM span per ``completion`` (``llm.input_messages.N.*``, ``llm.output_messages.N.*``
with ``message.tool_calls``, ``llm.tools.N.tool.json_schema``, ``llm.token_count.*``,
``llm.model_name`` as the caller named it: ``openai/gpt-4o-mini``). LiteLLM has no agent: the agent
and its tool are OpenInference spans of the user's own (``OITracer``), as in openai_agent.py.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import agent_kit


def main(argv: list[str] | None = None) -> int:
    args = agent_kit.parse_args(argv)
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # no fetch of the price map from GitHub
    import litellm  # type: ignore[import-not-found]
    from openinference.instrumentation import OITracer, TraceConfig
    from openinference.instrumentation.litellm import LiteLLMInstrumentor

    with agent_kit.recorded(args) as run:
        LiteLLMInstrumentor().instrument(tracer_provider=run.tracer_provider)
        tracer = OITracer(run.tracer_provider.get_tracer(__name__), config=TraceConfig())

        @tracer.tool(name=agent_kit.TOOL_NAME, description=agent_kit.TOOL_DESCRIPTION)
        def get_weather(city: str) -> str:
            return agent_kit.get_weather(city)

        @tracer.agent(name="weather_agent")
        def agent(question: str) -> str:
            messages: list[Any] = [
                {"role": "system", "content": agent_kit.SYSTEM_PROMPT},
                {"role": "user", "content": question},
            ]
            for _ in range(4):
                reply = litellm.completion(
                    model=f"openai/{run.model}",
                    api_base=run.openai_base_url,
                    api_key="sk-fake",
                    messages=messages,
                    tools=[agent_kit.OPENAI_TOOL],
                )
                message = reply.choices[0].message
                messages.append(message.model_dump(exclude_none=True))
                if not message.tool_calls:
                    return str(message.content)
                for call in message.tool_calls:
                    try:
                        result = get_weather(**json.loads(call.function.arguments))
                    except RuntimeError as error:
                        result = f"Error: {error}"
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
            return "(no answer)"

        print(agent(agent_kit.QUESTION))
    return 0


if __name__ == "__main__":
    sys.exit(main())
