"""AgentOS for the bridge's end-to-end tests: one agent, `ops`, served by uvicorn on
127.0.0.1:$AGENT_OS_PORT, whose model is the scripted fake OpenAI server in
fake_openai.py (started in this process on $FAKE_OPENAI_PORT).

The agent has the two kinds of HITL tools the bridge answers:
- `deploy(target)`, `@tool(requires_confirmation=True)`: approve → it runs and its
  result is what the model sees next; reject → the model sees the rejection note.
- `UserFeedbackTools().ask_user`: structured questions (seed 004); the chosen labels
  come back to the model as "User feedback received: [...]".

Run: python agent_os.py  (env AGENT_OS_PORT, FAKE_OPENAI_PORT, AGENT_OS_DB). With
AGENT_OS_EXIT_ON_STDIN_EOF=1 it exits when its stdin closes, i.e. when the test
process that started it is gone, however it ended.
"""

import os
import sys
import threading

os.environ.setdefault("AGNO_TELEMETRY", "false")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import uvicorn  # noqa: E402
from agno.agent import Agent  # noqa: E402
from agno.db.sqlite import SqliteDb  # noqa: E402
from agno.models.openai import OpenAIChat  # noqa: E402
from agno.os import AgentOS  # noqa: E402
from agno.tools import tool  # noqa: E402
from agno.tools.user_feedback import UserFeedbackTools  # noqa: E402

import fake_openai  # noqa: E402

AGENT_OS_PORT = int(os.environ["AGENT_OS_PORT"])
FAKE_OPENAI_PORT = fake_openai.serve_in_background(int(os.environ.get("FAKE_OPENAI_PORT", "0")))


@tool(requires_confirmation=True)
def deploy(target: str) -> str:
    """Deploy the service to a target environment.

    Args:
        target: The environment to deploy to.
    """
    return f"deployed to {target}"


agent = Agent(
    id="ops",
    name="Ops",
    model=OpenAIChat(id="fake-model", base_url=f"http://127.0.0.1:{FAKE_OPENAI_PORT}/v1", api_key="dummy"),
    tools=[deploy, UserFeedbackTools()],
    db=SqliteDb(db_file=os.environ.get("AGENT_OS_DB", "agent_os.db")),
    telemetry=False,
)

agent_os = AgentOS(id="bridge-tests", agents=[agent], telemetry=False)
app = agent_os.get_app()


@app.get("/fake-openai")
def fake_openai_port():
    """Where the scripted model listens, so a test can read what it was sent."""
    return {"port": FAKE_OPENAI_PORT}


def exit_when_stdin_closes():
    sys.stdin.read()
    os._exit(0)


if __name__ == "__main__":
    if os.environ.get("AGENT_OS_EXIT_ON_STDIN_EOF") == "1":
        threading.Thread(target=exit_when_stdin_closes, daemon=True).start()
    uvicorn.run(app, host="127.0.0.1", port=AGENT_OS_PORT, log_level="warning")
