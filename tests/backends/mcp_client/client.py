"""An MCP client on the official Python SDK, driven by tests/http_api.rs (mcp_* tests).

    python client.py URL TOKEN SCENARIO [ARGS_JSON]

Prints one JSON object per line on stdout, flushed as it happens, so the Rust test can
click the card once the call is waiting:

    {"event": "tools", "tools": [{"name": ..., "inputSchema": ...}, ...]}
    {"event": "calling", "tool": ...}
    {"event": "progress", "progress": 1.0, "message": "waiting for a decision in ..."}
    {"event": "result", "isError": false, "structured": {...}, "text": "..."}
    {"event": "error", "type": "MCPError", "code": -32602, "message": "...", "data": {...}}

Scenarios: `list` (initialize and list tools), `call` (ARGS_JSON is
{"tool": NAME, "arguments": {...}, "timeout": SECONDS?}), `twice` (the same call twice
at once, on two sessions), `stdio` (the call over stdio to `hitl-bridge mcp`: URL is
the binary, TOKEN the bridge's URL, and the token comes in ARGS_JSON's "token").
"""

import json
import sys

import anyio
import httpx2
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


def emit(**event):
    print(json.dumps(event), flush=True)


def error_event(e):
    # anyio task groups wrap the real failure (e.g. an HTTP 401): report the first leaf.
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    error = getattr(e, "error", None)
    return {
        "event": "error",
        "type": type(e).__name__,
        "code": getattr(error, "code", None),
        "message": getattr(error, "message", None) or str(e),
        "data": getattr(error, "data", None),
    }


async def on_progress(progress, total, message):
    emit(event="progress", progress=progress, message=message)


async def session_call(url, token, tool, arguments, timeout, label):
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0)) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                emit(event="calling", tool=tool, label=label)
                try:
                    result = await session.call_tool(tool, arguments, read_timeout_seconds=timeout, progress_callback=on_progress)
                except Exception as e:  # the test asserts on what it was
                    emit(label=label, **error_event(e))
                    return
                text = "".join(getattr(c, "text", "") for c in result.content)
                emit(event="result", label=label, isError=bool(result.is_error), structured=result.structured_content, text=text)


async def main():
    url, token, scenario = sys.argv[1:4]
    args = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
    if scenario == "list":
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx2.AsyncClient(headers=headers, timeout=30.0) as http:
            try:
                async with streamable_http_client(url, http_client=http) as (read, write):
                    async with ClientSession(read, write) as session:
                        await session.initialize()
                        tools = await session.list_tools()
                        emit(event="tools", tools=[{"name": t.name, "inputSchema": t.input_schema} for t in tools.tools])
            except BaseException as e:  # a refused token surfaces as an exception group
                emit(**error_event(e))
    elif scenario == "call":
        await session_call(url, token, args["tool"], args["arguments"], args.get("timeout"), "only")
    elif scenario == "stdio":
        server = StdioServerParameters(command=url, args=["mcp", "--url", token], env={"HITL_BRIDGE_MCP_TOKEN": args["token"]})
        async with stdio_client(server) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                emit(event="calling", tool=args["tool"], label="stdio")
                result = await session.call_tool(args["tool"], args["arguments"], progress_callback=on_progress)
                text = "".join(getattr(c, "text", "") for c in result.content)
                emit(event="result", label="stdio", isError=bool(result.is_error), structured=result.structured_content, text=text)
    elif scenario == "twice":
        async with anyio.create_task_group() as tg:
            for label in ("first", "second"):
                tg.start_soon(session_call, url, token, args["tool"], args["arguments"], args.get("timeout"), label)
    else:
        sys.exit(f"unknown scenario {scenario}")


anyio.run(main)
