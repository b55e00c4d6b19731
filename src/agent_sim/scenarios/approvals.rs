//! The tool-call approval scenarios: (b) seed 002's trade, (c) two actions with different
//! allowed decisions, (d) a request the backend itself times out. Final texts are part of
//! the contract with the integration tests: change them only together.

use std::time::Duration;

use serde_json::{Value, json};

use super::super::turn::{Request, Shape, Turn};
use super::super::validate::Reply;
use super::plain;

const APPROVAL_TIMEOUT: u64 = 300;

/// How long (b′) thinks before it asks: long enough for a test to kill the bridge while
/// the agent is still working.
const SLOW_TRADE_THINKING: Duration = Duration::from_secs(2);

/// (b′) The trade, after the model has worked a while in silence: a bridge that dies in
/// the meantime must still show the request.
pub(super) async fn slow_trade(turn: &Turn) {
    turn.thinking("Đang phân tích thị trường…");
    tokio::time::sleep(SLOW_TRADE_THINKING).await;
    trade(turn).await;
}

/// (b) Seed 002: one trade to approve, edit or reject.
pub(super) async fn trade(turn: &Turn) {
    turn.text("Tôi sẽ đặt lệnh mua VNM.", false);
    let action = json!({
        "name": "execute_trade",
        "args": {"symbol": "VNM", "quantity": 100, "side": "buy", "price": 82000},
        "tool_use_id": "toolu_01XyzAbc",
    });
    let request = Request {
        shape: Shape::A { message_id: Some("msg-abc") },
        actions: vec![action.clone()],
        review_configs: vec![json!({"require_approval": true, "timeout": APPROVAL_TIMEOUT})],
        expires_after: None,
    };
    let Some(Reply::Decisions { decisions, user_edit_content }) = turn.ask(request).await else {
        return;
    };
    let decision = decisions.first().cloned().unwrap_or(Value::Null);
    let mut text = match decision.get("type").and_then(Value::as_str) {
        Some("reject") => match decision.get("message").and_then(Value::as_str) {
            Some(why) if !why.is_empty() => format!("Lệnh đã bị hủy. Lý do: {why}"),
            _ => "Lệnh đã bị hủy.".to_owned(),
        },
        Some("edit") => {
            let edited = decision.pointer("/edited_action/args").unwrap_or(&Value::Null);
            order_text(edited, &action["args"])
        }
        _ => order_text(&action["args"], &action["args"]),
    };
    append_note(&mut text, user_edit_content.as_deref());
    turn.text(&text, true);
}

/// `Đã đặt lệnh: {side} {quantity} {symbol} @ {price}`; a field missing from `args`
/// (an edit may send only some) falls back to the original.
fn order_text(args: &Value, original: &Value) -> String {
    let field = |name: &str| plain(args.get(name).or_else(|| original.get(name)));
    format!("Đã đặt lệnh: {} {} {} @ {}", field("side"), field("quantity"), field("symbol"), field("price"))
}

/// (c) Two actions; send_report may not be edited.
pub(super) async fn two_actions(turn: &Turn) {
    let request = Request {
        shape: Shape::A { message_id: None },
        actions: vec![
            json!({
                "name": "execute_trade",
                "args": {"symbol": "FPT", "quantity": 10, "side": "sell", "price": 120000},
            }),
            json!({
                "name": "send_report",
                "args": {"to": "ops@example.com", "subject": "Daily P&L"},
                "description": "Email the daily P&L report",
            }),
        ],
        review_configs: vec![
            json!({"action_name": "execute_trade", "allowed_decisions": ["approve", "edit", "reject"], "timeout": APPROVAL_TIMEOUT}),
            json!({"action_name": "send_report", "allowed_decisions": ["approve", "reject"], "timeout": APPROVAL_TIMEOUT}),
        ],
        expires_after: None,
    };
    let names = ["execute_trade", "send_report"];
    if let Some(reply) = turn.ask(request).await {
        turn.text(&report(&names, &reply), true);
    }
}

/// (d) A dangerous action nobody answers in time (`SimOptions::timeout_secs`).
pub(super) async fn timeout(turn: &Turn) {
    let secs = turn.hub().opts.timeout_secs;
    let request = Request {
        shape: Shape::A { message_id: None },
        actions: vec![json!({"name": "drop_table", "args": {"table": "users"}})],
        review_configs: vec![json!({"require_approval": true, "timeout": secs})],
        expires_after: Some(Duration::from_secs(secs)),
    };
    let text = match turn.ask(request).await {
        Some(reply) => report(&["drop_table"], &reply),
        None => format!("Không ai trả lời trong {secs} giây; thao tác đã bị hủy."),
    };
    turn.text(&text, true);
}

/// `{name}: {decision type}` per action, joined with "; ", plus the user's note.
/// (h) A migration whose review allows `respond`: the reviewer may answer in words.
pub(super) async fn migration(turn: &Turn) {
    let request = Request {
        shape: Shape::A { message_id: None },
        actions: vec![json!({"name": "run_migration", "args": {"name": "2026_11_add_orders_index"},
            "description": "Add an index on orders(created_at)"})],
        review_configs: vec![json!({"action_name": "run_migration", "allowed_decisions": ["approve", "reject", "respond"], "timeout": 300})],
        expires_after: None,
    };
    let Some(reply) = turn.ask(request).await else { return };
    let text = match &reply {
        Reply::Decisions { decisions, .. } if decisions.first().and_then(|d| d.get("type")).and_then(Value::as_str) == Some("respond") => {
            format!("run_migration: respond ({})", plain(decisions[0].get("message")))
        }
        _ => report(&["run_migration"], &reply),
    };
    turn.text(&text, true);
}

fn report(names: &[&str], reply: &Reply) -> String {
    let Reply::Decisions { decisions, user_edit_content } = reply else {
        return String::new();
    };
    let mut text = names.iter().zip(decisions).map(|(name, d)| format!("{name}: {}", plain(d.get("type")))).collect::<Vec<_>>().join("; ");
    append_note(&mut text, user_edit_content.as_deref());
    text
}

fn append_note(text: &mut String, note: Option<&str>) {
    if let Some(note) = note {
        text.push_str(" Ghi chú: ");
        text.push_str(note);
    }
}
