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
}

impl Update {
    /// The channel whose lane it is stored under.
    pub fn channel(&self) -> &str {
        match self {
            Update::Action(body) | Update::Dialog(body) => body["channel_id"].as_str().unwrap_or("0"),
        }
    }
}
