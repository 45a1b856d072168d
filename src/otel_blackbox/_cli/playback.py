"""``record``, ``replay`` and ``fork``: run an unmodified program with its HTTP traffic recorded,
replayed, or replayed up to a tool result and continued from a replacement; and what ``rerun``
(rerun.py) shares with them: running a program inside a session, the tool-stub options."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from otel_blackbox._cassette.io import loads_json, read_text
from otel_blackbox._cli.agent_options import agent_only_given, built_in_agent_options, built_in_plan
from otel_blackbox._cli.app import cli
from otel_blackbox._cli.common import ALLOW_UNVERIFIED, checked_inputs, output_option
from otel_blackbox.errors import BlackboxError, SessionError

__all__: list[str] = []


def run_program(mode: str, cassette: Path, command: Sequence[str], **options: Any) -> int:
    """``launch.run_program``, imported when a command runs a program: the execution side is not
    loaded for a command's --help, nor by a usage error."""
    from otel_blackbox._playback.launch import run_program as run

    return run(mode, cassette, command, **options)


# Options may follow the cassette argument; everything after `--` is the program and its own options.
PASS_THROUGH = {"allow_interspersed_args": True}


_F = TypeVar("_F", bound=Callable[..., Any])


def stub_tools_option(*, unrecorded: bool) -> Callable[[_F], _F]:
    """--stub-tools (and, for a fork or a rerun, --run-unrecorded-tools) on a command."""

    def add(command: _F) -> _F:
        if unrecorded:
            command = click.option(
                "--run-unrecorded-tools",
                is_flag=True,
                help="With --stub-tools: a tool call the recording has no answer for runs for real "
                "(default: the model is told it failed).",
            )(command)
        return click.option(
            "--stub-tools",
            is_flag=True,
            help="Answer the program's framework tools (Agents SDK, LangChain, pydantic-ai, "
            "otel_blackbox.stubbable) from the recorded results: their functions never run.",
        )(command)

    return add


def stub_plan(stub_tools: bool, run_unrecorded_tools: bool = False) -> dict[str, bool]:
    if run_unrecorded_tools and not stub_tools:
        raise click.UsageError("--run-unrecorded-tools goes with --stub-tools")
    return {"stub_tools": stub_tools, "run_unrecorded_tools": run_unrecorded_tools}


def program_command(command: tuple[str, ...]) -> tuple[str, ...]:
    """The program and its arguments (tolerates a `--` that reached us)."""
    program = command[1:] if command and command[0] == "--" else command
    if not program:
        raise click.UsageError("no program to run: give it after --")
    return program


@cli.command(context_settings=PASS_THROUGH)
@output_option("Cassette to write.", path=True)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def record(output: Path, command: tuple[str, ...]) -> None:
    """Run a program live and record its LLM (and other HTTP) traffic as a cassette.

    The program's exit code is passed through; the cassette is written when it ends. The -o path
    is checked before the program starts (a missing folder, a folder, a database: exit 2); if the
    write still fails at the end (a full disk), the cassette is kept under a name the message gives.

    \b
    Example:
      otel-blackbox record -o run.json -- python agent.py
    """
    sys.exit(run_program("record", output, program_command(command)))


@cli.command(context_settings=PASS_THROUGH)
@click.argument("cassette", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--match", type=click.Choice(["exact", "sequence"]), default="exact", show_default=True,
    help="exact: each request must equal the recorded one; sequence: serve responses in order.",
)  # fmt: skip
@stub_tools_option(unrecorded=False)
@ALLOW_UNVERIFIED
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def replay(
    cassette: Path, match: str, stub_tools: bool, allow_unverified: bool, command: tuple[str, ...]
) -> None:
    """Run a program offline against a cassette: no network, no API key, no model variance.

    Exit 1 at the first divergence (the message names the step and the JSON path), or when the
    program did not make every recorded call; otherwise the program's own exit code. A run of the
    built-in agent (a `rerun` with no program) replays with no program: the same agent, offline.

    With --stub-tools, each tool call is answered from the recorded result of that call (by call
    id) and the tool's function does not run: no side effect repeats, no dependency is needed. A
    call the recording has no result for diverges.

    \b
    Example:
      otel-blackbox replay run.json -- python agent.py
      otel-blackbox replay run.json --stub-tools -- python agent.py
      otel-blackbox replay run.json --match sequence -- python agent.py
      otel-blackbox replay fixed.json              # a child of the built-in agent
    """
    program = command[1:] if command and command[0] == "--" else command
    # Checked before anything runs; a missing one: the session's own line ("record it first").
    recorded = checked_inputs([cassette], allow_unverified)[0] if cassette.is_file() else None
    if not program:
        if recorded is not None and recorded.agent is None:
            from otel_blackbox._render.hints import suggest

            replay = suggest("otel-blackbox", "replay", str(cassette), "--", "CMD")
            raise click.UsageError(
                f"no program to run: give it after -- ({replay}; only a built-in agent's run replays "
                "without one)"
            )
        if match != "exact":
            raise click.UsageError("--match is for a program replay: a built-in agent's run replays exactly")
        from otel_blackbox._playback.agent.run import replay_built_in

        sys.exit(replay_built_in(cassette, allow_unverified=allow_unverified))
    plan = {**stub_plan(stub_tools), "allow_unverified": allow_unverified}
    sys.exit(run_program("replay", cassette, program, match=match, plan=plan))


def _json_option(text: str, option: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        from otel_blackbox._render.hints import as_string

        raise click.BadParameter(
            f"not JSON: {text!r} (as a string: {as_string(option, text)})", param_hint=option
        ) from None


# Each change a fork can make at --at N: the option, its metavar, what it says in --help.
_CHANGES = (
    ("--set", "JSON", "A tool_result step: the result the tool returns instead (JSON)."),
    ("--set-error", "TEXT", "A tool_result step: the tool fails with this error instead."),
    ("--answer", "TEXT", "A model_output step: the model gives this final answer instead."),
    (
        "--calls",
        "JSON",
        'A model_output step: the model makes these tool calls instead, a JSON list of {"toolName", '
        '"toolInput"}.',
    ),
    ("--user", "TEXT", "A model_input step: its last user message says this instead."),
    ("--insert-user", "TEXT", "A model_input step: a user message appended to it."),
    ("--system", "TEXT", "A model_input step: the system prompt of it and every later request."),
    (
        "--tool",
        "NAME=JSON",
        'A model_input step: tool NAME\'s definition, {"description"?, "inputSchema"?}, in it and every '
        "later request.",
    ),
)


def _change_options(command: _F) -> _F:
    for option, metavar, text in reversed(_CHANGES):
        command = click.option(option, metavar=metavar, help=text)(command)
    return command


@cli.command(context_settings=PASS_THROUGH)
@click.argument("cassette", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--at", "at", required=True, type=click.IntRange(min=0), help="The step to change.")
@_change_options
@built_in_agent_options
@click.option(
    "--script",
    type=click.Path(dir_okay=False, path_type=Path),
    help="With -- CMD: model outputs to serve after the fork.",
)
@click.option(
    "--live", is_flag=True, help="With -- CMD: after the fork, send model calls to the real upstream."
)
@output_option("Child cassette.", path=True)
@click.option("--match", type=click.Choice(["exact", "sequence"]), default="exact", show_default=True)
@stub_tools_option(unrecorded=True)
@ALLOW_UNVERIFIED
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def fork(
    cassette: Path,
    at: int,
    script: Path | None,
    live: bool,
    output: Path,
    match: str,
    stub_tools: bool,
    run_unrecorded_tools: bool,
    allow_unverified: bool,
    command: tuple[str, ...],
    **options: Any,
) -> None:
    """Change one step of a run and let the run continue from there.

    Steps before --at are copied verbatim (same timestamps, so the same hashes: `diff` shows the
    shared prefix); give exactly one change for step N: a tool_result's --set JSON or --set-error
    TEXT, a model_output's --answer TEXT or --calls JSON, a model_input's --user TEXT,
    --insert-user TEXT, --system TEXT or --tool NAME=JSON (the system prompt and a tool's
    definition change for that request and every later one). The child records the change as its
    `edit` field, and `diff PARENT CHILD` names it first. A change that does not fit the step, a
    step out of range, or JSON that does not parse: one line, exit 2, before any model call.

    With no program, the built-in agent continues the run, as `rerun` does: any --provider and
    --model, every tool call answered from the parent's recorded results (on name and arguments,
    each once, those after the step first) or a --stub, never executed; a call neither answers
    stops the run (exit 1, the call named). An --answer ends the child there, with no model call.
    Exit 0 when the child completed.

    With -- CMD, the program is replayed from the parent up to step N (its model calls answered
    with the parent's outputs, its other requests with the parent's exchanges) and continues --live
    or from a --script of neutral model outputs (a JSON list of {"type": "final_answer", "text":
    ...} / {"type": "tool_calls", ...}). The model sees the change: a tool result's replacement or
    error in every request that carries it; an --answer or --calls as the answer to the program's
    call at that turn (new calls numbered after the parent's); a user message, the system prompt
    or a tool's definition rewritten in the program's request at that turn (and, but for a user
    message of another conversation, in every later one). The program's own variables still hold
    what really happened. With --stub-tools the program's tools do not run: before the fork point
    each call gets the parent's result for it (a forked tool result's call, the change), after it
    the parent's result with the same tool name and arguments. A call with no such result is a
    tool error the model sees, named at the end (or, with --run-unrecorded-tools, runs for real).
    The options of the built-in agent (--provider, --model, --max-cost, --stub...) are refused.

    \b
    Example:
      otel-blackbox fork run.json --at 9 --set '"refunded 12.00"' -o child.json
      otel-blackbox fork run.json --at 7 --calls '[{"toolName": "refund_order",
          "toolInput": {"order_id": "Alpha", "amount": "12.00"}}]' -o child.json
      otel-blackbox fork run.json --at 6 --system 'Refund exactly what was paid.' \\
          --provider anthropic --model claude-sonnet-4-5 --max-cost 0.50 -o child.json
      otel-blackbox fork run.json --at 7 --set '{"available": false}' \\
          --script replies.json -o child.json -- python agent.py
      otel-blackbox fork run.json --at 6 --system 'Refund exactly what was paid.' \\
          --live --stub-tools -o child.json -- python agent.py
      otel-blackbox diff run.json child.json     # edited at step 9: tool result of refund_order
    """
    changes = {option: options.pop(option[2:].replace("-", "_")) for option, _, _ in _CHANGES}
    given = [(option, value) for option, value in changes.items() if value is not None]
    if len(given) != 1:
        names = ", ".join(f"{option} {metavar}" for option, metavar, _ in _CHANGES)
        raise click.UsageError(f"give exactly one change for step {at}: one of {names}")
    ((change, value),) = given
    program = command[1:] if command and command[0] == "--" else command
    if program:
        agent_only = agent_only_given(
            options["provider"], options["stream"], options["base_url"], options["stubs"],
            options["tool_match"], options["max_turns"],
        )  # fmt: skip
        for option, used in (("--model", options["model"]), ("--max-cost", options["max_cost"])):
            agent_only = agent_only or (option if used is not None else None)
        if agent_only is not None:
            raise click.UsageError(f"{agent_only} is for the built-in agent: leave out the program (-- CMD)")
        _program_fork(cassette, at, change, value, script, live, output, match, stub_tools,
                      run_unrecorded_tools, allow_unverified, program)  # fmt: skip
    program_only = (("--script", script), ("--live", live), ("--match", match != "exact"),
                    ("--run-unrecorded-tools", run_unrecorded_tools))  # fmt: skip
    for option, used in program_only:
        if used:
            raise click.UsageError(f"{option} is for a program fork: give the program after --")
    if options["model"] is not None and not options["model"].strip():
        raise click.BadParameter("give a model name", param_hint="--model")
    checked_inputs([cassette], allow_unverified)
    if output.resolve() == cassette.resolve():
        raise click.BadParameter("the child cassette would overwrite the parent", param_hint="-o")
    edit = _edit(at, change, value)
    from otel_blackbox._playback.agent.fork_run import fork_built_in  # the execution side

    plan = built_in_plan(output, allow_unverified=allow_unverified, **options)
    sys.exit(fork_built_in(cassette, edit, plan))


def _edit(at: int, change: str, value: str) -> Any:
    """The Edit a change option asks for: exit 2 with its line when it cannot be one."""
    from otel_blackbox._playback.agent.edit import edit_from

    try:
        return edit_from(at, change[2:], value)
    except BlackboxError as exc:
        raise click.BadParameter(str(exc).removeprefix(f"{change}: "), param_hint=change) from None


def _program_fork(
    cassette: Path,
    at: int,
    change: str,
    value: str,
    script: Path | None,
    live: bool,
    output: Path,
    match: str,
    stub_tools: bool,
    run_unrecorded_tools: bool,
    allow_unverified: bool,
    program: tuple[str, ...],
) -> None:
    """``fork --at N <change> -- CMD``: the program replayed up to step N, changed there, continued.
    A change that does not fit its step is refused here, before the program runs (exit 2)."""
    if live == (script is not None):
        raise click.UsageError("give exactly one of --live and --script FILE")
    replies = read_script(script) if script is not None else None
    if change == "--set":
        asked: dict[str, Any] = {"result": _json_option(value, "--set")}
    else:
        edit = _edit(at, change, value)
        asked = {"change": change[2:], "text": value}
    if cassette.is_file():  # checked before the program starts; a missing one: the launcher's line
        (parent,) = checked_inputs([cassette], allow_unverified)
        if change == "--set":  # any tool result, the last one too (it has no model call after it)
            from otel_blackbox._playback.fork import set_point_error

            if (refused := set_point_error(parent, at)) is not None:
                raise click.UsageError(refused)
        else:
            from otel_blackbox._playback.fork_edits import program_start

            program_start(parent, str(cassette), edit)  # BlackboxError, exit 2: it does not fit
    plan = {
        "at": at,
        **asked,
        "output": str(output.resolve()),
        "replies": replies,
        **stub_plan(stub_tools, run_unrecorded_tools),
        "allow_unverified": allow_unverified,
    }
    sys.exit(run_program("fork", cassette, program, match=match, plan=plan))


def read_script(script: Path) -> list[dict[str, Any]]:
    """The neutral model outputs of a --script file, checked before any program runs (exit 2)."""
    from otel_blackbox._playback.script import (
        check_replies,
    )  # the execution side: only for the commands that run a program

    data = loads_json(read_text(script), str(script))
    replies = data.get("replies") if isinstance(data, dict) else data
    if not isinstance(replies, list):
        raise click.BadParameter(
            'a JSON list of model outputs (or {"replies": [...]})', param_hint="--script"
        )
    try:
        return check_replies(replies)
    except SessionError as exc:
        raise click.BadParameter(str(exc), param_hint="--script") from None
