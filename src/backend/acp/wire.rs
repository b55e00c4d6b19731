//! The Agent Client Protocol on the wire, one line at a time: JSON-RPC 2.0, one JSON
//! object per line on the agent's stdin and stdout (ACP's stdio transport). Reading
//! what the agent writes and writing what the bridge sends. Pure.
//!
//! Agent → bridge: `session/update` notifications, requests it waits on
//! (`session/request_permission`, `elicitation/create`, `fs/*`, `terminal/*`; their ids are the agent's own,
//! numbers or strings) and responses to the bridge's requests. Bridge → agent:
//! `initialize`, `session/new`, `session/load`, `session/prompt`, the
//! `session/cancel` notification, a `ping`, and results for the agent's requests.
//! Field names follow the protocol's schema (agentclientprotocol.com, protocol v1).

use serde_json::{Value, json};

/// The protocol version the bridge speaks (ACP's single major version).
pub const PROTOCOL_VERSION: u64 = 1;

/// JSON-RPC's "method not found", which the bridge answers requests it does not serve with.
pub const METHOD_NOT_FOUND: i64 = -32601;

/// One parsed line from the agent.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A notification (`session/update`).
    Notification { method: String, params: Value },
    /// The agent waits for a result; `id` is kept as sent, to answer with the same.
    Request { id: Value, method: String, params: Value },
    /// The answer to one of the bridge's requests.
    Response { id: String, outcome: Result<Value, RpcError> },
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    #[error("not JSON")]
    NotJson,
    #[error("not a JSON-RPC message: {0}")]
    Unexpected(&'static str),
}

/// Reads one line of the agent's stdout.
pub fn parse_line(line: &str) -> Result<Incoming, LineError> {
    let value: Value = serde_json::from_str(line.trim()).map_err(|_| LineError::NotJson)?;
    let Value::Object(mut message) = value else { return Err(LineError::Unexpected("not an object")) };
    let id = message.remove("id").filter(|id| id.is_string() || id.is_number());
    let params = message.remove("params").unwrap_or(Value::Null);
    match message.remove("method") {
        Some(Value::String(method)) => Ok(match id {
            Some(id) => Incoming::Request { id, method, params },
            None => Incoming::Notification { method, params },
        }),
        Some(_) => Err(LineError::Unexpected("a method that is not a string")),
        None => {
            let id = match id {
                Some(Value::String(id)) => id,
                Some(other) => other.to_string(),
                None => return Err(LineError::Unexpected("a response without an id")),
            };
            let outcome = match message.remove("error") {
                Some(error) => Err(RpcError {
                    code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                    message: error.get("message").and_then(Value::as_str).unwrap_or("(no message)").to_owned(),
                }),
                None => Ok(message.remove("result").unwrap_or(Value::Null)),
            };
            Ok(Incoming::Response { id, outcome })
        }
    }
}

/// The ids of the bridge's own requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OurId {
    Initialize,
    NewSession,
    LoadSession,
    Prompt(u64),
    /// Carries how many commands were written before it.
    Ping(u64),
}

impl OurId {
    pub fn encode(self) -> String {
        match self {
            OurId::Initialize => "initialize".into(),
            OurId::NewSession => "session-new".into(),
            OurId::LoadSession => "session-load".into(),
            OurId::Prompt(n) => format!("prompt-{n}"),
            OurId::Ping(n) => format!("ping-{n}"),
        }
    }

    pub fn parse(id: &str) -> Option<OurId> {
        match id {
            "initialize" => return Some(OurId::Initialize),
            "session-new" => return Some(OurId::NewSession),
            "session-load" => return Some(OurId::LoadSession),
            _ => {}
        }
        let (kind, n) = id.rsplit_once('-')?;
        let n = n.parse().ok()?;
        match kind {
            "prompt" => Some(OurId::Prompt(n)),
            "ping" => Some(OurId::Ping(n)),
            _ => None,
        }
    }
}

fn request(id: OurId, method: &str, params: Value) -> String {
    json!({"jsonrpc":"2.0","id":id.encode(),"method":method,"params":params}).to_string()
}

/// `initialize`: the file system only when `allow_fs`, a terminal only when
/// `allow_terminal`, and forms.
pub fn initialize(allow_fs: bool, allow_terminal: bool) -> String {
    request(
        OurId::Initialize,
        "initialize",
        json!({"protocolVersion":PROTOCOL_VERSION,
            "clientCapabilities":{"fs":{"readTextFile":allow_fs,"writeTextFile":allow_fs},"terminal":allow_terminal,"elicitation":{"form":{}}},
            "clientInfo":{"name":"hitl-bridge","title":"hitl-bridge","version":env!("CARGO_PKG_VERSION")}}),
    )
}

/// `session/new` in `cwd` (an absolute path), with no MCP servers of the bridge's.
pub fn new_session(cwd: &str) -> String {
    request(OurId::NewSession, "session/new", json!({"cwd":cwd,"mcpServers":[]}))
}

/// `session/load`: the agent replays the conversation, then answers.
pub fn load_session(session_id: &str, cwd: &str) -> String {
    request(OurId::LoadSession, "session/load", json!({"sessionId":session_id,"cwd":cwd,"mcpServers":[]}))
}

/// A person's message as a prompt turn; answered when the turn is over.
pub fn prompt(n: u64, session_id: &str, text: &str) -> String {
    request(OurId::Prompt(n), "session/prompt", json!({"sessionId":session_id,"prompt":[{"type":"text","text":text}]}))
}

/// Cancels the running turn (a notification: the prompt's answer says `cancelled`).
pub fn cancel(session_id: &str) -> String {
    json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":session_id}}).to_string()
}

/// A request the agent answers at once with "method not found": its answer proves the
/// agent has read every line written before it (it reads its stdin in order).
pub fn ping(written: u64) -> String {
    json!({"jsonrpc":"2.0","id":OurId::Ping(written).encode(),"method":"ping"}).to_string()
}

/// The result for the agent's request `id`.
pub fn result(id: &Value, result: Value) -> String {
    json!({"jsonrpc":"2.0","id":id,"result":result}).to_string()
}

/// An error for the agent's request `id`.
pub fn error(id: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc":"2.0","id":id,"error":{"code":code,"message":message}}).to_string()
}

/// A permission request's outcome: the option chosen, or `cancelled`.
pub fn permission_outcome(option_id: Option<&str>) -> Value {
    match option_id {
        Some(option_id) => json!({"outcome":{"outcome":"selected","optionId":option_id}}),
        None => json!({"outcome":{"outcome":"cancelled"}}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notifications_requests_and_responses() {
        // As claude-code-acp 0.16.2 wrote them in a recorded run.
        let update = parse_line(
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}"#,
        );
        assert!(
            matches!(update, Ok(Incoming::Notification { ref method, ref params }) if method == "session/update" && params["update"]["content"]["text"] == "hi")
        );
        let ask = parse_line(
            r#"{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"options":[],"sessionId":"s1","toolCall":{"toolCallId":"tu1"}}}"#,
        );
        assert!(matches!(ask, Ok(Incoming::Request { ref id, ref method, .. }) if *id == json!(0) && method == "session/request_permission"));
        let done = parse_line(r#"{"jsonrpc":"2.0","id":"prompt-2","result":{"stopReason":"end_turn"}}"#);
        assert_eq!(done, Ok(Incoming::Response { id: "prompt-2".into(), outcome: Ok(json!({"stopReason":"end_turn"})) }));
        let pong = parse_line(r#"{"jsonrpc":"2.0","id":"ping-1","error":{"code":-32601,"message":"\"Method not found\": ping","data":{"method":"ping"}}}"#);
        assert_eq!(pong, Ok(Incoming::Response { id: "ping-1".into(), outcome: Err(RpcError { code: -32601, message: "\"Method not found\": ping".into() }) }));
    }

    #[test]
    fn junk_is_refused_not_fatal() {
        assert_eq!(parse_line("[ACP] starting"), Err(LineError::NotJson));
        assert_eq!(parse_line("[1]"), Err(LineError::Unexpected("not an object")));
        assert!(parse_line(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#).is_err());
        assert!(parse_line(r#"{"jsonrpc":"2.0","method":7}"#).is_err());
    }

    #[test]
    fn our_ids_round_trip() {
        for id in [OurId::Initialize, OurId::NewSession, OurId::LoadSession, OurId::Prompt(3), OurId::Ping(40)] {
            assert_eq!(OurId::parse(&id.encode()), Some(id));
        }
        assert_eq!(OurId::parse("0"), None);
        assert_eq!(OurId::parse("ping-x"), None);
    }

    #[test]
    fn outgoing_lines() {
        let init: Value = serde_json::from_str(&initialize(false, false)).unwrap();
        assert_eq!(init["params"]["protocolVersion"], 1);
        assert_eq!(init["params"]["clientCapabilities"], json!({"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false,"elicitation":{"form":{}}}));
        let with_fs: Value = serde_json::from_str(&initialize(true, false)).unwrap();
        assert_eq!(with_fs["params"]["clientCapabilities"]["fs"], json!({"readTextFile":true,"writeTextFile":true}));
        let with_terminal: Value = serde_json::from_str(&initialize(false, true)).unwrap();
        assert_eq!(with_terminal["params"]["clientCapabilities"]["terminal"], json!(true));
        assert_eq!(
            prompt(2, "s1", "xin chào"),
            r#"{"jsonrpc":"2.0","id":"prompt-2","method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"xin chào"}]}}"#
        );
        assert_eq!(cancel("s1"), r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}"#);
        assert_eq!(
            result(&json!(0), permission_outcome(Some("allow"))),
            r#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}"#
        );
        assert_eq!(permission_outcome(None), json!({"outcome":{"outcome":"cancelled"}}));
        assert!(!prompt(1, "s", "a\nb").contains('\n'), "one message, one line");
    }
}
