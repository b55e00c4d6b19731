//! The few Slack payloads the bridge reads, as Slack documents them (Socket Mode
//! envelopes; the `block_actions` and `view_submission` interaction payloads), with
//! only the fields it uses: unknown fields are ignored, and a payload that does not
//! read is logged and skipped by the caller.

use serde::Deserialize;
use serde_json::Value;

/// A Socket Mode message: `hello`, `disconnect`, or an envelope (`events_api`,
/// `interactive`, `slash_commands`) to acknowledge by its `envelope_id`.
#[derive(Debug, Clone, Deserialize)]
pub struct Envelope {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub envelope_id: Option<String>,
    #[serde(default)]
    pub payload: Value,
    /// Set when Slack delivers an Events API envelope again (`retry_reason` says why).
    #[serde(default)]
    pub retry_attempt: Option<u32>,
    /// `disconnect`: why (`refresh_requested`, `warning`, `link_disabled`).
    #[serde(default)]
    pub reason: Option<String>,
    /// Whether Slack waits for a payload in the acknowledgement (view submissions).
    #[serde(default)]
    pub accepts_response_payload: bool,
}

impl Envelope {
    /// The key an envelope is stored under: the same for every delivery of it. Slack
    /// sends an event again (`retry_attempt`) under a new envelope id but the same
    /// `event_id`; other envelopes are not sent again and are known by their own id.
    pub fn dedup_key(&self) -> Option<String> {
        match (self.kind.as_str(), self.payload["event_id"].as_str()) {
            ("events_api", Some(event)) => Some(format!("event:{event}")),
            _ => self.envelope_id.as_ref().map(|id| format!("envelope:{id}")),
        }
    }
}

/// An `interactive` envelope's payload.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Interactive {
    BlockActions(BlockActions),
    ViewSubmission(ViewSubmission),
    #[serde(other)]
    Other,
}

/// Someone clicked a button in a message.
#[derive(Debug, Clone, Deserialize)]
pub struct BlockActions {
    pub user: User,
    #[serde(default)]
    pub team: Option<Team>,
    #[serde(default)]
    pub channel: Option<Channel>,
    #[serde(default)]
    pub container: Option<Container>,
    #[serde(default)]
    pub message: Option<Message>,
    /// Valid for 3 seconds: opens a modal.
    #[serde(default)]
    pub trigger_id: Option<String>,
    #[serde(default)]
    pub actions: Vec<ActionClicked>,
}

impl BlockActions {
    /// The conversation the clicked message is in.
    pub fn channel_id(&self) -> Option<&str> {
        self.container.as_ref().and_then(|c| c.channel_id.as_deref()).or(self.channel.as_ref().map(|c| c.id.as_str()))
    }

    /// The thread the clicked message is in, if any (an ephemeral notice goes there).
    pub fn thread_ts(&self) -> Option<&str> {
        self.message.as_ref().and_then(|m| m.thread_ts.as_deref()).or(self.container.as_ref().and_then(|c| c.thread_ts.as_deref()))
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct User {
    pub id: String,
    #[serde(default)]
    pub username: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub team_id: Option<String>,
}

impl User {
    /// How the person is named on cards and in the audit log.
    pub fn display(&self) -> String {
        self.username.clone().or_else(|| self.name.clone()).filter(|n| !n.is_empty()).unwrap_or_else(|| self.id.clone())
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct Team {
    pub id: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Channel {
    pub id: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Container {
    #[serde(default)]
    pub channel_id: Option<String>,
    #[serde(default)]
    pub message_ts: Option<String>,
    #[serde(default)]
    pub thread_ts: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Message {
    pub ts: String,
    #[serde(default)]
    pub thread_ts: Option<String>,
}

/// One clicked element: a button's `value` is the signed token; a select menu or
/// checkbox group sends its choice in `selected_option` (`static_select`) or its whole
/// selection in `selected_options` (`checkboxes`, `multi_static_select`).
#[derive(Debug, Clone, Deserialize)]
pub struct ActionClicked {
    pub action_id: String,
    #[serde(default, rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub value: Option<String>,
    #[serde(default)]
    pub selected_option: Option<ChosenOption>,
    #[serde(default)]
    pub selected_options: Option<Vec<ChosenOption>>,
}

/// An option chosen in a select menu or checkbox group: its `value` is the signed token.
#[derive(Debug, Clone, Deserialize)]
pub struct ChosenOption {
    pub value: String,
}

/// Someone submitted a modal.
#[derive(Debug, Clone, Deserialize)]
pub struct ViewSubmission {
    pub user: User,
    #[serde(default)]
    pub team: Option<Team>,
    pub view: View,
}

#[derive(Debug, Clone, Deserialize)]
pub struct View {
    #[serde(default)]
    pub private_metadata: String,
    #[serde(default)]
    pub state: ViewState,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ViewState {
    /// `block_id` → `action_id` → `{"type": …, "value": …}`.
    #[serde(default)]
    pub values: Value,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_redelivered_event_has_the_key_of_its_first_delivery() {
        let first: Envelope = serde_json::from_value(json!({"type": "events_api", "envelope_id": "e1", "payload": {"event_id": "Ev1"}})).unwrap();
        let again: Envelope = serde_json::from_value(
            json!({"type": "events_api", "envelope_id": "e2", "retry_attempt": 1, "retry_reason": "timeout", "payload": {"event_id": "Ev1"}}),
        )
        .unwrap();
        assert_eq!(first.dedup_key(), again.dedup_key());
        let click: Envelope = serde_json::from_value(json!({"type": "interactive", "envelope_id": "e3", "payload": {"type": "block_actions"}})).unwrap();
        assert_eq!(click.dedup_key().as_deref(), Some("envelope:e3"));
        let hello: Envelope = serde_json::from_value(json!({"type": "hello", "num_connections": 1})).unwrap();
        assert_eq!(hello.dedup_key(), None);
    }

    #[test]
    fn a_click_reads_where_it_happened() {
        let payload: Interactive = serde_json::from_value(json!({
            "type": "block_actions", "user": {"id": "U0ANA", "username": "ana", "name": "ana", "team_id": "T0ACME"},
            "team": {"id": "T0ACME", "domain": "acme"}, "trigger_id": "1.2.abc",
            "container": {"type": "message", "message_ts": "1700000000.000100", "channel_id": "C0OPS", "is_ephemeral": false},
            "channel": {"id": "C0OPS", "name": "ops"}, "message": {"ts": "1700000000.000100", "thread_ts": "1699999999.000001"},
            "actions": [{"action_id": "hitl.ap.0", "block_id": "buttons.0", "type": "button", "value": "1:x:ap.0:t", "action_ts": "1.2"}]
        }))
        .unwrap();
        let Interactive::BlockActions(click) = payload else { panic!("block_actions") };
        assert_eq!((click.channel_id(), click.thread_ts()), (Some("C0OPS"), Some("1699999999.000001")));
        assert_eq!(click.user.display(), "ana");
        assert_eq!(click.actions[0].value.as_deref(), Some("1:x:ap.0:t"));
        let other: Interactive = serde_json::from_value(json!({"type": "shortcut", "user": {"id": "U1"}})).unwrap();
        assert!(matches!(other, Interactive::Other));
    }
}
