//! Telegram end to end: reference agent ↔ bridge ↔ the real teloxide client ↔ a fake
//! Bot API (tests/support/fake_telegram.rs). Each test asserts the exact commands the
//! agent received and snapshots the keyboards the bridge sent (ids and token tags
//! masked). Render unit tests at the end check the limits without any IO.

use hitl_bridge::platform::telegram::settings::TelegramSettings;
use support::fake_telegram;
mod support;

use std::time::Duration;

use fake_telegram::{FakeTelegram, User, button, callback_data};
use hitl_bridge::agent_sim::SimHandle;
use hitl_bridge::config::Settings;
use hitl_bridge::interaction::{Interaction, RequestBuilder, TimeoutDefaults};
use hitl_bridge::platform::kit::token::TokenSigner;
use hitl_bridge::platform::locale::Locale;
use hitl_bridge::platform::telegram::render::{render, step_for};
use hitl_bridge::protocol::ActionRequest;
use serde_json::{Value, json};
use support::{Chat, Harness, approvals, session_id, wait_approvals, wait_until};

const Q1: &str = "Thảo muốn tập trung vào mục tiêu nào?";
const Q2: &str = "Thời gian nắm giữ dự kiến?";

fn thao() -> User {
    User::new(1001, "Thảo", Some("vi"))
}

fn stranger() -> User {
    User::new(2002, "Mallory", Some("en"))
}

/// The agent, the fake Telegram and a bridge wired to both: a [`Harness`] on Telegram,
/// with Thảo's private chat registered.
async fn start(sim_timeout: u64, extra: &[(&str, &str)]) -> Harness {
    start_with(sim_timeout, extra, |_| {}).await
}

/// [`start`], with `tweak` made to the settings last.
async fn start_with(sim_timeout: u64, extra: &[(&str, &str)], tweak: impl FnOnce(&mut Settings) + 'static) -> Harness {
    let mut h = Harness::on(Chat::Telegram)
        .agent(sim_timeout)
        .settings(extra)
        // Thảo may talk to the agent; the stranger may not.
        .tweak(|s| s.access.users = vec![format!("telegram:{}", thao().id)])
        .tweak(tweak)
        .build()
        .await;
    h.telegram().private_chat(&thao());
    h.boot().await;
    h
}

/// Thảo's private chat (a private chat's id is its user's).
fn thao_chat() -> i64 {
    thao().id
}

/// Thảo says `text` in her chat; the message's id.
fn say(h: &Harness, text: &str) -> i64 {
    h.telegram().push_message(thao_chat(), &thao(), text, None, None)
}

/// Waits for a bot message in Thảo's chat whose text contains `needle`.
async fn message_with(h: &Harness, needle: &str) -> Value {
    wait_until(|| async { h.telegram().bot_messages(thao_chat()).into_iter().find(|m| m["text"].as_str().is_some_and(|t| t.contains(needle))) }).await
}

/// Waits until message `id` shows text containing `needle`; returns it.
async fn message_shows(h: &Harness, id: i64, needle: &str) -> Value {
    wait_until(|| async { h.telegram().message(thao_chat(), id).filter(|m| m["text"].as_str().is_some_and(|t| t.contains(needle))) }).await
}

/// Clicks the button whose label contains `label` on message `id`, as `user`, and
/// returns the answerCallbackQuery body.
async fn click(h: &Harness, id: i64, label: &str, user: &User) -> Value {
    let message = h.telegram().message(thao_chat(), id).expect("message exists");
    let data = button(&message, label);
    click_data(h, id, &data, user).await
}

async fn click_data(h: &Harness, id: i64, data: &str, user: &User) -> Value {
    let query = h.telegram().push_click(thao_chat(), user, id, data);
    wait_until(|| async { h.telegram().answer_to(&query) }).await
}

/// Replies to a ForceReply prompt (the latest bot message containing `needle`).
async fn reply_to_prompt(h: &Harness, needle: &str, text: &str) {
    let prompt = message_with(h, needle).await;
    let prompt_id = prompt["message_id"].as_i64().expect("id");
    h.telegram().push_message(thao_chat(), &thao(), text, None, Some(prompt_id));
}

/// Stops everything, after checking that the bridge sent Telegram nothing it would
/// refuse (apart from the 429s a test asks for).
async fn finish(h: Harness) {
    check_refusals(&h, false);
    h.shutdown().await;
}

/// [`finish`] for a test that restarted the bridge: a restarted bridge re-renders
/// pending messages without knowing what they show, and Telegram's "message is not
/// modified" answer, which it treats as done, is allowed.
async fn finish_after_restart(h: Harness) {
    check_refusals(&h, true);
    h.shutdown().await;
}

/// The fake refuses exactly what Telegram refuses: nothing refused but the 429s a test
/// asks for (and, after a restart, "message is not modified").
fn check_refusals(h: &Harness, restarted: bool) {
    let unexpected: Vec<_> = h
        .telegram()
        .errors()
        .into_iter()
        .filter(|(_, e)| !e.starts_with("Too Many Requests"))
        .filter(|(_, e)| !(restarted && e.starts_with("Bad Request: message is not modified")))
        .collect();
    assert!(unexpected.is_empty(), "Telegram would have refused: {unexpected:?}");
}

/// The callback_data of the button whose label contains `label`.
/// The keyboard with ids and tags masked: `1:[id]:<code>:[tag]`.
fn masked_keyboard(message: &Value) -> Value {
    let mut markup = message.get("reply_markup").cloned().unwrap_or(json!({"inline_keyboard": []}));
    for row in markup["inline_keyboard"].as_array_mut().into_iter().flatten() {
        for b in row.as_array_mut().into_iter().flatten() {
            if let Some(data) = b["callback_data"].as_str() {
                let parts: Vec<&str> = data.split(':').collect();
                assert_eq!(parts.len(), 4, "token shape: {data}");
                assert!(data.len() <= 64, "callback_data over 64 bytes: {data}");
                b["callback_data"] = json!(format!("{}:[id]:{}:[tag]", parts[0], parts[2]));
            }
        }
    }
    markup
}

/// The message text with its `HH:MM UTC` times masked.
fn without_clock(message: &Value) -> String {
    let text = message["text"].as_str().expect("text");
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(" UTC") {
        let (before, after) = rest.split_at(at);
        let cut = before.len().saturating_sub(5);
        if before.is_char_boundary(cut) && before[cut..].chars().all(|c| c.is_ascii_digit() || c == ':') && before[cut..].len() == 5 {
            out.push_str(&before[..cut]);
            out.push_str("[HH:MM]");
        } else {
            out.push_str(before);
        }
        out.push_str(" UTC");
        rest = &after[4..];
    }
    out.push_str(rest);
    out
}

fn has_keyboard(message: &Value) -> bool {
    message.get("reply_markup").is_some()
}

fn id_of(message: &Value) -> i64 {
    message["message_id"].as_i64().expect("message id")
}

/// Seed 000: two questions in one wizard message (an option, then "Khác" typed),
/// a summary, Submit; then a second request; the agent's answers exactly as seeded.
#[tokio::test]
async fn seed_000_question_wizard() {
    let h = start(20, &[]).await;
    say(&h, "hỏi 2 lần");
    let q = message_with(&h, "[1/2] Mục tiêu chính").await;
    // One status line per tool group, created once and edited as its tools finish.
    let status = message_with(&h, "⚙ Chuẩn bị câu hỏi lần 1").await;
    assert_eq!(status["text"], "⚙ Chuẩn bị câu hỏi lần 1: write_todos ✓");
    let group_sends = h.telegram().calls("sendMessage").into_iter().filter(|b| b["text"].as_str().is_some_and(|t| t.contains("lần 1"))).count();
    assert_eq!(group_sends, 1);
    insta::assert_json_snapshot!("seed000_question_1", masked_keyboard(&q));
    assert_eq!(
        without_clock(&q),
        "❓ <b>[1/2] Mục tiêu chính</b>\n<b>Thảo muốn tập trung vào mục tiêu nào?</b>\n\n\
         1. Cổ tức bền vững (Recommended) — <i>Tập trung cổ phiếu trả cổ tức đều</i>\n\
         2. Tăng trưởng dài hạn — <i>Lợi nhuận từ giá tăng trưởng</i>\n\
         3. Khác — <i>Nhập giá trị tùy chỉnh</i>\n\n⏰ Hạn trả lời: [HH:MM] UTC"
    );
    let id = id_of(&q);

    let answer = click(&h, id, "Cổ tức bền vững", &thao()).await;
    assert_eq!(answer["text"], "Đã lưu");
    let step2 = message_shows(&h, id, "[2/2] Kỳ hạn đầu tư").await;
    insta::assert_json_snapshot!("seed000_question_2", masked_keyboard(&step2));
    // "Khác" is the backend's input option: it asks for text instead of selecting.
    click(&h, id, "Khác", &thao()).await;
    reply_to_prompt(&h, "Trả lời bằng câu trả lời của bạn", "Ngắn hạn").await;
    let summary = message_shows(&h, id, "Câu trả lời của bạn").await;
    assert_eq!(
        without_clock(&summary),
        "📝 <b>Câu trả lời của bạn</b>\n\n<b>Thảo muốn tập trung vào mục tiêu nào?</b>\n→ Cổ tức bền vững (Recommended)\n\
         \n<b>Thời gian nắm giữ dự kiến?</b>\n→ Ngắn hạn\n\n⏰ Hạn trả lời: [HH:MM] UTC"
    );
    insta::assert_json_snapshot!("seed000_summary", masked_keyboard(&summary));
    assert!(approvals(h.sim()).is_empty(), "nothing is sent before Submit");
    let sent = click(&h, id, "Gửi", &thao()).await;
    assert_eq!(sent["text"], "Đã lưu quyết định");
    let done = message_shows(&h, id, "bởi Thảo").await;
    assert_eq!(
        without_clock(&done),
        "❓ <b>Câu hỏi</b>\n\n<b>Thảo muốn tập trung vào mục tiêu nào?</b>\n→ Cổ tức bền vững (Recommended)\n\
         \n<b>Thời gian nắm giữ dự kiến?</b>\n→ Ngắn hạn\n\n<b>✅ Đã gửi bởi Thảo lúc [HH:MM] UTC</b>"
    );
    assert!(!has_keyboard(&done), "the keyboard is removed when it ends");

    let q3 = message_with(&h, "[1/1] Kênh báo cáo").await;
    click(&h, id_of(&q3), "Telegram", &thao()).await;
    message_shows(&h, id_of(&q3), "Câu trả lời của bạn").await;
    click(&h, id_of(&q3), "Gửi", &thao()).await;
    message_with(&h, "Cảm ơn! Tổng kết: mục tiêu = Cổ tức bền vững (Recommended); kỳ hạn = Ngắn hạn; kênh = Telegram").await;

    let s = session_id(h.sim());
    let commands = h.sim().commands();
    assert_eq!(
        support::without_message_id(commands[0].clone()),
        json!({"type":"message","session_id":s,"content":[{"type":"text","text":"hỏi 2 lần"}],
        "user":{"platform":"telegram","id":"1001","name":"Thảo"}})
    );
    let got = approvals(h.sim());
    assert_eq!(got.len(), 2);
    assert_eq!(
        serde_json::to_string(&got[0]).unwrap(),
        serde_json::to_string(&json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),
            "answers":{Q1:"Cổ tức bền vững (Recommended)",Q2:"Ngắn hạn"}}))
        .unwrap()
    );
    assert_eq!(
        got[1],
        json!({"type":"approval","session_id":s,"approval_key":format!("{s}_2"),
        "answers":{"Bạn muốn nhận báo cáo qua kênh nào?":"Telegram"}})
    );
    finish(h).await;
}

/// Seed 002, approve: one click sends exactly one approve decision; the message then
/// shows who decided and loses its keyboard.
#[tokio::test]
async fn seed_002_approve() {
    let h = start(20, &[]).await;
    say(&h, "trade");
    let m = message_with(&h, "execute_trade").await;
    let text = m["text"].as_str().unwrap();
    assert!(text.contains("<pre>{\n  \"symbol\": \"VNM\",\n  \"quantity\": 100,\n  \"side\": \"buy\",\n  \"price\": 82000\n}</pre>"), "{text}");
    assert!(text.contains("⏰ Hạn trả lời: "), "{text}");
    insta::assert_json_snapshot!("seed002_approval", masked_keyboard(&m));
    let answer = click(&h, id_of(&m), "Duyệt", &thao()).await;
    assert_eq!(answer["text"], "Đã lưu quyết định");
    let done = message_shows(&h, id_of(&m), "✅ Đã duyệt bởi Thảo lúc").await;
    assert_eq!(
        without_clock(&done),
        "🔐 <b>Cần phê duyệt</b>\n\n<b>execute_trade</b>\nTham số:\n<pre>{\n  \"symbol\": \"VNM\",\n  \"quantity\": 100,\n  \"side\": \"buy\",\n  \"price\": 82000\n}</pre>\n\
         <b>✅ Đã duyệt bởi Thảo lúc [HH:MM] UTC</b>"
    );
    assert!(!has_keyboard(&done));
    message_with(&h, "Đã đặt lệnh: buy 100 VNM @ 82000").await;
    let s = session_id(h.sim());
    assert_eq!(approvals(h.sim()), vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),"decisions":[{"type":"approve"}]})]);
    finish(h).await;
}

/// Edit: ForceReply; invalid JSON gets a clear error and a new prompt; a non-object
/// too; the valid JSON is sent as `edited_action` with the original tool name.
#[tokio::test]
async fn seed_002_edit_invalid_then_valid() {
    let h = start(20, &[]).await;
    say(&h, "trade");
    let m = message_with(&h, "execute_trade").await;
    click(&h, id_of(&m), "Sửa", &thao()).await;
    let prompt = message_with(&h, "Trả lời bằng tham số mới dạng đối tượng JSON.").await;
    let force = h.telegram().calls("sendMessage").into_iter().find(|b| b["reply_markup"]["force_reply"] == json!(true)).expect("a ForceReply prompt");
    assert_eq!(force["reply_markup"], json!({"force_reply": true, "input_field_placeholder": "Sửa", "selective": true}));
    h.telegram().push_message(thao_chat(), &thao(), "{quantity: 50", None, Some(id_of(&prompt)));
    message_with(&h, "⚠️ Không hợp lệ: invalid JSON").await;
    // A fresh prompt follows the error: reply to the newest one.
    let prompts = wait_until(|| async {
        let p: Vec<Value> =
            h.telegram().bot_messages(thao_chat()).into_iter().filter(|m| m["text"].as_str().is_some_and(|t| t.contains("dạng đối tượng JSON"))).collect();
        (p.len() >= 2).then_some(p)
    })
    .await;
    h.telegram().push_message(thao_chat(), &thao(), "[50]", None, Some(id_of(prompts.last().unwrap())));
    message_with(&h, "⚠️ Không hợp lệ: the args must be a JSON object, not an array. Hãy gửi một đối tượng JSON.").await;
    wait_until(|| async {
        let prompts =
            h.telegram().bot_messages(thao_chat()).into_iter().filter(|m| m["text"].as_str().is_some_and(|t| t.contains("dạng đối tượng JSON"))).count();
        (prompts == 3).then_some(())
    })
    .await;
    assert!(approvals(h.sim()).is_empty(), "nothing is sent for a refused edit");
    // The private-chat fallback: the next message answers the open prompt even
    // without the reply attached.
    say(&h, r#"{"symbol":"VNM","quantity":50,"side":"buy","price":82000}"#);
    message_with(&h, "Đã đặt lệnh: buy 50 VNM @ 82000").await;
    let s = session_id(h.sim());
    assert_eq!(
        approvals(h.sim()),
        vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),
        "decisions":[{"type":"edit","edited_action":{"name":"execute_trade","args":{"symbol":"VNM","quantity":50,"side":"buy","price":82000}}}]})]
    );
    finish(h).await;
}

/// Two actions: a row per action plus Approve all / Reject all / Submit; Submit before
/// every action is decided is refused; decisions go full length in action order.
#[tokio::test]
async fn two_actions() {
    let h = start(20, &[]).await;
    say(&h, "two actions");
    let m = message_with(&h, "send_report").await;
    insta::assert_json_snapshot!("two_actions", masked_keyboard(&m));
    let id = id_of(&m);
    let early = click(&h, id, "Gửi", &thao()).await;
    assert_eq!(early["text"], "Hãy quyết định mọi thao tác trước (còn thiếu: 1, 2).");
    assert_eq!(click(&h, id, "Duyệt #1", &thao()).await["text"], "Đã lưu");
    message_shows(&h, id, "→ ✅ Duyệt").await;
    assert_eq!(click(&h, id, "Từ chối #2", &thao()).await["text"], "Đã lưu");
    let decided = message_shows(&h, id, "→ ❌ Từ chối").await;
    insta::assert_json_snapshot!("two_actions_decided", masked_keyboard(&decided));
    assert_eq!(click(&h, id, "Gửi", &thao()).await["text"], "Đã lưu quyết định");
    message_with(&h, "execute_trade: approve; send_report: reject").await;
    let s = session_id(h.sim());
    assert_eq!(
        approvals(h.sim()),
        vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),
        "decisions":[{"type":"approve"},{"type":"reject"}]})]
    );
    finish(h).await;
}

/// Multi-select: toggles ☐/☑, the input option "Khác" asks for text, Done, Submit;
/// labels in option order with the typed text in place of "Khác".
#[tokio::test]
async fn multi_select_with_other() {
    let h = start(20, &[]).await;
    say(&h, "multi");
    let m = message_with(&h, "[1/1] Ngành").await;
    let id = id_of(&m);
    click(&h, id, "Bất động sản", &thao()).await;
    message_shows(&h, id, "→ Bất động sản").await;
    click(&h, id, "Ngân hàng", &thao()).await;
    let toggled = message_shows(&h, id, "→ Ngân hàng, Bất động sản").await;
    insta::assert_json_snapshot!("multi_toggled", masked_keyboard(&toggled));
    click(&h, id, "Khác", &thao()).await;
    reply_to_prompt(&h, "Trả lời bằng câu trả lời của bạn", "Công nghệ").await;
    message_shows(&h, id, "→ Ngân hàng, Bất động sản, Công nghệ").await;
    click(&h, id, "Xong", &thao()).await;
    message_shows(&h, id, "Câu trả lời của bạn").await;
    click(&h, id, "Gửi", &thao()).await;
    message_with(&h, "Bạn chọn: Ngân hàng, Bất động sản, Công nghệ").await;
    let s = session_id(h.sim());
    assert_eq!(
        approvals(h.sim()),
        vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),
        "answers":{"Nhóm ngành quan tâm?":"Ngân hàng, Bất động sản, Công nghệ"}})]
    );
    finish(h).await;
}

/// Skip sends "[No preference]"; the summary says so in the chat's language.
#[tokio::test]
async fn skip_sends_no_preference() {
    let h = start(20, &[]).await;
    say(&h, "shapes");
    let m = message_with(&h, "[1/1] Môi trường").await;
    click(&h, id_of(&m), "Bỏ qua", &thao()).await;
    let summary = message_shows(&h, id_of(&m), "Câu trả lời của bạn").await;
    assert!(summary["text"].as_str().unwrap().contains("→ [Không chọn]"), "{}", summary["text"]);
    click(&h, id_of(&m), "Gửi", &thao()).await;
    let s = wait_approvals(h.sim(), 1).await;
    let session = session_id(h.sim());
    assert_eq!(
        s[0],
        json!({"type":"approval","session_id":session,"approval_key":format!("{session}_1"),
        "answers":{"Triển khai lên môi trường nào?":"[No preference]"}})
    );
    finish(h).await;
}

/// Nobody answers: the agent's approval_timeout ends it; the message says so without
/// a keyboard, and a late click gets a notice and sends nothing.
#[tokio::test]
async fn expiry_removes_the_keyboard_and_refuses_late_clicks() {
    let h = start(1, &[]).await;
    say(&h, "timeout");
    let m = message_with(&h, "drop_table").await;
    let data = button(&m, "Duyệt");
    let expired = message_shows(&h, id_of(&m), "⌛ Hết hạn lúc").await;
    assert!(without_clock(&expired).ends_with("</pre>\n<b>⌛ Hết hạn lúc [HH:MM] UTC mà không có quyết định</b>"), "{}", expired["text"]);
    assert!(!has_keyboard(&expired));
    message_with(&h, "Không ai trả lời trong 1 giây").await;
    let late = click_data(&h, id_of(&m), &data, &thao()).await;
    assert_eq!(late["text"], "Yêu cầu này đã hết hạn.");
    assert!(approvals(h.sim()).is_empty());
    finish(h).await;
}

/// The bridge's own deadline: with the agent unreachable, the bridge expires the
/// request, removes the keyboard, and sends reject decisions once the agent is back.
#[tokio::test]
async fn bridge_deadline_expires_and_rejects() {
    let h = start_with(1, &[("timeouts.grace_secs", "0")], |s| s.backend.history_url = None).await;
    say(&h, "timeout");
    let m = message_with(&h, "drop_table").await;
    h.sim().set_down(true);
    let expired = message_shows(&h, id_of(&m), "⌛ Hết hạn lúc").await;
    assert!(!has_keyboard(&expired));
    h.sim().set_down(false);
    let got = wait_approvals(h.sim(), 1).await;
    let s = session_id(h.sim());
    assert_eq!(
        got,
        vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),
        "decisions":[{"type":"reject","message":"timed out after 1 s without a human decision"}]})]
    );
    finish(h).await;
}

/// Someone who may not answer gets an alert and changes nothing.
#[tokio::test]
async fn unauthorized_click_gets_an_alert() {
    let h = start(20, &[]).await;
    say(&h, "trade");
    let m = message_with(&h, "execute_trade").await;
    let data = button(&m, "Duyệt");
    let answer = click_data(&h, id_of(&m), &data, &stranger()).await;
    assert_eq!(answer, json!({"callback_query_id": answer["callback_query_id"], "text": "You are not allowed to answer this request.", "show_alert": true}));
    // An Edit press by a stranger does not even open a prompt.
    let edit = button(&m, "Sửa");
    assert_eq!(click_data(&h, id_of(&m), &edit, &stranger()).await["show_alert"], true);
    assert!(h.telegram().calls("sendMessage").iter().all(|b| b["reply_markup"].get("force_reply").is_none()));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(approvals(h.sim()).is_empty());
    assert!(has_keyboard(&h.telegram().message(thao_chat(), id_of(&m)).unwrap()));
    // Both refused before the engine, and each audited once, by the engine: who, what, why.
    let store = hitl_bridge::store::Store::connect(&h.settings.store.url).await.unwrap();
    // Written by the engine after the answer: waited for, then checked to be exactly these.
    let refused = wait_until(|| async { store.refused_attempts(0).await.ok().filter(|r| r.len() >= 2) }).await;
    let seen: Vec<(Value, Value, Option<String>, i64)> =
        refused.iter().map(|e| (json!(e.actor), e.reply.clone().unwrap(), e.reason.clone(), e.attempts)).collect();
    let mallory = json!({"platform": "telegram", "user_id": "2002", "name": "Mallory"});
    let why = "you are not allowed to answer this request";
    assert_eq!(
        seen,
        vec![
            (mallory.clone(), json!({"attempted": {"op": "decide", "action": 0, "decision": {"type": "approve"}}, "reason": why}), Some(why.to_owned()), 1),
            (mallory, json!({"attempted": {"open": "edit", "index": 0}, "reason": why}), Some(why.to_owned()), 1),
        ]
    );
    let s = session_id(h.sim());
    assert!(refused.iter().all(|e| e.approval_key == format!("{s}_1") && e.tools == Some(vec!["execute_trade".to_owned()])));
    store.close().await;
    click_data(&h, id_of(&m), &data, &thao()).await;
    assert_eq!(
        wait_approvals(h.sim(), 1).await,
        vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),"decisions":[{"type":"approve"}]})]
    );
    finish(h).await;
}

/// A second click (a double tap, or a click on a stale copy) gets "already decided"
/// and never a second command.
#[tokio::test]
async fn double_click_sends_one_command() {
    let h = start(20, &[]).await;
    say(&h, "trade");
    let m = message_with(&h, "execute_trade").await;
    let approve = button(&m, "Duyệt");
    let reject = button(&m, "Từ chối");
    assert_eq!(click_data(&h, id_of(&m), &approve, &thao()).await["text"], "Đã lưu quyết định");
    let second = click_data(&h, id_of(&m), &reject, &thao()).await;
    let text = second["text"].as_str().unwrap();
    assert!(text.starts_with("Đã được Thảo quyết định lúc "), "{text}");
    message_with(&h, "Đã đặt lệnh").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(approvals(h.sim()).len(), 1);
    finish(h).await;
}

/// A forged token (another code under the same tag), a token from another secret and
/// garbage are all answered with a notice and change nothing.
#[tokio::test]
async fn forged_tokens_change_nothing() {
    let h = start(20, &[]).await;
    say(&h, "trade");
    let m = message_with(&h, "execute_trade").await;
    let reject = button(&m, "Từ chối");
    let forged = reject.replacen(":r0:", ":a0:", 1);
    let other_secret = TokenSigner::new(b"not the bridge's").sign(reject.split(':').nth(1).unwrap(), "a0").unwrap();
    for data in [forged.as_str(), other_secret.as_str(), "garbage", "1:abc:a0:xxxxxxxxxxxx"] {
        let answer = click_data(&h, id_of(&m), data, &thao()).await;
        assert_eq!(answer["text"], "Nút này không hợp lệ (không rõ, đã cũ hoặc giả mạo).", "{data}");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(approvals(h.sim()).is_empty());
    assert!(has_keyboard(&h.telegram().message(thao_chat(), id_of(&m)).unwrap()));
    finish(h).await;
}

/// A question half answered, then the bridge restarts: the old message's buttons
/// still work (tokens verify with the stored secret) and the step comes from the
/// stored draft.
#[tokio::test]
async fn pending_question_answered_after_restart() {
    let mut h = start(30, &[]).await;
    say(&h, "hỏi 2 lần");
    let q = message_with(&h, "[1/2] Mục tiêu chính").await;
    let id = id_of(&q);
    click(&h, id, "Tăng trưởng dài hạn", &thao()).await;
    let step2 = message_shows(&h, id, "[2/2] Kỳ hạn đầu tư").await;
    let option = button(&step2, "1-3 năm");
    h.restart().await;
    let answer = click_data(&h, id, &option, &thao()).await;
    assert_eq!(answer["text"], "Đã lưu");
    message_shows(&h, id, "Câu trả lời của bạn").await;
    click(&h, id, "Gửi", &thao()).await;
    let got = wait_approvals(h.sim(), 1).await;
    let s = session_id(h.sim());
    assert_eq!(
        got[0],
        json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),
        "answers":{Q1:"Tăng trưởng dài hạn",Q2:"1-3 năm"}})
    );
    finish_after_restart(h).await;
}

/// A restart edits only messages that do not show their interaction's current state:
/// two pending requests shown and untouched cost no edit; one whose stored draft moved
/// on without its message being edited (a crash between the two) is edited once.
#[tokio::test]
async fn a_restart_edits_only_messages_behind_their_state() {
    let mut h = start(30, &[]).await;
    say(&h, "trade");
    let trade = id_of(&message_with(&h, "execute_trade").await);
    // The trade's turn waits for its decision: the question comes in a new session.
    say(&h, "/new");
    say(&h, "hỏi 2 lần");
    let question = id_of(&message_with(&h, "[1/2] Mục tiêu chính").await);
    h.stop_bridge().await;
    // As if the bridge died after saving a draft and before editing the message.
    let store = hitl_bridge::store::Store::connect(&h.settings.store.url).await.unwrap();
    let pending = store.pending_interactions().await.unwrap();
    let behind = pending.iter().find(|i| i.request.is_question()).expect("the question");
    let message = store.message_refs(&behind.id).await.unwrap().remove(0);
    store.mark_shown(&message, behind.revision.0 - 1).await.unwrap();
    store.close().await;
    let edits_before = h.telegram().calls("editMessageText").len();
    h.boot().await;
    wait_until(|| async { (h.telegram().calls("editMessageText").len() > edits_before).then_some(()) }).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let edited: Vec<i64> = h.telegram().calls("editMessageText")[edits_before..].iter().filter_map(|e| e["message_id"].as_i64()).collect();
    assert_eq!(edited, vec![question], "only the message behind its state; the trade ({trade}) is left alone");
    finish_after_restart(h).await;
}

/// 429 with retry_after: the bridge waits and resends; nothing is lost.
#[tokio::test]
async fn rate_limited_messages_are_retried() {
    let h = start(20, &[]).await;
    h.telegram().throttle_next(2, 1);
    say(&h, "trade");
    let m = message_with(&h, "execute_trade").await;
    assert!(has_keyboard(&m));
    let refused: Vec<_> = h.telegram().errors();
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert!(refused.iter().all(|(_, e)| e == "Too Many Requests: retry after 1"));
    finish(h).await;
}

/// Comment where `respond` is not allowed: the text goes with the decision as
/// `user_edit_content`, and the action still waits for Approve or Reject.
#[tokio::test]
async fn comment_becomes_user_edit_content() {
    let h = start(20, &[]).await;
    say(&h, "trade");
    let m = message_with(&h, "execute_trade").await;
    click(&h, id_of(&m), "Bình luận", &thao()).await;
    reply_to_prompt(&h, "Trả lời bằng bình luận của bạn.", "mua ít thôi").await;
    message_shows(&h, id_of(&m), "💬 mua ít thôi").await;
    assert!(approvals(h.sim()).is_empty());
    click(&h, id_of(&m), "Duyệt", &thao()).await;
    message_with(&h, "Đã đặt lệnh: buy 100 VNM @ 82000 Ghi chú: mua ít thôi").await;
    let s = session_id(h.sim());
    assert_eq!(
        approvals(h.sim()),
        vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),
        "decisions":[{"type":"approve"}],"user_edit_content":"mua ít thôi"})]
    );
    finish(h).await;
}

/// `/cancel` sends `cancel` and closes the open request; `/new` binds a new session.
#[tokio::test]
async fn cancel_and_new_commands() {
    let h = start(20, &[]).await;
    say(&h, "trade");
    let m = message_with(&h, "execute_trade").await;
    say(&h, "/cancel");
    let cancelled = message_shows(&h, id_of(&m), "✖ Đã hủy lúc").await;
    assert!(cancelled["text"].as_str().unwrap().contains("(cancelled by Thảo)"), "{}", cancelled["text"]);
    assert!(!has_keyboard(&cancelled));
    message_with(&h, "Đã hủy.").await;
    let first = session_id(h.sim());
    assert!(h.sim().commands().contains(&json!({"type":"cancel","session_id":first})));
    say(&h, "/new@hitl_test_bot");
    message_with(&h, "Đã bắt đầu phiên mới.").await;
    say(&h, "xin chào");
    message_with(&h, "Tôi đã nhận: xin chào").await;
    let sessions: Vec<Value> = h.sim().commands().into_iter().filter(|c| c["type"] == "message").map(|c| c["session_id"].clone()).collect();
    assert_eq!(sessions.len(), 2);
    assert_ne!(sessions[0], sessions[1], "/new started another session");
    assert!(approvals(h.sim()).is_empty());
    finish(h).await;
}

/// `/pending` answers each waiting request with a reply to its message; once decided,
/// nothing is waiting.
#[tokio::test]
async fn pending_command_points_at_waiting_requests() {
    let h = start(20, &[]).await;
    say(&h, "trade");
    let m = message_with(&h, "execute_trade").await;
    say(&h, "/pending");
    let pointer = message_with(&h, "⏳ Đang chờ quyết định: execute_trade").await;
    assert_eq!(pointer["reply_to_message"]["message_id"], m["message_id"]);
    assert_eq!(without_clock(&pointer), "⏳ Đang chờ quyết định: execute_trade · ⏰ [HH:MM] UTC");
    click(&h, id_of(&m), "Duyệt", &thao()).await;
    message_with(&h, "Đã đặt lệnh").await;
    say(&h, "/pending");
    message_with(&h, "Không có gì đang chờ quyết định ở đây.").await;
    finish(h).await;
}

/// A chat's configured locale wins over the person's Telegram language.
#[tokio::test]
async fn chat_locale_overrides_the_users_language() {
    let h = start(20, &[("telegram.chat_locales.1001", "zh")]).await;
    say(&h, "trade");
    let m = message_with(&h, "execute_trade").await;
    assert!(m["text"].as_str().unwrap().starts_with("🔐 <b>需要审批</b>"), "{}", m["text"]);
    let labels: Vec<&str> = m["reply_markup"]["inline_keyboard"][0].as_array().unwrap().iter().filter_map(|b| b["text"].as_str()).collect();
    assert_eq!(labels, ["✅ 批准", "❌ 拒绝", "✏️ 编辑", "💬 评论"]);
    assert_eq!(click(&h, id_of(&m), "批准", &thao()).await["text"], "决定已保存");
    finish(h).await;
}

/// In a forum group: an unaddressed message is ignored (privacy-mode semantics), a
/// mention reaches the agent without the @name, and the reply goes to the same topic.
#[tokio::test]
async fn group_topic_messages_need_addressing() {
    let h = start(20, &[]).await;
    let group = h.telegram().group(-100_777, "Ops", true);
    h.telegram().push_message(group, &thao(), "trade", Some(7), None);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(h.sim().commands().is_empty(), "not addressed: ignored");
    h.telegram().push_message(group, &thao(), "@hitl_test_bot trade", Some(7), None);
    let m =
        wait_until(|| async { h.telegram().bot_messages(group).into_iter().find(|m| m["text"].as_str().is_some_and(|t| t.contains("execute_trade"))) }).await;
    assert_eq!(m["message_thread_id"], 7, "answered in the topic");
    let s = session_id(h.sim());
    assert_eq!(
        support::without_message_id(h.sim().commands()[0].clone()),
        json!({"type":"message","session_id":s,"content":[{"type":"text","text":"trade"}],
        "user":{"platform":"telegram","id":"1001","name":"Thảo"}})
    );
    // Another member of the group may not decide Thảo's request.
    let data = button(&m, "Duyệt");
    let query = h.telegram().push_click(group, &stranger(), id_of(&m), &data);
    let answer = wait_until(|| async { h.telegram().answer_to(&query) }).await;
    assert_eq!(answer["show_alert"], true);
    let query = h.telegram().push_click(group, &thao(), id_of(&m), &data);
    wait_until(|| async { h.telegram().answer_to(&query) }).await;
    assert_eq!(
        wait_approvals(h.sim(), 1).await,
        vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),"decisions":[{"type":"approve"}]})]
    );
    finish(h).await;
}

/// Webhook mode: setWebhook with the secret; a POST without the secret header is
/// refused, one with it reaches the agent.
#[tokio::test]
async fn webhook_checks_the_secret_header() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("free port");
        l.local_addr().expect("addr").port()
    };
    let listen = format!("127.0.0.1:{port}");
    let url = format!("http://{listen}/telegram/hook");
    let h = start(
        20,
        &[("telegram.mode", "webhook"), ("telegram.webhook_url", &url), ("telegram.webhook_listen", &listen), ("telegram.webhook_secret", "s3cret-token")],
    )
    .await;
    let set = wait_until(|| async { h.telegram().calls("setWebhook").into_iter().next() }).await;
    assert_eq!(set, json!({"url": url, "allowed_updates": ["message", "callback_query"], "secret_token": "s3cret-token"}));
    let client = reqwest::Client::new();
    let mut update = h.telegram().message_update(thao_chat(), &thao(), "xin chào", None, None);
    update["update_id"] = json!(1);
    let refused = client.post(&url).json(&update).send().await.expect("post");
    assert_eq!(refused.status(), 401);
    let wrong = client.post(&url).header("X-Telegram-Bot-Api-Secret-Token", "guess").json(&update).send().await.expect("post");
    assert_eq!(wrong.status(), 401);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(h.sim().commands().is_empty());
    let accepted = client.post(&url).header("X-Telegram-Bot-Api-Secret-Token", "s3cret-token").json(&update).send().await.expect("post");
    assert_eq!(accepted.status(), 200);
    message_with(&h, "Tôi đã nhận: xin chào").await;
    assert!(h.telegram().calls("getUpdates").is_empty(), "no polling in webhook mode");
    finish(h).await;
}

/// Args too long for a message: the message shows them cut and the full JSON follows
/// as a `.json` document (the platform driven directly, without an agent).
#[tokio::test]
async fn long_args_are_attached_as_a_json_document() {
    use hitl_bridge::platform::Platform;
    let fake = FakeTelegram::start().await;
    let chat = fake.private_chat(&thao());
    let settings = Settings::from_pairs(&[
        ("console.enabled", "false"),
        ("telegram.enabled", "true"),
        ("telegram.token", fake_telegram::TOKEN),
        ("telegram.api_url", &fake.url),
    ])
    .expect("settings");
    let (engine, _requests) = hitl_bridge::engine::EngineHandle::channel();
    let store = hitl_bridge::store::Store::connect("sqlite::memory:").await.expect("store");
    let telegram = hitl_bridge::platform::telegram::start(
        settings.platforms.get::<TelegramSettings>(),
        settings.access_policy(),
        settings.backend.replica_id(),
        hitl_bridge::listener::Limits::from_settings(&settings.http, None),
        engine,
        TokenSigner::new(b"k"),
        store.platform_inbox("telegram"),
        store.ui_states(),
        hitl_bridge::metrics::Metrics::new(),
        std::sync::Arc::new(hitl_bridge::web::ChatLinks::new(store, settings.web.clone())),
    )
    .await
    .expect("starts");
    let rows: Vec<String> = (0..2000).map(|n| format!("row {n}")).collect();
    let i = interaction(vec![ActionRequest { name: "bulk_insert".into(), args: json!({"rows": rows}), description: None, tool_use_id: None }]);
    let key = hitl_bridge::store::ChatKey::new("telegram", &chat.to_string(), None);
    let id = telegram.show_interaction(&key, &i).await.expect("shown").expect("a message id");
    let shown = fake.message(chat, id.parse().expect("numeric id")).expect("message");
    assert!(shown["text"].as_str().unwrap().contains("The arguments were too long to show; the full JSON is attached."));
    let docs = fake.calls("sendDocument");
    assert_eq!(docs.len(), 1);
    assert_eq!(docs[0]["chat_id"], json!(chat.to_string()));
    assert_eq!(docs[0]["caption"], "The arguments were too long to show; the full JSON is attached.");
    assert_eq!(docs[0]["document"]["filename"], "bulk_insert.json");
    let content: Value = serde_json::from_str(docs[0]["document"]["content"].as_str().unwrap()).unwrap();
    assert_eq!(content, json!({"rows": rows}));
    telegram.shutdown();
    assert!(fake.errors().is_empty(), "{:?}", fake.errors());
    fake.shutdown();
}

// ---------------------------------------------------------------- render unit tests

fn interaction(actions: Vec<ActionRequest>) -> Interaction {
    let request = RequestBuilder::start("S_1", actions, vec![], Some(600)).finish(TimeoutDefaults::default()).expect("request");
    Interaction::new("a1b2c3d4e5f6".into(), "S".into(), request, None, 0)
}

/// 25 options with long Vietnamese labels and descriptions: every callback_data fits
/// in 64 bytes and the text in 4096 characters.
#[test]
fn twenty_five_long_vietnamese_options_fit() {
    let options: Vec<Value> = (0..25)
        .map(|i| {
            json!({"label": format!("Lựa chọn số {i}: Cổ phiếu ngân hàng thương mại cổ phần nhà nước quy mô lớn"),
            "description": "Mô tả rất dài về lựa chọn này, với nhiều dấu tiếng Việt: ẩm ướt, ổn định, hưởng lợi. ".repeat(3)})
        })
        .collect();
    let i = interaction(vec![ActionRequest {
        name: "ask_user_question".into(),
        args: json!({"questions":[{"question":"Bạn quan tâm đến những nhóm cổ phiếu nào trong danh mục đầu tư dài hạn?","header":"Danh mục","multiSelect":true,"options":options}]}),
        description: None,
        tool_use_id: None,
    }]);
    let signer = TokenSigner::new(b"secret");
    let r = render(&i, step_for(&i, None), Locale::Vi, &signer);
    let markup = serde_json::to_value(&r.keyboard).unwrap();
    let data = callback_data(&markup);
    assert_eq!(data.len(), 25 + 1 + 2, "25 options, Other, Skip and Done");
    for d in &data {
        assert!(!d.is_empty() && d.len() <= 64, "{d} is {} bytes", d.len());
        assert!(signer.verify(d).is_ok());
    }
    assert!(r.text.chars().count() <= 4096, "{}", r.text.chars().count());
    insta::assert_json_snapshot!("twenty_five_options", masked_keyboard(&json!({"reply_markup": markup})));
}

/// Args too long for one message are cut in the text and attached whole.
#[test]
fn long_args_are_cut_and_attached() {
    let big: Vec<String> = (0..2000).map(|n| format!("row <{n}> & more")).collect();
    let i = interaction(vec![ActionRequest {
        name: "bulk_insert".into(),
        args: json!({"rows": big}),
        description: Some("Insert <many> rows".into()),
        tool_use_id: None,
    }]);
    let r = render(&i, 0, Locale::En, &TokenSigner::new(b"secret"));
    assert!(r.text.chars().count() <= 4096);
    assert!(r.text.contains("Insert &lt;many&gt; rows"));
    assert!(r.text.contains("row &lt;0&gt; &amp; more"));
    assert!(r.text.contains("The arguments were too long to show; the full JSON is attached."));
    assert_eq!(r.full_args.len(), 1);
    assert_eq!(r.full_args[0].0, "bulk_insert.json");
    assert_eq!(serde_json::from_str::<Value>(&r.full_args[0].1).unwrap(), json!({"rows": big}));
}

/// The exact approval text, in English (also the example in docs/telegram.md).
#[test]
fn approval_text_in_english() {
    let i = interaction(vec![ActionRequest {
        name: "execute_trade".into(),
        args: json!({"symbol":"VNM","quantity":100,"side":"buy","price":82000}),
        description: Some("Buy VNM shares".into()),
        tool_use_id: None,
    }]);
    let r = render(&i, 0, Locale::En, &TokenSigner::new(b"secret"));
    assert_eq!(
        r.text,
        "🔐 <b>Approval needed</b>\n\n<b>execute_trade</b>\nBuy VNM shares\nArguments:\n<pre>{\n  \"symbol\": \"VNM\",\n  \"quantity\": 100,\n  \"side\": \"buy\",\n  \"price\": 82000\n}</pre>\n⏰ Answer by: 00:10 UTC"
    );
}

// ---------------------------------------------------------------------------------
// Who may talk and approve (access.*)
// ---------------------------------------------------------------------------------

/// The `message` commands the agent received, as `(user id, text)`.
fn agent_messages(sim: &SimHandle) -> Vec<(String, String)> {
    sim.commands()
        .into_iter()
        .filter(|c| c["type"] == "message")
        .map(|c| (c["user"]["id"].as_str().unwrap_or_default().to_owned(), c["content"][0]["text"].as_str().unwrap_or_default().to_owned()))
        .collect()
}

/// Waits for a bot message in `chat` whose text contains `needle`.
async fn bot_says(h: &Harness, chat: i64, needle: &str) -> Value {
    wait_until(|| async { h.telegram().bot_messages(chat).into_iter().find(|m| m["text"].as_str().is_some_and(|t| t.contains(needle))) }).await
}

/// The 8-character code in a pairing notice ("… pairing code is ABCD2345 …").
fn pairing_code_in(message: &Value) -> String {
    let text = message["text"].as_str().expect("text");
    let at = text.find("code is ").expect("a code in the notice") + "code is ".len();
    text[at..at + 8].to_owned()
}

/// `hitl_bridge_refusals_total{reason="..."}` as `/metrics` shows it now.
async fn refusals_counted(h: &Harness, reason: &str) -> u64 {
    let addr = h.app().http_addr().expect("the HTTP listener is on");
    let body = reqwest::get(format!("http://{addr}/metrics")).await.expect("GET /metrics").text().await.expect("body");
    let series = format!("hitl_bridge_refusals_total{{reason=\"{reason}\"}} ");
    body.lines().find_map(|l| l.strip_prefix(series.as_str())).map_or(0, |n| n.parse().expect("a count"))
}

/// A stranger's flood costs one refusal and one audit entry per chat and window: a
/// thousand messages and commands get one reply, one `refused` entry whose
/// `attempts` counts them all, and the metric counts every one; nothing reaches the
/// agent. Another stranger has their own window, in their own language.
#[tokio::test]
async fn a_strangers_flood_gets_one_refusal_and_one_counted_audit_entry() {
    const FLOOD: u64 = 1_000;
    let h = start(20, &[]).await;
    let mallory = h.telegram().private_chat(&stranger());
    let started = std::time::Instant::now();
    for n in 0..FLOOD {
        let text = match n % 4 {
            1 => "/start".to_owned(),
            2 => "/new".to_owned(),
            _ => format!("trade {n}"),
        };
        h.telegram().push_message(mallory, &stranger(), &text, None, None);
    }
    wait_until(|| async { (refusals_counted(&h, "stranger").await == FLOOD).then_some(()) }).await;
    eprintln!("{FLOOD} refused messages handled in {:?}", started.elapsed());
    let minh = User::new(2003, "Minh", Some("vi"));
    let minh_chat = h.telegram().private_chat(&minh);
    h.telegram().push_message(minh_chat, &minh, "giao dịch", None, None);
    bot_says(&h, minh_chat, "Bạn không được phép trò chuyện với tác tử này").await;
    // Thảo is on the allowlist: her message is the only one the agent ever got.
    say(&h, "xin chào");
    wait_until(|| async { (!agent_messages(h.sim()).is_empty()).then_some(()) }).await;
    assert_eq!(agent_messages(h.sim()), vec![("1001".to_owned(), "xin chào".to_owned())]);

    let sent = h.telegram().bot_messages(mallory);
    assert_eq!(sent.len(), 1, "one refusal for the whole flood: {sent:?}");
    assert_eq!(sent[0]["text"], "⛔ You are not allowed to talk to this agent. Ask an admin to add you: your id is telegram:2002.");
    assert_eq!(refusals_counted(&h, "stranger").await, FLOOD + 1);
    let store = hitl_bridge::store::Store::connect(&h.settings.store.url).await.unwrap();
    let refused = store.refused_attempts(0).await.unwrap();
    let seen: Vec<(String, i64, Value)> = refused.iter().map(|e| (e.actor.as_ref().unwrap().user_id.clone(), e.attempts, e.reply.clone().unwrap())).collect();
    let chat = |id: i64| json!({"platform": "telegram", "chat_id": id.to_string(), "thread_id": null});
    let reason = "not allowed to talk to the agent";
    assert_eq!(
        seen,
        vec![
            ("2002".to_owned(), FLOOD as i64, json!({"attempted": "message", "text": "trade 0", "chat": chat(mallory), "reason": reason})),
            ("2003".to_owned(), 1, json!({"attempted": "message", "text": "giao dịch", "chat": chat(minh_chat), "reason": reason})),
        ]
    );
    store.close().await;
    finish(h).await;
}

/// `/id` is answered to anyone, stranger included, with their id, the group's and the
/// topic's as the config writes them, in their language; a flood of it gets one
/// answer per chat per 10 s, and none of it reaches the agent.
#[tokio::test]
async fn id_is_answered_to_anyone_once_per_window() {
    let h = start(20, &[]).await;
    let forum = h.telegram().group(-1001234567890, "ops", true);
    h.telegram().push_message(forum, &stranger(), "/id", Some(7), None);
    let answer = bot_says(&h, forum, "🆔").await;
    assert_eq!(
        answer["text"],
        "🆔 You: telegram:2002  (access.users, access.approvers, access.admins)\n\
         This chat: telegram:-1001234567890  (access.chats, routing.channels)\n\
         This topic or thread: telegram:-1001234567890/7  (access.chats, routing.channels)"
    );
    let minh = User::new(2003, "Minh", Some("vi"));
    let minh_chat = h.telegram().private_chat(&minh);
    for _ in 0..5 {
        h.telegram().push_message(minh_chat, &minh, "/id", None, None);
    }
    let answer = bot_says(&h, minh_chat, "🆔").await;
    assert!(answer["text"].as_str().unwrap().starts_with("🆔 Bạn: telegram:2003"), "{answer}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(h.telegram().bot_messages(minh_chat).len(), 1, "one answer for the flood");
    assert!(agent_messages(h.sim()).is_empty());
    finish(h).await;
}

/// At start the bot registers its commands (the list Discord registers too) in
/// English for everyone and in Vietnamese and Chinese for those languages.
#[tokio::test]
async fn the_commands_are_registered_in_every_language() {
    let h = start(20, &[]).await;
    let calls = wait_until(|| async {
        let calls = h.telegram().calls("setMyCommands");
        (calls.len() == 3).then_some(calls)
    })
    .await;
    let names: Vec<&str> = calls[0]["commands"].as_array().unwrap().iter().map(|c| c["command"].as_str().unwrap()).collect();
    assert_eq!(names, ["new", "cancel", "pending", "rules", "id", "pair", "web"]);
    assert_eq!(calls[0].get("language_code"), None, "English is the default");
    assert_eq!((calls[1]["language_code"].as_str(), calls[2]["language_code"].as_str()), (Some("vi"), Some("zh")));
    assert_eq!(calls[1]["commands"][4]["description"], "Hiện mã của bạn và của cuộc trò chuyện này, theo cách cấu hình ghi");
    finish(h).await;
}

/// With `access.refusal_window_secs = 0` every attempt is answered and audited on its
/// own, commands included (/start and /help explain the refusal, never silently).
#[tokio::test]
async fn without_a_window_every_attempt_is_answered_and_audited() {
    let h = start_with(20, &[], |s| s.access.refusal_window_secs = 0).await;
    let mallory = h.telegram().private_chat(&stranger());
    for text in ["trade", "/start", "/new"] {
        h.telegram().push_message(mallory, &stranger(), text, None, None);
    }
    wait_until(|| async { (h.telegram().bot_messages(mallory).len() == 3).then_some(()) }).await;
    assert!(
        h.telegram()
            .bot_messages(mallory)
            .iter()
            .all(|m| m["text"] == "⛔ You are not allowed to talk to this agent. Ask an admin to add you: your id is telegram:2002.")
    );
    let store = hitl_bridge::store::Store::connect(&h.settings.store.url).await.unwrap();
    let seen: Vec<(String, String, i64)> = store
        .refused_attempts(0)
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.reply.as_ref().unwrap()["attempted"].as_str().unwrap().to_owned(), e.reply.unwrap()["text"].as_str().unwrap().to_owned(), e.attempts))
        .collect();
    let row = |attempted: &str, text: &str| (attempted.to_owned(), text.to_owned(), 1);
    assert_eq!(seen, vec![row("message", "trade"), row("command", "/start"), row("command", "/new")]);
    store.close().await;
    finish(h).await;
}

/// Pairing: a stranger gets a code (the same one when asking again), the library
/// function behind `hitl-bridge pair` approves it, the user is told, and their next
/// message reaches the agent. The code cannot be used twice.
#[tokio::test]
async fn pairing_code_approved_from_the_cli_lets_the_stranger_talk() {
    // Every attempt answered (no refusal window), so asking again shows the code again.
    let h = start_with(20, &[], |s| {
        s.access.pairing = true;
        s.access.refusal_window_secs = 0;
    })
    .await;
    let mallory = h.telegram().private_chat(&stranger());
    h.telegram().push_message(mallory, &stranger(), "hello", None, None);
    let notice = bot_says(&h, mallory, "pairing code is").await;
    let code = pairing_code_in(&notice);
    assert!(code.bytes().all(|b| hitl_bridge::interaction::admission::CODE_ALPHABET.contains(&b)), "{code}");
    h.telegram().push_message(mallory, &stranger(), "hello again", None, None);
    wait_until(|| async { (h.telegram().bot_messages(mallory).len() == 2).then_some(()) }).await;
    assert_eq!(pairing_code_in(&h.telegram().bot_messages(mallory)[1]), code, "the same code while it is valid");
    assert!(agent_messages(h.sim()).is_empty());

    use hitl_bridge::pairing::{PairCommand, run_cli};
    let printed = run_cli(&h.settings, &PairCommand::Approve(code.to_lowercase())).await.unwrap();
    assert_eq!(printed, "paired Mallory (telegram:2002); they may now talk to the agent");
    let again = run_cli(&h.settings, &PairCommand::Approve(code.clone())).await.unwrap_err();
    assert!(again.to_string().contains(&format!("no pairing code {code}")), "{again}");
    // The running bridge tells them (it rescans the store every few seconds).
    bot_says(&h, mallory, "you may now talk to the agent").await;
    h.telegram().push_message(mallory, &stranger(), "trade", None, None);
    wait_until(|| async { (!agent_messages(h.sim()).is_empty()).then_some(()) }).await;
    assert_eq!(agent_messages(h.sim()), vec![("2002".to_owned(), "trade".to_owned())]);
    let listed = run_cli(&h.settings, &PairCommand::List).await.unwrap();
    assert!(listed.starts_with("telegram:2002\tMallory\tpaired by cli at "), "{listed}");
    finish(h).await;
}

/// `/pair CODE` is for the people in `access.admins`, in an admin chat or their direct
/// chat with the bot. Refused, audited and changing nothing: from a member of the
/// admin chat who is not an admin, from someone who may talk but is not an admin, from
/// an admin in another group, and from an admin for their own code. The admin gets a
/// confirmation and the paired user a notice.
#[tokio::test]
async fn pairing_is_approved_by_admins_not_by_admin_chats() {
    const ADMINS: i64 = -100999;
    const ELSEWHERE: i64 = -100555;
    let ops = User::new(3003, "Ops", Some("en"));
    let h = start_with(20, &[], move |s| {
        s.access.pairing = true;
        s.access.admin_chats = vec![format!("telegram:{ADMINS}")];
        // Mallory is an admin too: still not for her own code.
        s.access.admins = vec![format!("telegram:{}", ops.id), format!("telegram:{}", stranger().id)];
    })
    .await;
    let mallory = h.telegram().private_chat(&stranger());
    h.telegram().push_message(mallory, &stranger(), "hello", None, None);
    let code = pairing_code_in(&bot_says(&h, mallory, "pairing code is").await);
    // Thảo may talk, but is no admin.
    say(&h, &format!("/pair {code}"));
    message_with(&h, "⛔ Chỉ quản trị viên (access.admins) mới được duyệt mã ghép nối.").await;
    // Neither is a member of the admin chat.
    let member = User::new(4004, "Member", Some("en"));
    h.telegram().group(ADMINS, "admins", false);
    h.telegram().push_message(ADMINS, &member, &format!("/pair {code}"), None, None);
    bot_says(&h, ADMINS, "⛔ Only an admin (access.admins) may approve pairing codes.").await;
    // An admin, but where everyone would see the code.
    h.telegram().group(ELSEWHERE, "elsewhere", false);
    h.telegram().push_message(ELSEWHERE, &ops, &format!("/pair {code}"), None, None);
    bot_says(&h, ELSEWHERE, "⛔ /pair only works in an admin chat (access.admin_chats) or in your direct chat with the bot.").await;
    // The requester, admin or not.
    h.telegram().push_message(mallory, &stranger(), &format!("/pair {code}"), None, None);
    bot_says(&h, mallory, &format!("⛔ Pairing code {code} is your own: another admin must approve it.")).await;
    let store = hitl_bridge::store::Store::connect(&h.settings.store.url).await.unwrap();
    assert!(store.paired_users().await.unwrap().is_empty());

    // An admin in the admin chat pairs her.
    h.telegram().push_message(ADMINS, &ops, "/pair nope", None, None);
    bot_says(&h, ADMINS, "No pairing code nope is waiting").await;
    h.telegram().push_message(ADMINS, &ops, &format!("/pair@hitl_test_bot {code}"), None, None);
    bot_says(&h, ADMINS, "✅ Paired Mallory (telegram:2002): they may now talk to the agent.").await;
    bot_says(&h, mallory, "✅ An admin approved your pairing code: you may now talk to the agent.").await;
    assert_eq!(store.paired_users().await.unwrap()[0].paired_by, "telegram:3003");
    h.telegram().push_message(mallory, &stranger(), "trade", None, None);
    wait_until(|| async { (!agent_messages(h.sim()).is_empty()).then_some(()) }).await;
    assert_eq!(agent_messages(h.sim()), vec![("2002".to_owned(), "trade".to_owned())]);
    // And in their direct chat with the bot.
    let minh = User::new(2003, "Minh", Some("en"));
    let minh_chat = h.telegram().private_chat(&minh);
    h.telegram().push_message(minh_chat, &minh, "hello", None, None);
    let minhs = pairing_code_in(&bot_says(&h, minh_chat, "pairing code is").await);
    let ops_chat = h.telegram().private_chat(&ops);
    h.telegram().push_message(ops_chat, &ops, &format!("/pair {minhs}"), None, None);
    bot_says(&h, ops_chat, "✅ Paired Minh (telegram:2003): they may now talk to the agent.").await;

    let refused: Vec<(String, String, String, String)> = store
        .refused_attempts(0)
        .await
        .unwrap()
        .into_iter()
        .map(|e| {
            let reply = e.reply.unwrap();
            let text = |k: &str| reply[k].as_str().unwrap_or_default().to_owned();
            (e.actor.unwrap().user_id, text("attempted"), reply["chat"]["chat_id"].as_str().unwrap().to_owned(), text("reason"))
        })
        .collect();
    let row = |user: u64, attempted: &str, chat: i64, reason: &str| (user.to_string(), attempted.to_owned(), chat.to_string(), reason.to_owned());
    assert_eq!(
        refused,
        vec![
            row(2002, "message", mallory, "not allowed to talk to the agent"),
            row(1001, "pair", thao_chat(), "not an admin (access.admins)"),
            row(4004, "pair", ADMINS, "not an admin (access.admins)"),
            row(3003, "pair", ELSEWHERE, "/pair outside the admin chats and the admin's direct chat"),
            row(2002, "pair", mallory, "an admin's own pairing code"),
            row(2003, "message", minh_chat, "not allowed to talk to the agent"),
        ]
    );
    store.close().await;
    finish(h).await;
}

/// Four eyes: with `access.self_approval = false` the requester's Approve is refused
/// with an alert and changes nothing; a configured approver's Approve decides.
#[tokio::test]
async fn four_eyes_refuses_the_requesters_approve() {
    let h = start_with(20, &[], |s| {
        s.access.self_approval = false;
        s.access.approvers = vec!["telegram:3003".into()];
    })
    .await;
    say(&h, "trade");
    let m = message_with(&h, "execute_trade").await;
    let answer = click(&h, id_of(&m), "Duyệt", &thao()).await;
    assert_eq!(answer["show_alert"], true);
    assert_eq!(answer["text"], "Bạn đã khởi tạo lượt này: một người duyệt khác phải quyết định các lệnh công cụ của nó (bốn mắt).");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(approvals(h.sim()).is_empty(), "the requester's click sent nothing");
    let ops = User::new(3003, "Ops", Some("en"));
    let answer = click(&h, id_of(&m), "Duyệt", &ops).await;
    assert_ne!(answer["show_alert"], true, "{answer}");
    let got = wait_approvals(h.sim(), 1).await;
    assert_eq!(got[0]["decisions"], json!([{"type": "approve"}]));
    finish(h).await;
}

/// `/rules` lists a remembered approval with its id; `/rules revoke ID` by someone who
/// may talk but is neither an approver nor the rule's setter is refused, audited and
/// changes nothing; a configured approver revokes it, and the chat lists none.
#[tokio::test]
async fn rules_are_listed_and_revoked_by_an_approver_only() {
    use hitl_bridge::interaction::{Actor, RememberScope, RememberedRule};
    let h = start_with(20, &[], |s| s.access.approvers = vec!["telegram:3003".into()]).await;
    let store = hitl_bridge::store::Store::connect(&h.settings.store.url).await.unwrap();
    let rule = RememberedRule {
        id: "r-always".into(),
        scope: RememberScope::Always,
        tool: "execute_trade".into(),
        args: Some(json!({"symbol": "VNM"})),
        session_id: None,
        backend: "stream".into(),
        set_by: Actor::new("telegram", "4004", "Lan"),
        // 2025-06-01T08:29:00Z
        set_at_ms: 1_748_766_540_000,
        policy: "trades".into(),
    };
    store.save_rule(&rule).await.unwrap();

    say(&h, "/rules");
    let listed = message_with(&h, "r-always").await;
    assert_eq!(
        listed["text"],
        "Được duyệt tự động ở đây:\n• r-always · execute_trade {\"symbol\":\"VNM\"} · luôn luôn · Lan, 08:29 UTC\nThu hồi bằng /rules revoke MÃ."
    );

    say(&h, "/rules revoke r-always");
    message_with(&h, "Chỉ người duyệt hoặc người đặt quy tắc mới được thu hồi nó.").await;
    assert_eq!(store.active_rules().await.unwrap(), vec![rule.clone()]);
    let refused = store.refused_attempts(0).await.unwrap();
    let [attempt] = refused.as_slice() else { panic!("one refusal audited, got {refused:?}") };
    assert_eq!((attempt.interaction_id.as_str(), attempt.actor.as_ref().map(|a| a.user_id.as_str())), ("r-always", Some("1001")));

    let ops = User::new(3003, "Ops", Some("en"));
    let ops_chat = h.telegram().private_chat(&ops);
    h.telegram().push_message(ops_chat, &ops, "/rules revoke r-always", None, None);
    bot_says(&h, ops_chat, "Rule r-always revoked: execute_trade will be asked again.").await;
    assert!(store.active_rules().await.unwrap().is_empty());
    say(&h, "/rules");
    message_with(&h, "Không có phê duyệt đã ghi nhớ nào áp dụng ở đây.").await;
    store.close().await;
    finish(h).await;
}

// ---------------------------------------------------------------------------------
// Decision policies (issue #10): remembered approvals, quorum, policy outcomes, reminders
// ---------------------------------------------------------------------------------

mod policies {
    use super::*;
    use hitl_bridge::engine::Reminder;
    use hitl_bridge::interaction::policy::{Fallback, FallbackDecision, Mention, Policy};
    use hitl_bridge::interaction::{AccessPolicy, Actor, Applied, RememberScope, RememberedRule, UserAction};
    use hitl_bridge::protocol::{Decision, EditedAction, ReviewConfig};

    const MIN: i64 = 60_000;

    fn lan() -> Actor {
        Actor::new("telegram", "1001", "Lan")
    }

    fn minh() -> Actor {
        Actor::new("telegram", "1002", "Minh")
    }

    fn policy() -> Policy {
        Policy {
            name: "migrations".into(),
            approvers: vec![("telegram".into(), "1001".into()), ("telegram".into(), "1002".into()), ("discord".into(), "7".into())],
            approver_roles: vec![],
            quorum: 1,
            remember: vec![],
            remember_args: Default::default(),
            escalation: vec![],
            fallback: None,
        }
    }

    /// One `run_migration` call (Kimi's decisions when `kimi`), under `policy`.
    fn migration(kimi: bool, policy: Policy) -> Interaction {
        let action = ActionRequest { name: "run_migration".into(), args: json!({"version": 42}), description: None, tool_use_id: None };
        let configs = if kimi {
            vec![ReviewConfig { allowed_decisions: Some(vec!["approve".into(), "approve_for_session".into(), "reject".into()]), ..ReviewConfig::default() }]
        } else {
            vec![]
        };
        let request = RequestBuilder::start("S_1", vec![action], configs, Some(600)).finish(TimeoutDefaults::default()).expect("request");
        Interaction::new("a1b2c3d4e5f6".into(), "S".into(), request, None, 0).with_policy(Some(policy))
    }

    fn nobody() -> AccessPolicy {
        AccessPolicy::default()
    }

    const ARGS: &str = "<b>run_migration</b>\nArguments:\n<pre>{\n  \"version\": 42\n}</pre>";

    /// "Approve once" with "Approve for this session" and "Always approve" beside it;
    /// Kimi's own "Approve for session" (s0) is not shown as well.
    #[test]
    fn remember_buttons_replace_kimis_session_button() {
        let i = migration(true, Policy { remember: vec![RememberScope::Session, RememberScope::Always], ..policy() });
        let r = render(&i, 0, Locale::En, &TokenSigner::new(b"secret"));
        assert_eq!(r.text, format!("🔐 <b>Approval needed</b>\n\n{ARGS}\n⏰ Answer by: 00:10 UTC"));
        let markup = serde_json::to_value(&r.keyboard).unwrap();
        insta::assert_json_snapshot!("policy_remember_buttons", masked_keyboard(&json!({"reply_markup": markup})));
        let labels: Vec<Vec<&str>> = markup["inline_keyboard"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| row.as_array().unwrap().iter().map(|b| b["text"].as_str().unwrap()).collect())
            .collect();
        assert_eq!(labels, [vec!["✅ Approve once", "❌ Reject", "💬 Comment"], vec!["🔁 Approve for this session", "♾️ Always approve"]]);

        // Only what the policy offers, in Vietnamese.
        let i = migration(false, Policy { remember: vec![RememberScope::Always], ..policy() });
        let markup = serde_json::to_value(&render(&i, 0, Locale::Vi, &TokenSigner::new(b"secret")).keyboard).unwrap();
        let masked = masked_keyboard(&json!({"reply_markup": markup}));
        assert_eq!(masked["inline_keyboard"][1], json!([{"text": "♾️ Luôn duyệt", "callback_data": "1:[id]:Ma:[tag]"}]));
        assert_eq!(masked["inline_keyboard"][0][0], json!({"text": "✅ Duyệt một lần", "callback_data": "1:[id]:a0:[tag]"}));
    }

    /// While votes arrive the message says where the count is, each decision set apart.
    #[test]
    fn quorum_progress_line() {
        let mut i = migration(false, Policy { quorum: 3, ..policy() });
        let r = render(&i, 0, Locale::En, &TokenSigner::new(b"secret"));
        assert_eq!(r.text, format!("🔐 <b>Approval needed</b>\n\n{ARGS}\n👥 0 of 3 approvals\n⏰ Answer by: 00:10 UTC"));
        assert_eq!(i.apply(&lan(), UserAction::Decide { action: 0, decision: Decision::Approve }, &nobody(), MIN), Ok(Applied::Updated));
        let mut args = serde_json::Map::new();
        args.insert("version".into(), json!(41));
        let edit = Decision::Edit { edited_action: EditedAction { name: "run_migration".into(), args } };
        assert_eq!(i.apply(&minh(), UserAction::Decide { action: 0, decision: edit }, &nobody(), 2 * MIN), Ok(Applied::Updated));
        let r = render(&i, 0, Locale::En, &TokenSigner::new(b"secret"));
        assert_eq!(r.text, format!("🔐 <b>Approval needed</b>\n\n{ARGS}\n👥 1 of 3 approvals: Lan ✔ · Minh ✏️ (edited)\n⏰ Answer by: 00:10 UTC"));
        let r = render(&i, 0, Locale::Zh, &TokenSigner::new(b"secret"));
        assert!(r.text.contains("\n👥 已批准 1/3：Lan ✔ · Minh ✏️ (已编辑)\n"), "{}", r.text);
        assert_eq!(callback_data(&serde_json::to_value(&r.keyboard).unwrap()).len(), 4, "the usual buttons while votes arrive");
    }

    /// A quorum reached: the outcome names everyone whose vote counted.
    #[test]
    fn quorum_outcome_names_every_counted_voter() {
        let mut i = migration(false, Policy { quorum: 2, ..policy() });
        i.apply(&lan(), UserAction::Decide { action: 0, decision: Decision::Approve }, &nobody(), MIN).expect("counted");
        let done = i.apply(&minh(), UserAction::Decide { action: 0, decision: Decision::Approve }, &nobody(), 5 * MIN).expect("final");
        assert!(matches!(done, Applied::Resolved(_)));
        let r = render(&i, 0, Locale::En, &TokenSigner::new(b"secret"));
        assert_eq!(r.text, format!("🔐 <b>Approval needed</b>\n\n{ARGS}\n<b>✅ Approved by Lan, Minh at 00:05 UTC</b>"));
        assert_eq!(r.keyboard, hitl_bridge::platform::telegram::render::empty());
    }

    /// Approved at once by a remembered rule; a person's remembered approval says so.
    #[test]
    fn rule_outcome() {
        let mut i = migration(false, Policy { remember: vec![RememberScope::Session], ..policy() });
        let rule = RememberedRule {
            id: "r1".into(),
            scope: RememberScope::Session,
            tool: "run_migration".into(),
            args: None,
            session_id: Some("S".into()),
            backend: "stream".into(),
            set_by: lan(),
            set_at_ms: 14 * 60 * MIN + 5 * MIN,
            policy: "migrations".into(),
        };
        assert!(i.resolve_by_rule(&rule, MIN).is_some());
        let r = render(&i, 0, Locale::En, &TokenSigner::new(b"secret"));
        assert_eq!(r.text, format!("🔐 <b>Approval needed</b>\n\n{ARGS}\n<b>✅ Approved by rule set by Lan at 14:05 UTC (for this session)</b>"));
        assert!(
            render(&i, 0, Locale::Vi, &TokenSigner::new(b"secret"))
                .text
                .ends_with("<b>✅ Được duyệt theo quy tắc do Lan đặt lúc 14:05 UTC (cho phiên này)</b>")
        );

        let mut i = migration(false, Policy { remember: vec![RememberScope::Always], ..policy() });
        i.apply(&minh(), UserAction::Remember { scope: RememberScope::Always }, &nobody(), 3 * MIN).expect("approved");
        let r = render(&i, 0, Locale::En, &TokenSigner::new(b"secret"));
        assert!(r.text.ends_with("<b>✅ Approved (always) by Minh at 00:03 UTC</b>"), "{}", r.text);
    }

    /// Nobody decided: the fallback's outcome, for each kind of fallback.
    #[test]
    fn fallback_outcome() {
        for (decision, en, zh) in [
            (FallbackDecision::Reject, "❌ Rejected by policy: no decision within 30 min", "❌ 按策略拒绝：30 分钟内无人决定"),
            (FallbackDecision::Approve, "✅ Approved by policy: no decision within 30 min", "✅ 按策略批准：30 分钟内无人决定"),
            (FallbackDecision::Leave, "⌛ Ended by policy: no decision within 30 min", "⌛ 按策略结束：30 分钟内无人决定"),
        ] {
            let mut i = migration(false, Policy { fallback: Some(Fallback { after_secs: 1800, decision }), ..policy() });
            assert!(i.apply_fallback(30 * MIN));
            let r = render(&i, 0, Locale::En, &TokenSigner::new(b"secret"));
            assert_eq!(r.text, format!("🔐 <b>Approval needed</b>\n\n{ARGS}\n<b>{en}</b>"));
            assert!(r.keyboard.inline_keyboard.is_empty());
            assert!(render(&i, 0, Locale::Zh, &TokenSigner::new(b"secret")).text.ends_with(&format!("<b>{zh}</b>")));
        }
    }

    /// Reminders through the real teloxide client: approvers on Telegram mentioned by
    /// a tg://user link, someone elsewhere named, a role (Telegram has none) said in words.
    #[tokio::test]
    async fn reminders_mention_approvers() {
        use hitl_bridge::platform::Platform;
        let fake = FakeTelegram::start().await;
        let chat = fake.private_chat(&thao());
        let mut settings = Settings::from_pairs(&[
            ("console.enabled", "false"),
            ("telegram.enabled", "true"),
            ("telegram.token", fake_telegram::TOKEN),
            ("telegram.api_url", &fake.url),
        ])
        .expect("settings");
        settings.access.approvers = vec!["telegram:3003".into()];
        let (engine, _requests) = hitl_bridge::engine::EngineHandle::channel();
        let store = hitl_bridge::store::Store::connect("sqlite::memory:").await.expect("store");
        let telegram = hitl_bridge::platform::telegram::start(
            settings.platforms.get::<TelegramSettings>(),
            settings.access_policy(),
            settings.backend.replica_id(),
            hitl_bridge::listener::Limits::from_settings(&settings.http, None),
            engine,
            TokenSigner::new(b"k"),
            store.platform_inbox("telegram"),
            store.ui_states(),
            hitl_bridge::metrics::Metrics::new(),
            std::sync::Arc::new(hitl_bridge::web::ChatLinks::new(store, settings.web.clone())),
        )
        .await
        .expect("starts");
        let key = hitl_bridge::store::ChatKey::new("telegram", &chat.to_string(), None);
        let mut i = migration(false, Policy { quorum: 3, ..policy() });
        i.apply(&lan(), UserAction::Decide { action: 0, decision: Decision::Approve }, &nobody(), MIN).expect("counted");
        i.apply(&minh(), UserAction::Decide { action: 0, decision: Decision::Approve }, &nobody(), MIN).expect("counted");

        // The first as a reply to the message that shows the request in this chat.
        // (A message the fake knows but does not hand the bridge as an update.)
        let card_id = fake.message_update(chat, &thao(), "the request's card", None, None)["message"]["message_id"].as_i64().expect("id");
        let card = hitl_bridge::store::MessageRef { interaction_id: i.id.clone(), chat: key.clone(), message_id: card_id.to_string() };
        telegram.send_reminder(Reminder::new(&key, &i, &Mention::Approvers, Some(&card))).await.expect("sent");
        telegram.send_reminder(Reminder::new(&key, &i, &Mention::User { platform: "discord".into(), user_id: "7".into() }, None)).await.expect("sent");
        telegram.send_reminder(Reminder::new(&key, &i, &Mention::Role { role_id: "900".into() }, None)).await.expect("sent");
        // No policy approvers: the configured ones.
        let plain = migration(false, Policy { approvers: vec![], ..policy() });
        telegram.send_reminder(Reminder::new(&key, &plain, &Mention::Approvers, None)).await.expect("sent");

        let sent: Vec<(Value, Value)> = fake.calls("sendMessage").into_iter().map(|m| (m["text"].clone(), m["parse_mode"].clone())).collect();
        let html = json!("HTML");
        assert_eq!(
            sent,
            [
                (
                    json!(
                        "⏰ Reminder: <a href=\"tg://user?id=1001\">1001</a> <a href=\"tg://user?id=1002\">1002</a> — run_migration still waits for a decision (2 of 3 approvals so far) · deadline 00:10 UTC"
                    ),
                    html.clone()
                ),
                (json!("⏰ Reminder: discord:7 — run_migration still waits for a decision (2 of 3 approvals so far) · deadline 00:10 UTC"), html.clone()),
                (
                    json!("⏰ Reminder for the approvers of role 900: run_migration still waits for a decision (2 of 3 approvals so far) · deadline 00:10 UTC"),
                    html.clone()
                ),
                (json!("⏰ Reminder: <a href=\"tg://user?id=3003\">3003</a> — run_migration still waits for a decision · deadline 00:10 UTC"), html),
            ]
        );
        let calls = fake.calls("sendMessage");
        assert_eq!(calls[0]["chat_id"], json!(chat));
        assert_eq!(calls[0].get("reply_markup"), None, "a reminder has no buttons");
        assert_eq!(calls[0]["reply_parameters"], json!({"message_id": card_id, "allow_sending_without_reply": true}), "a reply to the card");
        assert!(calls[1..].iter().all(|c| c.get("reply_parameters").is_none()), "no card, no reply");
        telegram.shutdown();
        assert!(fake.errors().is_empty(), "{:?}", fake.errors());
        fake.shutdown();
    }
}

/// A stranger's burst of 60 messages in one chat, then an approver's click in
/// another: the click reaches the agent at once (updates are confirmed once stored and
/// handled per chat, and the stranger gets one refusal per window).
#[tokio::test]
async fn a_strangers_flood_does_not_delay_a_click_in_another_chat() {
    let h = start(60, &[]).await;
    say(&h, "trade");
    let card = message_with(&h, "execute_trade").await;
    let stranger_chat = h.telegram().private_chat(&stranger());
    for n in 0..60 {
        h.telegram().push_message(stranger_chat, &stranger(), &format!("spam {n}"), None, None);
    }
    let clicked = std::time::Instant::now();
    click(&h, id_of(&card), "Duyệt", &thao()).await;
    let s = session_id(h.sim());
    assert_eq!(
        wait_approvals(h.sim(), 1).await,
        vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),"decisions":[{"type":"approve"}]})]
    );
    let took = clicked.elapsed();
    println!("click behind a stranger's 60-message burst: {took:?}");
    assert!(took < Duration::from_secs(1), "{took:?}");
    // However many messages, the stranger was answered once in the window.
    wait_until(|| async { (h.telegram().bot_messages(stranger_chat).len() == 1).then_some(()) }).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(h.telegram().bot_messages(stranger_chat).len(), 1);
    finish(h).await;
}

/// A crash between storing an update (and so confirming it to Telegram) and handling
/// it: the next start handles it, once, and clears it from the inbox.
#[tokio::test]
async fn an_update_stored_before_a_crash_is_handled_after_the_restart() {
    let mut h = start(60, &[]).await;
    h.stop_bridge().await;
    // What the dead process left: an update stored and confirmed, never handled (its
    // claim is still "live" under this replica's id, as a kill leaves it).
    let mut update = h.telegram().message_update(thao_chat(), &thao(), "xin chào", None, None);
    update["update_id"] = json!(900);
    let store = hitl_bridge::store::Store::connect(&h.settings.store.url).await.unwrap();
    let row = hitl_bridge::store::InboxUpdate { update_id: "900".into(), seq: 900, lane: thao_chat().to_string(), body: update.to_string() };
    let claim = hitl_bridge::store::ShowClaim { owner: h.settings.backend.replica_id(), until_ms: i64::MAX };
    assert_eq!(store.platform_inbox("telegram").store(std::slice::from_ref(&row), &claim, 0).await.unwrap(), vec![row.update_id.clone()]);
    assert_eq!(store.platform_inbox("telegram").store(&[row], &claim, 0).await.unwrap(), Vec::<String>::new(), "stored once");
    h.boot().await;
    message_with(&h, "Tôi đã nhận: xin chào").await;
    wait_until(|| async { (store.platform_inbox("telegram").waiting().await.unwrap() == 0).then_some(()) }).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let messages: Vec<_> = h.sim().commands().into_iter().filter(|c| c["type"] == "message").collect();
    assert_eq!(messages.len(), 1, "handled once: {messages:?}");
    finish(h).await;
}

/// Webhook mode: an update Telegram delivers twice (it did not see the first 200),
/// at once or after it was handled, is handled once.
#[tokio::test]
async fn a_webhook_update_delivered_twice_is_handled_once() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("free port").local_addr().expect("addr").port();
    let listen = format!("127.0.0.1:{port}");
    let url = format!("http://{listen}/telegram/hook");
    let h = start(
        20,
        &[("telegram.mode", "webhook"), ("telegram.webhook_url", &url), ("telegram.webhook_listen", &listen), ("telegram.webhook_secret", "s3cret-token")],
    )
    .await;
    wait_until(|| async { h.telegram().calls("setWebhook").into_iter().next() }).await;
    let mut update = h.telegram().message_update(thao_chat(), &thao(), "xin chào", None, None);
    update["update_id"] = json!(41);
    let client = reqwest::Client::new();
    let post = || client.post(&url).header("X-Telegram-Bot-Api-Secret-Token", "s3cret-token").json(&update).send();
    // Twice at once, and once more after it was handled.
    let (first, second) = tokio::join!(post(), post());
    assert_eq!((first.expect("post").status(), second.expect("post").status()), (reqwest::StatusCode::OK, reqwest::StatusCode::OK));
    message_with(&h, "Tôi đã nhận: xin chào").await;
    assert_eq!(post().await.expect("post").status(), 200);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let messages: Vec<_> = h.sim().commands().into_iter().filter(|c| c["type"] == "message").collect();
    assert_eq!(messages.len(), 1, "handled once: {messages:?}");
    finish(h).await;
}
