"""LangChain / LangGraph (main venv): ``langchain.agents.create_agent`` on ``ChatOpenAI`` against the
fake provider, one ``get_weather`` tool, under openinference-instrumentation-langchain.

It writes a span per LangGraph node and LangChain run: the graph (``LangGraph``, CHAIN), the model
node (``ChatOpenAI``, LLM: ``llm.input_messages.N.*`` with the system prompt, ``llm.output_messages``
with ``message.tool_calls``, ``llm.tools.N.tool.json_schema``, ``llm.token_count.*``) and the tool
(``get_weather``, TOOL: ``tool.name``, ``input.value`` the arguments, ``output.value`` the
``ToolMessage``). The tool's error goes back to the model (``handle_tool_errors``).
"""

from __future__ import annotations

import sys

import agent_kit


def main(argv: list[str] | None = None) -> int:
    args = agent_kit.parse_args(argv)
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from pydantic import SecretStr

    @tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        return agent_kit.get_weather(city)

    with agent_kit.recorded(args) as run:
        LangChainInstrumentor().instrument(tracer_provider=run.tracer_provider)
        model = ChatOpenAI(
            model=run.model, base_url=run.openai_base_url, api_key=SecretStr("sk-fake"), max_retries=0
        )
        agent = create_agent(model, tools=[get_weather], system_prompt=agent_kit.SYSTEM_PROMPT)
        result = agent.invoke({"messages": [{"role": "user", "content": agent_kit.QUESTION}]})
        print(result["messages"][-1].content)
    return 0


if __name__ == "__main__":
    sys.exit(main())
