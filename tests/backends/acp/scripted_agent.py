"""A scripted ACP agent (Agent Client Protocol v1 over stdio, JSON-RPC 2.0, one
JSON object per line), for what no real agent here asks: a form elicitation.

It follows the protocol's schema (agentclientprotocol.com; the `elicitation/create`
request, `mode: "form"`, `requestedSchema` of primitive properties, answered with
`{"action": "accept", "content": {...}}`, `{"action": "decline"}` or
`{"action": "cancel"}`, is the unstable part of protocol v1, shaped after MCP's
elicitation). Standard library only.

What it does with each prompt:
- `form` asks the form below and, when it is answered, says `RESULT <the result as
  JSON, keys sorted>` and ends the turn;
- `permission <kind> <n>` asks `session/request_permission` for n tool calls of that
  kind, one after the other, offering the options claude-code-acp offers, and says
  `OUTCOME <the result as JSON, keys sorted>` for each, then ends the turn;
- `terminal <shell command>` runs it in a terminal of the client's
  (`terminal/create` with `sh -c`, `terminal/wait_for_exit`, `terminal/output`,
  `terminal/release`) and says `TERMINAL <exit status and output as JSON>`; a client
  that offered no terminal gets `NO TERMINAL`, and an error is said as `TERMINAL
  ERROR <message>`;
- anything else is echoed back as `ECHO <text>`. Requests it does not
serve (the bridge's `ping`) get "method not found", as a real agent answers them.
"""

import json
import sys
import uuid

DEPLOY_FORM = {
    "type": "object",
    "required": ["env", "confirm"],
    "properties": {
        "env": {"type": "string", "title": "Environment",
                "oneOf": [{"const": "stg", "title": "Staging"}, {"const": "prod", "title": "Production"}]},
        "regions": {"type": "array", "title": "Regions", "items": {"type": "string", "enum": ["eu", "us"]}},
        "confirm": {"type": "boolean", "title": "Run the migration?"},
        "replicas": {"type": "integer", "title": "Replicas", "description": "How many replicas?"},
    },
}


# The options claude-code-acp 0.16.2 offered for a Bash command.
PERMISSION_OPTIONS = [
    {"kind": "allow_always", "name": "Always Allow", "optionId": "allow_always"},
    {"kind": "allow_once", "name": "Allow", "optionId": "allow"},
    {"kind": "reject_once", "name": "Reject", "optionId": "reject"},
]


def send(message):
    message["jsonrpc"] = "2.0"
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def say(session_id, text):
    send({"method": "session/update", "params": {"sessionId": session_id, "update": {
        "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}}})


def ask_permission(session_id, permits):
    permits[2] += 1
    call = f"call-{uuid.uuid4().hex[:6]}"
    permits[4] = f"perm-{call}"
    # The same command each time, so a rule remembered for its arguments applies.
    tool_call = {"toolCallId": call, "title": "`echo hi`", "kind": permits[1],
                 "status": "pending", "rawInput": {"command": "echo hi"}}
    send({"method": "session/update", "params": {"sessionId": session_id,
          "update": dict(tool_call, sessionUpdate="tool_call")}})
    send({"id": permits[4], "method": "session/request_permission", "params": {
        "sessionId": session_id, "toolCall": tool_call, "options": PERMISSION_OPTIONS}})


def main():
    session_id = None
    # The prompt whose turn waits on a form: (prompt id, form request id).
    waiting = None
    # The prompt whose turn asks permissions: [prompt id, kind, asked, wanted, request id].
    permits = None
    asked = 0
    forms_allowed = False
    terminal_allowed = False
    # The prompt whose turn drives a terminal: [prompt id, step, terminal id].
    shell = None
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        message = json.loads(line)
        method = message.get("method")
        if method is None and shell and str(message.get("id", "")).startswith("term-step-"):
            if "error" in message:
                say(session_id, "TERMINAL ERROR " + message["error"].get("message", ""))
                send({"id": shell[0], "result": {"stopReason": "end_turn"}})
                shell = None
                continue
            result = message.get("result") or {}
            step = shell[1]
            if step == "create":
                shell[2] = result["terminalId"]
                shell[1] = "wait"
                send({"id": "term-step-wait", "method": "terminal/wait_for_exit", "params": {"sessionId": session_id, "terminalId": shell[2]}})
            elif step == "wait":
                shell[1] = "output"
                send({"id": "term-step-output", "method": "terminal/output", "params": {"sessionId": session_id, "terminalId": shell[2]}})
            elif step == "output":
                say(session_id, "TERMINAL " + json.dumps(result, sort_keys=True, ensure_ascii=False))
                shell[1] = "release"
                send({"id": "term-step-release", "method": "terminal/release", "params": {"sessionId": session_id, "terminalId": shell[2]}})
            else:
                send({"id": shell[0], "result": {"stopReason": "end_turn"}})
                shell = None
            continue
        if method is None:
            # A result for the agent's own request: a permission's outcome.
            if permits and message.get("id") == permits[4]:
                result = message.get("result") or {}
                ran = (result.get("outcome") or {}).get("outcome") == "selected" and \
                    not str(result["outcome"].get("optionId", "")).startswith("reject")
                # The tool call ends as a real agent ends it: run, or not.
                send({"method": "session/update", "params": {"sessionId": session_id, "update": {
                    "sessionUpdate": "tool_call_update", "toolCallId": permits[4][len("perm-"):],
                    "status": "completed" if ran else "failed"}}})
                say(session_id, "OUTCOME " + json.dumps(result, sort_keys=True))
                if permits[2] < permits[3]:
                    ask_permission(session_id, permits)
                else:
                    send({"id": permits[0], "result": {"stopReason": "end_turn"}})
                    permits = None
                continue
            # The form's answer.
            if waiting and message.get("id") == waiting[1]:
                prompt_id = waiting[0]
                waiting = None
                say(session_id, "RESULT " + json.dumps(message.get("result"), sort_keys=True, ensure_ascii=False))
                send({"id": prompt_id, "result": {"stopReason": "end_turn"}})
            continue
        params = message.get("params") or {}
        if method == "initialize":
            capabilities = params.get("clientCapabilities") or {}
            forms_allowed = isinstance((capabilities.get("elicitation") or {}).get("form"), dict)
            terminal_allowed = capabilities.get("terminal") is True
            send({"id": message["id"], "result": {
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": False},
                "authMethods": [],
            }})
        elif method == "session/new":
            session_id = "scripted-" + uuid.uuid4().hex[:8]
            send({"id": message["id"], "result": {"sessionId": session_id}})
        elif method == "session/prompt":
            text = "".join(block.get("text", "") for block in params.get("prompt", []))
            if text.strip() == "form":
                if not forms_allowed:
                    # An agent asks only what the client said it can show.
                    say(session_id, "NO FORMS: the client did not offer elicitation.form")
                    send({"id": message["id"], "result": {"stopReason": "end_turn"}})
                    continue
                asked += 1
                form_id = f"form-{asked}"
                waiting = (message["id"], form_id)
                say(session_id, "I need a few answers first.")
                send({"id": form_id, "method": "elicitation/create", "params": {
                    "sessionId": session_id, "mode": "form", "message": "Before I deploy:",
                    "requestedSchema": DEPLOY_FORM}})
            elif text.startswith("terminal "):
                if not terminal_allowed:
                    say(session_id, "NO TERMINAL")
                    send({"id": message["id"], "result": {"stopReason": "end_turn"}})
                    continue
                shell = [message["id"], "create", None]
                send({"id": "term-step-create", "method": "terminal/create", "params": {
                    "sessionId": session_id, "command": "sh", "args": ["-c", text[len("terminal "):]],
                    "env": [{"name": "GREETING", "value": "xin chào"}], "outputByteLimit": 4096}})
            elif text.startswith("permission "):
                _, kind, wanted = text.split()
                permits = [message["id"], kind, 0, int(wanted), None]
                ask_permission(session_id, permits)
            else:
                say(session_id, "ECHO " + text)
                send({"id": message["id"], "result": {"stopReason": "end_turn"}})
        elif method == "session/cancel":
            if waiting:
                prompt_id = waiting[0]
                waiting = None
                send({"id": prompt_id, "result": {"stopReason": "cancelled"}})
        elif "id" in message:
            send({"id": message["id"], "error": {"code": -32601, "message": f"method not found: {method}"}})


if __name__ == "__main__":
    main()
