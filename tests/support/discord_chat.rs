//! What a test sees and does on the fake Discord: the components of a card, the
//! button to click, the agent's texts, the edits and interaction callbacks the bridge
//! sent. Shared by the Discord suite and the cross-platform scenarios.

use serde_json::Value;

use super::fake_discord::{FakeDiscord, Recorded};
use super::wait_until;

/// Whether a message body carries an embed (a card, not plain agent text).
pub fn has_embed(body: &Value) -> bool {
    body["embeds"].as_array().is_some_and(|e| !e.is_empty())
}

/// Every component of a message or modal body, flattened.
pub fn components(body: &Value) -> Vec<Value> {
    let rows = body["components"].as_array().cloned().unwrap_or_default();
    rows.iter().flat_map(|r| r["components"].as_array().cloned().unwrap_or_default()).collect()
}

/// The custom_id of the button labelled `label` (exactly, or containing it).
pub fn button(body: &Value, label: &str) -> String {
    let all = components(body);
    let found = all.iter().find(|c| c["label"] == label).or_else(|| all.iter().find(|c| c["label"].as_str().is_some_and(|l| l.contains(label))));
    found.and_then(|c| c["custom_id"].as_str()).unwrap_or_else(|| panic!("no button {label:?} in {body}")).to_owned()
}

/// Waits for the interaction callback answering the pushed interaction `n` (by order).
pub async fn callbacks(fake: &FakeDiscord, n: usize) -> Vec<Recorded> {
    wait_until(|| async {
        let got: Vec<Recorded> = fake.requests().into_iter().filter(|r| r.path.ends_with("/callback")).collect();
        (got.len() >= n).then_some(got)
    })
    .await
}

/// Agent text sent to the channel (not embeds), in order.
pub fn texts(fake: &FakeDiscord) -> Vec<String> {
    fake.requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/messages") && r.status == 200 && !has_embed(&r.body))
        .filter_map(|r| r.body["content"].as_str().map(str::to_owned))
        .collect()
}

pub async fn wait_text(fake: &FakeDiscord, needle: &str) {
    wait_until(|| async { texts(fake).iter().any(|t| t.contains(needle)).then_some(()) }).await;
}

/// The last edit of message `id`.
pub async fn wait_edit(fake: &FakeDiscord, id: &str, pred: impl Fn(&Value) -> bool) -> Recorded {
    wait_until(|| async { fake.requests().into_iter().rev().find(|r| r.method == "PATCH" && r.path.ends_with(&format!("/messages/{id}")) && pred(&r.body)) })
        .await
}
