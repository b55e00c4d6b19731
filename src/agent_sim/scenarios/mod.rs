//! The scripted scenarios, chosen by case-insensitive keywords in the user's message text;
//! the first row that matches wins. `{S}` is the session id; approval keys are `{S}_{n}`,
//! counting from 1 per session across turns (the keys below assume a fresh session).
//! Every turn ends with `message_stop`. Texts arrive as two `text_delta`s; "final" means
//! the text block's content_block has `"is_final": true`.
//!
//! | # | keywords | script |
//! |---|----------|--------|
//! | a | `hỏi 2 lần`, `ask twice` | thinking; group "Chuẩn bị câu hỏi lần 1" (tool_use `tc-1` write_todos + tool_result); shape B `{S}_1` with seed 000's two questions, `timeout_seconds` 600; approval_result; group "Chuẩn bị câu hỏi lần 2" (`tc-2`); shape B `{S}_2` "Bạn muốn nhận báo cáo qua kênh nào?" (Email / Telegram / Khác+input); approval_result; final `Cảm ơn! Tổng kết: mục tiêu = {A1}; kỳ hạn = {A2}; kênh = {A3}` |
//! | b′ | `slow trade`, `giao dịch chậm` | thinking `Đang phân tích thị trường…`, then 2 s of silence (the model still working), then (b) |
//! | b | `trade`, `giao dịch` | text `Tôi sẽ đặt lệnh mua VNM.`; shape A `{S}_1` as seed 002 (execute_trade VNM 100 buy 82000, `toolu_01XyzAbc`, `message_id` "msg-abc", timeout 300); approval_result; final `Đã đặt lệnh: {side} {quantity} {symbol} @ {price}` (approve: original args, edit: edited args) or `Lệnh đã bị hủy.` + ` Lý do: {message}` (reject); + ` Ghi chú: {user_edit_content}` when given |
//! | c | `two actions`, `hai lệnh` | shape A `{S}_1`: execute_trade FPT 10 sell 120000 (approve/edit/reject) + send_report to ops@example.com (approve/reject), timeout 300; approval_result; final `execute_trade: {type}; send_report: {type}` (+ Ghi chú) |
//! | d | `timeout`, `hết giờ` | shape A `{S}_1`: drop_table {table:"users"}, timeout = `timeout_secs`; no valid reply in time → approval_timeout, final `Không ai trả lời trong {N} giây; thao tác đã bị hủy.`; answered → approval_result, final `drop_table: {type}` (+ Ghi chú) |
//! | e | `shapes`, `hai dạng` | the question "Triển khai lên môi trường nào?" as shape A `{S}_1` (timeout 600 in review_configs), approval_result, then as shape B `{S}_2`, approval_result; final `A: {answer1}; B: {answer2}` |
//! | f | `multi`, `nhiều` | shape B `{S}_1`, multiSelect "Nhóm ngành quan tâm?"; approval_result; final `Bạn chọn: {answer}` |
//! | h | `migration`, `di chuyển` | shape A `{S}_1`: run_migration {name:"2026_11_add_orders_index"} with a description, allowed approve/reject/respond, timeout 300; approval_result; final `run_migration: respond ({message})` or `run_migration: {type}` |
//! | i | `slow answer`, `trả lời chậm` | text `Để tôi tra cứu giá VNM.` (not final), 2 s of work, final `Giá đóng cửa VNM hôm nay: 82000.` |
//! | j | `slow stream`, `viết dần` | one final text block in ten deltas 300 ms apart, its stop 300 ms after the last (3 s): `Đang viết dần: một, hai, ba, bốn, năm. Xong.` |
//! | k | `long stream`, `viết dài` | one final text block, `Một dòng dài. ` 256 times (3,584 characters), in four deltas 600 ms apart, its stop 600 ms after the last |
//! | g | `malformed`, `rác` | a binary frame, text `{not json`, a 1.1 MiB text_delta (index 0, no start), `{"type":"mystery_event"}`, then text `Vẫn chạy.` (index 1, not final) |
//! | – | anything else | text `Tôi đã nhận: {text}. Từ khóa: hỏi 2 lần, trade, two actions, timeout, shapes, multi, malformed.` (not final) |
//!
//! Only (d) times out on the backend side; the other requests wait until answered or
//! the turn is cancelled, so the bridge's own expiry can be tested against them.
//! `cancel` during any turn: text `Đã hủy.` (not final), then `message_stop`.

mod approvals;
mod misc;
mod questions;

use serde_json::Value;

use super::turn::Turn;
use super::validate::Reply;

/// Which script a message selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scenario {
    AskTwice,
    SlowTrade,
    Trade,
    TwoActions,
    Timeout,
    Shapes,
    Multi,
    Migration,
    SlowAnswer,
    SlowStream,
    LongStream,
    Malformed,
    Echo,
}

/// Keyword rows in match order; keywords are lowercase.
const KEYWORDS: [(Scenario, &[&str]); 12] = [
    (Scenario::AskTwice, &["hỏi 2 lần", "ask twice"]),
    // Before `trade`, which its keywords contain.
    (Scenario::SlowTrade, &["slow trade", "giao dịch chậm"]),
    (Scenario::Trade, &["trade", "giao dịch"]),
    (Scenario::TwoActions, &["two actions", "hai lệnh"]),
    (Scenario::Timeout, &["timeout", "hết giờ"]),
    (Scenario::Shapes, &["shapes", "hai dạng"]),
    (Scenario::Multi, &["multi", "nhiều"]),
    (Scenario::Migration, &["migration", "di chuyển"]),
    (Scenario::SlowAnswer, &["slow answer", "trả lời chậm"]),
    (Scenario::SlowStream, &["slow stream", "viết dần"]),
    (Scenario::LongStream, &["long stream", "viết dài"]),
    (Scenario::Malformed, &["malformed", "rác"]),
];

pub(crate) fn pick(text: &str) -> Scenario {
    let lower = text.to_lowercase();
    KEYWORDS.iter().find(|(_, keywords)| keywords.iter().any(|k| lower.contains(k))).map_or(Scenario::Echo, |(scenario, _)| *scenario)
}

/// Runs the scenario the text selects.
pub(crate) async fn run(turn: Turn, text: String) {
    match pick(&text) {
        Scenario::AskTwice => questions::ask_twice(&turn).await,
        Scenario::SlowTrade => approvals::slow_trade(&turn).await,
        Scenario::Trade => approvals::trade(&turn).await,
        Scenario::TwoActions => approvals::two_actions(&turn).await,
        Scenario::Timeout => approvals::timeout(&turn).await,
        Scenario::Shapes => questions::shapes(&turn).await,
        Scenario::Multi => questions::multi(&turn).await,
        Scenario::Migration => approvals::migration(&turn).await,
        Scenario::SlowAnswer => misc::slow_answer(&turn).await,
        Scenario::SlowStream => misc::slow_stream(&turn).await,
        Scenario::LongStream => misc::long_stream(&turn).await,
        Scenario::Malformed => misc::malformed(&turn),
        Scenario::Echo => misc::echo(&turn, &text),
    }
}

/// The answer to `question` in a question reply ("" if absent; validation prevents that).
fn answer(reply: &Reply, question: &str) -> String {
    match reply {
        Reply::Answers(answers) => answers.get(question).and_then(Value::as_str).unwrap_or_default().to_owned(),
        Reply::Decisions { .. } => String::new(),
    }
}

/// A JSON value as a person would write it: strings without quotes.
fn plain(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_matching_row_wins_case_insensitively() {
        assert_eq!(pick("Hãy HỎI 2 LẦN rồi trade"), Scenario::AskTwice);
        assert_eq!(pick("please TRADE two actions"), Scenario::Trade);
        assert_eq!(pick("Giao dịch"), Scenario::Trade);
        assert_eq!(pick("slow trade"), Scenario::SlowTrade);
        assert_eq!(pick("Giao dịch chậm"), Scenario::SlowTrade);
        assert_eq!(pick("hai lệnh"), Scenario::TwoActions);
        assert_eq!(pick("hết giờ"), Scenario::Timeout);
        assert_eq!(pick("Hai dạng"), Scenario::Shapes);
        assert_eq!(pick("nhiều"), Scenario::Multi);
        assert_eq!(pick("rác"), Scenario::Malformed);
        assert_eq!(pick("Slow answer"), Scenario::SlowAnswer);
        assert_eq!(pick("trả lời chậm"), Scenario::SlowAnswer);
        assert_eq!(pick("Slow stream"), Scenario::SlowStream);
        assert_eq!(pick("viết dần"), Scenario::SlowStream);
        assert_eq!(pick("Long stream"), Scenario::LongStream);
        assert_eq!(pick("viết dài"), Scenario::LongStream);
        assert_eq!(pick("xin chào"), Scenario::Echo);
    }
}
