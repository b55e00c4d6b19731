"""The LangGraph example's approval logic, with a scripted bridge. LangGraph itself is
optional: the graph test runs only where it is installed."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from hitl_bridge_client import HitlClient

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "langgraph_tool_approval.py"


@pytest.fixture(scope="module")
def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("langgraph_tool_approval", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def scripted(final: dict[str, Any]) -> tuple[HitlClient, list[dict[str, Any]]]:
    """A bridge that answers every request with ``final`` (a state body)."""
    posted: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            posted.append(json.loads(request.content))
            return httpx.Response(201, json={"approval_key": posted[-1].get("approval_key", "k"), "status": "pending"})
        return httpx.Response(200, json={"approval_key": posted[-1].get("approval_key", "k"), **final})

    return HitlClient("http://bridge", "t", transport=httpx.MockTransport(handler), poll_interval=0.01), posted


def decided(decision: dict[str, Any]) -> dict[str, Any]:
    return {
        "status": "resolved",
        "decided_by": {"platform": "console", "id": "console", "name": "Ops"},
        "reply": {"decisions": [decision]},
    }


ARGS = {"database": "orders", "migration": "0042_add_index", "dry_run": False}


@pytest.mark.parametrize(
    ("final", "expected"),
    [
        (decided({"type": "approve"}), "applied migration 0042_add_index to orders"),
        (
            decided(
                {
                    "type": "edit",
                    "edited_action": {
                        "name": "run_migration",
                        "args": {"database": "orders_staging", "migration": "0042_add_index", "dry_run": True},
                    },
                }
            ),
            "would apply migration 0042_add_index to orders_staging",
        ),
        (
            decided({"type": "reject", "message": "not in business hours"}),
            "Ops rejected run_migration: not in business hours",
        ),
        (decided({"type": "respond", "message": "use 0043"}), "Ops did not approve run_migration and said: use 0043"),
        (
            decided({"type": "edit", "edited_action": {"name": "run_migration", "args": {"table": "x"}}}),
            "The edited arguments do not fit run_migration",
        ),
        (
            {"status": "expired", "reply": {"decisions": [{"type": "reject", "message": "timed out"}]}},
            "Nobody approved run_migration within 300 s",
        ),
        ({"status": "cancelled"}, "was cancelled; it was not run"),
    ],
)
def test_call_with_approval(example: ModuleType, final: dict[str, Any], expected: str) -> None:
    client, posted = scripted(final)
    result = example.call_with_approval(
        "run_migration", dict(ARGS), example.apply_migration, approval_key="run_migration-call_1", client=client
    )
    assert expected in result
    assert posted[0]["approval_key"] == "run_migration-call_1"
    assert posted[0]["actions"] == [{"name": "run_migration", "args": ARGS}]
    assert posted[0]["review_configs"] == [
        {"action_name": "run_migration", "allowed_decisions": ["approve", "edit", "reject", "respond"]}
    ]


def test_langgraph_agent_runs_the_approved_tool(example: ModuleType) -> None:
    pytest.importorskip("langgraph")
    client, posted = scripted(decided({"type": "approve"}))
    example.set_client(client)
    result = example.build_graph().invoke({"messages": [example.HumanMessage("Add the index.")]})
    assert result["messages"][-1].content == "Result: applied migration 0042_add_index to orders"
    assert posted[0]["approval_key"].startswith("run_migration-call_")
