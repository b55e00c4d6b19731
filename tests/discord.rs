//! End to end through Discord: reference agent ↔ bridge ↔ the real serenity client ↔
//! a fake Discord (REST + gateway). Messages and clicks are pushed into the fake's
//! gateway exactly as Discord would send them; the tests assert the exact commands the
//! agent received and snapshot the payloads the bridge sent to Discord.

use hitl_bridge::platform::discord::settings::DiscordSettings;
use support::discord_chat::*;
use support::fake_discord;
mod support;

use std::time::Duration;

use fake_discord::*;
use hitl_bridge::app::App;
use hitl_bridge::config::Settings;
use serde_json::{Value, json};
use support::harness::NoConsole;
use support::{Chat, Harness, approvals, session_id, wait_approvals, wait_until};

const THAO: &str = "500000000000000001";
const STRANGER: &str = "500000000000000666";
const LEAD_ROLE: &str = "600000000000000777";

fn thao() -> Value {
    user(THAO, "Thảo")
}

/// The agent, the fake Discord and a bridge wired to both: a [`Harness`] on Discord,
/// with this suite's channel, approver role and user.
async fn start(timeout_secs: u64, extra: &[(&str, &str)]) -> Harness {
    start_with(timeout_secs, extra, |_| {}).await
}

/// [`start`], with `tweak` made to the settings last.
async fn start_with(timeout_secs: u64, extra: &[(&str, &str)], tweak: impl FnOnce(&mut Settings) + 'static) -> Harness {
    Harness::on(Chat::Discord)
        .agent(timeout_secs)
        .settings(extra)
        .tweak(|s| {
            s.platforms.get_mut::<DiscordSettings>().channels = vec![CHANNEL_ID.into()];
            s.access.approver_roles = vec![LEAD_ROLE.into()];
            // Thảo may talk to the agent; the stranger may not.
            s.access.users = vec![format!("discord:{THAO}")];
        })
        .tweak(tweak)
        .start()
        .await
}

/// A chat message from `who` in the configured channel.
fn say(rig: &Harness, who: &Value, text: &str) {
    rig.discord().dispatch("MESSAGE_CREATE", guild_message(rig.discord(), CHANNEL_ID, who, text, false));
}

/// Waits for the next interaction message (a POST with an embed) after `skip`
/// requests; returns it with its message id.
async fn wait_card(rig: &Harness, skip: usize) -> (Recorded, String) {
    let card = rig.discord().wait_request(skip, |r| r.method == "POST" && r.path.ends_with("/messages") && has_embed(&r.body)).await;
    let id = card.response.as_ref().and_then(|m| m["id"].as_str()).expect("message id").to_owned();
    (card, id)
}

/// Sends `interaction` through the gateway, as Discord does.
fn interact(rig: &Harness, interaction: Value) {
    rig.discord().dispatch("INTERACTION_CREATE", interaction);
}

/// Clicks the button whose label contains `label` on `card`.
fn click_on(rig: &Harness, card: &Recorded, message_id: &str, label: &str, who: &Value, roles: &[&str]) {
    let id = button(&card.body, label);
    interact(rig, click(rig.discord(), &id, message_id, CHANNEL_ID, who, roles));
}

/// The custom_id of the `n`-th select menu.
fn select_id(body: &Value, n: usize) -> String {
    components(body).iter().filter(|c| c["type"] == 3).nth(n).and_then(|c| c["custom_id"].as_str()).expect("select").to_owned()
}

/// Replaces what changes from run to run (ids, token tags, times) so payloads can be
/// snapshotted: custom_ids keep their action code, `1:[id]:ap.0:[tag]`.
fn mask(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let masked = match (k.as_str(), v) {
                        ("custom_id", Value::String(s)) => Value::String(mask_token(s)),
                        (_, other) => mask(other),
                    };
                    (k.clone(), masked)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(mask).collect()),
        Value::String(s) => Value::String(mask_text(s)),
        other => other.clone(),
    }
}

fn mask_token(token: &str) -> String {
    let parts: Vec<&str> = token.split(':').collect();
    match parts.as_slice() {
        [version, _, code, _] => format!("{version}:[id]:{code}:[tag]"),
        _ => token.to_owned(),
    }
}

/// `<t:1767225600:R>` → `<t:[unix]:R>`; `09:05 UTC` → `[hh:mm] UTC`.
fn mask_text(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("<t:") {
        out += &rest[..i + 3];
        rest = &rest[i + 3..];
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 {
            out += "[unix]";
        }
        rest = &rest[digits..];
    }
    out += rest;
    let chars: Vec<char> = out.chars().collect();
    let mut masked = String::new();
    let mut i = 0;
    while i < chars.len() {
        let window: String = chars[i..(i + 9).min(chars.len())].iter().collect();
        let b: Vec<char> = window.chars().collect();
        if b.len() == 9
            && b[0].is_ascii_digit()
            && b[1].is_ascii_digit()
            && b[2] == ':'
            && b[3].is_ascii_digit()
            && b[4].is_ascii_digit()
            && window.ends_with(" UTC")
        {
            masked += "[hh:mm] UTC";
            i += 9;
        } else {
            masked.push(chars[i]);
            i += 1;
        }
    }
    masked
}

/// Object keys sorted, so maps serenity keeps in a HashMap snapshot the same every run.
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().map(|(k, v)| (k, sorted(v))).collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// The snapshot form of a recorded request: method, path with ids masked, body.
fn shot(r: &Recorded) -> Value {
    let path: Vec<String> = r
        .path
        .split('/')
        .map(|seg| if seg.len() > 10 && seg.chars().all(|c| c.is_ascii_digit()) || seg.starts_with("tok-") { "[id]".to_owned() } else { seg.to_owned() })
        .collect();
    json!({"method": r.method, "path": path.join("/"), "body": sorted(mask(&r.body)), "files": r.files.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>()})
}

/// The ephemeral follow-ups sent so far.
fn followups(fake: &FakeDiscord) -> Vec<Recorded> {
    fake.requests().into_iter().filter(|r| r.method == "POST" && r.path.starts_with("/api/v10/webhooks/")).collect()
}

async fn wait_followups(fake: &FakeDiscord, n: usize) -> Vec<Recorded> {
    wait_until(|| async {
        let got = followups(fake);
        (got.len() >= n).then_some(got)
    })
    .await
}

// ---------------------------------------------------------------------------------

/// Seed 002: approve; the card shows the args, the outcome replaces the buttons.
#[tokio::test]
async fn seed_002_approve() {
    let rig = start(20, &[]).await;
    say(&rig, &thao(), "trade");
    let (card, id) = wait_card(&rig, 0).await;
    insta::assert_json_snapshot!("seed_002_card", shot(&card));
    click_on(&rig, &card, &id, "Approve", &thao(), &[]);
    let got = wait_approvals(rig.sim(), 1).await;
    let s = session_id(rig.sim());
    assert_eq!(got, vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),"decisions":[{"type":"approve"}]})]);
    let ack = callbacks(rig.discord(), 1).await;
    assert_eq!(ack[0].body, json!({"type":6,"data":null}), "a deferred update first");
    let done = wait_edit(rig.discord(), &id, |b| b["components"] == json!([])).await;
    insta::assert_json_snapshot!("seed_002_approved", shot(&done));
    wait_text(rig.discord(), "Đã đặt lệnh: buy 100 VNM @ 82000").await;
    rig.shutdown().await;
}

/// Seed 002: reject.
#[tokio::test]
async fn seed_002_reject() {
    let rig = start(20, &[]).await;
    say(&rig, &thao(), "trade");
    let (card, id) = wait_card(&rig, 0).await;
    click_on(&rig, &card, &id, "Reject", &thao(), &[]);
    let got = wait_approvals(rig.sim(), 1).await;
    let s = session_id(rig.sim());
    assert_eq!(got, vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),"decisions":[{"type":"reject"}]})]);
    let done = wait_edit(rig.discord(), &id, |b| b["components"] == json!([])).await;
    assert_eq!(mask(&done.body["embeds"][0]["fields"]), json!([{"name":"Decision","value":"❌ Rejected by Thảo at [hh:mm] UTC","inline":false}]));
    wait_text(rig.discord(), "Lệnh đã bị hủy.").await;
    rig.shutdown().await;
}

/// Seed 002: Edit opens a modal prefilled with the args; invalid JSON and a
/// non-object get an ephemeral error and send nothing; the valid edit goes through.
#[tokio::test]
async fn seed_002_edit_via_modal() {
    let rig = start(20, &[]).await;
    say(&rig, &thao(), "trade");
    let (card, id) = wait_card(&rig, 0).await;
    click_on(&rig, &card, &id, "Edit", &thao(), &[]);
    let opened = callbacks(rig.discord(), 1).await.remove(0);
    insta::assert_json_snapshot!("seed_002_edit_modal", shot(&opened));
    assert_eq!(opened.body["type"], 9, "the modal is the first response");
    let modal_id = opened.body["data"]["custom_id"].as_str().expect("modal id").to_owned();

    interact(&rig, modal_submit(rig.discord(), &modal_id, &[("args", "{quantity: 50")], &id, CHANNEL_ID, &thao()));
    let notes = wait_followups(rig.discord(), 1).await;
    assert_eq!(notes[0].body["flags"], 64, "ephemeral");
    let text = notes[0].body["content"].as_str().unwrap_or_default().to_owned();
    assert!(text.starts_with("Not accepted: invalid JSON"), "{text}");
    interact(&rig, modal_submit(rig.discord(), &modal_id, &[("args", "[50]")], &id, CHANNEL_ID, &thao()));
    let notes = wait_followups(rig.discord(), 2).await;
    assert_eq!(notes[1].body["content"], "Not accepted: the args must be a JSON object, not an array. Send a JSON object.");
    assert!(approvals(rig.sim()).is_empty(), "nothing is sent for a refused edit");

    interact(
        &rig,
        modal_submit(rig.discord(), &modal_id, &[("args", r#"{"symbol":"VNM","quantity":50,"side":"buy","price":82000}"#)], &id, CHANNEL_ID, &thao()),
    );
    let got = wait_approvals(rig.sim(), 1).await;
    let s = session_id(rig.sim());
    assert_eq!(
        got,
        vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),
        "decisions":[{"type":"edit","edited_action":{"name":"execute_trade","args":{"symbol":"VNM","quantity":50,"side":"buy","price":82000}}}]})]
    );
    let acks: Vec<Value> = callbacks(rig.discord(), 4).await.iter().map(|r| r.body["type"].clone()).collect();
    assert_eq!(acks, vec![json!(9), json!(6), json!(6), json!(6)]);
    wait_text(rig.discord(), "Đã đặt lệnh: buy 50 VNM @ 82000").await;
    rig.shutdown().await;
}

/// Two actions: a row per action with only the allowed decisions, then Submit.
#[tokio::test]
async fn two_actions() {
    let rig = start(20, &[]).await;
    say(&rig, &thao(), "two actions");
    let (card, id) = wait_card(&rig, 0).await;
    insta::assert_json_snapshot!("two_actions_card", shot(&card));
    let labels: Vec<String> = components(&card.body).iter().filter_map(|c| c["label"].as_str().map(str::to_owned)).collect();
    assert_eq!(labels, ["1. Approve", "1. Reject", "1. Edit", "2. Approve", "2. Reject", "Approve all", "Reject all", "Submit"]);
    click_on(&rig, &card, &id, "1. Approve", &thao(), &[]);
    // The card is re-rendered with the choice marked before the next click.
    wait_edit(rig.discord(), &id, |b| components(b).iter().any(|c| c["label"] == "✓ 1. Approve")).await;
    click_on(&rig, &card, &id, "2. Reject", &thao(), &[]);
    wait_edit(rig.discord(), &id, |b| components(b).iter().any(|c| c["label"] == "✓ 2. Reject")).await;
    assert!(approvals(rig.sim()).is_empty(), "nothing is sent before Submit");
    click_on(&rig, &card, &id, "Submit", &thao(), &[]);
    let got = wait_approvals(rig.sim(), 1).await;
    let s = session_id(rig.sim());
    assert_eq!(
        got,
        vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),
        "decisions":[{"type":"approve"},{"type":"reject"}]})]
    );
    wait_text(rig.discord(), "execute_trade: approve; send_report: reject").await;
    rig.shutdown().await;
}

/// Seed 000: two rounds of questions answered with selects, the input option's
/// free text through the Other… modal, and Submit.
#[tokio::test]
async fn seed_000_questions() {
    let rig = start(20, &[]).await;
    say(&rig, &thao(), "hỏi 2 lần");
    wait_text(rig.discord(), "Chuẩn bị câu hỏi lần 1").await;
    let (card, id) = wait_card(&rig, 0).await;
    insta::assert_json_snapshot!("seed_000_card", shot(&card));
    interact(&rig, select(rig.discord(), &select_id(&card.body, 0), &["0"], &id, CHANNEL_ID, &thao()));
    interact(&rig, select(rig.discord(), &select_id(&card.body, 1), &["2"], &id, CHANNEL_ID, &thao()));
    wait_edit(rig.discord(), &id, |b| b["embeds"][0]["fields"][2]["value"] == "Khác").await;
    click_on(&rig, &card, &id, "Other…", &thao(), &[]);
    let opened = callbacks(rig.discord(), 3).await.remove(2);
    insta::assert_json_snapshot!("seed_000_other_modal", shot(&opened));
    let modal_id = opened.body["data"]["custom_id"].as_str().expect("modal id").to_owned();
    interact(&rig, modal_submit(rig.discord(), &modal_id, &[("q1", "Ngắn hạn")], &id, CHANNEL_ID, &thao()));
    wait_edit(rig.discord(), &id, |b| b["embeds"][0]["fields"][2]["value"] == "Ngắn hạn").await;
    let mark = rig.discord().requests().len();
    click_on(&rig, &card, &id, "Submit", &thao(), &[]);
    let (second, id2) = wait_card(&rig, mark).await;
    interact(&rig, select(rig.discord(), &select_id(&second.body, 0), &["1"], &id2, CHANNEL_ID, &thao()));
    wait_edit(rig.discord(), &id2, |b| b["embeds"][0]["fields"][1]["value"] == "Telegram").await;
    click_on(&rig, &second, &id2, "Submit", &thao(), &[]);
    wait_text(rig.discord(), "Cảm ơn! Tổng kết: mục tiêu = Cổ tức bền vững (Recommended); kỳ hạn = Ngắn hạn; kênh = Telegram").await;

    let s = session_id(rig.sim());
    let got = approvals(rig.sim());
    assert_eq!(
        serde_json::to_string(&got[0]).expect("json"),
        serde_json::to_string(&json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),
            "answers":{"Thảo muốn tập trung vào mục tiêu nào?":"Cổ tức bền vững (Recommended)","Thời gian nắm giữ dự kiến?":"Ngắn hạn"}}))
        .expect("json")
    );
    assert_eq!(
        got[1],
        json!({"type":"approval","session_id":s,"approval_key":format!("{s}_2"),
        "answers":{"Bạn muốn nhận báo cáo qua kênh nào?":"Telegram"}})
    );
    assert_eq!(got.len(), 2);
    let done = wait_edit(rig.discord(), &id, |b| b["components"] == json!([])).await;
    insta::assert_json_snapshot!("seed_000_answered", shot(&done));
    rig.shutdown().await;
}

/// Multi-select: several options in one select, the input option's text via Other….
#[tokio::test]
async fn multi_select_with_other() {
    let rig = start(20, &[]).await;
    say(&rig, &thao(), "multi");
    let (card, id) = wait_card(&rig, 0).await;
    let menu = components(&card.body).into_iter().find(|c| c["type"] == 3).expect("select");
    assert_eq!((menu["min_values"].clone(), menu["max_values"].clone()), (json!(1), json!(4)));
    interact(&rig, select(rig.discord(), &select_id(&card.body, 0), &["0", "1", "3"], &id, CHANNEL_ID, &thao()));
    wait_edit(rig.discord(), &id, |b| b["embeds"][0]["fields"][1]["value"] == "Ngân hàng, Thép (Steel), Khác").await;
    click_on(&rig, &card, &id, "Other…", &thao(), &[]);
    let opened = callbacks(rig.discord(), 2).await.remove(1);
    assert_eq!(opened.body["data"]["components"][0]["components"][0]["label"], "Khác · 1. Ngành");
    let modal_id = opened.body["data"]["custom_id"].as_str().expect("modal id").to_owned();
    interact(&rig, modal_submit(rig.discord(), &modal_id, &[("q0", "Năng lượng")], &id, CHANNEL_ID, &thao()));
    wait_edit(rig.discord(), &id, |b| b["embeds"][0]["fields"][1]["value"] == "Ngân hàng, Thép (Steel), Năng lượng").await;
    click_on(&rig, &card, &id, "Submit", &thao(), &[]);
    let got = wait_approvals(rig.sim(), 1).await;
    let s = session_id(rig.sim());
    assert_eq!(
        got,
        vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),
        "answers":{"Nhóm ngành quan tâm?":"Ngân hàng, Thép (Steel), Năng lượng"}})]
    );
    wait_text(rig.discord(), "Bạn chọn: Ngân hàng, Thép (Steel), Năng lượng").await;
    rig.shutdown().await;
}

/// Skip answers every question with "[No preference]".
#[tokio::test]
async fn skip() {
    let rig = start(20, &[]).await;
    say(&rig, &thao(), "multi");
    let (card, id) = wait_card(&rig, 0).await;
    click_on(&rig, &card, &id, "Skip", &thao(), &[]);
    let got = wait_approvals(rig.sim(), 1).await;
    let s = session_id(rig.sim());
    assert_eq!(
        got,
        vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),
        "answers":{"Nhóm ngành quan tâm?":"[No preference]"}})]
    );
    wait_text(rig.discord(), "Bạn chọn: [No preference]").await;
    rig.shutdown().await;
}

/// Nobody answers: the agent times the request out; the card shows it and loses its
/// buttons; a late click gets an ephemeral notice and sends nothing.
#[tokio::test]
async fn expiry() {
    let rig = start(1, &[]).await;
    say(&rig, &thao(), "timeout");
    let (card, id) = wait_card(&rig, 0).await;
    let done = wait_edit(rig.discord(), &id, |b| b["components"] == json!([])).await;
    assert_eq!(mask(&done.body["embeds"][0]["fields"]), json!([{"name":"Decision","value":"⌛ Expired at [hh:mm] UTC with no decision","inline":false}]));
    wait_text(rig.discord(), "Không ai trả lời trong 1 giây; thao tác đã bị hủy.").await;
    click_on(&rig, &card, &id, "Approve", &thao(), &[]);
    let notes = wait_followups(rig.discord(), 1).await;
    assert_eq!(notes[0].body["content"], "This request has expired.");
    assert_eq!(notes[0].body["flags"], 64);
    assert!(approvals(rig.sim()).is_empty());
    rig.shutdown().await;
}

/// A stranger's click is refused privately and changes nothing; a member with an
/// approver role may decide.
#[tokio::test]
async fn unauthorized_user_then_approver_role() {
    let rig = start(20, &[]).await;
    say(&rig, &thao(), "trade");
    let (card, id) = wait_card(&rig, 0).await;
    let stranger = user(STRANGER, "Mallory");
    click_on(&rig, &card, &id, "Approve", &stranger, &[]);
    let notes = wait_followups(rig.discord(), 1).await;
    assert_eq!(
        shot(&notes[0]),
        json!({"method":"POST","path":"/api/v10/webhooks/[id]/[id]",
        "body":{"content":"You are not allowed to answer this request.","embeds":[],"flags":64,"attachments":[]},"files":[]})
    );
    // Edit would open a modal: a stranger gets the refusal instead, in their language.
    let mut edit = click(rig.discord(), &button(&card.body, "Edit"), &id, CHANNEL_ID, &stranger, &[]);
    edit["locale"] = json!("vi");
    interact(&rig, edit);
    let refused = callbacks(rig.discord(), 2).await.remove(1);
    assert_eq!(refused.body, json!({"type":4,"data":{"content":"Bạn không được phép trả lời yêu cầu này.","flags":64,"attachments":[]}}));
    assert!(approvals(rig.sim()).is_empty());
    assert!(!rig.discord().requests().iter().any(|r| r.method == "PATCH"), "the card is untouched");
    // Approve was refused by the engine, Edit before it: each audited once, by the engine.
    let store = hitl_bridge::store::Store::connect(&rig.settings.store.url).await.unwrap();
    let refused = wait_until(|| async { store.refused_attempts(0).await.ok().filter(|r| r.len() >= 2) }).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(store.refused_attempts(0).await.unwrap().len(), 2, "no refusal audited twice");
    let seen: Vec<(Value, Value, Option<String>, String)> =
        refused.iter().map(|e| (json!(e.actor), e.reply.clone().unwrap(), e.reason.clone(), e.approval_key.clone())).collect();
    let key = format!("{}_1", session_id(rig.sim()));
    let mallory = json!({"platform": "discord", "user_id": STRANGER, "name": "Mallory", "guild_id": GUILD_ID});
    let why = "you are not allowed to answer this request";
    assert_eq!(
        seen,
        vec![
            (
                mallory.clone(),
                json!({"attempted": {"op": "decide", "action": 0, "decision": {"type": "approve"}}, "reason": why}),
                Some(why.to_owned()),
                key.clone()
            ),
            (mallory, json!({"attempted": {"open": "edit", "index": 0}, "reason": why}), Some(why.to_owned()), key),
        ]
    );
    store.close().await;
    click_on(&rig, &card, &id, "Approve", &user("500000000000000002", "Lead"), &[LEAD_ROLE]);
    let got = wait_approvals(rig.sim(), 1).await;
    assert_eq!(got[0]["decisions"], json!([{"type":"approve"}]));
    wait_edit(rig.discord(), &id, |b| b["embeds"][0]["fields"][0]["value"].as_str().is_some_and(|v| v.contains("by Lead"))).await;
    rig.shutdown().await;
}

/// A double click sends one command; the second click hears who decided.
#[tokio::test]
async fn double_click() {
    let rig = start(20, &[]).await;
    say(&rig, &thao(), "trade");
    let (card, id) = wait_card(&rig, 0).await;
    click_on(&rig, &card, &id, "Approve", &thao(), &[]);
    click_on(&rig, &card, &id, "Approve", &thao(), &[]);
    let notes = wait_followups(rig.discord(), 1).await;
    assert!(mask(&notes[0].body["content"]) == json!("Already decided by Thảo at [hh:mm] UTC."), "{}", notes[0].body);
    wait_text(rig.discord(), "Đã đặt lệnh").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(approvals(rig.sim()).len(), 1);
    rig.shutdown().await;
}

/// A selection made before a restart is kept, and clicks on the old message still
/// work. The card already shows it (the edit recorded the revision it shows), so the
/// restart does not edit it again.
#[tokio::test]
async fn restart_keeps_partial_selections() {
    let mut rig = start(30, &[]).await;
    say(&rig, &thao(), "hỏi 2 lần");
    let (card, id) = wait_card(&rig, 0).await;
    interact(&rig, select(rig.discord(), &select_id(&card.body, 0), &["1"], &id, CHANNEL_ID, &thao()));
    wait_edit(rig.discord(), &id, |b| b["embeds"][0]["fields"][1]["value"] == "Tăng trưởng dài hạn").await;

    let before = rig.discord().requests().len();
    rig.restart().await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let edits = rig.discord().requests()[before..].iter().filter(|r| r.method == "PATCH" && r.path.ends_with(&format!("/messages/{id}"))).count();
    assert_eq!(edits, 0, "the card already showed the selection");
    interact(&rig, select(rig.discord(), &select_id(&card.body, 1), &["0"], &id, CHANNEL_ID, &thao()));
    wait_edit(rig.discord(), &id, |b| b["embeds"][0]["fields"][2]["value"] == "Trên 3 năm").await;
    click_on(&rig, &card, &id, "Submit", &thao(), &[]);
    let got = wait_approvals(rig.sim(), 1).await;
    let s = session_id(rig.sim());
    assert_eq!(
        got[0],
        json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),
        "answers":{"Thảo muốn tập trung vào mục tiêu nào?":"Tăng trưởng dài hạn","Thời gian nắm giữ dự kiến?":"Trên 3 năm"}})
    );
    rig.shutdown().await;
}

/// A 429 is waited out and the message still arrives.
#[tokio::test]
async fn rate_limit_is_retried() {
    let rig = start(20, &[]).await;
    rig.discord().rate_limit_next(1);
    say(&rig, &thao(), "xin chào");
    wait_text(rig.discord(), "Tôi đã nhận: xin chào.").await;
    let statuses: Vec<u16> = rig.discord().requests().iter().filter(|r| r.path.ends_with("/messages")).map(|r| r.status).collect();
    assert_eq!(statuses, vec![429, 200]);
    rig.shutdown().await;
}

/// `/id` answers anyone, a stranger included, with their id and the channel's as the
/// config writes them; nothing reaches the agent.
#[tokio::test]
async fn id_is_answered_to_anyone() {
    let rig = start(20, &[]).await;
    let stranger = user(STRANGER, "Mallory");
    interact(&rig, command(rig.discord(), "id", CHANNEL_ID, &stranger));
    assert_eq!(
        command_answers(rig.discord(), 1).await,
        [format!(
            "🆔 You: discord:{STRANGER}  (access.users, access.approvers, access.admins)\nThis chat: discord:{CHANNEL_ID}  (access.chats, routing.channels)"
        )]
    );
    assert!(rig.sim().commands().is_empty());
    rig.shutdown().await;
}

/// `/pending` lists what waits here with a link to its message; `/cancel` ends it.
#[tokio::test]
async fn slash_commands() {
    let rig = start(20, &[]).await;
    let commands = rig.discord().requests().into_iter().find(|r| r.method == "PUT").expect("registered");
    insta::assert_json_snapshot!("slash_commands", shot(&commands));
    say(&rig, &thao(), "trade");
    let (_, id) = wait_card(&rig, 0).await;
    interact(&rig, command(rig.discord(), "pending", CHANNEL_ID, &thao()));
    let reply = wait_until(|| async { rig.discord().requests().into_iter().find(|r| r.method == "PATCH" && r.path.ends_with("/messages/@original")) }).await;
    assert_eq!(
        mask(&reply.body["content"]),
        json!(format!("**Waiting for a decision**\n• execute_trade · <t:[unix]:R> · [open](https://discord.com/channels/{GUILD_ID}/{CHANNEL_ID}/{id})"))
    );
    let acks = callbacks(rig.discord(), 1).await;
    assert_eq!(acks[0].body, json!({"type":5,"data":{"flags":64,"attachments":[]}}));
    interact(&rig, command(rig.discord(), "cancel", CHANNEL_ID, &thao()));
    let done = wait_edit(rig.discord(), &id, |b| b["components"] == json!([])).await;
    assert_eq!(mask(&done.body["embeds"][0]["fields"][0]["value"]), json!("✖ Cancelled at [hh:mm] UTC (cancelled by Thảo)"));
    assert_eq!(rig.sim().commands().last().map(|c| c["type"].clone()), Some(json!("cancel")));
    rig.shutdown().await;
}

/// The fake refuses what Discord refuses, with Discord's error shape.
#[tokio::test]
async fn fake_rejects_what_discord_rejects() {
    let fake = FakeDiscord::start().await;
    let http = serenity::all::HttpBuilder::new("t").proxy(fake.api_url()).ratelimiter_disabled(true).build();
    let long = serenity::all::CreateButton::new("x".repeat(101)).label("ok");
    let message = serenity::all::CreateMessage::new().content("hi").components(vec![serenity::all::CreateActionRow::Buttons(vec![long])]);
    let err = serenity::all::ChannelId::new(1).send_message(&http, message).await.expect_err("refused");
    assert!(err.to_string().contains("Invalid Form Body"), "{err}");
    let recorded = fake.requests().pop().expect("recorded");
    assert_eq!(recorded.status, 400);
    assert_eq!(
        recorded.response,
        Some(json!({"code":50035,"message":"Invalid Form Body","errors":{"components":{"0":{"components":{"0":{
        "custom_id":{"_errors":[{"code":"BASE_TYPE_MAX_LENGTH","message":"Must be 100 or fewer in length."}]}}}}}}}))
    );
    let too_long = serenity::all::CreateMessage::new().content("ả".repeat(2001));
    // serenity itself refuses this one before sending; Discord would too.
    assert!(serenity::all::ChannelId::new(1).send_message(&http, too_long).await.is_err());
    fake.shutdown().await;
}

/// The HTTP interactions endpoint: signatures are checked on every request (bad → 401),
/// PING gets PONG, and a signed click is answered in the HTTP response and acted on.
#[tokio::test]
async fn signed_http_endpoint() {
    use ed25519_dalek::SigningKey;
    let key = SigningKey::from_bytes(&[7u8; 32]);
    let public: String = key.verifying_key().to_bytes().iter().map(|b| format!("{b:02x}")).collect();
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("free port").local_addr().expect("addr").port();
    let listen = format!("127.0.0.1:{port}");
    let rig = start(20, &[("discord.public_key", &public), ("discord.interactions_listen", &listen)]).await;
    let url = format!("http://{listen}/interactions");
    let client = reqwest::Client::new();
    // Signed now: the endpoint refuses timestamps more than 5 minutes off.
    let now = unix_now().to_string();
    let post = |body: String, signature: String| {
        let request = client
            .post(&url)
            .header("content-type", "application/json")
            .header("x-signature-ed25519", signature)
            .header("x-signature-timestamp", now.as_str())
            .body(body);
        async move { request.send().await.expect("endpoint answers") }
    };
    let sign = |body: &str| -> String { sign_hex(&key, &now, body) };

    let ping = json!({"id":"1","application_id":APP_ID,"type":1,"token":"t","version":1}).to_string();
    let pong = post(ping.clone(), sign(&ping)).await;
    assert_eq!(pong.status(), 200);
    assert_eq!(pong.json::<Value>().await.expect("json"), json!({"type":1}));

    // Signed for another body: refused before anything is parsed.
    let forged = post(ping.clone(), sign("{}")).await;
    assert_eq!(forged.status(), 401);
    let unsigned = client.post(&url).body(ping.clone()).send().await.expect("endpoint answers");
    assert_eq!(unsigned.status(), 401);

    say(&rig, &thao(), "trade");
    let (card, id) = wait_card(&rig, 0).await;
    let approve = button(&card.body, "Approve");
    let body = click(rig.discord(), &approve, &id, CHANNEL_ID, &thao(), &[]).to_string();
    let bad = post(body.clone(), sign(&ping)).await;
    assert_eq!(bad.status(), 401);
    assert!(approvals(rig.sim()).is_empty(), "a forged click changes nothing");
    let answer = post(body.clone(), sign(&body)).await;
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.json::<Value>().await.expect("json"), json!({"type":6}));
    let got = wait_approvals(rig.sim(), 1).await;
    let s = session_id(rig.sim());
    assert_eq!(got, vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),"decisions":[{"type":"approve"}]})]);
    assert!(!rig.discord().requests().iter().any(|r| r.path.ends_with("/callback")), "answered over HTTP, not via the callback route");
    wait_edit(rig.discord(), &id, |b| b["components"] == json!([])).await;
    rig.shutdown().await;
}

fn unix_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock after 1970").as_secs() as i64
}

/// The hex Ed25519 signature Discord sends: over the timestamp followed by the body.
fn sign_hex(key: &ed25519_dalek::SigningKey, timestamp: &str, body: &str) -> String {
    use ed25519_dalek::Signer;
    key.sign(format!("{timestamp}{body}").as_bytes()).to_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

/// Replay protection and size bounds on the interactions endpoint: a correctly signed
/// request whose timestamp is over 5 minutes old (or ahead) gets 401 and does nothing;
/// a body over 1 MiB gets 413, signed or not. Within the window it still works.
#[tokio::test]
async fn http_endpoint_refuses_replays_and_huge_bodies() {
    let key = ed25519_dalek::SigningKey::from_bytes(&[9u8; 32]);
    let public: String = key.verifying_key().to_bytes().iter().map(|b| format!("{b:02x}")).collect();
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("free port").local_addr().expect("addr").port();
    let listen = format!("127.0.0.1:{port}");
    let rig = start(20, &[("discord.public_key", &public), ("discord.interactions_listen", &listen)]).await;
    let url = format!("http://{listen}/interactions");
    let client = reqwest::Client::new();
    let post = |body: String, timestamp: String| {
        let signature = sign_hex(&key, &timestamp, &body);
        let request = client
            .post(&url)
            .header("content-type", "application/json")
            .header("x-signature-ed25519", signature)
            .header("x-signature-timestamp", timestamp)
            .body(body);
        async move { request.send().await.expect("endpoint answers") }
    };

    say(&rig, &thao(), "trade");
    let (card, id) = wait_card(&rig, 0).await;
    let approve = button(&card.body, "Approve");
    let body = click(rig.discord(), &approve, &id, CHANNEL_ID, &thao(), &[]).to_string();
    let now = unix_now();
    for (timestamp, why) in [(now - 301, "signed 5 min 1 s ago"), (now - 24 * 3600, "signed yesterday"), (now + 301, "signed 5 min 1 s ahead")] {
        let old = post(body.clone(), timestamp.to_string()).await;
        assert_eq!(old.status(), 401, "{why}");
        assert_eq!(old.text().await.expect("text"), "stale request timestamp", "{why}");
    }
    let not_a_number = post(body.clone(), "yesterday".into()).await;
    assert_eq!(not_a_number.status(), 401);

    // 1 MiB + 1 byte, validly signed and fresh: refused for its size alone.
    let huge = format!("{{\"pad\":\"{}\"}}", "x".repeat(1024 * 1024 - 10 + 1));
    assert_eq!(huge.len(), 1024 * 1024 + 1);
    assert_eq!(post(huge, now.to_string()).await.status(), 413);
    // Exactly 1 MiB is read (and refused only because it is not an interaction).
    let at_limit = format!("{{\"pad\":\"{}\"}}", "x".repeat(1024 * 1024 - 10));
    assert_eq!(post(at_limit, now.to_string()).await.status(), 400);

    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(approvals(rig.sim()).is_empty(), "a replayed click changes nothing");

    // Within the window (4 minutes old) the same click is taken.
    let fresh = post(body.clone(), (now - 240).to_string()).await;
    assert_eq!(fresh.status(), 200);
    assert_eq!(wait_approvals(rig.sim(), 1).await.len(), 1);
    rig.shutdown().await;
}

/// Settings for a bridge on `fake` that is started by hand (to watch it fail).
async fn start_error(settings: &Settings) -> String {
    match App::start(settings, None as NoConsole).await {
        Ok(app) => {
            app.stop().await;
            panic!("the bridge started")
        }
        Err(e) => e.to_string(),
    }
}

/// A token Discord refuses (401) stops the bridge at start, with a message naming
/// discord.token, after one check and before any gateway connection.
#[tokio::test]
async fn a_refused_token_fails_startup() {
    let h = support::Harness::on(Chat::Discord).build().await;
    let fake = h.discord();
    fake.require_token("the-real-token");
    let message = start_error(&h.settings).await;
    assert_eq!(
        message,
        "cannot start discord: discord: discord.token was refused by Discord (HTTP 401 on GET /users/@me): \
         set the bot token from the Developer Portal (env HITL_BRIDGE__DISCORD__TOKEN)"
    );
    let requests: Vec<String> = fake.requests().iter().map(|r| format!("{} {} {}", r.method, r.path, r.status)).collect();
    assert_eq!(requests, vec!["GET /api/v10/users/@me 401"], "a refused token is not retried and nothing else is tried");
    assert_eq!(fake.identifies(), 0);

    // The right token starts.
    fake.require_token("fake-bot-token");
    let app = App::start(&h.settings, None as NoConsole).await.expect("the accepted token starts");
    assert_eq!(fake.identifies(), 1, "start returns once the gateway is READY");
    app.stop().await;
    h.shutdown().await;
}

/// A gateway Discord closes before READY (here 4014: the bot's privileged intents are
/// not enabled) stops the bridge at start instead of leaving it deaf.
#[tokio::test]
async fn a_gateway_closed_before_ready_fails_startup() {
    let h = support::Harness::on(Chat::Discord).build().await;
    let fake = h.discord();
    fake.refuse_identify(4014);
    let message = tokio::time::timeout(Duration::from_secs(20), start_error(&h.settings)).await.expect("fails without waiting for READY");
    assert_eq!(
        message,
        "cannot start discord: discord: cannot start the gateway: Disallowed gateway intents were provided: \
         enable the Message Content intent for the bot in the Discord Developer Portal (Bot → Privileged Gateway Intents)"
    );
    assert_eq!(fake.identifies(), 0);
    h.shutdown().await;
}

/// The interactions endpoint's port taken by something else stops the bridge at start,
/// naming discord.interactions_listen.
#[tokio::test]
async fn interactions_port_taken_fails_startup() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let listen = taken.local_addr().expect("addr").to_string();
    let key = ed25519_dalek::SigningKey::from_bytes(&[3u8; 32]);
    let public: String = key.verifying_key().to_bytes().iter().map(|b| format!("{b:02x}")).collect();
    let h = support::Harness::on(Chat::Discord)
        .settings(&[("discord.public_key", &public), ("discord.interactions_listen", &listen), ("discord.gateway", "false")])
        .build()
        .await;
    let message = start_error(&h.settings).await;
    assert!(
        message.starts_with(&format!(
            "cannot start discord: discord: cannot serve the interactions endpoint (discord.interactions_listen = {listen}): cannot listen: "
        )),
        "{message}"
    );
    drop(taken);
    h.shutdown().await;
}

/// Routing: DMs and mentions reach the agent (the mention taken out); other
/// channels are ignored. Long agent text is split to fit 2000 characters.
#[tokio::test]
async fn routing_dm_mention_and_long_text() {
    let rig = start(20, &[]).await;
    let other = "800000000000000099";
    rig.discord().dispatch("MESSAGE_CREATE", guild_message(rig.discord(), other, &thao(), "not for the bot", false));
    rig.discord().dispatch("MESSAGE_CREATE", guild_message(rig.discord(), other, &thao(), &format!("<@{BOT_ID}> xin chào"), true));
    wait_text(rig.discord(), "Tôi đã nhận: xin chào.").await;
    let dm_channel = "800000000000000042";
    let long = "dài ".repeat(600);
    rig.discord().dispatch("MESSAGE_CREATE", message(&rig.discord().snowflake(), dm_channel, &thao(), &long));
    wait_until(|| async {
        let sent: Vec<Recorded> =
            rig.discord().requests().into_iter().filter(|r| r.method == "POST" && r.path == format!("/api/v10/channels/{dm_channel}/messages")).collect();
        (sent.len() >= 2).then_some(())
    })
    .await;
    let messages: Vec<Value> = rig.sim().commands().into_iter().filter(|c| c["type"] == "message").collect();
    let texts: Vec<&Value> = messages.iter().map(|c| &c["content"][0]["text"]).collect();
    assert_eq!(texts, [&json!("xin chào"), &json!(long.trim())], "the unmentioned message was ignored");
    assert_eq!(messages[0]["user"], json!({"platform":"discord","id":THAO,"name":"Thảo"}));
    let sent: Vec<String> = rig
        .discord()
        .requests()
        .into_iter()
        .filter(|r| r.path == format!("/api/v10/channels/{dm_channel}/messages"))
        .filter_map(|r| r.body["content"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(sent.len(), 2);
    assert!(sent.iter().all(|t| t.chars().count() <= 2000));
    assert!(sent[0].starts_with("Tôi đã nhận: dài dài") && sent[1].ends_with("multi, malformed."), "{sent:?}");
    rig.shutdown().await;
}

/// With thread_per_session a message in the channel opens a thread; the agent's
/// output and the requests go there, and replies in the thread stay in its session.
#[tokio::test]
async fn thread_per_session() {
    let rig = start(20, &[("discord.thread_per_session", "true")]).await;
    say(&rig, &thao(), "trade");
    let opened = rig.discord().wait_request(0, |r| r.path.ends_with("/threads")).await;
    assert_eq!(opened.body["name"], "trade");
    let thread = opened.response.as_ref().and_then(|t| t["id"].as_str()).expect("thread id").to_owned();
    let (card, id) = wait_card(&rig, 0).await;
    assert_eq!(card.path, format!("/api/v10/channels/{thread}/messages"));
    click_on(&rig, &card, &id, "Approve", &thao(), &[]);
    wait_text(rig.discord(), "Đã đặt lệnh").await;
    rig.discord().dispatch("MESSAGE_CREATE", guild_message(rig.discord(), &thread, &thao(), "xin chào", false));
    wait_text(rig.discord(), "Tôi đã nhận: xin chào.").await;
    let sessions: Vec<Value> = rig.sim().commands().iter().filter(|c| c["type"] == "message").map(|c| c["session_id"].clone()).collect();
    assert_eq!(sessions.len(), 2);
    assert_eq!(sessions[0], sessions[1], "the thread keeps its session");
    let in_thread = rig.discord().requests().iter().filter(|r| r.path == format!("/api/v10/channels/{thread}/messages")).count();
    assert_eq!(in_thread, 4, "text, card, final text, echo: all in the thread");
    rig.shutdown().await;
}

/// A tool group's status line is one message, edited as its tools run.
#[tokio::test]
async fn tool_status_line_is_edited() {
    let rig = start(20, &[]).await;
    say(&rig, &thao(), "hỏi 2 lần");
    wait_card(&rig, 0).await;
    let requests = rig.discord().requests();
    let created = requests.iter().find(|r| r.body["content"].as_str().is_some_and(|c| c.starts_with("⚙ Chuẩn bị câu hỏi lần 1"))).expect("status line");
    let id = created.response.as_ref().and_then(|m| m["id"].as_str()).expect("id");
    let edits: Vec<&Value> = requests.iter().filter(|r| r.method == "PATCH" && r.path.ends_with(id)).map(|r| &r.body["content"]).collect();
    assert_eq!(edits.last(), Some(&&json!("⚙ Chuẩn bị câu hỏi lần 1: write_todos ✓")));
    rig.shutdown().await;
}

/// A custom_id that does not verify (tampered, or signed with another secret) is
/// refused privately before anything else happens.
#[tokio::test]
async fn forged_custom_id() {
    let rig = start(20, &[]).await;
    say(&rig, &thao(), "trade");
    let (card, id) = wait_card(&rig, 0).await;
    let forged = button(&card.body, "Reject").replace(":rj.0:", ":ap.0:");
    interact(&rig, click(rig.discord(), &forged, &id, CHANNEL_ID, &thao(), &[]));
    let answer = callbacks(rig.discord(), 1).await.remove(0);
    assert_eq!(answer.body, json!({"type":4,"data":{"content":"This button is not valid (unknown, outdated or forged).","flags":64,"attachments":[]}}));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(approvals(rig.sim()).is_empty());
    rig.shutdown().await;
}

/// The bridge's own deadline: with the agent silent, the bridge expires the request,
/// the card loses its buttons and says the reject has not reached the agent; the
/// reject goes out once the agent is back, and the card then drops that line.
#[tokio::test]
async fn bridge_expiry_rejects_and_locks_the_card() {
    let rig = start_with(1, &[("timeouts.grace_secs", "0")], |s| s.backend.history_url = None).await;
    say(&rig, &thao(), "timeout");
    let (_, id) = wait_card(&rig, 0).await;
    rig.sim().set_down(true);
    let done = wait_edit(rig.discord(), &id, |b| b["components"] == json!([])).await;
    assert_eq!(
        mask(&done.body["embeds"][0]["fields"]),
        json!([{"name":"Decision","value":"⌛ Expired at [hh:mm] UTC with no decision · ⏳ saved, not yet delivered to the agent","inline":false}])
    );
    rig.sim().set_down(false);
    let got = wait_approvals(rig.sim(), 1).await;
    let s = session_id(rig.sim());
    assert_eq!(
        got,
        vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),
        "decisions":[{"type":"reject","message":"timed out after 1 s without a human decision"}]})]
    );
    // The agent had timed the request out itself while down: depending on which it
    // read first, the card ends as plainly expired or says the reject came too late.
    let settled = wait_edit(rig.discord(), &id, |b| b["embeds"][0]["fields"][0]["value"].as_str().is_some_and(|v| !v.contains("not yet delivered"))).await;
    let line = mask(&settled.body["embeds"][0]["fields"])[0]["value"].as_str().unwrap().to_owned();
    assert!(
        ["", " · ⚠\u{fe0f} the agent timed out before this reached it"].iter().any(|tail| line == format!("⌛ Expired at [hh:mm] UTC with no decision{tail}")),
        "{line}"
    );
    rig.shutdown().await;
}

/// Comment opens a modal where the review allows `respond`; its text is sent as a
/// respond decision.
#[tokio::test]
async fn comment_via_modal_is_a_respond_decision() {
    let rig = start(20, &[]).await;
    say(&rig, &thao(), "migration");
    let (card, id) = wait_card(&rig, 0).await;
    let labels: Vec<String> = components(&card.body).iter().filter_map(|c| c["label"].as_str().map(str::to_owned)).collect();
    assert_eq!(labels, ["Approve", "Reject", "Comment"], "only the allowed decisions");
    click_on(&rig, &card, &id, "Comment", &thao(), &[]);
    let opened = callbacks(rig.discord(), 1).await.remove(0);
    assert_eq!(opened.body["type"], 9, "the modal is the first response");
    let modal_id = opened.body["data"]["custom_id"].as_str().expect("modal id").to_owned();
    let input_id = opened.body["data"]["components"][0]["components"][0]["custom_id"].as_str().expect("input id").to_owned();
    interact(&rig, modal_submit(rig.discord(), &modal_id, &[(input_id.as_str(), "chạy lúc 2 giờ sáng")], &id, CHANNEL_ID, &thao()));
    let got = wait_approvals(rig.sim(), 1).await;
    let s = session_id(rig.sim());
    assert_eq!(
        got,
        vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),
        "decisions":[{"type":"respond","message":"chạy lúc 2 giờ sáng"}]})]
    );
    wait_text(rig.discord(), "run_migration: respond (chạy lúc 2 giờ sáng)").await;
    rig.shutdown().await;
}

// ---------------------------------------------------------------------------------
// Who may talk and approve (access.*)
// ---------------------------------------------------------------------------------

/// The `message` commands the agent received, as `(user id, text)`.
fn agent_messages(rig: &Harness) -> Vec<(String, String)> {
    rig.sim()
        .commands()
        .into_iter()
        .filter(|c| c["type"] == "message")
        .map(|c| (c["user"]["id"].as_str().unwrap_or_default().to_owned(), c["content"][0]["text"].as_str().unwrap_or_default().to_owned()))
        .collect()
}

/// Replies the bridge posted in `channel` (messages that reference another one).
fn replies_in(fake: &FakeDiscord, channel: &str) -> Vec<Recorded> {
    fake.requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path == format!("/api/v10/channels/{channel}/messages") && r.body.get("message_reference").is_some())
        .collect()
}

/// A slash command with a string option.
fn command_with(fake: &FakeDiscord, name: &str, channel: &str, who: &Value, option: (&str, &str)) -> Value {
    let mut c = command(fake, name, channel, who);
    c["data"]["options"] = json!([{"name": option.0, "type": 3, "value": option.1}]);
    c
}

/// A slash command in `who`'s DM with the bot: no guild, no member.
fn dm_command_with(fake: &FakeDiscord, name: &str, channel: &str, who: &Value, option: (&str, &str)) -> Value {
    let mut c = command_with(fake, name, channel, who, option);
    let object = c.as_object_mut().expect("interaction object");
    object.remove("guild_id");
    object.remove("member");
    object.insert("user".into(), who.clone());
    object.insert("channel".into(), json!({"id": channel, "type": 1}));
    object.insert("context".into(), json!(1));
    object.insert("authorizing_integration_owners".into(), json!({"1": BOT_ID}));
    c
}

/// What the bridge answered a deferred slash command with (the edit of @original).
async fn command_answers(fake: &FakeDiscord, n: usize) -> Vec<String> {
    wait_until(|| async {
        let got: Vec<String> = fake
            .requests()
            .into_iter()
            .filter(|r| r.method == "PATCH" && r.path.ends_with("/messages/@original"))
            .filter_map(|r| r.body["content"].as_str().map(str::to_owned))
            .collect();
        (got.len() >= n).then_some(got)
    })
    .await
}

/// A stranger's channel message, DM and slash command are refused and audited, and
/// nothing reaches the agent; the allowlisted user's message does.
#[tokio::test]
async fn strangers_are_refused_and_reach_nothing() {
    let rig = start(20, &[]).await;
    let stranger = user(STRANGER, "Mallory");
    say(&rig, &stranger, "trade");
    let refusal = wait_until(|| async { replies_in(rig.discord(), CHANNEL_ID).into_iter().next() }).await;
    assert_eq!(refusal.body["content"], format!("⛔ You are not allowed to talk to this agent. Ask an admin to add you: your id is discord:{STRANGER}."));
    assert!(refusal.body["message_reference"]["message_id"].is_string(), "{}", refusal.body);
    let dm = "800000000000000043";
    rig.discord().dispatch("MESSAGE_CREATE", message(&rig.discord().snowflake(), dm, &stranger, "hello"));
    wait_until(|| async { replies_in(rig.discord(), dm).into_iter().next() }).await;
    // A slash command is answered to them alone even within the channel's refusal
    // window (Discord shows an error otherwise), and counted on that window's entry.
    interact(&rig, command(rig.discord(), "new", CHANNEL_ID, &stranger));
    assert_eq!(
        command_answers(rig.discord(), 1).await,
        [format!("⛔ You are not allowed to talk to this agent. Ask an admin to add you: your id is discord:{STRANGER}.")]
    );
    // A second message in the channel within the window: no second reply.
    say(&rig, &stranger, "trade again");
    // No thread, no session, nothing for the agent; then Thảo's message goes through.
    say(&rig, &thao(), "xin chào");
    wait_until(|| async { (!agent_messages(&rig).is_empty()).then_some(()) }).await;
    assert_eq!(agent_messages(&rig), vec![(THAO.to_owned(), "xin chào".to_owned())]);
    let store = hitl_bridge::store::Store::connect(&rig.settings.store.url).await.unwrap();
    let entries = wait_until(|| async { store.refused_attempts(0).await.ok().filter(|r| r.first().is_some_and(|e| e.attempts == 3)) }).await;
    assert_eq!(replies_in(rig.discord(), CHANNEL_ID).len(), 1, "one reply in the channel for the window");
    let refused: Vec<(String, Value, i64)> = entries.into_iter().map(|e| (e.actor.unwrap().user_id, e.reply.unwrap(), e.attempts)).collect();
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert!(refused.iter().all(|(who, _, _)| who == STRANGER));
    assert_eq!((refused[0].1["attempted"].clone(), refused[0].1["chat"]["chat_id"].clone(), refused[0].2), (json!("message"), json!(CHANNEL_ID), 3));
    assert_eq!((refused[1].1["attempted"].clone(), refused[1].1["chat"]["chat_id"].clone(), refused[1].2), (json!("message"), json!(dm), 1));
    store.close().await;
    rig.shutdown().await;
}

/// A whole guild, or a role, opens the door: `discord:guild:ID` admits anyone writing
/// in its channels, `access.roles` a member with the role.
#[tokio::test]
async fn guild_and_role_allowlists_admit() {
    let rig = start_with(20, &[], |s| {
        s.access.users.clear();
        s.access.roles = vec!["600000000000000555".into()];
    })
    .await;
    let mut with_role = guild_message(rig.discord(), CHANNEL_ID, &user(STRANGER, "Mallory"), "with role", false);
    with_role["member"]["roles"] = json!(["600000000000000555"]);
    rig.discord().dispatch("MESSAGE_CREATE", with_role);
    wait_until(|| async { (!agent_messages(&rig).is_empty()).then_some(()) }).await;
    say(&rig, &thao(), "no role");
    wait_until(|| async { replies_in(rig.discord(), CHANNEL_ID).into_iter().next() }).await;
    assert_eq!(agent_messages(&rig), vec![(STRANGER.to_owned(), "with role".to_owned())]);
    rig.shutdown().await;

    let rig = start_with(20, &[], |s| {
        s.access.users.clear();
        s.access.chats = vec![format!("discord:guild:{GUILD_ID}")];
    })
    .await;
    say(&rig, &user(STRANGER, "Mallory"), "in the guild");
    wait_until(|| async { (!agent_messages(&rig).is_empty()).then_some(()) }).await;
    assert_eq!(agent_messages(&rig), vec![(STRANGER.to_owned(), "in the guild".to_owned())]);
    rig.shutdown().await;
}

/// Pairing on Discord: a stranger's DM gets a code; `/pair` from someone not in
/// `access.admins` is refused even in the admin channel, and from an admin in a
/// channel that is not an admin chat; an admin in the admin channel pairs them, sees a
/// confirmation, the user is told in their DM, and their next DM reaches the agent.
/// An admin may also pair from their own DM with the bot.
#[tokio::test]
async fn pairing_with_the_pair_command() {
    const ADMINS: &str = "800000000000000777";
    let rig = start_with(20, &[], |s| {
        s.access.pairing = true;
        s.access.admin_chats = vec![format!("discord:{ADMINS}")];
        s.access.admins = vec!["discord:500000000000000002".into()];
    })
    .await;
    let stranger = user(STRANGER, "Mallory");
    let dm = "800000000000000044";
    rig.discord().dispatch("MESSAGE_CREATE", message(&rig.discord().snowflake(), dm, &stranger, "hello"));
    let notice = wait_until(|| async { replies_in(rig.discord(), dm).into_iter().next() }).await;
    let text = notice.body["content"].as_str().unwrap().to_owned();
    let at = text.find("code is ").expect("a code") + "code is ".len();
    let code = text[at..at + 8].to_owned();
    interact(&rig, command_with(rig.discord(), "pair", ADMINS, &thao(), ("code", &code)));
    assert_eq!(command_answers(rig.discord(), 1).await[0], "⛔ Only an admin (access.admins) may approve pairing codes.");
    interact(&rig, command_with(rig.discord(), "pair", CHANNEL_ID, &user("500000000000000002", "Lead"), ("code", &code)));
    assert_eq!(command_answers(rig.discord(), 2).await[1], "⛔ /pair only works in an admin chat (access.admin_chats) or in your direct chat with the bot.");
    interact(&rig, command_with(rig.discord(), "pair", ADMINS, &user("500000000000000002", "Lead"), ("code", &code)));
    assert_eq!(command_answers(rig.discord(), 3).await[2], format!("✅ Paired Mallory (discord:{STRANGER}): they may now talk to the agent."));
    wait_until(|| async {
        rig.discord()
            .requests()
            .into_iter()
            .find(|r| r.path == format!("/api/v10/channels/{dm}/messages") && r.body["content"].as_str().is_some_and(|c| c.contains("you may now talk")))
    })
    .await;
    assert!(agent_messages(&rig).is_empty());
    rig.discord().dispatch("MESSAGE_CREATE", message(&rig.discord().snowflake(), dm, &stranger, "trade"));
    wait_until(|| async { (!agent_messages(&rig).is_empty()).then_some(()) }).await;
    assert_eq!(agent_messages(&rig), vec![(STRANGER.to_owned(), "trade".to_owned())]);
    // An admin pairs from their DM with the bot too.
    let eve = user("500000000000000667", "Eve");
    let eves_dm = "800000000000000045";
    rig.discord().dispatch("MESSAGE_CREATE", message(&rig.discord().snowflake(), eves_dm, &eve, "hello"));
    let notice = wait_until(|| async { replies_in(rig.discord(), eves_dm).into_iter().next() }).await;
    let text = notice.body["content"].as_str().unwrap().to_owned();
    let at = text.find("code is ").expect("a code") + "code is ".len();
    let leads_dm = "800000000000000046";
    interact(&rig, dm_command_with(rig.discord(), "pair", leads_dm, &user("500000000000000002", "Lead"), ("code", &text[at..at + 8])));
    assert_eq!(command_answers(rig.discord(), 4).await[3], "✅ Paired Eve (discord:500000000000000667): they may now talk to the agent.");
    rig.shutdown().await;
}

/// Approver roles work in DMs: a click there carries no roles, so the bridge looks the
/// member up in `discord.guild_id`. A member with the approver role decides; a member
/// without it and a non-member are refused and change nothing.
#[tokio::test]
async fn approver_role_counts_in_a_dm_click() {
    const LEAD: &str = "500000000000000002";
    const NO_ROLE: &str = "500000000000000003";
    let rig = start_with(20, &[], |s| {
        s.platforms.get_mut::<DiscordSettings>().guild_id = Some(GUILD_ID.into());
        s.routing.target = hitl_bridge::config::RouteTarget::Channel;
        s.routing.channels = vec![format!("discord:user:{LEAD}")];
    })
    .await;
    rig.discord().add_member(&user(LEAD, "Lead"), &[LEAD_ROLE]);
    rig.discord().add_member(&user(NO_ROLE, "Dev"), &["600000000000000001"]);
    say(&rig, &thao(), "trade");
    let card = rig.discord().wait_request(0, |r| r.method == "POST" && has_embed(&r.body) && !r.path.contains(CHANNEL_ID)).await;
    let dm = rig.discord().dm_channel(LEAD).expect("the lead's DM was opened");
    assert_eq!(card.path, format!("/api/v10/channels/{dm}/messages"));
    let id = card.response.as_ref().and_then(|m| m["id"].as_str()).unwrap().to_owned();
    let approve = button(&card.body, "Approve");
    for (n, who) in [(1, user(STRANGER, "Mallory")), (2, user(NO_ROLE, "Dev"))] {
        interact(&rig, dm_click(rig.discord(), &approve, &id, &dm, &who));
        let notes = wait_followups(rig.discord(), n).await;
        assert_eq!(notes[n - 1].body["content"], "You are not allowed to answer this request.");
    }
    assert!(approvals(rig.sim()).is_empty());
    interact(&rig, dm_click(rig.discord(), &approve, &id, &dm, &user(LEAD, "Lead")));
    let got = wait_approvals(rig.sim(), 1).await;
    assert_eq!(got[0]["decisions"], json!([{"type":"approve"}]));
    let lookups: Vec<String> = rig.discord().requests().into_iter().filter(|r| r.method == "GET" && r.path.contains("/members/")).map(|r| r.path).collect();
    assert_eq!(lookups, [STRANGER, NO_ROLE, LEAD].map(|u| format!("/api/v10/guilds/{GUILD_ID}/members/{u}")));
    rig.shutdown().await;
}

/// Without `discord.guild_id` a DM click has no roles: the approver role does not count.
#[tokio::test]
async fn without_a_guild_a_dm_click_has_no_roles() {
    const LEAD: &str = "500000000000000002";
    let rig = start_with(20, &[], |s| {
        s.routing.target = hitl_bridge::config::RouteTarget::Channel;
        s.routing.channels = vec![format!("discord:user:{LEAD}")];
    })
    .await;
    rig.discord().add_member(&user(LEAD, "Lead"), &[LEAD_ROLE]);
    say(&rig, &thao(), "trade");
    let card = rig.discord().wait_request(0, |r| r.method == "POST" && has_embed(&r.body) && !r.path.contains(CHANNEL_ID)).await;
    let dm = rig.discord().dm_channel(LEAD).expect("the lead's DM was opened");
    let id = card.response.as_ref().and_then(|m| m["id"].as_str()).unwrap().to_owned();
    interact(&rig, dm_click(rig.discord(), &button(&card.body, "Approve"), &id, &dm, &user(LEAD, "Lead")));
    assert_eq!(wait_followups(rig.discord(), 1).await[0].body["content"], "You are not allowed to answer this request.");
    assert!(approvals(rig.sim()).is_empty());
    assert!(!rig.discord().requests().iter().any(|r| r.path.contains("/members/")));
    rig.shutdown().await;
}

// ---------------------------------------------------------------------------------
// Decision policies (issue #10): remembered approvals, quorum, policy outcomes, reminders
// ---------------------------------------------------------------------------------

mod policies {
    use super::*;
    use hitl_bridge::engine::Reminder;
    use hitl_bridge::interaction::policy::{Fallback, FallbackDecision, Mention, Policy};
    use hitl_bridge::interaction::{AccessPolicy, Actor, Interaction, RememberScope, RememberedRule, RequestBuilder, TimeoutDefaults, UserAction};
    use hitl_bridge::platform::discord::render::view;
    use hitl_bridge::platform::kit::token::TokenSigner;
    use hitl_bridge::platform::locale::Locale;
    use hitl_bridge::protocol::{ActionRequest, Decision, EditedAction, ReviewConfig};

    const MIN: i64 = 60_000;
    const LAN: &str = "500000000000000011";
    const MINH: &str = "500000000000000012";
    const DBA: &str = "600000000000000900";

    fn lan() -> Actor {
        Actor::new("discord", LAN, "Lan")
    }

    fn minh() -> Actor {
        Actor::new("discord", MINH, "Minh")
    }

    fn policy() -> Policy {
        Policy {
            name: "migrations".into(),
            approvers: vec![("discord".into(), LAN.into()), ("discord".into(), MINH.into()), ("telegram".into(), "1001".into())],
            approver_roles: vec![DBA.into()],
            quorum: 1,
            remember: vec![],
            remember_args: Default::default(),
            escalation: vec![],
            fallback: None,
        }
    }

    fn migration(kimi: bool, policy: Policy) -> Interaction {
        let action = ActionRequest { name: "run_migration".into(), args: json!({"version": 42}), description: None, tool_use_id: None };
        let configs = if kimi {
            vec![ReviewConfig { allowed_decisions: Some(vec!["approve".into(), "approve_for_session".into(), "reject".into()]), ..ReviewConfig::default() }]
        } else {
            vec![]
        };
        let request = RequestBuilder::start("k_1", vec![action], configs, Some(600)).finish(TimeoutDefaults::default()).expect("request");
        Interaction::new("a1b2c3d4e5f6".into(), "s".into(), request, None, 0).with_policy(Some(policy))
    }

    fn nobody() -> AccessPolicy {
        AccessPolicy::default()
    }

    fn rendered(i: &Interaction, locale: Locale) -> (Value, Value) {
        let v = view(i, locale, &TokenSigner::new(b"k"), 0);
        (mask(&serde_json::to_value(&v.embed).unwrap()), mask(&serde_json::to_value(&v.components).unwrap()))
    }

    /// "Approve once" with "Approve for this session" and "Always approve" on a row of
    /// their own; Kimi's own "Approve for session" (as.0) is not shown as well.
    #[test]
    fn remember_buttons_replace_kimis_session_button() {
        let i = migration(true, Policy { remember: vec![RememberScope::Session, RememberScope::Always], ..policy() });
        let (_, rows) = rendered(&i, Locale::En);
        insta::assert_json_snapshot!("policy_remember_buttons", rows);
        let labels: Vec<Vec<String>> = rows
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                r["components"].as_array().unwrap().iter().map(|b| format!("{} {}", b["label"].as_str().unwrap(), b["custom_id"].as_str().unwrap())).collect()
            })
            .collect();
        assert_eq!(
            labels,
            [
                vec!["Approve once 1:[id]:ap.0:[tag]", "Reject 1:[id]:rj.0:[tag]"],
                vec!["Approve for this session 1:[id]:rms:[tag]", "Always approve 1:[id]:rma:[tag]"],
            ]
        );
        let i = migration(false, Policy { remember: vec![RememberScope::Session], ..policy() });
        let (_, rows) = rendered(&i, Locale::Zh);
        assert_eq!(
            rows[1],
            json!({"type": 1, "components": [{"type": 2, "style": 3, "label": "本会话内始终批准", "custom_id": "1:[id]:rms:[tag]", "disabled": false}]})
        );
        assert_eq!(rows[0]["components"][0]["label"], "仅批准本次");
    }

    /// While votes arrive the embed says where the count is; once reached, the outcome
    /// names everyone whose vote counted.
    #[test]
    fn quorum_progress_and_outcome() {
        let mut i = migration(false, Policy { quorum: 3, ..policy() });
        i.apply(&lan(), UserAction::Decide { action: 0, decision: Decision::Approve }, &nobody(), MIN).expect("counted");
        let mut args = serde_json::Map::new();
        args.insert("version".into(), json!(41));
        let edit = Decision::Edit { edited_action: EditedAction { name: "run_migration".into(), args } };
        i.apply(&minh(), UserAction::Decide { action: 0, decision: edit }, &nobody(), MIN).expect("counted");
        let (embed, rows) = rendered(&i, Locale::En);
        assert_eq!(
            embed["fields"],
            json!([
                {"name": "Answer by", "value": "<t:[unix]:R>", "inline": false},
                {"name": "Approvals", "value": "1 of 3 approvals: Lan ✔ · Minh ✏️ (edited)", "inline": false},
            ])
        );
        assert_eq!(rows.as_array().map(Vec::len), Some(1), "the usual buttons while votes arrive");

        let mut i = migration(false, Policy { quorum: 2, ..policy() });
        i.apply(&lan(), UserAction::Decide { action: 0, decision: Decision::Approve }, &nobody(), MIN).expect("counted");
        i.apply(&minh(), UserAction::Decide { action: 0, decision: Decision::Approve }, &nobody(), 5 * MIN).expect("final");
        let (embed, rows) = rendered(&i, Locale::Vi);
        assert_eq!(embed["fields"], json!([{"name": "Quyết định", "value": "✅ Đã duyệt bởi Lan, Minh lúc [hh:mm] UTC", "inline": false}]));
        assert_eq!(rows, json!([]));
    }

    /// Settled by the policy: a remembered rule, or each kind of fallback.
    #[test]
    fn rule_and_fallback_outcomes() {
        let mut i = migration(false, Policy { remember: vec![RememberScope::Always], ..policy() });
        let rule = RememberedRule {
            id: "r1".into(),
            scope: RememberScope::Always,
            tool: "run_migration".into(),
            args: None,
            session_id: None,
            backend: "stream".into(),
            set_by: lan(),
            set_at_ms: 14 * 60 * MIN + 5 * MIN,
            policy: "migrations".into(),
        };
        assert!(i.resolve_by_rule(&rule, MIN).is_some());
        let v = view(&i, Locale::En, &TokenSigner::new(b"k"), 0);
        let embed = serde_json::to_value(&v.embed).unwrap();
        assert_eq!(embed["fields"], json!([{"name": "Decision", "value": "✅ Approved by rule set by Lan at 14:05 UTC (always)", "inline": false}]));
        assert_eq!(embed["color"], 0x57F287);
        assert!(v.components.is_empty());

        for (decision, text, colour) in [
            (FallbackDecision::Reject, "❌ Rejected by policy: no decision within 30 min", 0xED4245),
            (FallbackDecision::Approve, "✅ Approved by policy: no decision within 30 min", 0x57F287),
            (FallbackDecision::Leave, "⌛ Ended by policy: no decision within 30 min", 0x95A5A6),
        ] {
            let mut i = migration(false, Policy { fallback: Some(Fallback { after_secs: 1800, decision }), ..policy() });
            assert!(i.apply_fallback(30 * MIN));
            let v = view(&i, Locale::En, &TokenSigner::new(b"k"), 0);
            let embed = serde_json::to_value(&v.embed).unwrap();
            assert_eq!(embed["fields"], json!([{"name": "Decision", "value": text, "inline": false}]));
            assert_eq!(embed["color"], colour);
            assert!(v.components.is_empty());
        }
    }

    /// Reminders through the real serenity client: `<@user>` and `<@&role>` mentions,
    /// with allowed_mentions naming exactly those (never @everyone); someone on another
    /// platform named as text; the configured approvers when the policy names none.
    #[tokio::test]
    async fn reminders_ping_exactly_the_approvers() {
        use hitl_bridge::platform::Platform;
        let fake = FakeDiscord::start().await;
        let api = fake.api_url();
        let mut settings = Settings::from_pairs(&[
            ("console.enabled", "false"),
            ("discord.enabled", "true"),
            ("discord.token", "fake-bot-token"),
            ("discord.api_url", &api),
            ("discord.gateway", "false"),
        ])
        .expect("settings");
        settings.access.approvers = vec![format!("discord:{THAO}")];
        settings.access.approver_roles = vec![LEAD_ROLE.into()];
        let (engine, _requests) = hitl_bridge::engine::EngineHandle::channel();
        let store = hitl_bridge::store::Store::connect("sqlite::memory:").await.expect("store");
        let discord = hitl_bridge::platform::discord::start(
            settings.platforms.get::<DiscordSettings>(),
            hitl_bridge::listener::Limits::from_settings(&settings.http, None),
            settings.access_policy(),
            TokenSigner::new(b"k"),
            engine,
            store.ui_states(),
            hitl_bridge::metrics::Metrics::new(),
            std::sync::Arc::new(hitl_bridge::web::ChatLinks::new(store, settings.web.clone())),
        )
        .await
        .expect("starts");
        let key = hitl_bridge::store::ChatKey::new("discord", CHANNEL_ID, None);
        let mut i = migration(false, Policy { quorum: 3, ..policy() });
        i.apply(&lan(), UserAction::Decide { action: 0, decision: Decision::Approve }, &nobody(), MIN).expect("counted");
        fake.clear();

        // The first as a reply to the card that shows the request here.
        let card = hitl_bridge::store::MessageRef { interaction_id: i.id.clone(), chat: key.clone(), message_id: "800000000000000099".into() };
        discord.send_reminder(Reminder::new(&key, &i, &Mention::Approvers, Some(&card))).await.expect("sent");
        discord.send_reminder(Reminder::new(&key, &i, &Mention::User { platform: "telegram".into(), user_id: "1001".into() }, None)).await.expect("sent");
        discord.send_reminder(Reminder::new(&key, &i, &Mention::Role { role_id: DBA.into() }, None)).await.expect("sent");
        let plain = migration(false, Policy { approvers: vec![], approver_roles: vec![], ..policy() });
        discord.send_reminder(Reminder::new(&key, &plain, &Mention::Approvers, None)).await.expect("sent");

        let sent: Vec<Value> = fake.requests().iter().filter(|r| r.method == "POST").map(|r| sorted(mask(&json!({"path": r.path, "body": r.body})))).collect();
        let path = format!("/api/v10/channels/{CHANNEL_ID}/messages");
        let msg = |content: &str, users: &[&str], roles: &[&str]| {
            // The whole body serenity sends: no embeds, no components, no TTS.
            sorted(json!({"path": path, "body": {
                "content": content,
                "allowed_mentions": {"parse": [], "users": users, "roles": roles},
                "attachments": [], "embeds": [], "enforce_nonce": false, "sticker_ids": [], "tts": false,
            }}))
        };
        let mut reply = msg(
            &format!("⏰ Reminder: <@{LAN}> <@{MINH}> <@&{DBA}> — run_migration still waits for a decision (1 of 3 approvals so far) · deadline <t:[unix]:R>"),
            &[LAN, MINH],
            &[DBA],
        );
        reply["body"]["message_reference"] =
            json!({"type": 0, "message_id": "800000000000000099", "channel_id": CHANNEL_ID, "guild_id": null, "fail_if_not_exists": false});
        assert_eq!(
            sent,
            [
                sorted(reply),
                msg("⏰ Reminder: telegram:1001 — run_migration still waits for a decision (1 of 3 approvals so far) · deadline <t:[unix]:R>", &[], &[]),
                msg(
                    &format!("⏰ Reminder: <@&{DBA}> — run_migration still waits for a decision (1 of 3 approvals so far) · deadline <t:[unix]:R>"),
                    &[],
                    &[DBA]
                ),
                msg(
                    &format!("⏰ Reminder: <@{THAO}> <@&{LEAD_ROLE}> — run_migration still waits for a decision · deadline <t:[unix]:R>"),
                    &[THAO],
                    &[LEAD_ROLE]
                ),
            ]
        );
        assert!(fake.requests().iter().all(|r| r.status < 400), "Discord would have refused one");
        discord.shutdown();
        fake.shutdown().await;
    }
}
