"""The LangGraph agents the connector's end-to-end tests run under `langgraph dev`.

A real `create_agent` graph with LangChain's `HumanInTheLoopMiddleware`, driven by a
scripted model instead of an LLM, so every run is offline and deterministic:

- the model is stateless: when the last message is the user's, it answers with the tool
  calls the user's text names (below); after tool results it says what they were, so
  the chat (and the test) sees the outcome of every decision;
- two graphs: `agent` (one interrupt per model turn, `interrupt_mode="batched"`) and
  `agent_per_call` (one interrupt per gated tool call, `interrupt_mode="per_call"`).

User text → tool calls:
  "trade"     execute_trade(symbol="VNM", quantity=100)
  "two"       execute_trade(...) and send_report(to="ops@example.com")
  "ask"       ask_user_question(questions=[...]) (answered by the bridge with `respond`)
  anything else: a plain text answer, no tool.
A conversation whose user says "slowly" gets each answer after SLOW_SECONDS: a model
still working when the bridge is killed.
"""

import json
import time
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool


@tool
def execute_trade(symbol: str, quantity: int) -> str:
    """Place a buy order."""
    return f"bought {quantity} {symbol}"


@tool
def send_report(to: str) -> str:
    """Email the daily P&L report."""
    return f"report sent to {to}"


@tool
def ask_user_question(questions: list[dict[str, Any]]) -> str:
    """Ask the user questions. The human's `respond` decision answers it; it never runs."""
    return "the questions were not answered"


QUESTIONS = [
    {
        "question": "Thảo muốn tập trung vào mục tiêu nào?",
        "header": "Mục tiêu",
        "multiSelect": False,
        "options": [
            {"label": "Tăng trưởng", "description": "Cổ phiếu tăng trưởng"},
            {"label": "Cổ tức bền vững (Recommended)", "description": "Dòng tiền đều"},
        ],
    },
    {
        "question": "Nhóm ngành quan tâm?",
        "header": "Ngành",
        "multiSelect": True,
        "options": [
            {"label": "Ngân hàng"},
            {"label": "Thép (Steel)"},
            {"label": "Bán lẻ"},
        ],
    },
]


def _calls_for(text: str) -> list[dict[str, Any]]:
    trade = {"name": "execute_trade", "args": {"symbol": "VNM", "quantity": 100}, "id": "call_trade"}
    if "two" in text:
        return [trade, {"name": "send_report", "args": {"to": "ops@example.com"}, "id": "call_report"}]
    if "trade" in text:
        return [trade]
    if "ask" in text:
        return [{"name": "ask_user_question", "args": {"questions": QUESTIONS}, "id": "call_ask"}]
    return []


SLOW_SECONDS = 3


class ScriptedModel(FakeMessagesListChatModel):
    """Decides from the conversation alone, so resumes and restarts replay it exactly."""

    responses: list[BaseMessage] = []

    def bind_tools(self, tools: Any, **kwargs: Any) -> "ScriptedModel":
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        if any(isinstance(m, HumanMessage) and "slowly" in str(m.content) for m in messages):
            time.sleep(SLOW_SECONDS)
        last = messages[-1]
        if isinstance(last, HumanMessage):
            text = last.content if isinstance(last.content, str) else json.dumps(last.content)
            calls = _calls_for(text)
            message = AIMessage(content="" if calls else f"echo: {text}", tool_calls=calls)
        else:
            results = []
            for m in reversed(messages):
                if not isinstance(m, ToolMessage):
                    break
                results.insert(0, f"{m.name}={m.status}: {m.content}")
            message = AIMessage(content="done. " + " | ".join(results))
        return ChatResult(generations=[ChatGeneration(message=message)])


def _agent(mode: str):
    return create_agent(
        ScriptedModel(),
        tools=[execute_trade, send_report, ask_user_question],
        middleware=[
            HumanInTheLoopMiddleware(
                interrupt_on={
                    "execute_trade": {"allowed_decisions": ["approve", "edit", "reject"]},
                    "send_report": {"allowed_decisions": ["approve", "reject", "respond"]},
                    "ask_user_question": {"allowed_decisions": ["respond"]},
                },
                interrupt_mode=mode,
            )
        ],
    )


batched = _agent("batched")
per_call = _agent("per_call")
