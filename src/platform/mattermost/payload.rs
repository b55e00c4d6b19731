//! The few Mattermost payloads the bridge reads, and the one update it stores.
//!
//! - A button click or menu choice, as Mattermost posts it to the integration URL
//!   (`model.PostActionIntegrationRequest`: `user_id`, `user_name`, `channel_id`,
//!   `team_id`, `post_id`, `trigger_id`, `type`, `context`; a menu's choice is
//!   `context.selected_option`).
//! - A dialog submission (`model.SubmitDialogRequest`: `type: "dialog_submission"`,
//!   `callback_id`, `state`, `user_id`, `channel_id`, `team_id`, `submission`,
//!   `cancelled`).
//!
//! Mattermost signs neither: every field is checked before it counts (the context's
//! signed code, the post against the bridge's own cards, the user by the access
//! rules).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A button click or a menu choice.
#[derive(Debug, Clone, Deserialize)]
pub struct ActionPost {
    #[serde(default)]
    pub user_id: String,
    #[serde(default)]
    pub user_name: Option<String>,
    #[serde(default)]
    pub channel_id: String,
    #[serde(default)]
    pub team_id: Option<String>,
    #[serde(default)]
    pub post_id: String,
    #[serde(default)]
    pub trigger_id: Option<String>,
    #[serde(default)]
    pub context: Value,
}

impl ActionPost {
    /// The signed code the button's context carries.
    pub fn code(&self) -> Option<&str> {
        self.context["code"].as_str()
    }

    /// A menu's chosen value.
    pub fn selected_option(&self) -> Option<&str> {
        self.context["selected_option"].as_str()
    }
}

/// A dialog's submission (or its cancellation).
#[derive(Debug, Clone, Deserialize)]
pub struct DialogPost {
    #[serde(default)]
    pub user_id: String,
    #[serde(default)]
    pub channel_id: String,
    #[serde(default)]
    pub team_id: Option<String>,
    #[serde(default)]
    pub state: String,
    #[serde(default)]
    pub submission: Map<String, Value>,
    #[serde(default)]
    pub cancelled: bool,
}

/// What the durable inbox keeps: a post to the integration endpoint, as received.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", content = "body", rename_all = "snake_case")]
pub enum Update {
    /// A button click or a menu choice.
    Action(Value),
    /// A dialog submission.
    Dialog(Value),
    /// A post people made, from the WebSocket's `posted` event or fetched after a
    /// reconnect: `{"post": {…}, "channel_type": "O", "mentions": [user ids]}`.
    Posted(Value),
    /// The `/hitl` slash command's fields.
    Command(Value),
}

impl Update {
    /// The channel whose lane it is stored under.
    pub fn channel(&self) -> &str {
        match self {
            Update::Action(body) | Update::Dialog(body) | Update::Command(body) => body["channel_id"].as_str().unwrap_or("0"),
            Update::Posted(body) => body["post"]["channel_id"].as_str().unwrap_or("0"),
        }
    }

    /// Whether it is chat, handled in its channel's order.
    pub fn is_chat(&self) -> bool {
        matches!(self, Update::Posted(_) | Update::Command(_))
    }

    /// Who sent it.
    pub fn user(&self) -> &str {
        match self {
            Update::Action(body) | Update::Dialog(body) | Update::Command(body) => body["user_id"].as_str().unwrap_or_default(),
            Update::Posted(body) => body["post"]["user_id"].as_str().unwrap_or_default(),
        }
    }
}

/// A post as Mattermost gives it (`model.Post`), the fields the bridge reads.
#[derive(Debug, Clone, Deserialize)]
pub struct Post {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub channel_id: String,
    #[serde(default)]
    pub root_id: String,
    #[serde(default)]
    pub user_id: String,
    #[serde(default)]
    pub message: String,
    /// Empty for a person's post; `system_join_channel` and the like otherwise.
    #[serde(default, rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub create_at: i64,
}

/// A stored `Posted` update.
#[derive(Debug, Clone, Deserialize)]
pub struct Posted {
    pub post: Post,
    /// `O` public, `P` private, `D` direct, `G` group.
    #[serde(default)]
    pub channel_type: String,
    /// The user ids the post mentions.
    #[serde(default)]
    pub mentions: Vec<String>,
    #[serde(default)]
    pub team_id: Option<String>,
}

/// The slash command's fields (`model.CommandArgs` as posted, form-encoded).
#[derive(Debug, Clone, Deserialize)]
pub struct SlashCommand {
    #[serde(default)]
    pub command: String,
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub user_id: String,
    #[serde(default)]
    pub user_name: Option<String>,
    #[serde(default)]
    pub channel_id: String,
    #[serde(default)]
    pub channel_name: Option<String>,
    #[serde(default)]
    pub team_id: Option<String>,
}
