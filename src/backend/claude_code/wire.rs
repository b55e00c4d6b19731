//! The stream-json frames the bridge writes to Claude Code's stdin, exactly as
//! `claude-agent-sdk` writes them (its `Query` and `ClaudeSDKClient`): one JSON object
//! per line. Pure builders, so the exact bytes are unit-tested.

use serde_json::{Value, json};

/// The request id of the bridge's `initialize` control request.
pub const INITIALIZE_ID: &str = "bridge_initialize";

/// Request ids of the bridge's proof pings start with this; the rest is the number
/// of commands written before the ping.
pub const PING_PREFIX: &str = "bridge_ping_";

/// One frame as a line for stdin.
pub fn line(frame: &Value) -> String {
    let mut line = frame.to_string();
    line.push('\n');
    line
}

/// The control request the SDK sends first; the CLI answers it once it is ready.
pub fn initialize() -> Value {
    control_request(INITIALIZE_ID, json!({"subtype": "initialize", "hooks": null}))
}

/// A chat message: the SDK's `query(prompt)` for a string prompt, with the `uuid` the
/// CLI records in its transcript (see [`super::transcript`]).
pub fn user_message(text: &str, uuid: &str) -> Value {
    json!({
        "type": "user",
        "message": {"role": "user", "content": text},
        "parent_tool_use_id": null,
        "session_id": "default",
        "uuid": uuid,
    })
}

/// Stops the running turn (the SDK's `interrupt()`).
pub fn interrupt(request_id: &str) -> Value {
    control_request(request_id, json!({"subtype": "interrupt"}))
}

/// A harmless control request whose answer proves the CLI read every line written
/// before it (stdin is read in order): `mcp_status`, answered even mid-turn.
pub fn ping(written: u64) -> Value {
    control_request(&format!("{PING_PREFIX}{written}"), json!({"subtype": "mcp_status"}))
}

/// How many commands a control response's request id proves were read, if it
/// answers one of the bridge's pings.
pub fn ping_count(request_id: &str) -> Option<u64> {
    request_id.strip_prefix(PING_PREFIX)?.parse().ok()
}

/// The answer to one of the CLI's control requests.
pub fn success(request_id: &str, response: Value) -> Value {
    json!({
        "type": "control_response",
        "response": {"subtype": "success", "request_id": request_id, "response": response},
    })
}

/// Refuses one of the CLI's control requests (one the bridge does not serve).
pub fn error(request_id: &str, message: &str) -> Value {
    json!({
        "type": "control_response",
        "response": {"subtype": "error", "request_id": request_id, "error": message},
    })
}

/// `can_use_tool` allowed, with the input the tool runs with.
pub fn allow(updated_input: Value) -> Value {
    json!({"behavior": "allow", "updatedInput": updated_input})
}

/// `can_use_tool` denied; `message` is the tool result Claude sees.
pub fn deny(message: &str) -> Value {
    json!({"behavior": "deny", "message": message})
}

fn control_request(request_id: &str, request: Value) -> Value {
    json!({"type": "control_request", "request_id": request_id, "request": request})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_the_sdks() {
        assert_eq!(
            line(&user_message("xin chào", "0f8fad5b-d9cb-469f-a165-70867728950e")),
            "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"xin chào\"},\"parent_tool_use_id\":null,\"session_id\":\"default\",\"uuid\":\"0f8fad5b-d9cb-469f-a165-70867728950e\"}\n"
        );
        assert_eq!(initialize(), json!({"type":"control_request","request_id":"bridge_initialize","request":{"subtype":"initialize","hooks":null}}));
        assert_eq!(
            success("r1", allow(json!({"command":"ls"}))),
            json!({"type":"control_response","response":{"subtype":"success","request_id":"r1","response":{"behavior":"allow","updatedInput":{"command":"ls"}}}})
        );
        assert_eq!(error("r2", "no")["response"], json!({"subtype":"error","request_id":"r2","error":"no"}));
        assert_eq!(deny("why"), json!({"behavior":"deny","message":"why"}));
    }

    #[test]
    fn pings_carry_the_count_they_prove() {
        let ping = ping(7);
        let id = ping["request_id"].as_str().unwrap();
        assert_eq!(ping_count(id), Some(7));
        assert_eq!(ping["request"]["subtype"], "mcp_status");
        assert_eq!(ping_count("bridge_ping_x"), None);
        assert_eq!(ping_count("81403cd8-a4e3"), None);
    }
}
