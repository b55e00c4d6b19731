"""A scripted stand-in for the Anthropic Messages API, for the Claude Code connector tests.

Claude Code (the CLI bundled by claude-agent-sdk) talks to it through
ANTHROPIC_BASE_URL. Standard library only; one process serves a whole test binary.

    python fake_anthropic.py            # prints "LISTENING <port>" once bound

It exits when its stdin closes, so it never outlives the test binary that started it.

Endpoints:
- POST /script {"key": K, "turns": [TURN, ...]} registers a script. A conversation
  follows script K when one of its user messages contains the text K. TURN is a list
  of blocks, each {"text": "..."}, {"tool_use": {"id"?, "name", "input"}} or
  {"delay": SECONDS} (the model works that long before it answers); a turn with a
  tool_use ends with stop_reason "tool_use", otherwise "end_turn".
- POST /v1/messages: the model. Stateless: the turn played is the number of
  assistant messages after the latest user message that contains K, so a retried
  request gets the same answer. Requests without tools (titles, summaries, quota
  checks) get a short text and are not matched to scripts.
- GET /requests?key=K: every /v1/messages body that matched script K, in order.
- POST /v1/messages/count_tokens: a fixed count.
"""

import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

SCRIPTS = {}
REQUESTS = []  # (key or None, body)
LOCK = threading.Lock()
COUNTER = [0]


def next_id(prefix):
    with LOCK:
        COUNTER[0] += 1
        return f"{prefix}_{COUNTER[0]:06d}"


def texts(message):
    """The plain text of a message (string content or its text blocks)."""
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]


def match(body):
    """(key, turn index) of the script this conversation follows, or (None, 0)."""
    messages = body.get("messages") or []
    with LOCK:
        keys = list(SCRIPTS)
    for at in range(len(messages) - 1, -1, -1):
        message = messages[at]
        if message.get("role") != "user":
            continue
        joined = "\n".join(texts(message))
        found = [k for k in keys if k in joined]
        if found:
            key = max(found, key=len)
            turn = sum(1 for m in messages[at + 1:] if m.get("role") == "assistant")
            return key, turn
    return None, 0


def blocks_for(body):
    if not body.get("tools"):
        return None, [{"type": "text", "text": "ok"}]
    key, turn = match(body)
    with LOCK:
        REQUESTS.append((key, body))
        script = SCRIPTS.get(key, [])
    if key is None or turn >= len(script):
        return key, [{"type": "text", "text": f"(no scripted turn {turn} for {key})"}]
    out = []
    for block in script[turn]:
        if "delay" in block:
            time.sleep(block["delay"])
        elif "tool_use" in block:
            use = block["tool_use"]
            out.append({"type": "tool_use", "id": use.get("id") or next_id("toolu"), "name": use["name"], "input": use.get("input", {})})
        else:
            out.append({"type": "text", "text": block["text"]})
    return key, out


def usage():
    return {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def body(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        return json.loads(raw or b"{}")

    def send_json(self, status, value):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        url = urlparse(self.path)
        if url.path == "/requests":
            key = parse_qs(url.query).get("key", [None])[0]
            with LOCK:
                found = [body for k, body in REQUESTS if k == key]
            return self.send_json(200, found)
        self.send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": url.path}})

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self):
        url = urlparse(self.path)
        body = self.body()
        if url.path == "/script":
            with LOCK:
                SCRIPTS[body["key"]] = body["turns"]
            return self.send_json(200, {"ok": True})
        if url.path == "/v1/messages/count_tokens":
            return self.send_json(200, {"input_tokens": 10})
        if url.path != "/v1/messages":
            return self.send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": url.path}})
        _, blocks = blocks_for(body)
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        message = {"id": next_id("msg"), "type": "message", "role": "assistant", "model": body.get("model", "fake"),
                   "content": blocks, "stop_reason": stop, "stop_sequence": None, "usage": usage()}
        if not body.get("stream"):
            return self.send_json(200, message)
        self.stream(message)

    def stream(self, message):
        events = [("message_start", {"type": "message_start", "message": {**message, "content": [], "stop_reason": None}})]
        for index, block in enumerate(message["content"]):
            if block["type"] == "text":
                events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}))
                events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": block["text"]}}))
            else:
                start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
                events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}))
                events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}}))
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None}, "usage": {"output_tokens": 5}}))
        events.append(("message_stop", {"type": "message_stop"}))
        data = "".join(f"event: {name}\ndata: {json.dumps(value)}\n\n" for name, value in events).encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"LISTENING {server.server_address[1]}", flush=True)
    # The test binary holds our stdin: its end (however it ends) is ours.
    sys.stdin.read()
    os._exit(0)


if __name__ == "__main__":
    main()
