//! Scenario (g), the malformed frames a bridge must survive, and the default echo.

use serde_json::json;

use super::super::events;
use super::super::session::Frame;
use super::super::turn::Turn;

pub(super) fn malformed(turn: &Turn) {
    turn.send_frame(Frame::Binary(b"\x00\x01 binary is not part of the protocol".to_vec()));
    turn.send_frame(Frame::Text("{not json".to_owned()));
    // Valid JSON, but over the 1 MiB frame limit a bridge must enforce. Index 0 has no
    // start block: accepting it would be a second bug.
    let huge = "x".repeat(1024 * 1024 + 100 * 1024);
    let index = turn.next_index();
    turn.send_all(vec![events::block_delta(index, json!({"type": "text_delta", "text": huge}))]);
    turn.send_all(vec![json!({"type": "mystery_event"})]);
    turn.text("Vẫn chạy.", false);
}

pub(super) fn echo(turn: &Turn, text: &str) {
    turn.text(&format!("Tôi đã nhận: {text}. Từ khóa: hỏi 2 lần, trade, two actions, timeout, shapes, multi, malformed."), false);
}
