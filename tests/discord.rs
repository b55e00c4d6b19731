//! End to end through Discord: reference agent ↔ bridge ↔ the real serenity client ↔
//! a fake Discord (REST + gateway). Messages and clicks are pushed into the fake's
//! gateway exactly as Discord would send them; the tests assert the exact commands the
//! agent received and snapshot the payloads the bridge sent to Discord.

mod support;
#[path = "support/fake_discord.rs"]
mod fake_discord;

use std::time::Duration;

use fake_discord::*;
use hitl_bridge::app::App;
use hitl_bridge::config::Settings;
use hitl_bridge::store::Store;
use serde_json::{Value, json};
use support::{approvals, session_id, start_sim, wait_approvals, wait_until};

const THAO: &str = "500000000000000001";
const STRANGER: &str = "500000000000000666";
const LEAD_ROLE: &str = "600000000000000777";

fn thao() -> Value {
    user(THAO, "Thảo")
}

/// The agent, the fake Discord and a bridge wired to both.
struct Rig {
    sim: hitl_bridge::agent_sim::SimHandle,
    fake: FakeDiscord,
    dir: tempfile::TempDir,
    settings: Settings,
    app: Option<App>,
}

impl Rig {
    async fn start(timeout_secs: u64, extra: &[(&str, &str)]) -> Rig {
        let sim = start_sim(timeout_secs).await;
        let fake = FakeDiscord::start().await;
        let dir = tempfile::tempdir().expect("tempdir");
        let api = fake.api_url();
        let mut pairs: Vec<(&str, &str)> = vec![
            ("console.enabled", "false"),
            ("discord.enabled", "true"),
            ("discord.token", "fake-bot-token"),
            ("discord.api_url", &api),
            ("tokens.secret", "test-secret"),
        ];
        pairs.extend_from_slice(extra);
        let mut settings = support::settings(&sim, &dir, &pairs);
        settings.discord.channels = vec![CHANNEL_ID.into()];
        settings.access.approver_roles = vec![LEAD_ROLE.into()];
        let mut rig = Rig { sim, fake, dir, settings, app: None };
        rig.boot(1).await;
        rig
    }

    /// Starts the bridge and waits until it has identified (the `n`-th time) and
    /// registered its slash commands.
    async fn boot(&mut self, n: u32) {
        let registrations = |fake: &FakeDiscord| fake.requests().iter().filter(|r| r.method == "PUT" && r.path.ends_with("/commands")).count();
        let before = registrations(&self.fake);
        let app = App::start(&self.settings, None::<(tokio::io::BufReader<tokio::io::Empty>, tokio::io::Sink)>).await.expect("bridge starts");
        self.app = Some(app);
        self.fake.wait_identified(n).await;
        let fake = &self.fake;
        wait_until(|| async move { (registrations(fake) > before).then_some(()) }).await;
    }

    async fn restart(&mut self) {
        if let Some(app) = self.app.take() {
            app.stop().await;
        }
        let n = self.fake.identifies() + 1;
        self.boot(n).await;
    }

    /// A chat message from `who` in the configured channel.
    fn say(&self, who: &Value, text: &str) {
        self.fake.dispatch("MESSAGE_CREATE", guild_message(&self.fake, CHANNEL_ID, who, text, false));
    }

    /// Waits for the next interaction message (a POST with an embed) after `skip`
    /// requests; returns it with its message id.
    async fn wait_card(&self, skip: usize) -> (Recorded, String) {
        let card = self
            .fake
            .wait_request(skip, |r| r.method == "POST" && r.path.ends_with("/messages") && has_embed(&r.body))
            .await;
        let id = card.response.as_ref().and_then(|m| m["id"].as_str()).expect("message id").to_owned();
        (card, id)
    }

    fn push(&self, interaction: Value) {
        self.fake.dispatch("INTERACTION_CREATE", interaction);
    }

    /// Clicks the button whose label contains `label` on `card`.
    fn click(&self, card: &Recorded, message_id: &str, label: &str, who: &Value, roles: &[&str]) {
        let id = button(&card.body, label);
        self.push(click(&self.fake, &id, message_id, CHANNEL_ID, who, roles));
    }

    async fn stop(mut self) {
        if let Some(app) = self.app.take() {
            app.stop().await;
        }
        self.sim.shutdown().await;
        self.fake.shutdown().await;
        drop(self.dir);
    }
}

fn has_embed(body: &Value) -> bool {
    body["embeds"].as_array().is_some_and(|e| !e.is_empty())
}

/// Every component of a message or modal body, flattened.
fn components(body: &Value) -> Vec<Value> {
    let rows = body["components"].as_array().cloned().unwrap_or_default();
    rows.iter().flat_map(|r| r["components"].as_array().cloned().unwrap_or_default()).collect()
}

/// The custom_id of the button labelled `label` (exactly, or containing it).
fn button(body: &Value, label: &str) -> String {
    let all = components(body);
    let found = all
        .iter()
        .find(|c| c["label"] == label)
        .or_else(|| all.iter().find(|c| c["label"].as_str().is_some_and(|l| l.contains(label))));
    found.and_then(|c| c["custom_id"].as_str()).unwrap_or_else(|| panic!("no button {label:?} in {body}")).to_owned()
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
        if b.len() == 9 && b[0].is_ascii_digit() && b[1].is_ascii_digit() && b[2] == ':' && b[3].is_ascii_digit() && b[4].is_ascii_digit() && window.ends_with(" UTC") {
            masked += "[hh:mm] UTC";
            i += 9;
        } else {
            masked.push(chars[i]);
            i += 1;
        }
    }
    masked
}

/// The snapshot form of a recorded request: method, path with ids masked, body.
fn shot(r: &Recorded) -> Value {
    let path: Vec<String> = r
        .path
        .split('/')
        .map(|seg| if seg.len() > 10 && seg.chars().all(|c| c.is_ascii_digit()) || seg.starts_with("tok-") { "[id]".to_owned() } else { seg.to_owned() })
        .collect();
    json!({"method": r.method, "path": path.join("/"), "body": mask(&r.body), "files": r.files.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>()})
}

/// Waits for the interaction callback answering the pushed interaction `n` (by order).
async fn callbacks(fake: &FakeDiscord, n: usize) -> Vec<Recorded> {
    wait_until(|| async {
        let got: Vec<Recorded> = fake.requests().into_iter().filter(|r| r.path.ends_with("/callback")).collect();
        (got.len() >= n).then_some(got)
    })
    .await
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

/// Agent text sent to the channel (not embeds), in order.
fn texts(fake: &FakeDiscord) -> Vec<String> {
    fake.requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/messages") && !has_embed(&r.body))
        .filter_map(|r| r.body["content"].as_str().map(str::to_owned))
        .collect()
}

async fn wait_text(fake: &FakeDiscord, needle: &str) {
    wait_until(|| async { texts(fake).iter().any(|t| t.contains(needle)).then_some(()) }).await;
}

/// The last edit of message `id`.
async fn wait_edit(fake: &FakeDiscord, id: &str, pred: impl Fn(&Value) -> bool) -> Recorded {
    wait_until(|| async {
        fake.requests().into_iter().rev().find(|r| r.method == "PATCH" && r.path.ends_with(&format!("/messages/{id}")) && pred(&r.body))
    })
    .await
}

// ---------------------------------------------------------------------------------

/// Seed 002: approve; the card shows the args, the outcome replaces the buttons.
#[tokio::test]
async fn seed_002_approve() {
    let rig = Rig::start(20, &[]).await;
    rig.say(&thao(), "trade");
    let (card, id) = rig.wait_card(0).await;
    insta::assert_json_snapshot!("seed_002_card", shot(&card));
    rig.click(&card, &id, "Approve", &thao(), &[]);
    let got = wait_approvals(&rig.sim, 1).await;
    let s = session_id(&rig.sim);
    assert_eq!(got, vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),"decisions":[{"type":"approve"}]})]);
    let ack = callbacks(&rig.fake, 1).await;
    assert_eq!(ack[0].body, json!({"type":6,"data":null}), "a deferred update first");
    let done = wait_edit(&rig.fake, &id, |b| b["components"] == json!([])).await;
    insta::assert_json_snapshot!("seed_002_approved", shot(&done));
    wait_text(&rig.fake, "Đã đặt lệnh: buy 100 VNM @ 82000").await;
    rig.stop().await;
}
