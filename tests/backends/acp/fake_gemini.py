"""A scripted stand-in for the Gemini API (generativelanguage, v1beta), for the ACP
connector's Gemini CLI tests.

Gemini CLI talks to it through GOOGLE_GEMINI_BASE_URL (plain http is allowed for
127.0.0.1). Standard library only; one process serves a whole test binary.

    python fake_gemini.py            # prints "LISTENING <port>" once bound

It exits when its stdin closes, so it never outlives the test binary that started it.

Endpoints (shapes as the Gemini API reference gives them: `GenerateContentResponse`
with `candidates[].content.parts[]`, a part being `{"text"}` or `{"functionCall":
{"name","args"}}`, the tool's answer coming back as a `functionResponse` part):
- POST /script {"key": K, "turns": [TURN, ...]} registers a script. A conversation
  follows script K when one of its user turns contains the text K. TURN is a list of
  blocks, each {"text": "..."} or {"call": {"name", "args"}}.
- POST /v1beta/models/M:streamGenerateContent (alt=sse) and :generateContent: the
  model. Stateless: the turn played is the number of model turns after the latest
  user text that contains K, so a retried request gets the same answer. Requests
  without tools (Gemini CLI's own side questions: the model router, the next
  speaker) are not matched to scripts and get a short JSON or text answer.
- POST /v1beta/models/M:countTokens: a fixed count.
- GET /requests?key=K: every model request body that matched script K, in order.
"""

import json
import os
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

SCRIPTS = {}
REQUESTS = []  # (key, body)
LOCK = threading.Lock()


def user_texts(content):
    return [p.get("text", "") for p in content.get("parts") or [] if isinstance(p, dict) and "text" in p]


def match(body):
    """(key, turn index) of the script this conversation follows, or (None, 0)."""
    contents = body.get("contents") or []
    with LOCK:
        keys = list(SCRIPTS)
    for at in range(len(contents) - 1, -1, -1):
        content = contents[at]
        if content.get("role") != "user":
            continue
        joined = "\n".join(user_texts(content))
        found = [k for k in keys if k in joined]
        if found:
            key = max(found, key=len)
            turn = sum(1 for c in contents[at + 1:] if c.get("role") == "model")
            return key, turn
    return None, 0


def parts_for(body):
    # Only the agent's own turns carry its tools; Gemini CLI's side questions (the
    # model router, the next-speaker check) carry none and are not the script's.
    if not body.get("tools"):
        return None
    key, turn = match(body)
    if key is None:
        return None
    with LOCK:
        REQUESTS.append((key, body))
        script = SCRIPTS.get(key, [])
    if turn >= len(script):
        return [{"text": f"(no scripted turn {turn} for {key})"}]
    parts = []
    for block in script[turn]:
        if "call" in block:
            parts.append({"functionCall": {"name": block["call"]["name"], "args": block["call"].get("args", {})}})
        else:
            parts.append({"text": block["text"]})
    return parts


def side_answer(body):
    """Gemini CLI's own questions (no script): JSON where it asks for JSON."""
    config = body.get("generationConfig") or {}
    if config.get("responseMimeType") == "application/json" or config.get("responseJsonSchema") or config.get("responseSchema"):
        # Every side question's answer at once: the router's and the next-speaker check's.
        return [{"text": json.dumps({"reasoning": "scripted", "model_choice": "flash", "next_speaker": "user"})}]
    return [{"text": "ok"}]


def response(parts):
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "gemini-fake",
    }


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
        self.send_json(404, {"error": {"code": 404, "message": url.path, "status": "NOT_FOUND"}})

    def do_POST(self):
        url = urlparse(self.path)
        body = self.body()
        if url.path == "/script":
            with LOCK:
                SCRIPTS[body["key"]] = body["turns"]
            return self.send_json(200, {"ok": True})
        method = re.match(r"^/v1beta/models/[^:/]+:(\w+)$", url.path)
        if not method:
            return self.send_json(404, {"error": {"code": 404, "message": url.path, "status": "NOT_FOUND"}})
        if method.group(1) == "countTokens":
            return self.send_json(200, {"totalTokens": 10})
        if method.group(1) not in ("generateContent", "streamGenerateContent"):
            return self.send_json(404, {"error": {"code": 404, "message": url.path, "status": "NOT_FOUND"}})
        parts = parts_for(body) or side_answer(body)
        if method.group(1) == "generateContent":
            return self.send_json(200, response(parts))
        data = f"data: {json.dumps(response(parts))}\r\n\r\n".encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
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
