//! What a test does and sees on the fake Slack: a person's messages, mentions and
//! `/hitl` commands pushed as Socket Mode envelopes, their clicks and modal
//! submissions, and what the bridge posted back (the agent's texts, cards and their
//! edits, notices only one person sees). Shared by the Slack suites and the
//! cross-platform scenarios; the envelopes are Slack's own (Socket Mode and Events
//! API references), built by [`FakeSlack`] where it has a builder.

// Each test binary uses the part it needs.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

use super::fake_slack::{self, FakeSlack, Person, TEAM};
use super::wait_until;

/// A number no other envelope or message of the test binary uses.
pub fn unique() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(1);
    NEXT.fetch_add(1, Ordering::SeqCst)
}

/// A fresh `ts` for a person's message, apart from the fake's own (`1700000000.…`).
pub fn next_ts() -> String {
    format!("1690000000.{:06}", unique())
}

/// Pushes an `events_api` envelope carrying `event`; its envelope id.
pub fn push_event(fake: &FakeSlack, event: Value) -> String {
    let n = unique();
    let id = format!("env-ev-{n}");
    fake.push(json!({
        "type": "events_api", "envelope_id": id, "accepts_response_payload": false, "retry_attempt": 0, "retry_reason": "",
        "payload": {"token": "legacy", "team_id": TEAM, "api_app_id": "A0APP", "type": "event_callback",
                    "event_id": format!("Ev{n}"), "event_time": 1_700_000_000, "event": event}
    }));
    id
}

/// The `message` event of `who` writing `text` in `channel` (`channel_type` is
/// `channel` or `im`) at `ts`, in `thread` when it is a reply.
pub fn message(who: &str, channel: &str, channel_type: &str, text: &str, ts: &str, thread: Option<&str>) -> Value {
    let mut event =
        json!({"type": "message", "channel": channel, "channel_type": channel_type, "user": who, "text": text, "ts": ts, "event_ts": ts, "team": TEAM});
    if let Some(thread) = thread {
        event["thread_ts"] = json!(thread);
    }
    event
}

/// `who` types `/hitl text` in `channel`; the acknowledgement's payload (the answer
/// only they see).
pub async fn hitl(fake: &FakeSlack, who: &Person, channel: &str, text: &str) -> Value {
    let id = format!("env-cmd-{}", unique());
    fake.push(json!({
        "type": "slash_commands", "envelope_id": id, "accepts_response_payload": true,
        "payload": {"token": "legacy", "team_id": TEAM, "team_domain": "acme", "channel_id": channel, "channel_name": "ops",
                    "user_id": who.id, "user_name": who.username, "command": "/hitl", "text": text, "api_app_id": "A0APP",
                    "is_enterprise_install": "false", "response_url": "https://hooks.slack.com/commands/T0ACME/1/x", "trigger_id": "1.2.t"}
    }));
    let ack = fake.wait_ack(&id).await;
    assert_eq!(ack["envelope_id"], json!(id));
    ack["payload"].clone()
}

/// The agent's texts posted so far (messages without blocks), in order.
pub fn texts(fake: &FakeSlack) -> Vec<Value> {
    fake.bodies("chat.postMessage").into_iter().filter(|b| b.get("blocks").is_none()).collect()
}

/// Waits for an agent's text containing `needle`; its `chat.postMessage` body.
pub async fn wait_text(fake: &FakeSlack, needle: &str) -> Value {
    wait_until(|| async { texts(fake).into_iter().find(|b| b["text"].as_str().is_some_and(|t| t.contains(needle))) }).await
}

/// Waits for the `skip`-th notice only `user` sees (`chat.postEphemeral`); its body.
pub async fn ephemeral_to(fake: &FakeSlack, user: &str, skip: usize) -> Value {
    wait_until(|| async { fake.bodies("chat.postEphemeral").into_iter().filter(|b| b["user"] == user).nth(skip) }).await
}

/// Waits for a `chat.update` of message `ts` containing `needle`; the last such body.
pub async fn updated(fake: &FakeSlack, ts: &str, needle: &str) -> Value {
    wait_until(|| async { fake.bodies("chat.update").into_iter().rev().find(|b| b["ts"] == ts && b.to_string().contains(needle)) }).await
}

/// Waits for the `n`-th view opened (from 0).
pub async fn view(fake: &FakeSlack, n: usize) -> Value {
    wait_until(|| async { fake.views().get(n).cloned() }).await
}

/// Waits for the first card (a message with buttons) posted in `channel`; its `ts`.
pub async fn card(fake: &FakeSlack, channel: &str) -> String {
    wait_until(|| async {
        fake.posted().into_iter().find(|(c, ts)| c == channel && fake.message(c, ts).is_some_and(|m| fake_slack::has_buttons(&m))).map(|(_, ts)| ts)
    })
    .await
}

/// Pushes `envelope` and waits for its acknowledgement (with the payload Slack shows,
/// for a modal's submission).
pub async fn push_and_ack(fake: &FakeSlack, envelope: Value) -> Value {
    let id = envelope["envelope_id"].as_str().expect("an envelope id").to_owned();
    fake.push(envelope);
    fake.wait_ack(&id).await
}

/// Checks Slack refused nothing the bridge sent; the 429s a test provoked aside.
pub fn assert_nothing_refused(fake: &FakeSlack) {
    let refused: Vec<_> = fake.errors().into_iter().filter(|(_, e)| e != "ratelimited").collect();
    assert!(refused.is_empty(), "Slack would have refused: {refused:?}");
}

/// Checks Slack refused nothing the bridge sent but the errors a test provoked
/// (`allowed`, by Slack's error code) and the 429s.
pub fn assert_refused_only(fake: &FakeSlack, allowed: &[&str]) {
    let refused: Vec<_> = fake.errors().into_iter().filter(|(_, e)| e != "ratelimited" && !allowed.contains(&e.as_str())).collect();
    assert!(refused.is_empty(), "Slack would have refused: {refused:?}");
}

/// One person talking to the bot in one conversation: a channel in `slack.channels`
/// (each top-level message a thread of its own) or their DM with the bot (`D…`).
pub struct SlackChat<'a> {
    pub fake: &'a FakeSlack,
    pub channel: &'a str,
    pub person: Person,
}

impl SlackChat<'_> {
    fn channel_type(&self) -> &'static str {
        if self.channel.starts_with('D') { "im" } else { "channel" }
    }

    /// Writes `text` as a new top-level message; its `ts` (in a channel, the thread
    /// the agent answers in).
    pub fn say(&self, text: &str) -> String {
        let ts = next_ts();
        push_event(self.fake, message(&self.person.id, self.channel, self.channel_type(), text, &ts, None));
        ts
    }

    /// Writes `text` in the thread started at `thread`; its `ts`.
    pub fn reply(&self, thread: &str, text: &str) -> String {
        let ts = next_ts();
        push_event(self.fake, message(&self.person.id, self.channel, self.channel_type(), text, &ts, Some(thread)));
        ts
    }

    /// Types `/hitl text` here; the answer only they see.
    pub async fn hitl(&self, text: &str) -> Value {
        hitl(self.fake, &self.person, self.channel, text).await
    }

    /// Waits for the agent's text containing `needle` here; its body.
    pub async fn text_with(&self, needle: &str) -> Value {
        let channel = self.channel;
        wait_until(|| async { texts(self.fake).into_iter().find(|b| b["channel"] == channel && b["text"].as_str().is_some_and(|t| t.contains(needle))) }).await
    }

    /// Waits for the first card posted here; its `ts`.
    pub async fn card(&self) -> String {
        card(self.fake, self.channel).await
    }

    /// The card `ts` as it stands.
    pub fn message(&self, ts: &str) -> Value {
        self.fake.message(self.channel, ts).unwrap_or_else(|| panic!("no message {ts} in {}", self.channel))
    }

    /// Clicks the button whose text contains `label` on message `ts`, with the
    /// message's thread in the payload as Slack sends it; the acknowledgement.
    pub async fn click(&self, ts: &str, label: &str) -> Value {
        let message = self.message(ts);
        let button = fake_slack::button(&message, label);
        let mut envelope = self.fake.click_envelope(
            &self.person,
            self.channel,
            ts,
            button["action_id"].as_str().expect("an action_id"),
            button["value"].as_str().expect("a value"),
        );
        if let Some(thread) = message.get("thread_ts") {
            envelope["payload"]["message"]["thread_ts"] = thread.clone();
            envelope["payload"]["container"]["thread_ts"] = thread.clone();
        }
        push_and_ack(self.fake, envelope).await
    }

    /// Submits the `n`-th view opened (from 0) with `values` typed into its inputs as
    /// (block_id, action_id, text); the acknowledgement (its payload is what the
    /// modal shows, none when it closes).
    pub async fn submit(&self, n: usize, values: &[(&str, &str, &str)]) -> Value {
        let view = view(self.fake, n).await;
        push_and_ack(self.fake, self.fake.submission_envelope(&self.person, &view, values)).await
    }
}

/// `v0=…`, the `X-Slack-Signature` of `body` sent at `timestamp`, as Slack signs an
/// HTTP post with the app's signing secret (HMAC-SHA256 of `v0:{timestamp}:{body}`).
pub fn sign(secret: &str, timestamp: i64, body: &str) -> String {
    use hmac::{Hmac, Mac};
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(format!("v0:{timestamp}:{body}").as_bytes());
    format!("v0={}", hex::encode(mac.finalize().into_bytes()))
}

/// A loopback address nothing listens on, for `slack.events_listen` (HTTP mode).
pub fn free_addr() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    format!("127.0.0.1:{port}")
}
