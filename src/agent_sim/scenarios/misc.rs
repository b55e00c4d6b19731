//! Scenario (g), the malformed frames a bridge must survive, (i) an answer that takes a
//! while, (j) and (k) answers written slowly, and the default echo.

use std::time::Duration;

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

/// How long (i) works between its first words and its answer: long enough for a test to
/// kill the bridge in between and start it again after the answer.
const SLOW_ANSWER_WORK: Duration = Duration::from_secs(2);

/// (i) A few words at once, then the final answer after a while: the last words a bridge
/// that died meanwhile must still relay.
pub(super) async fn slow_answer(turn: &Turn) {
    turn.text("Để tôi tra cứu giá VNM.", false);
    tokio::time::sleep(SLOW_ANSWER_WORK).await;
    turn.text("Giá đóng cửa VNM hôm nay: 82000.", true);
}

/// The pieces (j) writes, [`SLOW_STREAM_GAP`] apart, its stop as long after the last:
/// a bridge reporting progress once a second reports at 1.2 s and 2.4 s, and the
/// complete text, with more words than either, comes 0.6 s after the second report.
const SLOW_STREAM_PARTS: [&str; 10] = ["Đang", " viết", " dần:", " một,", " hai,", " ba,", " bốn,", " năm", ".", " Xong."];
const SLOW_STREAM_GAP: Duration = Duration::from_millis(300);

/// (j) One final text block written slowly, a delta every 300 ms: what a chat that
/// streams shows growing in one message.
pub(super) async fn slow_stream(turn: &Turn) {
    turn.text_slowly(&SLOW_STREAM_PARTS, SLOW_STREAM_GAP, true).await;
}

/// (k) `LONG_STREAM_LINE` 256 times (3,584 characters, more than one Slack message
/// holds) in four deltas [`LONG_STREAM_GAP`] apart, its stop as long after the last.
const LONG_STREAM_LINE: &str = "Một dòng dài. ";
const LONG_STREAM_GAP: Duration = Duration::from_millis(600);

/// (k) A final text longer than one chat message, written slowly.
pub(super) async fn long_stream(turn: &Turn) {
    let part = LONG_STREAM_LINE.repeat(64);
    turn.text_slowly(&[&part, &part, &part, &part], LONG_STREAM_GAP, true).await;
}

pub(super) fn echo(turn: &Turn, text: &str) {
    turn.text(&format!("Tôi đã nhận: {text}. Từ khóa: hỏi 2 lần, trade, two actions, timeout, shapes, multi, malformed."), false);
}
