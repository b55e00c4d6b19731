"""Runs `langgraph dev` for the tests until this process's stdin closes.

The test binary keeps the write end of our stdin; when it exits (however it exits)
the pipe closes and the server is stopped, so no server outlives its tests.

    python serve.py PORT WORKDIR

The server's files (its in-memory state dump) go to WORKDIR, with a copy of
langgraph.json whose paths point back here.
"""

import json
import os
import signal
import subprocess
import sys
import threading

here = os.path.dirname(os.path.abspath(__file__))
port, workdir = sys.argv[1], sys.argv[2]
with open(os.path.join(here, "langgraph.json")) as f:
    config = json.load(f)
config["dependencies"] = [here]
config["graphs"] = {name: os.path.join(here, spec.removeprefix("./")) for name, spec in config["graphs"].items()}
config_path = os.path.join(workdir, "langgraph.json")
with open(config_path, "w") as f:
    json.dump(config, f)
env = dict(os.environ, LANGGRAPH_CLI_NO_ANALYTICS="1", LANGSMITH_TRACING="false")
langgraph = os.path.join(os.path.dirname(sys.executable), "langgraph")
server = subprocess.Popen(
    [langgraph, "dev", "--config", config_path, "--host", "127.0.0.1", "--port", port,
     "--no-browser", "--no-reload", "--n-jobs-per-worker", "8", "--server-log-level", "WARNING"],
    cwd=workdir,
    env=env,
    start_new_session=True,
)


def stop_when_stdin_closes():
    sys.stdin.buffer.read()
    try:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=10)
    except Exception:
        os.killpg(server.pid, signal.SIGKILL)


threading.Thread(target=stop_when_stdin_closes, daemon=True).start()
# os._exit: the stdin reader thread must not hold up interpreter shutdown.
os._exit(server.wait())
