"""The tools that call the model provider (paid, and outside this machine): ``blame`` and
``fork_from_step``, put on the server by ``build_server``. Each reruns part of a recorded run with
the built-in agent, every tool answered from the recording, never run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from otel_blackbox._mcp import cassettes as cassette_tools
from otel_blackbox._mcp.fork import fork_from_step as fork_tool
from otel_blackbox._mcp.wiring import LIVE, AllowUnverified, CassettePath, Provider, answer

__all__ = ["register"]

Model = Annotated[
    str | None, Field(max_length=200, description="The model to call (default: the incident's).")
]
Stubs = Annotated[
    dict[str, Any] | None,
    Field(description="Tool name -> the JSON answer for its calls the incident has no result for."),
]
MaxCost = Annotated[
    str | None,
    Field(max_length=32, description="Stop before a model call once the calls cost this many US dollars."),
]
# edit.CHANGES: the CLI's change options without their dashes.
Change = Literal["set", "set-error", "answer", "calls", "user", "insert-user", "system", "tool"]


def register(server: MCPServer[Any], db: Path) -> None:
    """Put ``blame`` and ``fork_from_step`` on ``server`` (``db``: the server's database, which the
    child of a fork never overwrites)."""

    @server.tool(annotations=LIVE)
    def blame(
        incident: CassettePath,
        output: Annotated[
            str, Field(min_length=1, max_length=4096, description="The folder each branch's child goes to.")
        ],
        model: Model = None,
        provider: Provider = None,
        stubs: Stubs = None,
        good: Annotated[
            str | None, Field(max_length=4096, description="A successful run's cassette: corrections.")
        ] = None,
        contract: Annotated[
            str | None, Field(max_length=4096, description="Judge branches by this contract file.")
        ] = None,
        samples: Annotated[int, Field(ge=1, le=10, description="Branches a point (1-10).")] = 3,
        max_cost: MaxCost = None,
        max_branches: Annotated[int | None, Field(ge=1, le=500, description="Stop after this many.")] = None,
        allow_unverified: AllowUnverified = False,
    ) -> str:
        """Which step of a failed incident made it fail: branches from its decisions (model outputs)
        and from corrected tool results are rerun with the model live and every tool answered from
        the recording (never run), each judged by the contract or diff's verdict; the decisive step
        is the last decision that can still succeed, else the first corrected tool result that does.
        Calls the provider (keys from the server's environment) and writes the children to output.
        As `otel-blackbox blame --format json`."""
        return answer(
            lambda: cassette_tools.blame_incident(
                incident, output, model=model, provider=provider, stubs=stubs, good=good, contract=contract,
                samples=samples, max_cost=max_cost, max_branches=max_branches,
                allow_unverified=allow_unverified,
            )
        )  # fmt: skip

    @server.tool(annotations=LIVE)
    def fork_from_step(
        cassette: CassettePath,
        step: Annotated[int, Field(ge=0, le=10_000_000, description="The step to change (0 first).")],
        change: Annotated[
            Change,
            Field(
                description="What to change there: at a tool_result, set (a new result) or set-error (an "
                "error); at a model_output, answer (a final answer: the child ends there) or calls (new "
                "tool calls); at a model_input, user (its last user message), insert-user (a new one), "
                "system (the system prompt) or tool (a tool's definition), from that request on."
            ),
        ],
        value: Annotated[
            Any,
            Field(
                description="The new value. set: any JSON value, or a string of JSON text (the string "
                'result "ok" is "\\"ok\\""); calls: a list of {"toolName", "toolInput"}, or its JSON '
                'text; tool: {"name": NAME, "definition": {"description"?, "inputSchema"?}}, or the text '
                "NAME=JSON; set-error, answer, user, insert-user, system: the text."
            ),
        ],
        output: Annotated[
            str,
            Field(
                min_length=1,
                max_length=4096,
                description="The child cassette to write (absolute path is best): not the parent, and "
                "not an existing file unless overwrite=true. Its folder must exist.",
            ),
        ],
        provider: Provider = None,
        model: Model = None,
        max_cost: MaxCost = None,
        stubs: Stubs = None,
        overwrite: Annotated[bool, Field(description="Replace the output file if it exists.")] = False,
        allow_unverified: AllowUnverified = False,
    ) -> str:
        """Change one step of a recorded run and let the run go on from there: the steps before it
        copied (the same hashes), the change made, and the built-in agent continuing on the model
        (any provider and model), every tool call answered from the recording or a stub, never run.
        Answers the child's path, exit (completed, or stopped and why: unrecorded_tool_call,
        max_cost...), its edit (step, kind, description, by "mcp"), parent and child outcomes,
        diff_cassettes' verdict and report, sharedPrefix, and the cost of the child's own model calls.
        A change that does not fit the step is a tool error before any model call. Calls the
        provider (keys and base URL from the server's environment). As `otel-blackbox fork CASSETTE
        --at N <change> -o CHILD`."""
        return answer(
            lambda: fork_tool(
                db, cassette, step, change, value, output, provider=provider, model=model,
                max_cost=max_cost, stubs=stubs, overwrite=overwrite, allow_unverified=allow_unverified,
            )
        )  # fmt: skip
