"""A LangGraph agent whose ``run_migration`` tool asks a person first, through hitl-bridge.

The tool pushes an approval request to the bridge (``POST /v1/requests``), waits for
the decision, and then:

* **approve**: runs the migration with the arguments the model chose;
* **edit**: runs it with the arguments the person typed instead;
* **reject**: does not run it, and tells the model why (the person's reason);
* **respond** (a comment instead of a decision): does not run it, and passes the
  comment to the model;
* nobody answers in time, or the request is cancelled: does not run it.

The approval key is derived from the tool call id, so if the graph runs the same tool
call again (a retry, a resume after a crash) the bridge returns the decision already
made instead of asking twice.

Try it against the demo bridge (which shows requests pushed to the ``console`` target in
its terminal, and serves the API on 127.0.0.1:8790 with the token ``demo-token``)::

    pip install ./clients/python langgraph langchain-core
    hitl-bridge demo                                   # terminal 1
    python clients/python/examples/langgraph_tool_approval.py   # terminal 2

then answer in terminal 1: ``a``, ``r not during business hours``, or
``e {"database": "orders_staging", "migration": "0042_add_index", "dry_run": true}``.

Without an LLM, the graph's "model" is scripted: it calls ``run_migration`` once and
then reports the tool's result. Set ``HITL_EXAMPLE_MODEL`` (e.g. ``openai:gpt-4.1-mini``,
needs the ``langchain`` package and the provider's package and key) to let a real model
decide. With ``langchain>=1``, the same tool plugs into ``create_agent``::

    from langchain.agents import create_agent
    agent = create_agent("openai:gpt-4.1-mini", tools=[run_migration])

Environment: ``HITL_BRIDGE_URL`` (default http://127.0.0.1:8790), ``HITL_BRIDGE_TOKEN``
(default ``demo-token`` here), ``HITL_EXAMPLE_TELEGRAM_CHAT`` (a chat id: show the
request there instead of the console).

This blocks the tool while a person decides, which is fine for minutes. For pauses of
hours, push the request with a ``callback_url`` and use LangGraph's ``interrupt()`` /
``Command(resume=...)`` to suspend the graph until the callback arrives.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from typing import Annotated, Any

from hitl_bridge_client import (
    Approval,
    HitlClient,
    RequestCancelled,
    RequestExpired,
    Target,
    TargetLike,
)

try:  # The LangGraph part is optional: the approval logic below works without it.
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.tools import InjectedToolCallId, tool
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    HAVE_LANGGRAPH = True
except ImportError:  # pragma: no cover - depends on what is installed
    HAVE_LANGGRAPH = False


# --- the bridge ------------------------------------------------------------------------

_client: HitlClient | None = None


def get_client() -> HitlClient:
    """One client for the process (``HITL_BRIDGE_URL``, ``HITL_BRIDGE_TOKEN``)."""
    global _client
    if _client is None:
        _client = HitlClient(token=os.environ.get("HITL_BRIDGE_TOKEN", "demo-token"))
    return _client


def set_client(client: HitlClient) -> None:
    """Use this client (tests, or your own settings)."""
    global _client
    _client = client


def approval_targets() -> list[TargetLike]:
    chat = os.environ.get("HITL_EXAMPLE_TELEGRAM_CHAT")
    return [Target.telegram(chat)] if chat else [Target.console()]


# --- the guarded call ------------------------------------------------------------------


def outcome(approval: Approval, name: str, args: dict[str, Any]) -> tuple[str, dict[str, Any] | str]:
    """What a decision means for the call: ``("run", args)`` (approved, or edited args)
    or ``("skip", message for the model)``."""
    decision = approval.decision
    kind = decision["type"]
    who = approval.decided_by.name if approval.decided_by else "the approver"
    if kind == "approve":
        return "run", args
    if kind == "edit":
        edited = decision["edited_action"]  # type: ignore[typeddict-item]
        if edited.get("name", name) != name:
            return "skip", f"{who} replaced the call with {edited.get('name')}, which this tool cannot run"
        return "run", dict(edited.get("args") or {})
    if kind == "reject":
        reason = decision.get("message")
        return "skip", f"{who} rejected {name}" + (f": {reason}" if reason else "") + ". Do not retry it unasked."
    if kind == "respond":
        return "skip", f"{who} did not approve {name} and said: {decision.get('message', '')}"
    return "skip", f"unknown decision {kind!r}; not running {name}"


def call_with_approval(
    name: str,
    args: dict[str, Any],
    run: Callable[..., str],
    *,
    approval_key: str | None = None,
    description: str | None = None,
    timeout_seconds: int = 300,
    client: HitlClient | None = None,
) -> str:
    """Asks for approval of ``name(**args)`` through the bridge, then runs ``run`` with
    the approved (or edited) arguments, or returns why it did not."""
    action: dict[str, Any] = {"name": name, "args": args}
    if description:
        action["description"] = description
    hitl = client or get_client()
    try:
        approval = hitl.request_approval(
            [action],
            targets=approval_targets(),
            review_configs=[{"action_name": name, "allowed_decisions": ["approve", "edit", "reject", "respond"]}],
            text=f"The agent wants to call {name}.",
            timeout_seconds=timeout_seconds,
            approval_key=approval_key,
        )
    except RequestExpired:
        return f"Nobody approved {name} within {timeout_seconds} s; it was not run."
    except RequestCancelled:
        return f"The approval request for {name} was cancelled; it was not run."
    what, detail = outcome(approval, name, args)
    if what == "run":
        assert isinstance(detail, dict)
        try:
            return run(**detail)
        except TypeError as e:  # edited arguments that do not fit the function
            return f"The edited arguments do not fit {name} ({e}); it was not run."
    assert isinstance(detail, str)
    return detail


# --- the tool's real work --------------------------------------------------------------


def apply_migration(database: str, migration: str, dry_run: bool = False) -> str:
    """Stands in for the real thing (alembic, sqlx, flyway, ...)."""
    verb = "would apply" if dry_run else "applied"
    return f"{verb} migration {migration} to {database}"


# --- LangGraph -------------------------------------------------------------------------

if HAVE_LANGGRAPH:

    @tool
    def run_migration(
        database: str,
        migration: str,
        tool_call_id: Annotated[str, InjectedToolCallId],
        dry_run: bool = False,
    ) -> str:
        """Apply a schema migration to a database. A person must approve it first."""
        return call_with_approval(
            "run_migration",
            {"database": database, "migration": migration, "dry_run": dry_run},
            apply_migration,
            # The same tool call never asks twice: the bridge is idempotent by key.
            approval_key=f"run_migration-{tool_call_id}",
            description=f"Apply {migration} to {database}" + (" (dry run)" if dry_run else ""),
        )

    TOOLS = [run_migration]

    def scripted_model(state: MessagesState) -> dict[str, Any]:
        """A stand-in for an LLM: call run_migration once, then report the result."""
        last = state["messages"][-1]
        if isinstance(last, ToolMessage):
            return {"messages": [AIMessage(content=f"Result: {last.content}")]}
        call = {
            "name": "run_migration",
            "args": {"database": "orders", "migration": "0042_add_index"},
            "id": f"call_{uuid.uuid4().hex[:12]}",
            "type": "tool_call",
        }
        return {"messages": [AIMessage(content="", tool_calls=[call])]}

    def model_node() -> Any:  # a node function: MessagesState in, an update out
        name = os.environ.get("HITL_EXAMPLE_MODEL")
        if not name:
            return scripted_model
        from langchain.chat_models import init_chat_model  # type: ignore[import-not-found, unused-ignore]

        model = init_chat_model(name).bind_tools(TOOLS)  # needs `pip install langchain`

        def call_model(state: MessagesState) -> dict[str, Any]:
            return {"messages": [model.invoke(state["messages"])]}

        return call_model

    def build_graph() -> Any:
        graph = StateGraph(MessagesState)
        graph.add_node("agent", model_node())
        graph.add_node("tools", ToolNode(TOOLS))
        graph.add_edge(START, "agent")
        graph.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
        graph.add_edge("tools", "agent")
        return graph.compile()


def main() -> None:
    if not HAVE_LANGGRAPH:
        raise SystemExit("this example needs LangGraph: pip install langgraph langchain-core")
    graph = build_graph()
    result = graph.invoke({"messages": [HumanMessage("Add the index from migration 0042 to the orders database.")]})
    for message in result["messages"]:
        message.pretty_print()


if __name__ == "__main__":
    main()
