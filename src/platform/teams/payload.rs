//! The Bot Framework activity, as far as the bridge reads it (learn.microsoft.com,
//! "Bot Framework Activity schema"): who wrote, in which conversation, the text and
//! its mentions, the thread (`replyToId`), and an invoke's name and value. Stored as
//! received in the durable inbox and read back with these types after a restart.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct Account {
    /// The per-bot id (`29:…` for a person, `28:…` for a bot): never a person's address.
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub name: Option<String>,
    /// The person's Microsoft Entra object id: their address, `teams:<aadObjectId>`.
    #[serde(rename = "aadObjectId", default)]
    pub aad_object_id: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct Conversation {
    #[serde(default)]
    pub id: String,
    /// `personal`, `channel` or `groupChat`.
    #[serde(rename = "conversationType", default)]
    pub kind: Option<String>,
    #[serde(rename = "tenantId", default)]
    pub tenant_id: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct Entity {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub mentioned: Option<Account>,
    #[serde(default)]
    pub text: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct Activity {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(rename = "serviceUrl", default)]
    pub service_url: String,
    #[serde(rename = "channelId", default)]
    pub channel_id: String,
    #[serde(default)]
    pub from: Account,
    #[serde(default)]
    pub conversation: Conversation,
    #[serde(default)]
    pub recipient: Account,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(rename = "replyToId", default)]
    pub reply_to_id: Option<String>,
    #[serde(default)]
    pub entities: Vec<Entity>,
    /// An invoke's name (`adaptiveCard/action`).
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub value: Value,
}

impl Activity {
    /// The conversation without Teams' `;messageid=…` thread suffix, and the thread.
    pub fn conversation_and_thread(&self) -> (&str, Option<&str>) {
        match self.conversation.id.split_once(";messageid=") {
            Some((conversation, thread)) => (conversation, Some(thread)),
            None => (self.conversation.id.as_str(), None),
        }
    }

    /// Whether it is the `adaptiveCard/action` invoke of a card's `Action.Execute`.
    pub fn is_card_action(&self) -> bool {
        self.kind == "invoke" && self.name.as_deref() == Some("adaptiveCard/action")
    }

    /// The person who acted: their Entra object id, lower-case.
    pub fn person(&self) -> Option<String> {
        self.from.aad_object_id.as_deref().filter(|id| super::address::is_user_id(id)).map(str::to_ascii_lowercase)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_channel_thread_is_read_from_the_conversation_id() {
        let activity: Activity = serde_json::from_value(json!({
            "type": "message", "id": "1700000000456", "serviceUrl": "https://smba.trafficmanager.net/emea/", "channelId": "msteams",
            "from": {"id": "29:1abc", "name": "Ana", "aadObjectId": "6B1E3F0A-2C4D-4E5F-8A9B-0C1D2E3F4A5B"},
            "conversation": {"id": "19:x@thread.tacv2;messageid=1700000000123", "conversationType": "channel"},
            "text": "<at>HITL</at> deploy", "replyToId": "1700000000123"
        }))
        .unwrap();
        assert_eq!(activity.conversation_and_thread(), ("19:x@thread.tacv2", Some("1700000000123")));
        assert_eq!(activity.person().as_deref(), Some("6b1e3f0a-2c4d-4e5f-8a9b-0c1d2e3f4a5b"));
        assert!(!activity.is_card_action());
    }
}
