"""Claude Code subagents placed under the Task call that started them: `import --from claude-code`.

The records are written here in the shapes the community schemas and parsers publish, never copied
from a real session:

* 2.0: each subagent in ``<session>/subagents/agent-<agentId>.jsonl`` (every record
  ``isSidechain: true`` with ``agentId`` and the session's ``sessionId``; the first one a user
  message, ``parentUuid: null``, holding the Task call's prompt); the main session's result record
  of a Task call carries ``toolUseResult`` with ``status``, ``prompt``, ``agentId``, ``content``,
  ``totalDurationMs``, ``totalTokens``, ``totalToolUseCount`` and ``usage``;
* 2.1.63 on: the tool is named ``Agent``, the result's content ends with a text block
  ``agentId: <id> (use SendMessage ...)\\n<usage>...</usage>``, and ``progress`` records with
  ``data.type: agent_progress`` name the subagent (``data.agentId``) of a call
  (``parentToolUseID``) while it runs;
* before 2.0: the subagents are side chains of the session's own file, with no ``agentId``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers import import_transcript, run_cli
from test_transcripts_claude_code_versions import Writer, result, spans, text, use

SESSION = "7d1e4c2a-1234-4abc-8def-0123456789ab"
CART, CHECKOUT = "a3f9c01", "b71e2d4"
CART_ANSWER = "cart.py: total() ignores the discount."  # intentional: test data, a subagent's answer
CHECKOUT_ANSWER = "checkout.py: nothing wrong."
USAGE = {
    "input_tokens": 4,
    "output_tokens": 120,
    "cache_read_input_tokens": 900,
    "cache_creation_input_tokens": 0,
}


def task_result(agent_id: str, prompt: str, answer: str) -> dict[str, Any]:
    """What 2.0 writes beside a Task call's result: the subagent's own account of its run."""
    return {
        "status": "completed", "prompt": prompt, "agentId": agent_id, "content": [text(answer)],
        "totalDurationMs": 14234, "totalTokens": 7841, "totalToolUseCount": 1, "usage": USAGE,
    }  # fmt: skip


def subagent(agent_id: str, prompt: str, second: int, tool: tuple[str, dict[str, Any], str], answer: str,
             version: str = "2.0.43", session: str = SESSION) -> Writer:  # fmt: skip
    """A subagent's own file: its prompt, one tool call and its result, its answer; from ``second``."""
    w = Writer(version, session=session, gitBranch="main", isSidechain=True, agentId=agent_id)
    w.second = second - 1
    w.user(f"{agent_id}-u", prompt, after=None)
    w.assistant(f"{agent_id}-a1", f"msg_{agent_id}_1", use(f"toolu_{agent_id}", tool[0], **tool[1]))
    w.user(f"{agent_id}-r", result(f"toolu_{agent_id}", tool[2]))
    w.assistant(f"{agent_id}-a2", f"msg_{agent_id}_2", text(answer))
    return w


def concurrent_session(folder: Path) -> Path:
    """A 2.0 session whose one response asks two subagents at once (two Task calls, one message split
    over three records); the checkout reviewer answers first."""
    w = Writer("2.0.43", session=SESSION, gitBranch="main")
    w.user("u1", "Review the cart and the checkout")
    w.assistant("a1", "msg_1", text("I will ask two reviewers."))
    cart = {"description": "cart", "prompt": "Review cart.py", "subagent_type": "general-purpose"}
    checkout = {"description": "checkout", "prompt": "Review checkout.py", "subagent_type": "general-purpose"}
    w.assistant("a2", "msg_1", use("toolu_cart", "Task", **cart))
    w.assistant("a3", "msg_1", use("toolu_checkout", "Task", **checkout))
    w.second = 20  # the subagents ran meanwhile
    w.user("r1", result("toolu_checkout", [text(CHECKOUT_ANSWER)]),
           toolUseResult=task_result(CHECKOUT, "Review checkout.py", CHECKOUT_ANSWER))  # fmt: skip
    w.user("r2", result("toolu_cart", [text(CART_ANSWER)]),
           toolUseResult=task_result(CART, "Review cart.py", CART_ANSWER))  # fmt: skip
    w.assistant("a4", "msg_2", text("The cart has a bug; the checkout is fine."))
    main = w.write(folder / f"{SESSION}.jsonl")
    subagents = folder / SESSION / "subagents"
    subagent(CART, "Review cart.py", 5, ("Read", {"file_path": "cart.py"}, "def total(items): ..."),
             CART_ANSWER).write(subagents / f"agent-{CART}.jsonl")  # fmt: skip
    subagent(CHECKOUT, "Review checkout.py", 6, ("Grep", {"pattern": "discount"}, "No matches found"),
             CHECKOUT_ANSWER).write(subagents / f"agent-{CHECKOUT}.jsonl")  # fmt: skip
    return main


def project_folder(folder: Path) -> Path:
    """A project folder of three sessions: the concurrent one with its subagents, and two of one
    question and answer each."""
    concurrent_session(folder)
    for n, session in enumerate(
        ("11111111-2222-4333-8444-555555555555", "99999999-8888-4777-8666-555555555555")
    ):
        w = Writer("2.0.43", session=session)
        w.user("u1", f"Question {n}")
        w.assistant("a1", "msg_1", text(f"Answer {n}"))
        w.write(folder / f"{session}.jsonl")
    return folder


def by_kind(stored: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [s for s in stored if s["oi_span_kind"] == kind]


def metadata(span: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(span["attributes"].get("metadata", "{}"))
    return found


def test_concurrent_subagents_each_go_under_the_task_call_that_started_them(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    folder = tmp_path / "-home-me-shop"
    concurrent_session(folder)
    summary = import_transcript(db, "claude-code", folder)
    assert summary["traces"] == 1
    stored = spans(db)
    (root,) = [s for s in stored if s["parent_span_id"] is None]
    tasks = {
        json.loads(s["attributes"]["input.value"])["prompt"]: s for s in stored if s["tool_name"] == "Task"
    }
    subagents = {s["attributes"]["input.value"]: s for s in by_kind(stored, "AGENT") if s is not root}
    assert set(tasks) == set(subagents) == {"Review cart.py", "Review checkout.py"}
    for prompt, (agent_id, call_id, answer) in {
        "Review cart.py": (CART, "toolu_cart", CART_ANSWER),
        "Review checkout.py": (CHECKOUT, "toolu_checkout", CHECKOUT_ANSWER),
    }.items():
        task, agent = tasks[prompt], subagents[prompt]
        assert agent["parent_span_id"] == task["span_id"] and task["parent_span_id"] == root["span_id"]
        assert {k: metadata(agent)[k] for k in ("agent_id", "parent_tool_call_id")} == {
            "agent_id": agent_id, "parent_tool_call_id": call_id}  # fmt: skip
        assert metadata(task) == {"agent_id": agent_id}  # the call names the subagent it ran
        # The call's result is the subagent's answer.
        assert task["attributes"]["output.value"] == agent["attributes"]["output.value"] == answer
        # Each ran inside its own call's span: the two calls' spans overlap, as the two ran at once.
        assert task["start_ns"] < agent["start_ns"] and agent["end_ns"] <= task["end_ns"]
        inner = [s for s in stored if s["parent_span_id"] == agent["span_id"]]
        assert len(inner) == 3 and {s["trace_id"] for s in inner} == {root["trace_id"]}
    assert tasks["Review checkout.py"]["start_ns"] < tasks["Review cart.py"]["end_ns"]
    assert root["status"] == "ok" and "blackbox.run.incomplete" not in root["attributes"]
    # Imported again: nothing new.
    assert import_transcript(db, "claude-code", folder)["spans"] == 0


def test_a_subagent_file_imported_alone_is_a_trace_of_its_own(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    folder = tmp_path / "-home-me-shop"
    concurrent_session(folder)
    summary = import_transcript(db, "claude-code", folder / SESSION / "subagents" / f"agent-{CART}.jsonl")
    assert (summary["traces"], summary["spans"]) == (1, 4)
    stored = spans(db)
    (root,) = [s for s in stored if s["parent_span_id"] is None]
    assert metadata(root)["agent_id"] == CART and "parent_tool_call_id" not in metadata(root)
    assert root["attributes"]["output.value"] == CART_ANSWER and root["status"] == "ok"


def killed_session(folder: Path) -> None:
    """A 2.1 session killed while two subagents ran (``Agent`` calls, no result): a progress record
    names the first one's agent; the second is found by its prompt."""
    w = Writer("2.1.90", session=SESSION, gitBranch="main")
    w.user("u1", "Review the cart and the checkout")
    cart = {"description": "cart", "prompt": "Review cart.py", "subagent_type": "general-purpose"}
    checkout = {"description": "checkout", "prompt": "Review checkout.py", "subagent_type": "Explore"}
    w.assistant("a1", "msg_1", use("toolu_cart", "Agent", **cart))
    w.assistant("a2", "msg_1", use("toolu_checkout", "Agent", **checkout))
    w.raw({
        "type": "progress", "parentToolUseID": "toolu_cart", "toolUseID": "agent_msg_01", "uuid": "p1",
        "parentUuid": "a2", "sessionId": SESSION, "timestamp": "2025-06-01T10:00:06.000Z",
        "data": {"type": "agent_progress", "prompt": "Review cart.py", "agentId": CART,
                 "message": {"type": "user", "message": {"role": "user", "content": "Review cart.py"}}},
    })  # fmt: skip
    w.write(folder / f"{SESSION}.jsonl")
    subagents = folder / SESSION / "subagents"
    # Both were still running: each stopped on a call of its own never answered.
    cart_agent = subagent(CART, "Review cart.py", 5, ("Read", {"file_path": "cart.py"}, ""), "", "2.1.90")
    cart_agent.records = cart_agent.records[:2]
    cart_agent.write(subagents / f"agent-{CART}.jsonl")
    checkout_agent = subagent(CHECKOUT, "Review checkout.py", 6, ("Grep", {"pattern": "x"}, ""), "", "2.1.90")
    checkout_agent.records = checkout_agent.records[:2]
    checkout_agent.write(subagents / f"agent-{CHECKOUT}.jsonl")


def test_subagents_of_a_killed_session_stay_under_its_root_and_name_their_call(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    folder = tmp_path / "-home-me-shop"
    killed_session(folder)
    import_transcript(db, "claude-code", folder)
    stored = spans(db)
    (root,) = [s for s in stored if s["parent_span_id"] is None]
    assert not [s for s in stored if s["tool_name"] == "Agent"]  # no result: no TOOL span
    subagents = {metadata(s)["agent_id"]: s for s in by_kind(stored, "AGENT") if s is not root}
    assert {a: s["parent_span_id"] for a, s in subagents.items()} == {
        CART: root["span_id"],
        CHECKOUT: root["span_id"],
    }
    assert metadata(subagents[CART])["parent_tool_call_id"] == "toolu_cart"  # the progress record's
    assert metadata(subagents[CHECKOUT])["parent_tool_call_id"] == "toolu_checkout"  # by its prompt
    # Nothing answered: the session and its subagents are incomplete, not ok.
    assert root["status"] == "unset" and root["attributes"]["blackbox.run.incomplete"] == (
        "the calls Agent (toolu_cart), Agent (toolu_checkout) were never answered")  # fmt: skip
    assert subagents[CART]["attributes"]["blackbox.run.incomplete"] == (
        f"the call Read (toolu_{CART}) was never answered")  # fmt: skip
    listed = json.loads(run_cli("list", "--json", db=db, check=True).stdout)
    assert [(t["status"], t["incomplete"]) for t in listed] == [
        ("incomplete", root["attributes"]["blackbox.run.incomplete"])]  # fmt: skip
    shown = run_cli("show", listed[0]["trace_id"], db=db, check=True).stdout
    assert "INCOMPLETE" in shown and "incomplete: the calls Agent (toolu_cart)" in shown


def test_a_2_1_result_names_its_agent_in_its_text(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    folder = tmp_path / "-home-me-shop"
    w = Writer("2.1.90", session=SESSION, gitBranch="main")
    w.user("u1", "Review the cart")
    w.assistant("a1", "msg_1", use("toolu_cart", "Agent", description="cart", prompt="Check the cart"))
    trailer = f"agentId: {CART} (use SendMessage with to: '{CART}' to continue this agent)\n" + (
        "<usage>total_tokens: 7841\ntool_uses: 1\nduration_ms: 14234</usage>")  # fmt: skip
    w.user("r1", result("toolu_cart", [text(CART_ANSWER), text(trailer)]))  # no toolUseResult kept
    w.assistant("a2", "msg_2", text("The cart has a bug."))
    w.write(folder / f"{SESSION}.jsonl")
    # The agent id links it, whatever the subagent's first message (some 2.0 versions wrote no prompt
    # in the subagent's file: anthropics/claude-code issue 11712).
    subagent(CART, "(no prompt)", 3, ("Read", {"file_path": "cart.py"}, "..."), CART_ANSWER, "2.1.90").write(
        folder / SESSION / "subagents" / f"agent-{CART}.jsonl")  # fmt: skip
    import_transcript(db, "claude-code", folder)
    stored = spans(db)
    (task,) = [s for s in stored if s["tool_name"] == "Agent"]
    (agent,) = [s for s in by_kind(stored, "AGENT") if s["parent_span_id"] is not None]
    assert agent["parent_span_id"] == task["span_id"] and metadata(task) == {"agent_id": CART}
    assert task["attributes"]["output.value"].startswith(CART_ANSWER + "\nagentId: ")  # what the model saw


def test_side_chains_of_an_older_session_are_linked_by_prompt_each_call_once_in_order(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    w = Writer("1.0.98", gitBranch="main")
    w.user("u1", "Run the tests until they pass")
    for n in (1, 2):  # the same prompt twice: the first side chain is the first call's
        w.assistant(
            f"a{n}", f"msg_{n}", use(f"toolu_t{n}", "Task", description="tests", prompt="Run the tests")
        )
        call = w.last
        w.add(
            "user",
            f"s{n}u",
            after=None,
            isSidechain=True,
            message={"role": "user", "content": "Run the tests"},
        )
        w.assistant(f"s{n}a", f"msg_s{n}", text(f"run {n}: {'1 failed' if n == 1 else 'all passed'}"),
                    isSidechain=True)  # fmt: skip
        w.user(f"r{n}", result(f"toolu_t{n}", [text(f"run {n}")]), after=call,
               toolUseResult={"content": [text(f"run {n}")], "totalDurationMs": 900, "totalTokens": 50,
                              "totalToolUseCount": 0, "usage": USAGE, "wasInterrupted": False})  # fmt: skip
    w.assistant("a3", "msg_3", text("They pass now."))
    import_transcript(db, "claude-code", w.write(tmp_path / f"{w.session}.jsonl"))
    stored = spans(db)
    tasks = {
        s["span_id"]: json.loads(s["attributes"]["input.value"]) for s in stored if s["tool_name"] == "Task"
    }
    linked = [
        (s["attributes"]["output.value"], metadata(s)["parent_tool_call_id"], s["parent_span_id"] in tasks)
        for s in by_kind(stored, "AGENT") if s["parent_span_id"] is not None
    ]  # fmt: skip
    assert linked == [("run 1: 1 failed", "toolu_t1", True), ("run 2: all passed", "toolu_t2", True)]
    assert all("agent_id" not in metadata(s) for s in by_kind(stored, "AGENT"))


def test_a_project_folder_of_three_sessions_is_three_traces(tmp_path: Path) -> None:
    db = tmp_path / "bb.db"
    folder = project_folder(tmp_path / "-home-me-shop")
    summary = import_transcript(db, "claude-code", folder)
    assert summary["traces"] == 3
    stored = spans(db)
    roots = [s for s in stored if s["parent_span_id"] is None]
    assert len(roots) == 3 and len({s["trace_id"] for s in stored}) == 3
    # The subagents stay with their session: under its Task calls, in its trace.
    main = next(r for r in roots if r["session_id"] == SESSION)
    assert {s["trace_id"] for s in by_kind(stored, "AGENT") if s["parent_span_id"]} == {main["trace_id"]}
    runs = json.loads(run_cli("runs", "--json", db=db, check=True).stdout)
    assert [(r["traces"], r["status"]) for r in runs] == [(3, "ok")]
