//! Slack end to end: requests pushed over the HTTP API to a real bridge, shown on a
//! fake Slack (tests/support/fake_slack.rs) through the bridge's own Web API client,
//! clicked there over Socket Mode, and read back by `GET` (the exact decision JSON the
//! agent gets). Each test asserts the exact JSON that crossed into Slack where it
//! matters: the card, the acknowledgements, the modal and its answer.

mod support;

use std::time::Duration;

use hitl_bridge::app::App;
use hitl_bridge::config::Settings;
use serde_json::{Value, json};
use support::fake_slack::{self, OPS, Person, button, has_buttons};
use support::harness::{HttpApi, NoConsole};
use support::slack_chat::{assert_nothing_refused, ephemeral_to, updated};
use support::{Chat, Harness, wait_until};

const SECRET: &str = "ci-secret";

fn ana() -> Person {
    Person::new("U0ANA", "ana")
}

fn mallory() -> Person {
    Person::new("U0MAL", "mallory")
}

/// A bridge with Slack on the fake and the HTTP API on a free port, not yet started.
async fn build() -> Harness {
    Harness::on(Chat::Slack).no_agent().set("timeouts.grace_secs", "0").tweak(|s: &mut Settings| s.http.api_tokens = vec![format!("ci:{SECRET}")]).build().await
}

/// [`build`], started.
async fn start() -> Harness {
    let mut rig = build().await;
    rig.boot().await;
    rig
}

/// The HTTP API, as the agent pushing requests.
fn api(rig: &Harness) -> HttpApi {
    rig.api(SECRET)
}

/// Pushes an approval of `execute_trade` to the ops channel, Ana its approver; the
/// card's `ts` once Slack has it.
async fn push_trade(rig: &Harness, key: &str) -> String {
    push(
        rig,
        json!({
            "approval_key": key, "targets": [{"platform": "slack", "channel_id": OPS}], "approvers": ["slack:U0ANA"],
            "text": "Nightly rebalance <!channel>", "timeout_seconds": 300,
            "actions": [{"name": "execute_trade", "args": {"symbol": "VNM", "quantity": 100}}]
        }),
    )
    .await
}

/// Stops the bridge, checks Slack refused nothing it sent (apart from the 429s and
/// refusals a test provokes), and stops the rest.
async fn stop(mut rig: Harness) {
    rig.stop_bridge().await;
    assert_nothing_refused(rig.slack());
    rig.shutdown().await;
}

/// A card with each button's token tag and the deadline's time masked.
fn masked(body: &Value) -> Value {
    let mut body = body.clone();
    for block in body["blocks"].as_array_mut().into_iter().flatten() {
        for element in block.get_mut("elements").and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(value) = element["value"].as_str() {
                let parts: Vec<&str> = value.split(':').collect();
                element["value"] = json!(format!("{}:[id]:{}:[tag]", parts[0], parts[2]));
            }
            if let Some(text) = element["text"].as_str().filter(|t| t.contains("<!date^")) {
                let (lead, _) = text.split_once("<!date^").unwrap();
                element["text"] = json!(format!("{lead}<!date^[deadline]>"));
            }
        }
    }
    body
}

/// An approval end to end: the exact card, a click, the exact decision JSON, and the
/// card edited to the outcome with its buttons gone.
#[tokio::test]
async fn an_approval_is_shown_clicked_decided_and_closed() {
    let rig = start().await;
    let ts = push_trade(&rig, "trade-1").await;
    let posted = rig.slack().bodies("chat.postMessage").remove(0);
    let button = |code: &str, text: &str, style: Option<&str>| {
        let mut b = json!({"type": "button", "action_id": format!("hitl.{code}"), "text": {"type": "plain_text", "text": text, "emoji": true}, "value": format!("1:[id]:{code}:[tag]")});
        if let Some(style) = style {
            b["style"] = json!(style);
        }
        b
    };
    let mut reject = button("rj.0", "❌ Reject", Some("danger"));
    reject["confirm"] = json!({
        "title": {"type": "plain_text", "text": "Reject?", "emoji": true},
        "text": {"type": "plain_text", "text": "The agent will not run this action. You can give a reason next.", "emoji": true},
        "confirm": {"type": "plain_text", "text": "Reject", "emoji": true},
        "deny": {"type": "plain_text", "text": "Cancel", "emoji": true},
        "style": "danger"
    });
    assert_eq!(
        masked(&posted),
        json!({
            "channel": OPS,
            "text": "🔐 Approval needed: execute_trade",
            "blocks": [
                {"type": "header", "block_id": "title", "text": {"type": "plain_text", "text": "🔐 Approval needed", "emoji": true}},
                {"type": "section", "block_id": "context", "text": {"type": "mrkdwn", "text": "Nightly rebalance &lt;!channel&gt;"}},
                {"type": "context", "block_id": "meta", "elements": [
                    {"type": "mrkdwn", "text": "*Agent:* ci"},
                    {"type": "mrkdwn", "text": "⏰ *Answer by:* <!date^[deadline]>"}
                ]},
                {"type": "section", "block_id": "action.0", "text": {"type": "mrkdwn", "text": "*execute_trade*\n```\n{\n  \"symbol\": \"VNM\",\n  \"quantity\": 100\n}\n```"}},
                {"type": "actions", "block_id": "buttons.0", "elements": [
                    button("ap.0", "✅ Approve", Some("primary")), button("ed.0", "✏️ Edit", None), reject, button("cm.0", "💬 Comment", None)
                ]}
            ]
        })
    );
    let click = rig.slack().click(&ana(), OPS, &ts, "Approve");
    assert_eq!(rig.slack().wait_ack(&click).await, json!({"envelope_id": click}));
    let state = api(&rig).decided("trade-1").await;
    assert_eq!(state["reply"], json!({"decisions": [{"type": "approve"}]}));
    assert_eq!(state["decided_by"], json!({"platform": "slack", "id": "U0ANA", "name": "ana"}));
    let update = updated(rig.slack(), &ts, "Approved by ana").await;
    assert_eq!(update["channel"], OPS);
    let blocks = update["blocks"].as_array().unwrap();
    assert!(!has_buttons(&update), "the buttons are gone: {update}");
    let outcome = blocks.last().unwrap()["text"]["text"].as_str().unwrap();
    assert!(outcome.starts_with("*✅ Approved by ana at ") && outcome.ends_with(" UTC*"), "{outcome}");
    assert!(!has_buttons(&rig.slack().message(OPS, &ts).unwrap()));
    stop(rig).await;
}

/// A second click (here Reject on the same, now decided, card) gets an ephemeral
/// notice and never a second decision.
#[tokio::test]
async fn a_second_click_is_told_and_changes_nothing() {
    let rig = start().await;
    let ts = push_trade(&rig, "trade-2").await;
    let card = rig.slack().message(OPS, &ts).unwrap();
    let approve = button(&card, "Approve");
    let reject = button(&card, "Reject");
    let first = rig.slack().click_envelope(&ana(), OPS, &ts, "hitl.ap.0", approve["value"].as_str().unwrap());
    rig.slack().push(first);
    api(&rig).decided("trade-2").await;
    let second = rig.slack().click_envelope(&ana(), OPS, &ts, "hitl.rj.0", reject["value"].as_str().unwrap());
    rig.slack().push(second);
    let notice = ephemeral_to(rig.slack(), "U0ANA", 0).await;
    assert_eq!(notice["channel"], OPS);
    let text = notice["text"].as_str().unwrap();
    assert!(text.starts_with("Already decided by ana at ") && text.ends_with(" UTC."), "{text}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(api(&rig).state("trade-2").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    assert!(rig.slack().views().is_empty(), "no modal opens for a decided request");
    stop(rig).await;
}

/// A stranger's click gets an ephemeral refusal and an audit row; the card keeps its
/// buttons and Ana can still decide.
#[tokio::test]
async fn a_strangers_click_is_refused_and_audited() {
    let rig = start().await;
    let ts = push_trade(&rig, "trade-3").await;
    rig.slack().click(&mallory(), OPS, &ts, "Approve");
    let notice = ephemeral_to(rig.slack(), "U0MAL", 0).await;
    assert_eq!(notice, json!({"channel": OPS, "user": "U0MAL", "text": "You are not allowed to answer this request."}));
    // An Edit press does not open a form for them either.
    rig.slack().click(&mallory(), OPS, &ts, "Edit");
    ephemeral_to(rig.slack(), "U0MAL", 1).await;
    assert!(rig.slack().views().is_empty());
    let store = hitl_bridge::store::Store::connect(&rig.settings.store.url).await.unwrap();
    let refused = wait_until(|| async { store.refused_attempts(0).await.ok().filter(|r| r.len() >= 2) }).await;
    let who = json!({"platform": "slack", "user_id": "U0MAL", "name": "mallory", "guild_id": fake_slack::TEAM});
    let why = "you are not allowed to answer this request";
    let seen: Vec<(Value, Value)> = refused.iter().map(|e| (json!(e.actor), e.reply.clone().unwrap())).collect();
    assert_eq!(
        seen,
        vec![
            (who.clone(), json!({"attempted": {"op": "decide", "action": 0, "decision": {"type": "approve"}}, "reason": why})),
            (who, json!({"attempted": {"open": "edit", "index": 0}, "reason": why})),
        ]
    );
    store.close().await;
    assert_eq!(api(&rig).state("trade-3").await["status"], "pending");
    assert!(has_buttons(&rig.slack().message(OPS, &ts).unwrap()));
    rig.slack().click(&ana(), OPS, &ts, "Approve");
    assert_eq!(api(&rig).decided("trade-3").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    stop(rig).await;
}

/// A value under another code than the one signed, or from another secret, is refused
/// with a notice and changes nothing.
#[tokio::test]
async fn a_forged_value_changes_nothing() {
    let rig = start().await;
    let ts = push_trade(&rig, "trade-4").await;
    let card = rig.slack().message(OPS, &ts).unwrap();
    let comment = button(&card, "Comment")["value"].as_str().unwrap().to_owned();
    let forged = comment.replace(":cm.0:", ":ap.0:");
    let other_secret = hitl_bridge::platform::kit::token::TokenSigner::new(b"other").sign(comment.split(':').nth(1).unwrap(), "ap.0").unwrap();
    for value in [forged, other_secret, "garbage".to_owned()] {
        rig.slack().push(rig.slack().click_envelope(&ana(), OPS, &ts, "hitl.ap.0", &value));
    }
    for n in 0..3 {
        assert_eq!(ephemeral_to(rig.slack(), "U0ANA", n).await["text"], "This button is not valid (unknown, outdated or forged).");
    }
    assert_eq!(api(&rig).state("trade-4").await["status"], "pending");
    assert!(rig.slack().bodies("chat.update").is_empty(), "the card is not touched");
    stop(rig).await;
}

/// An envelope delivered twice is acknowledged twice and handled once: one decision,
/// and no "already decided" notice, which a second handling would have posted.
#[tokio::test]
async fn a_redelivered_envelope_is_handled_once() {
    let rig = start().await;
    let ts = push_trade(&rig, "trade-5").await;
    let card = rig.slack().message(OPS, &ts).unwrap();
    let envelope = rig.slack().click_envelope(&ana(), OPS, &ts, "hitl.ap.0", button(&card, "Approve")["value"].as_str().unwrap());
    let id = envelope["envelope_id"].as_str().unwrap().to_owned();
    rig.slack().push(envelope.clone());
    rig.slack().push(envelope);
    wait_until(|| async { (rig.slack().acks_of(&id).len() == 2).then_some(()) }).await;
    assert_eq!(api(&rig).decided("trade-5").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(rig.slack().bodies("chat.postEphemeral").is_empty(), "handled once: {:?}", rig.slack().bodies("chat.postEphemeral"));
    stop(rig).await;
}

/// Edit opens a modal with the args; invalid JSON is answered under the field in the
/// acknowledgement and nothing is sent; valid JSON is the edit decision.
#[tokio::test]
async fn the_edit_modal_refuses_invalid_json_then_sends_the_edit() {
    let rig = start().await;
    let ts = push_trade(&rig, "trade-6").await;
    rig.slack().click(&ana(), OPS, &ts, "Edit");
    let view = wait_until(|| async { rig.slack().views().into_iter().next() }).await;
    assert_eq!(view["title"], json!({"type": "plain_text", "text": "Edit arguments", "emoji": true}));
    assert_eq!(view["blocks"][1]["block_id"], "args");
    assert_eq!(view["blocks"][1]["element"]["initial_value"], "{\n  \"symbol\": \"VNM\",\n  \"quantity\": 100\n}");
    let bad = rig.slack().submission_envelope(&ana(), &view, &[("args", "json", "{quantity: 50")]);
    let bad_id = bad["envelope_id"].as_str().unwrap().to_owned();
    rig.slack().push(bad);
    let ack = rig.slack().wait_ack(&bad_id).await;
    assert_eq!(
        ack,
        json!({"envelope_id": bad_id, "payload": {"response_action": "errors",
            "errors": {"args": "Not accepted: invalid JSON: key must be a string at line 1 column 2. Send a JSON object."}}})
    );
    assert_eq!(api(&rig).state("trade-6").await["status"], "pending", "nothing is sent for a refused edit");
    let good = rig.slack().submission_envelope(&ana(), &view, &[("args", "json", r#"{"symbol":"VNM","quantity":50}"#)]);
    let good_id = good["envelope_id"].as_str().unwrap().to_owned();
    rig.slack().push(good);
    assert_eq!(rig.slack().wait_ack(&good_id).await, json!({"envelope_id": good_id}), "the modal closes");
    assert_eq!(
        api(&rig).decided("trade-6").await["reply"],
        json!({"decisions": [{"type": "edit", "edited_action": {"name": "execute_trade", "args": {"symbol": "VNM", "quantity": 50}}}]})
    );
    updated(rig.slack(), &ts, "Edited by ana").await;
    stop(rig).await;
}

/// Reject asks for an optional reason in a modal; the reason goes with the decision.
#[tokio::test]
async fn reject_takes_a_reason_from_its_modal() {
    let rig = start().await;
    let ts = push_trade(&rig, "trade-7").await;
    rig.slack().click(&ana(), OPS, &ts, "Reject");
    let view = wait_until(|| async { rig.slack().views().into_iter().next() }).await;
    assert_eq!(view["submit"]["text"], "Reject");
    assert_eq!(view["blocks"][1]["optional"], true);
    let submit = rig.slack().submission_envelope(&ana(), &view, &[("reason", "text", "market is closed <!here>")]);
    rig.slack().push(submit);
    assert_eq!(api(&rig).decided("trade-7").await["reply"], json!({"decisions": [{"type": "reject", "message": "market is closed <!here>"}]}));
    stop(rig).await;
}

/// Slack asks for a new connection (`disconnect`), then the socket drops: the bridge
/// reconnects each time and clicks keep working.
#[tokio::test]
async fn socket_mode_reconnects_after_disconnect_and_drop() {
    let rig = start().await;
    rig.slack().disconnect();
    rig.slack().wait_connections(2).await;
    rig.slack().drop_socket();
    rig.slack().wait_connections(3).await;
    let ts = push_trade(&rig, "trade-8").await;
    rig.slack().click(&ana(), OPS, &ts, "Approve");
    assert_eq!(api(&rig).decided("trade-8").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    let opens = rig.slack().calls().into_iter().filter(|c| c.method == "apps.connections.open").count();
    assert_eq!(opens, 3, "one apps.connections.open per connection");
    stop(rig).await;
}

/// A 429 with Retry-After is waited out and the card still arrives, once.
#[tokio::test]
async fn a_rate_limited_post_is_retried_after_retry_after() {
    let rig = start().await;
    rig.slack().rate_limit_next(2, 1);
    let started = std::time::Instant::now();
    push_trade(&rig, "trade-9").await;
    assert!(started.elapsed() >= Duration::from_secs(2), "waited Retry-After each time: {:?}", started.elapsed());
    let posts: Vec<_> = rig.slack().calls().into_iter().filter(|c| c.method == "chat.postMessage").map(|c| c.error).collect();
    assert_eq!(posts, [Some("ratelimited".to_owned()), Some("ratelimited".to_owned()), None]);
    stop(rig).await;
}

/// A bot token Slack refuses stops the start with a message naming the setting.
#[tokio::test]
async fn a_refused_bot_token_is_named_at_start() {
    let mut harness = build().await;
    harness.settings.platforms.get_mut::<hitl_bridge::platform::slack::settings::SlackSettings>().bot_token = Some("xoxb-wrong".into());
    let error = match App::start(&harness.settings, None as NoConsole).await {
        Ok(_) => panic!("the bridge must not start with a refused token"),
        Err(e) => format!("{e:#}"),
    };
    assert!(error.contains("slack.bot_token") && error.contains("invalid_auth"), "{error}");
    harness.shutdown().await;
}

/// Pushes `body` (targets and all) and returns the ts of the card it posted.
async fn push(rig: &Harness, body: Value) -> String {
    let before = rig.slack().posted().len();
    api(rig).push(&body).await;
    wait_until(|| async { rig.slack().posted().get(before).map(|(_, ts)| ts.clone()) }).await
}

/// Nobody answers: the card is edited to the expiry without buttons, and a late click
/// is told and changes nothing.
#[tokio::test]
async fn expiry_edits_the_card_and_a_late_click_is_told() {
    let rig = start().await;
    let ts = push(
        &rig,
        json!({"approval_key": "late-1", "targets": [{"platform": "slack", "channel_id": OPS}], "approvers": ["slack:U0ANA"],
               "timeout_seconds": 1, "actions": [{"name": "drop_table", "args": {"table": "users"}}]}),
    )
    .await;
    let card = rig.slack().message(OPS, &ts).unwrap();
    let expired = updated(rig.slack(), &ts, "Expired at").await;
    assert!(!has_buttons(&expired));
    let outcome = expired["blocks"].as_array().unwrap().last().unwrap()["text"]["text"].as_str().unwrap().to_owned();
    assert!(outcome.starts_with("*⌛ Expired at ") && outcome.ends_with(" with no decision*"), "{outcome}");
    let late = rig.slack().click_envelope(&ana(), OPS, &ts, "hitl.ap.0", button(&card, "Approve")["value"].as_str().unwrap());
    rig.slack().push(late);
    assert_eq!(ephemeral_to(rig.slack(), "U0ANA", 0).await["text"], "This request has expired.");
    assert_eq!(api(&rig).state("late-1").await["status"], "expired");
    stop(rig).await;
}

/// Two approvers click at once: the first decision wins, the other is told who
/// decided, and the agent gets one decision.
#[tokio::test]
async fn two_people_clicking_at_once_make_one_decision() {
    let rig = start().await;
    let bob = Person::new("U0BOB", "bob");
    let ts = push(
        &rig,
        json!({"approval_key": "both-1", "targets": [{"platform": "slack", "channel_id": OPS}], "approvers": ["slack:U0ANA", "slack:U0BOB"],
               "actions": [{"name": "deploy", "args": {"v": "2.3"}}]}),
    )
    .await;
    let card = rig.slack().message(OPS, &ts).unwrap();
    let approve = button(&card, "Approve")["value"].as_str().unwrap().to_owned();
    let reject = button(&card, "Reject")["value"].as_str().unwrap().to_owned();
    // Ana approves, Bob presses Reject (its confirm accepted): both at once.
    rig.slack().push(rig.slack().click_envelope(&ana(), OPS, &ts, "hitl.ap.0", &approve));
    rig.slack().push(rig.slack().click_envelope(&bob, OPS, &ts, "hitl.rj.0", &reject));
    let state = api(&rig).decided("both-1").await;
    assert_eq!(state["reply"], json!({"decisions": [{"type": "approve"}]}));
    // Bob's Reject opens no form on a decided request: he is told instead.
    let notice = ephemeral_to(rig.slack(), "U0BOB", 0).await;
    assert!(notice["text"].as_str().unwrap().starts_with("Already decided by ana at "), "{notice}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(rig.slack().views().is_empty());
    assert_eq!(api(&rig).state("both-1").await["decided_by"]["id"], "U0ANA");
    stop(rig).await;
}

/// A card's ts is stored: after a restart, a click on the old card decides it, and the
/// same message is edited.
#[tokio::test]
async fn after_a_restart_the_same_card_is_clicked_and_edited() {
    let mut rig = start().await;
    let ts = push_trade(&rig, "restart-1").await;
    rig.restart().await;
    rig.slack().wait_connections(2).await;
    rig.slack().click(&ana(), OPS, &ts, "Approve");
    assert_eq!(api(&rig).decided("restart-1").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    let update = updated(rig.slack(), &ts, "Approved by ana").await;
    assert_eq!((update["channel"].as_str(), update["ts"].as_str()), (Some(OPS), Some(ts.as_str())));
    assert_eq!(rig.slack().posted().len(), 1, "no second card");
    stop(rig).await;
}

/// The bridge died after storing an envelope and before handling it (kill -9 between
/// receipt and ack): the next start handles it from the inbox.
#[tokio::test]
async fn an_envelope_stored_before_a_crash_is_handled_at_the_next_start() {
    let mut rig = start().await;
    let ts = push_trade(&rig, "crash-1").await;
    let card = rig.slack().message(OPS, &ts).unwrap();
    rig.stop_bridge().await;
    let envelope = rig.slack().click_envelope(&ana(), OPS, &ts, "hitl.ap.0", button(&card, "Approve")["value"].as_str().unwrap());
    let store = hitl_bridge::store::Store::connect(&rig.settings.store.url).await.unwrap();
    let row = hitl_bridge::store::InboxUpdate {
        update_id: format!("envelope:{}", envelope["envelope_id"].as_str().unwrap()),
        seq: 1,
        lane: OPS.into(),
        body: envelope.to_string(),
    };
    let dead = hitl_bridge::store::ShowClaim { owner: "a-dead-replica".into(), until_ms: 0 };
    assert_eq!(store.platform_inbox("slack").store(&[row], &dead, 0).await.unwrap().len(), 1);
    store.close().await;
    rig.boot().await;
    assert_eq!(api(&rig).decided("crash-1").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    updated(rig.slack(), &ts, "Approved by ana").await;
    stop(rig).await;
}

/// A DM target opens the conversation with `conversations.open` and shows the card
/// there; the click in the DM decides.
#[tokio::test]
async fn a_dm_target_is_opened_and_clicked_there() {
    let rig = start().await;
    let ts = push(
        &rig,
        json!({"approval_key": "dm-1", "targets": [{"platform": "slack", "user_id": "U0ANA"}], "approvers": ["slack:U0ANA"],
               "actions": [{"name": "deploy", "args": {}}]}),
    )
    .await;
    assert_eq!(rig.slack().bodies("conversations.open"), vec![json!({"users": "U0ANA"})]);
    assert_eq!(rig.slack().posted()[0].0, "D0ANA");
    rig.slack().click(&ana(), "D0ANA", &ts, "Approve");
    assert_eq!(api(&rig).decided("dm-1").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    let update = updated(rig.slack(), &ts, "Approved by ana").await;
    assert_eq!(update["channel"], "D0ANA");
    assert_eq!(rig.slack().bodies("conversations.open").len(), 1, "the DM channel is opened once");
    stop(rig).await;
}

/// Comment asks for words in a modal (a `respond` decision where the action allows
/// one); an empty one is refused under the field.
#[tokio::test]
async fn a_comment_comes_from_its_modal_and_an_empty_one_is_refused() {
    let rig = start().await;
    let ts = push(
        &rig,
        json!({"approval_key": "comment-1", "targets": [{"platform": "slack", "channel_id": OPS}], "approvers": ["slack:U0ANA"],
               "actions": [{"name": "deploy", "args": {"v": 2}}],
               "review_configs": [{"action_name": "deploy", "allowed_decisions": ["approve", "reject", "respond"]}]}),
    )
    .await;
    rig.slack().click(&ana(), OPS, &ts, "Comment");
    let view = wait_until(|| async { rig.slack().views().into_iter().next() }).await;
    let empty = rig.slack().submission_envelope(&ana(), &view, &[("comment", "text", "   ")]);
    let empty_id = empty["envelope_id"].as_str().unwrap().to_owned();
    rig.slack().push(empty);
    assert_eq!(rig.slack().wait_ack(&empty_id).await["payload"], json!({"response_action": "errors", "errors": {"comment": "the text is empty"}}));
    let words = rig.slack().submission_envelope(&ana(), &view, &[("comment", "text", "only 50 please")]);
    rig.slack().push(words);
    let state = api(&rig).decided("comment-1").await;
    assert_eq!(state["reply"], json!({"decisions": [{"type": "respond", "message": "only 50 please"}]}));
    stop(rig).await;
}

/// Slack retries an event under a new envelope id with `retry_attempt`: both
/// deliveries are acknowledged, and the inbox keeps one row, under the event's id.
#[tokio::test]
async fn a_retried_event_is_acknowledged_and_stored_once() {
    let rig = start().await;
    let event = |envelope: &str, retry: Option<u32>| {
        let mut e = json!({"type": "events_api", "envelope_id": envelope, "accepts_response_payload": false,
            "payload": {"type": "event_callback", "team_id": fake_slack::TEAM, "event_id": "Ev0RETRY", "event_time": 1_700_000_000,
                        "event": {"type": "app_mention", "user": "U0ANA", "text": "<@U0BOT> hi", "channel": OPS, "ts": "1700000000.000900"}}});
        if let Some(n) = retry {
            e["retry_attempt"] = json!(n);
            e["retry_reason"] = json!("timeout");
        }
        e
    };
    rig.slack().push(event("env-ev-1", None));
    rig.slack().push(event("env-ev-2", Some(1)));
    assert_eq!(rig.slack().wait_ack("env-ev-1").await, json!({"envelope_id": "env-ev-1"}));
    assert_eq!(rig.slack().wait_ack("env-ev-2").await, json!({"envelope_id": "env-ev-2"}));
    let store = hitl_bridge::store::Store::connect(&rig.settings.store.url).await.unwrap();
    let probe = |key: &str| hitl_bridge::store::InboxUpdate { update_id: key.into(), seq: 0, lane: OPS.into(), body: "{}".into() };
    let claim = hitl_bridge::store::ShowClaim { owner: "probe".into(), until_ms: 0 };
    let new = store.platform_inbox("slack").store(&[probe("event:Ev0RETRY"), probe("envelope:env-ev-2")], &claim, 0).await.unwrap();
    assert_eq!(new, ["envelope:env-ev-2"], "the event is stored under its event_id, the retry's envelope id was never a row");
    store.close().await;
    stop(rig).await;
}

/// A burst into one channel through a 429 storm: every card arrives, in the order
/// pushed, about one a second (Slack's pace for chat.postMessage in a channel).
#[tokio::test]
async fn a_burst_through_a_429_storm_arrives_whole_and_in_order() {
    let rig = start().await;
    rig.slack().rate_limit_next(3, 1);
    let started = std::time::Instant::now();
    for n in 0..5 {
        let body = json!({"approval_key": format!("burst-{n}"), "targets": [{"platform": "slack", "channel_id": OPS}],
                          "actions": [{"name": format!("step_{n}"), "args": {}}]});
        api(&rig).push(&body).await;
    }
    let posted = wait_until(|| async { (rig.slack().posted().len() == 5).then(|| rig.slack().posted()) }).await;
    let names: Vec<String> = posted
        .iter()
        .map(|(channel, ts)| rig.slack().message(channel, ts).unwrap()["text"].as_str().unwrap().trim_start_matches("🔐 Approval needed: ").to_owned())
        .collect();
    assert_eq!(names, ["step_0", "step_1", "step_2", "step_3", "step_4"]);
    assert!(started.elapsed() >= Duration::from_secs(4), "five posts to one channel take four seconds at least: {:?}", started.elapsed());
    let refused = rig.slack().errors().into_iter().filter(|(m, e)| m == "chat.postMessage" && e == "ratelimited").count();
    assert_eq!(refused, 3);
    stop(rig).await;
}

/// `check-config` (loading the settings) names the Slack key at fault: a token of
/// the wrong kind is refused before anything is sent.
#[test]
fn a_token_of_the_wrong_kind_is_named_at_load() {
    let load = |pairs: &[(&str, &str)]| Settings::from_pairs(pairs).err().map(|e| format!("{e:#}"));
    let base = [("slack.enabled", "true"), ("slack.app_token", "xapp-1-A-2")];
    let swapped = load(&[base[0], ("slack.bot_token", "xapp-1-A-2"), base[1]]).expect("refused");
    assert!(swapped.contains("slack.bot_token") && swapped.contains("xoxb-"), "{swapped}");
    let missing_app = load(&[base[0], ("slack.bot_token", "xoxb-1-2")]).expect("refused");
    assert!(missing_app.contains("slack.app_token"), "{missing_app}");
    assert_eq!(load(&[base[0], ("slack.bot_token", "xoxb-1-2"), base[1]]), None);
}
