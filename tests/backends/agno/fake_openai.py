"""A scripted stand-in for the OpenAI Chat Completions API (streaming and not).

What the model "decides" is read from the conversation, so one server serves every
test at once:
- last message from the user:
  - contains "deploy <a> and <b>": two `deploy` tool calls in one turn;
  - contains "deploy <target>": one `deploy` tool call;
  - contains "trip": an `ask_user` call with a multi-select and a single-select
    question;
  - anything else: the text "echo: <message>".
- last message is a tool result: the text "model saw: <every tool result since the
  last assistant text, joined by ' | '>", so a test can read what came back.

Every request body is recorded; GET /requests returns them all (a test finds its
own by a unique word it put in its chat message).
"""

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REQUESTS = []
_LOCK = threading.Lock()

# A conversation whose user says "slowly" gets each answer after this many seconds:
# a model still working when the bridge is killed.
SLOW_SECONDS = 3
_CALLS = [0]

TRIP_QUESTIONS = [
    {
        "question": "Which activities do you want?",
        "header": "Activities",
        "options": [
            {"label": "Hiking", "description": "Trails and views"},
            {"label": "Museums, galleries", "description": "Indoor culture"},
            {"label": "Food tours"},
        ],
        "multi_select": True,
    },
    {
        "question": "What budget?",
        "header": "Budget",
        "options": [{"label": "Low"}, {"label": "High"}],
        "multi_select": False,
    },
]


def _call_id():
    with _LOCK:
        _CALLS[0] += 1
        return f"call_{_CALLS[0]}"


def decide(messages):
    """(text, tool_calls) for the next assistant turn."""
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        results = []
        for message in reversed(messages):
            if message.get("role") != "tool":
                break
            results.insert(0, str(message.get("content")))
        return "model saw: " + " | ".join(results), []
    text = last.get("content") or ""
    if isinstance(text, list):
        text = " ".join(part.get("text", "") for part in text if isinstance(part, dict))
    pair = re.search(r"deploy (\S+) and (\S+)", text)
    if pair:
        return None, [("deploy", {"target": pair.group(1)}), ("deploy", {"target": pair.group(2)})]
    single = re.search(r"deploy (\S+)", text)
    if single:
        return None, [("deploy", {"target": single.group(1)})]
    if "trip" in text:
        return None, [("ask_user", {"questions": TRIP_QUESTIONS})]
    return f"echo: {text}", []


def _chunk(delta, finish=None):
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": "fake-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _json(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.startswith("/requests"):
            with _LOCK:
                return self._json(200, list(REQUESTS))
        self._json(404, {"error": "not found"})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))) or b"{}")
        with _LOCK:
            REQUESTS.append(body)
        messages = body.get("messages", [])
        if any(m.get("role") == "user" and "slowly" in str(m.get("content")) for m in messages):
            time.sleep(SLOW_SECONDS)
        text, calls = decide(messages)
        tool_calls = [
            {"id": _call_id(), "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for name, args in calls
        ]
        finish = "tool_calls" if tool_calls else "stop"
        if not body.get("stream"):
            message = {"role": "assistant", "content": text}
            if tool_calls:
                message["tool_calls"] = tool_calls
            return self._json(200, {
                "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                "model": "fake-model",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            })
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        events = [_chunk({"role": "assistant", "content": text or ""})]
        for index, call in enumerate(tool_calls):
            events.append(_chunk({"tool_calls": [dict(call, index=index)]}))
        events.append(_chunk({}, finish))
        for event in events:
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def serve_in_background(port=0):
    """Starts the server on a daemon thread; returns its port."""
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]
