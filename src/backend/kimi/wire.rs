//! Kimi CLI's wire protocol, one line at a time: JSON-RPC 2.0, one JSON object per
//! line (NDJSON) on the process's stdin and stdout. Reading what kimi writes and
//! writing what the bridge sends. Pure.
//!
//! Kimi → bridge: `event` notifications (`{"type","payload"}` envelopes), `request`s it
//! waits on (ApprovalRequest, QuestionRequest, …; the JSON-RPC id is the request's own
//! id), and responses to the bridge's requests. Bridge → kimi: `initialize`, `prompt`,
//! `steer`, `cancel`, a `ping`, and results for kimi's requests.

use serde_json::{Value, json};

/// The wire protocol version the bridge speaks (kimi-cli 1.51's `WIRE_PROTOCOL_VERSION`).
pub const PROTOCOL_VERSION: &str = "1.10";

/// The name the bridge gives itself in `initialize`.
pub const CLIENT_NAME: &str = "hitl-bridge";

/// One parsed line from kimi.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A notification: `{"method":"event","params":{"type","payload"}}`.
    Event { kind: String, payload: Value },
    /// Kimi waits for a result: `{"method":"request","id","params":{"type","payload"}}`.
    Request { id: String, kind: String, payload: Value },
    /// The answer to one of the bridge's requests.
    Response { id: String, outcome: Result<Value, RpcError> },
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

/// Kimi's error code for "an agent turn is (not) in progress".
pub const INVALID_STATE: i64 = -32000;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    #[error("not JSON")]
    NotJson,
    #[error("not a JSON-RPC message kimi sends: {0}")]
    Unexpected(&'static str),
}

/// Reads one line of kimi's stdout.
pub fn parse_line(line: &str) -> Result<Incoming, LineError> {
    let value: Value = serde_json::from_str(line.trim()).map_err(|_| LineError::NotJson)?;
    let Value::Object(mut message) = value else { return Err(LineError::Unexpected("not an object")) };
    let id = match message.remove("id") {
        Some(Value::String(id)) => Some(id),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    match message.get("method").and_then(Value::as_str) {
        Some("event") => {
            let (kind, payload) = envelope(message.remove("params"))?;
            Ok(Incoming::Event { kind, payload })
        }
        Some("request") => {
            let id = id.ok_or(LineError::Unexpected("a request without an id"))?;
            let (kind, payload) = envelope(message.remove("params"))?;
            Ok(Incoming::Request { id, kind, payload })
        }
        Some(_) => Err(LineError::Unexpected("an unknown method")),
        None => {
            // Kimi answers lines it could not parse with `"id": null`; nothing of ours.
            let id = id.ok_or(LineError::Unexpected("a response without an id"))?;
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

fn envelope(params: Option<Value>) -> Result<(String, Value), LineError> {
    let Some(Value::Object(mut params)) = params else { return Err(LineError::Unexpected("params is not an object")) };
    let Some(Value::String(kind)) = params.remove("type") else { return Err(LineError::Unexpected("params without a type")) };
    Ok((kind, params.remove("payload").unwrap_or(Value::Null)))
}

/// The ids of the bridge's own requests; the number tells apart requests of one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OurId {
    Initialize,
    Prompt(u64),
    Steer(u64),
    Cancel(u64),
    /// Carries how many commands were written before it.
    Ping(u64),
}

impl OurId {
    pub fn encode(self) -> String {
        match self {
            OurId::Initialize => "initialize".into(),
            OurId::Prompt(n) => format!("prompt-{n}"),
            OurId::Steer(n) => format!("steer-{n}"),
            OurId::Cancel(n) => format!("cancel-{n}"),
            OurId::Ping(n) => format!("ping-{n}"),
        }
    }

    pub fn parse(id: &str) -> Option<OurId> {
        if id == "initialize" {
            return Some(OurId::Initialize);
        }
        let (kind, n) = id.rsplit_once('-')?;
        let n = n.parse().ok()?;
        Some(match kind {
            "prompt" => OurId::Prompt(n),
            "steer" => OurId::Steer(n),
            "cancel" => OurId::Cancel(n),
            "ping" => OurId::Ping(n),
            _ => return None,
        })
    }
}

fn request(id: OurId, method: &str, params: Option<Value>) -> String {
    let mut message = json!({"jsonrpc":"2.0","method":method,"id":id.encode()});
    if let Some(params) = params {
        message["params"] = params;
    }
    message.to_string()
}

/// `initialize`, saying the bridge can show questions (else kimi hides AskUserQuestion).
pub fn initialize() -> String {
    request(
        OurId::Initialize,
        "initialize",
        Some(json!({"protocol_version":PROTOCOL_VERSION,"client":{"name":CLIENT_NAME,"version":env!("CARGO_PKG_VERSION")},
            "capabilities":{"supports_question":true}})),
    )
}

/// Starts a turn with the user's text; answered when the turn is over.
pub fn prompt(n: u64, text: &str) -> String {
    request(OurId::Prompt(n), "prompt", Some(json!({"user_input":text})))
}

/// Adds the user's text to the running turn.
pub fn steer(n: u64, text: &str) -> String {
    request(OurId::Steer(n), "steer", Some(json!({"user_input":text})))
}

pub fn cancel(n: u64) -> String {
    request(OurId::Cancel(n), "cancel", None)
}

/// A request kimi answers at once, from its read loop, with "method not found": its
/// answer proves kimi has read every line written before it (it reads in order). No
/// inbound method of kimi is both harmless and immediate in every state, so the
/// ping is deliberately one it does not know (kimi logs it as unexpected).
pub fn ping(written: u64) -> String {
    request(OurId::Ping(written), "ping", None)
}

/// The result for kimi's request `id`.
pub fn result(id: &str, result: Value) -> String {
    json!({"jsonrpc":"2.0","id":id,"result":result}).to_string()
}

/// An error for kimi's request `id`.
pub fn error(id: &str, code: i64, message: &str) -> String {
    json!({"jsonrpc":"2.0","id":id,"error":{"code":code,"message":message}}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_requests_and_responses() {
        let event = parse_line(r#"{"jsonrpc":"2.0","method":"event","params":{"type":"ContentPart","payload":{"type":"text","text":"hi"}}}"#);
        assert_eq!(event, Ok(Incoming::Event { kind: "ContentPart".into(), payload: json!({"type":"text","text":"hi"}) }));
        let request = parse_line(r#"{"jsonrpc":"2.0","method":"request","id":"d71b","params":{"type":"ApprovalRequest","payload":{"id":"d71b"}}}"#);
        assert_eq!(request, Ok(Incoming::Request { id: "d71b".into(), kind: "ApprovalRequest".into(), payload: json!({"id":"d71b"}) }));
        let done = parse_line(r#"{"jsonrpc":"2.0","id":"prompt-1","result":{"status":"finished"}}"#);
        assert_eq!(done, Ok(Incoming::Response { id: "prompt-1".into(), outcome: Ok(json!({"status":"finished"})) }));
        let pong = parse_line(r#"{"jsonrpc":"2.0","id":"ping-3","error":{"code":-32601,"message":"Unexpected method received: ping","data":null}}"#);
        assert_eq!(
            pong,
            Ok(Incoming::Response { id: "ping-3".into(), outcome: Err(RpcError { code: -32601, message: "Unexpected method received: ping".into() }) })
        );
    }

    #[test]
    fn junk_is_refused_not_fatal() {
        assert_eq!(parse_line("To resume this session: kimi -r s1"), Err(LineError::NotJson));
        assert_eq!(parse_line("[1,2]"), Err(LineError::Unexpected("not an object")));
        assert!(parse_line(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Invalid JSON format"}}"#).is_err());
        assert!(parse_line(r#"{"jsonrpc":"2.0","method":"request","params":{"type":"ApprovalRequest"}}"#).is_err());
        assert!(parse_line(r#"{"jsonrpc":"2.0","method":"event","params":{"payload":{}}}"#).is_err());
    }

    #[test]
    fn our_ids_round_trip() {
        for id in [OurId::Initialize, OurId::Prompt(1), OurId::Steer(22), OurId::Cancel(3), OurId::Ping(40)] {
            assert_eq!(OurId::parse(&id.encode()), Some(id));
        }
        assert_eq!(OurId::parse("d71b8960-6d64-4974-9840-2026fa1f14d4"), None);
        assert_eq!(OurId::parse("ping-x"), None);
    }

    #[test]
    fn outgoing_lines() {
        let init: Value = serde_json::from_str(&initialize()).unwrap();
        assert_eq!(init["method"], "initialize");
        assert_eq!(init["params"]["protocol_version"], "1.10");
        assert_eq!(init["params"]["capabilities"], json!({"supports_question":true}));
        assert_eq!(prompt(2, "xin chào"), r#"{"jsonrpc":"2.0","method":"prompt","id":"prompt-2","params":{"user_input":"xin chào"}}"#);
        assert_eq!(ping(5), r#"{"jsonrpc":"2.0","method":"ping","id":"ping-5"}"#);
        assert_eq!(result("r1", json!({"request_id":"r1","answers":{}})), r#"{"jsonrpc":"2.0","id":"r1","result":{"request_id":"r1","answers":{}}}"#);
        assert!(!prompt(1, "a\nb").contains('\n'), "one message, one line");
    }
}
