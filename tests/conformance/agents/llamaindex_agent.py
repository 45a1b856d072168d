"""LlamaIndex (.venv-conformance/llamaindex): a ``FunctionAgent`` on llama-index-llms-openai's
``OpenAI`` against the fake provider, one ``get_weather`` ``FunctionTool``, under
openinference-instrumentation-llama-index.

It writes a span per instrumented LlamaIndex method: the workflow and its steps (CHAIN), the model
calls (``OpenAI.astream_chat``..., LLM: ``llm.input_messages.N.*``, ``llm.output_messages.N.*``
with ``message.tool_calls``, ``llm.token_count.*``), ``OpenAI._prepare_chat_with_tools`` (marked LLM
though it calls no model) and the tool (``FunctionTool.acall``, TOOL: ``tool.name``, ``input.value``
the arguments, ``output.value`` LlamaIndex's ``ToolOutput``). The tool's error goes back to the
model as the tool's output.
"""

from __future__ import annotations

import asyncio
import sys

import agent_kit


def main(argv: list[str] | None = None) -> int:
    args = agent_kit.parse_args(argv)
    from llama_index.core.agent.workflow import FunctionAgent  # type: ignore[import-not-found]
    from llama_index.core.tools import FunctionTool  # type: ignore[import-not-found]
    from llama_index.llms.openai import OpenAI  # type: ignore[import-not-found]
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    with agent_kit.recorded(args) as run:
        LlamaIndexInstrumentor().instrument(tracer_provider=run.tracer_provider)
        llm = OpenAI(model=run.model, api_base=run.openai_base_url, api_key="sk-fake", max_retries=0)
        tool = FunctionTool.from_defaults(
            agent_kit.get_weather, name=agent_kit.TOOL_NAME, description=agent_kit.TOOL_DESCRIPTION
        )
        agent = FunctionAgent(tools=[tool], llm=llm, system_prompt=agent_kit.SYSTEM_PROMPT)

        async def ask() -> str:  # the workflow starts on a running loop
            return str(await agent.run(user_msg=agent_kit.QUESTION))

        print(asyncio.run(ask()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
