//! Talking to the agent from Slack: messages in `slack.channels`, DMs and mentions
//! pushed over Socket Mode by the fake Slack (tests/support/fake_slack.rs) reach the
//! reference agent, whose answers are posted in the message's thread; `/hitl` commands
//! are answered in their acknowledgement, to the person only. Each test asserts the
//! exact JSON that crossed into Slack or into the agent where it matters.

mod support;

use hitl_bridge::platform::slack::settings::SlackSettings;
use serde_json::{Value, json};
use support::fake_slack::{self, BOT_USER, OPS, Person, TEAM};
use support::slack_chat::{self, assert_nothing_refused, hitl, push_event, texts, wait_text};
use support::{Chat, Harness, session_id, wait_approvals, wait_until};

const ANA: &str = "U0ANA";
const STRANGER: &str = "U0MAL";
/// A channel the bot is in that is not in `slack.channels`.
const DEV: &str = "C0DEV";

/// A bridge on the fake Slack with the reference agent; OPS is a chat channel, DEV a
/// channel the bot is in that is not, and Ana may talk.
async fn start() -> Harness {
    let harness = Harness::on(Chat::Slack)
        .tweak(|s| {
            s.platforms.get_mut::<SlackSettings>().channels = vec![OPS.into()];
            s.access.users = vec![format!("slack:{ANA}")];
        })
        .start()
        .await;
    harness.slack().channel(DEV, true);
    harness
}

/// `who` writes `text` in `channel` (a `message` event), at `ts`, in `thread`; the
/// envelope id.
fn say(rig: &Harness, who: &str, channel: &str, channel_type: &str, text: &str, ts: &str, thread: Option<&str>) -> String {
    push_event(rig.slack(), slack_chat::message(who, channel, channel_type, text, ts, thread))
}

/// What the agent was told, as (text, user) per message.
fn heard(rig: &Harness) -> Vec<(Value, Value)> {
    rig.sim().commands().into_iter().filter(|c| c["type"] == "message").map(|c| (c["content"][0]["text"].clone(), c["user"].clone())).collect()
}

/// Stops the bridge, checks Slack refused nothing it sent, and stops the rest.
async fn stop(mut rig: Harness) {
    rig.stop_bridge().await;
    assert_nothing_refused(rig.slack());
    rig.shutdown().await;
}

/// The reference agent's answer to a message it has no scenario for.
fn echo(text: &str) -> String {
    format!("Tôi đã nhận: {text}. Từ khóa: hỏi 2 lần, trade, two actions, timeout, shapes, multi, malformed.")
}

fn ana_user() -> Value {
    json!({"platform": "slack", "id": ANA, "name": ANA})
}

/// A top-level message in a configured channel reaches the agent, which answers in
/// the thread the message starts; a reply in that thread continues the same session.
#[tokio::test]
async fn a_channel_message_is_answered_in_its_thread_and_the_thread_keeps_its_session() {
    let rig = start().await;
    let top = "1700000100.000100";
    say(&rig, ANA, OPS, "channel", "xin chào", top, None);
    let answer = wait_text(rig.slack(), "Tôi đã nhận: xin chào.").await;
    assert_eq!(answer, json!({"channel": OPS, "text": echo("xin chào"), "thread_ts": top}));
    say(&rig, ANA, OPS, "channel", "lần hai", "1700000101.000100", Some(top));
    wait_text(rig.slack(), "Tôi đã nhận: lần hai.").await;
    assert_eq!(heard(&rig), vec![(json!("xin chào"), ana_user()), (json!("lần hai"), ana_user())]);
    let sessions: Vec<Value> = rig.sim().commands().into_iter().filter(|c| c["type"] == "message").map(|c| c["session_id"].clone()).collect();
    assert_eq!(sessions[0], sessions[1], "one thread, one session");
    // Another top-level message is another conversation.
    say(&rig, ANA, OPS, "channel", "chủ đề mới", "1700000200.000100", None);
    let other = wait_text(rig.slack(), "Tôi đã nhận: chủ đề mới.").await;
    assert_eq!(other["thread_ts"], "1700000200.000100");
    let sessions: Vec<Value> = rig.sim().commands().into_iter().filter(|c| c["type"] == "message").map(|c| c["session_id"].clone()).collect();
    assert_ne!(sessions[2], sessions[0], "a new thread, a new session");
    stop(rig).await;
}

/// A DM to the bot is the person's own conversation: answered in the DM, no thread.
#[tokio::test]
async fn a_dm_is_answered_in_the_dm() {
    let rig = start().await;
    rig.slack().channel("D0ANA", true);
    say(&rig, ANA, "D0ANA", "im", "xin chào", "1700000100.000100", None);
    let answer = wait_text(rig.slack(), "Tôi đã nhận: xin chào.").await;
    assert_eq!(answer, json!({"channel": "D0ANA", "text": echo("xin chào")}));
    assert_eq!(heard(&rig), vec![(json!("xin chào"), ana_user())]);
    stop(rig).await;
}

/// In a channel not configured only a mention reaches the agent, without the mention;
/// the `message` event Slack also sends for it is not heard a second time, and a mention
/// in a configured channel is heard once too.
#[tokio::test]
async fn a_mention_elsewhere_reaches_the_agent_once_without_the_mention() {
    let rig = start().await;
    let ts = "1700000100.000100";
    say(&rig, ANA, DEV, "channel", "not for the bot", "1700000099.000100", None);
    say(&rig, ANA, DEV, "channel", &format!("<@{BOT_USER}> xin chào"), ts, None);
    push_event(
        rig.slack(),
        json!({"type": "app_mention", "channel": DEV, "user": ANA, "text": format!("<@{BOT_USER}> xin chào"), "ts": ts, "event_ts": ts, "team": TEAM}),
    );
    let answer = wait_text(rig.slack(), "Tôi đã nhận: xin chào.").await;
    assert_eq!(answer, json!({"channel": DEV, "text": echo("xin chào"), "thread_ts": ts}));
    // In OPS both events arrive too: the message event carries it.
    let ops_ts = "1700000300.000100";
    push_event(
        rig.slack(),
        json!({"type": "app_mention", "channel": OPS, "user": ANA, "text": format!("<@{BOT_USER}> lần hai"), "ts": ops_ts, "event_ts": ops_ts, "team": TEAM}),
    );
    say(&rig, ANA, OPS, "channel", &format!("<@{BOT_USER}> lần hai"), ops_ts, None);
    wait_text(rig.slack(), "Tôi đã nhận: lần hai.").await;
    tokio::time::sleep(fake_slack::SETTLE).await;
    assert_eq!(heard(&rig), vec![(json!("xin chào"), ana_user()), (json!("lần hai"), ana_user())]);
    stop(rig).await;
}

/// The bot's own messages, other bots', edits and deletes never reach the agent.
#[tokio::test]
async fn the_bots_own_messages_edits_and_deletes_are_ignored() {
    let rig = start().await;
    let ts = "1700000100.000100";
    say(&rig, BOT_USER, OPS, "channel", "Tôi đã nhận: vòng lặp", ts, None);
    push_event(
        rig.slack(),
        json!({"type": "message", "channel": OPS, "channel_type": "channel", "user": BOT_USER, "bot_id": "B0BOT", "text": "card", "ts": ts}),
    );
    push_event(
        rig.slack(),
        json!({"type": "message", "subtype": "bot_message", "channel": OPS, "channel_type": "channel", "bot_id": "B0CI", "text": "ci says", "ts": ts}),
    );
    push_event(
        rig.slack(),
        json!({"type": "message", "subtype": "message_changed", "channel": OPS, "channel_type": "channel", "hidden": true, "ts": ts,
                     "message": {"type": "message", "user": ANA, "text": "sửa", "ts": ts}}),
    );
    push_event(
        rig.slack(),
        json!({"type": "message", "subtype": "message_deleted", "channel": OPS, "channel_type": "channel", "hidden": true, "ts": ts, "deleted_ts": ts}),
    );
    say(&rig, ANA, OPS, "channel", "xin chào", "1700000200.000100", None);
    wait_text(rig.slack(), "Tôi đã nhận: xin chào.").await;
    tokio::time::sleep(fake_slack::SETTLE).await;
    assert_eq!(heard(&rig), vec![(json!("xin chào"), ana_user())], "only the person's message");
    assert_eq!(texts(rig.slack()).len(), 1, "one answer: {:?}", texts(rig.slack()));
    stop(rig).await;
}

/// A stranger is told once per refusal window, in a message only they see, and
/// nothing reaches the agent.
#[tokio::test]
async fn a_stranger_is_refused_once_and_reaches_nothing() {
    let rig = start().await;
    let ts = "1700000100.000100";
    say(&rig, STRANGER, OPS, "channel", "hello", ts, None);
    let refusal = wait_until(|| async { rig.slack().bodies("chat.postEphemeral").into_iter().next() }).await;
    assert_eq!(refusal["channel"], OPS);
    assert_eq!(refusal["user"], STRANGER);
    assert_eq!(refusal["thread_ts"], ts);
    assert!(refusal["text"].as_str().is_some_and(|t| t.contains(&format!("slack:{STRANGER}"))), "{refusal}");
    say(&rig, STRANGER, OPS, "channel", "hello again", "1700000101.000100", Some(ts));
    say(&rig, ANA, OPS, "channel", "xin chào", "1700000200.000100", None);
    wait_text(rig.slack(), "Tôi đã nhận: xin chào.").await;
    tokio::time::sleep(fake_slack::SETTLE).await;
    assert_eq!(rig.slack().bodies("chat.postEphemeral").len(), 1, "told once within the window");
    assert_eq!(heard(&rig), vec![(json!("xin chào"), ana_user())]);
    stop(rig).await;
}

/// `/hitl id` is answered to anyone, in the acknowledgement only (nothing posted), with
/// their `slack:U…` id; an unknown subcommand gets the usage.
#[tokio::test]
async fn hitl_id_is_answered_only_to_the_person() {
    let rig = start().await;
    let answer = hitl(rig.slack(), &Person::new(STRANGER, "mallory"), OPS, "id").await;
    assert_eq!(
        answer,
        json!({"response_type": "ephemeral", "text": format!(
            "🆔 You: slack:{STRANGER}  (access.users, access.approvers, access.admins)\nThis chat: slack:{OPS}  (access.chats, routing.channels)"
        )})
    );
    let usage = hitl(rig.slack(), &Person::new(ANA, "ana"), OPS, "dance").await;
    assert_eq!(usage["response_type"], "ephemeral");
    assert!(usage["text"].as_str().is_some_and(|t| t.starts_with("Usage:\n• /hitl new: ") && t.contains("• /hitl pair CODE: ")), "{usage}");
    // A stranger's `pending` is refused, also to them alone.
    let refused = hitl(rig.slack(), &Person::new(STRANGER, "mallory"), OPS, "pending").await;
    assert!(refused["text"].as_str().is_some_and(|t| t.contains(&format!("slack:{STRANGER}"))), "{refused}");
    assert!(rig.slack().bodies("chat.postMessage").is_empty() && rig.slack().bodies("chat.postEphemeral").is_empty(), "nothing posted");
    stop(rig).await;
}

/// A turn in a DM asks for an approval: the card is posted in the DM, `/hitl pending`
/// there lists it, Ana's click approves it (the existing click path) and the agent
/// goes on; then `pending` says nothing waits.
#[tokio::test]
async fn a_turns_approval_is_a_card_listed_by_pending_and_clicked() {
    let rig = start().await;
    say(&rig, ANA, "D0ANA", "im", "trade", "1700000100.000100", None);
    let card_ts = wait_until(|| async {
        rig.slack().posted().into_iter().find(|(channel, ts)| rig.slack().message(channel, ts).is_some_and(|m| fake_slack::has_buttons(&m))).map(|(_, ts)| ts)
    })
    .await;
    let card = rig.slack().message("D0ANA", &card_ts).expect("the card");
    assert!(fake_slack::has_buttons(&card));
    let ana = Person::new(ANA, "ana");
    let pending = hitl(rig.slack(), &ana, "D0ANA", "pending").await;
    let text = pending["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("⏳ Waiting for a decision: execute_trade · ⏰ "), "{pending}");
    rig.slack().click(&ana, "D0ANA", &card_ts, "Approve");
    let got = wait_approvals(rig.sim(), 1).await;
    let s = session_id(rig.sim());
    assert_eq!(got, vec![json!({"type": "approval", "session_id": s, "approval_key": format!("{s}_1"), "decisions": [{"type": "approve"}]})]);
    wait_text(rig.slack(), "Đã đặt lệnh: buy 100 VNM @ 82000").await;
    let after = hitl(rig.slack(), &ana, "D0ANA", "pending").await;
    assert_eq!(after, json!({"response_type": "ephemeral", "text": "Nothing is waiting for a decision here."}));
    stop(rig).await;
}

/// In a DM with the bot, `/hitl new` starts a session the next message goes to and
/// `/hitl cancel` answers for it; `web` is refused outside the DM and `pair` to
/// someone who is no admin, each to the person alone.
#[tokio::test]
async fn hitl_new_cancel_web_and_pair() {
    let rig = start().await;
    let ana = Person::new(ANA, "ana");
    assert_eq!(hitl(rig.slack(), &ana, "D0ANA", "cancel").await["text"], "There is no session in this chat yet.");
    say(&rig, ANA, "D0ANA", "im", "xin chào", "1700000100.000100", None);
    wait_text(rig.slack(), &echo("xin chào")).await;
    assert_eq!(hitl(rig.slack(), &ana, "D0ANA", "new").await, json!({"response_type": "ephemeral", "text": "Started a new session."}));
    say(&rig, ANA, "D0ANA", "im", "lần hai", "1700000200.000100", None);
    wait_text(rig.slack(), &echo("lần hai")).await;
    let sessions: Vec<Value> = rig.sim().commands().into_iter().filter(|c| c["type"] == "message").map(|c| c["session_id"].clone()).collect();
    assert_eq!(sessions.len(), 2);
    assert_ne!(sessions[0], sessions[1], "/hitl new started another session");
    assert_eq!(hitl(rig.slack(), &ana, "D0ANA", "cancel").await["text"], "Cancelled.");
    assert_eq!(hitl(rig.slack(), &ana, OPS, "web").await["text"], "/web works in a direct message with the bot only: a sign-in link is personal.");
    assert_eq!(hitl(rig.slack(), &ana, "D0ANA", "pair ABCD-1234").await["text"], "⛔ Only an admin (access.admins) may approve pairing codes.");
    stop(rig).await;
}

/// A conversation's chat is handled in the order Slack delivered it: `/hitl new`
/// typed just before a message (whose handling has a Slack call to make first) still
/// starts the session that message and the next one go to.
#[tokio::test]
async fn hitl_new_then_a_message_keep_their_order() {
    let rig = start().await;
    let id = format!("env-cmd-{}", slack_chat::unique());
    rig.slack().push(json!({
        "type": "slash_commands", "envelope_id": id, "accepts_response_payload": true,
        "payload": {"team_id": TEAM, "channel_id": "D0ANA", "channel_name": "directmessage", "user_id": ANA, "user_name": "ana",
                    "command": "/hitl", "text": "new", "response_url": "https://hooks.slack.com/commands/T0ACME/2/y", "trigger_id": "1.3.t"}
    }));
    say(&rig, ANA, "D0ANA", "im", "xin chào", "1700000100.000100", None);
    assert_eq!(rig.slack().wait_ack(&id).await["payload"]["text"], "Started a new session.");
    wait_text(rig.slack(), &echo("xin chào")).await;
    say(&rig, ANA, "D0ANA", "im", "lần hai", "1700000200.000100", None);
    wait_text(rig.slack(), &echo("lần hai")).await;
    let sessions: Vec<Value> = rig.sim().commands().into_iter().filter(|c| c["type"] == "message").map(|c| c["session_id"].clone()).collect();
    assert_eq!(sessions.len(), 2);
    assert_eq!(sessions[0], sessions[1], "both messages went to the session /hitl new started");
    stop(rig).await;
}

/// HTTP mode: a signed Events API post of a message reaches the agent, answered in its
/// thread, and a signed `/hitl id` form post is answered in the 200 body, to the person.
#[tokio::test]
async fn http_mode_hears_messages_and_answers_hitl_in_the_response() {
    const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
    let listen = slack_chat::free_addr();
    let rig = Harness::on(Chat::Slack)
        .settings(&[("slack.mode", "http"), ("slack.signing_secret", SECRET), ("slack.events_listen", &listen)])
        .tweak(|s| {
            s.platforms.get_mut::<SlackSettings>().channels = vec![OPS.into()];
            s.access.users = vec![format!("slack:{ANA}")];
        })
        .start()
        .await;
    let http = reqwest::Client::new();
    let post = |content_type: &'static str, body: String| {
        let http = http.clone();
        let url = format!("http://{listen}/slack/events");
        async move {
            let now = hitl_bridge::clock::now_ms() / 1000;
            let response = http
                .post(url)
                .header("content-type", content_type)
                .header("x-slack-request-timestamp", now.to_string())
                .header("x-slack-signature", slack_chat::sign(SECRET, now, &body))
                .body(body)
                .send()
                .await
                .expect("post");
            (response.status().as_u16(), response.text().await.unwrap_or_default())
        }
    };
    let ts = "1700000100.000100";
    let event = json!({"token": "legacy", "team_id": TEAM, "api_app_id": "A0APP", "type": "event_callback", "event_id": "Ev0HTTP1", "event_time": 1_700_000_100,
                       "event": {"type": "message", "channel": OPS, "channel_type": "channel", "user": ANA, "text": "xin chào", "ts": ts, "event_ts": ts, "team": TEAM}});
    assert_eq!(post("application/json", event.to_string()).await.0, 200);
    let answer = wait_text(rig.slack(), &echo("xin chào")).await;
    assert_eq!(answer, json!({"channel": OPS, "text": echo("xin chào"), "thread_ts": ts}));
    let form = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs([
            ("command", "/hitl"),
            ("text", "id"),
            ("user_id", ANA),
            ("user_name", "ana"),
            ("channel_id", OPS),
            ("team_id", TEAM),
            ("trigger_id", "5.5.h"),
        ])
        .finish();
    let (status, body) = post("application/x-www-form-urlencoded", form).await;
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"response_type": "ephemeral", "text": format!(
            "🆔 You: slack:{ANA}  (access.users, access.approvers, access.admins)\nThis chat: slack:{OPS}  (access.chats, routing.channels)"
        )})
    );
    stop(rig).await;
}
