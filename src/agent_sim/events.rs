//! The JSON shapes of backend → bridge stream events (PROTOCOL.md §3, §4, §6), built as
//! raw `json!` values on purpose: independent of the bridge's types. Pure functions; the
//! block `index` is chosen by the caller (`turn`).

use serde_json::{Value, json};

use super::validate::Reply;

pub(crate) fn block_start(index: u64, content_block: Value) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": content_block})
}

pub(crate) fn block_delta(index: u64, delta: Value) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": delta})
}

pub(crate) fn block_stop(index: u64) -> Value {
    json!({"type": "content_block_stop", "index": index})
}

/// A text block. The text comes in two deltas (split near the middle) so a bridge that
/// keeps only the last delta fails its tests.
pub(crate) fn text_block(index: u64, text: &str, is_final: bool) -> Vec<Value> {
    let mut content_block = json!({"type": "text"});
    if is_final {
        content_block["is_final"] = json!(true);
    }
    streamed_block(index, content_block, "text_delta", "text", text)
}

pub(crate) fn thinking_block(index: u64, thinking: &str) -> Vec<Value> {
    streamed_block(index, json!({"type": "thinking"}), "thinking_delta", "thinking", thinking)
}

/// start, two `{type: delta_type, field: half}` deltas, stop.
fn streamed_block(index: u64, content_block: Value, delta_type: &str, field: &str, body: &str) -> Vec<Value> {
    let mut events = vec![block_start(index, content_block)];
    for part in halves(body) {
        let mut delta = json!({"type": delta_type});
        delta[field] = json!(part);
        events.push(block_delta(index, delta));
    }
    events.push(block_stop(index));
    events
}

pub(crate) fn tool_use(index: u64, id: &str, name: &str, input: Value) -> Vec<Value> {
    let block = json!({"type": "tool_use", "id": id, "name": name, "input": input});
    vec![block_start(index, block), block_stop(index)]
}

pub(crate) fn tool_result(index: u64, tool_use_id: &str) -> Vec<Value> {
    let block = json!({"type": "tool_result", "tool_use_id": tool_use_id, "status": "success"});
    vec![block_start(index, block), block_stop(index)]
}

pub(crate) fn group_start(summary: &str) -> Value {
    json!({"type": "group_start", "summary": summary})
}

pub(crate) fn group_end(summary: &str) -> Value {
    json!({"type": "group_end", "summary": summary})
}

/// Shape A (seed 002): everything in the start block, no delta.
pub(crate) fn request_shape_a(index: u64, key: &str, actions: &[Value], review_configs: &[Value], message_id: Option<&str>) -> Vec<Value> {
    let mut start = block_start(
        index,
        json!({
            "type": "approval_request",
            "approval_key": key,
            "actions": actions,
            "review_configs": review_configs,
        }),
    );
    if let Some(id) = message_id {
        start["message_id"] = json!(id);
    }
    vec![start, block_stop(index)]
}

/// Shape B (seed 000): only the key in the start block, the rest in one delta.
pub(crate) fn request_shape_b(index: u64, key: &str, actions: &[Value], review_configs: &[Value], timeout_seconds: u64) -> Vec<Value> {
    vec![
        block_start(index, json!({"type": "approval_request", "approval_key": key})),
        block_delta(
            index,
            json!({
                "action_requests": actions,
                "review_configs": review_configs,
                "timeout_seconds": timeout_seconds,
            }),
        ),
        block_stop(index),
    ]
}

pub(crate) fn approval_result(index: u64, key: &str, reply: &Reply) -> Vec<Value> {
    let delta = match reply {
        Reply::Decisions { decisions, .. } => json!({"decisions": decisions}),
        Reply::Answers(answers) => json!({"answers": answers}),
    };
    vec![block_start(index, json!({"type": "approval_result", "approval_key": key})), block_delta(index, delta), block_stop(index)]
}

pub(crate) fn approval_timeout(index: u64, key: &str) -> Vec<Value> {
    vec![block_start(index, json!({"type": "approval_timeout", "approval_key": key})), block_stop(index)]
}

pub(crate) fn message_stop() -> Value {
    json!({"type": "message_stop"})
}

pub(crate) fn error(message: &str) -> Value {
    json!({"type": "error", "message": message})
}

/// Splits `text` in two at a char boundary near the middle; one part if too short.
fn halves(text: &str) -> Vec<&str> {
    let chars = text.chars().count();
    if chars < 2 {
        return vec![text];
    }
    let cut = text.char_indices().nth(chars / 2).map_or(text.len(), |(i, _)| i);
    vec![&text[..cut], &text[cut..]]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_split_on_char_boundaries() {
        assert_eq!(halves("Đã hủy."), vec!["Đã ", "hủy."]);
        assert_eq!(halves("x"), vec!["x"]);
        let events = text_block(2, "ab", true);
        assert_eq!(events[0], json!({"type":"content_block_start","index":2,"content_block":{"type":"text","is_final":true}}));
        assert_eq!(events.len(), 4);
    }
}
