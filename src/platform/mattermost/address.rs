//! How Mattermost's chats, people and teams are written in configuration, policies,
//! MCP and the HTTP API:
//!
//! - a channel `mattermost:CHANNEL_ID`, a thread in it `mattermost:CHANNEL_ID/ROOT_ID`
//!   (the id of the thread's first post), a person's DM with the bot
//!   `mattermost:user:USER_ID` (opened through `channels/direct` when something is
//!   sent: the chat id keeps the `user:` prefix until then);
//! - a person `mattermost:USER_ID`; a team, as an `access.chats` space,
//!   `mattermost:team:TEAM_ID`; an approver group `group:GROUP_ID` (a custom group)
//!   or `channel:CHANNEL_ID` (a channel's members): [`super::groups`];
//! - HTTP API targets `{"platform":"mattermost","channel_id":"…","root_id":"…"}` and
//!   `{"platform":"mattermost","user_id":"…"}`.
//!
//! Mattermost's ids (channels, posts, users, teams) are 26 lower-case letters and
//! digits; anything else is refused here, before it reaches Mattermost.

use serde_json::{Value, json};

use super::PLATFORM;
use crate::interaction::chat::{AllowedChats, ChatKey, ChatNetwork, TargetFields, target_object_schema};
use crate::platform::kit::address::{SpaceGrammar, checked_field};

/// The chat id prefix of a DM target.
pub const DM_PREFIX: &str = "user:";
/// `access.chats`: `mattermost:team:…` names a whole team, `mattermost:…` a channel.
const SPACES: SpaceGrammar = SpaceGrammar { prefix: "team:", is_space_id: is_id, is_chat_id: is_id };
/// The length of every Mattermost id (`model.NewId`: 26 base32 characters).
const ID_LEN: usize = 26;

/// A Mattermost id: 26 lower-case letters and digits.
pub fn is_id(text: &str) -> bool {
    text.len() == ID_LEN && text.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// Mattermost's [`ChatNetwork`].
pub struct Address;

impl ChatNetwork for Address {
    fn name(&self) -> &'static str {
        PLATFORM
    }

    fn parse_chat(&self, rest: &str) -> Option<ChatKey> {
        if let Some(user) = rest.strip_prefix(DM_PREFIX) {
            return self.direct_chat(user);
        }
        let (channel, root) = match rest.split_once('/') {
            Some((channel, root)) => (channel, Some(root)),
            None => (rest, None),
        };
        (is_id(channel) && root.is_none_or(is_id)).then(|| ChatKey::new(PLATFORM, channel, root))
    }

    fn direct_chat(&self, user_id: &str) -> Option<ChatKey> {
        is_id(user_id).then(|| ChatKey::new(PLATFORM, &format!("{DM_PREFIX}{user_id}"), None))
    }

    /// A channel (its threads too), or a whole team.
    fn allowed_chats(&self, rest: &str) -> Option<AllowedChats> {
        SPACES.allowed_chats(rest)
    }

    /// Custom groups (`group:GROUP_ID`) and a channel's members (`channel:CHANNEL_ID`):
    /// a person's are asked of Mattermost ([`super::groups`]).
    fn has_groups(&self) -> bool {
        true
    }

    fn is_group_id(&self, id: &str) -> bool {
        super::groups::parse(id).is_some()
    }

    fn group_form(&self) -> Option<&'static str> {
        Some("a Mattermost custom group `group:GROUP_ID` or a channel's members `channel:CHANNEL_ID`")
    }

    fn chat_form(&self) -> Option<&'static str> {
        Some("mattermost:CHANNEL_ID")
    }

    fn chat_forms(&self) -> &'static [&'static str] {
        &["mattermost:CHANNEL_ID", "mattermost:CHANNEL_ID/ROOT_ID", "mattermost:user:USER_ID"]
    }

    fn chat_examples(&self) -> &'static [&'static str] {
        &["mattermost:4xp9…", "mattermost:user:8w1z…"]
    }

    fn space_form(&self) -> Option<&'static str> {
        Some("mattermost:team:TEAM_ID")
    }

    /// `channel_id` (and a thread's `root_id`), or `user_id` for a DM.
    fn target_chat(&self, fields: &TargetFields) -> Result<ChatKey, (&'static str, String)> {
        let channel = checked_field(fields, "channel_id", is_id, "a Mattermost channel id (26 lower-case letters and digits)")?;
        let user = checked_field(fields, "user_id", is_id, "a Mattermost user id (26 lower-case letters and digits)")?;
        match (channel, user) {
            (Some(channel), None) => {
                let root = checked_field(fields, "root_id", is_id, "a Mattermost post id (26 lower-case letters and digits)")?;
                Ok(ChatKey::new(PLATFORM, &channel, root.as_deref()))
            }
            (None, Some(user)) if fields.get("root_id").is_none_or(Value::is_null) => Ok(ChatKey::new(PLATFORM, &format!("{DM_PREFIX}{user}"), None)),
            (None, Some(_)) => Err(("root_id", "a DM target takes no root_id".into())),
            _ => Err(("channel_id", "a Mattermost target needs channel_id or user_id (one of them)".into())),
        }
    }

    fn target_of(&self, chat: &ChatKey) -> Value {
        if let Some(user) = chat.chat_id.strip_prefix(DM_PREFIX) {
            return json!({ "platform": PLATFORM, "user_id": user });
        }
        let mut target = json!({ "platform": PLATFORM, "channel_id": chat.chat_id });
        if let Some(root) = &chat.thread_id {
            target["root_id"] = json!(root);
        }
        target
    }

    fn target_schema(&self) -> Value {
        target_object_schema(
            PLATFORM,
            &[
                ("channel_id", "Mattermost channel id (26 characters)."),
                ("root_id", "A thread in the channel: the id of its first post."),
                ("user_id", "A person: their DM with the bot (instead of channel_id)."),
            ],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::chat::Networks;
    use std::sync::Arc;

    const CHANNEL: &str = "4xp9fdt7pbgium38k5k6w95oma";
    const POST: &str = "bwbjqrmhjfd1jx1r6tsbdye6so";
    const USER: &str = "8w1zd7n4xbrqtcyjf5mcnbxwwh";

    fn networks() -> Networks {
        Networks::new(vec![Arc::new(Address)])
    }

    #[test]
    fn chats_parse_as_written_and_display_back() {
        let n = networks();
        for (written, key) in [
            (format!("mattermost:{CHANNEL}"), ChatKey::new("mattermost", CHANNEL, None)),
            (format!("mattermost:{CHANNEL}/{POST}"), ChatKey::new("mattermost", CHANNEL, Some(POST))),
            (format!("mattermost:user:{USER}"), ChatKey::new("mattermost", &format!("user:{USER}"), None)),
        ] {
            assert_eq!(n.parse_chat(&written), Some(key.clone()), "{written}");
            assert_eq!(n.display_chat(&key), written);
        }
        for bad in [
            "mattermost:".to_owned(),
            "mattermost:town-square".into(),
            format!("mattermost:{}", CHANNEL.to_uppercase()),
            format!("mattermost:{CHANNEL}/"),
            format!("mattermost:{CHANNEL}/abc"),
            "mattermost:user:".into(),
            "mattermost:user:@ana".into(),
            format!("mattermost:{CHANNEL}x"),
        ] {
            assert_eq!(n.parse_chat(&bad), None, "{bad}");
        }
    }

    #[test]
    fn access_entries_open_a_channel_or_a_team_and_people_are_ids() {
        let n = networks();
        assert_eq!(n.allowed_chats(&format!("mattermost:{CHANNEL}")), Some(("mattermost".into(), AllowedChats::Chat(CHANNEL.into()))));
        assert_eq!(n.allowed_chats(&format!("mattermost:team:{CHANNEL}")), Some(("mattermost".into(), AllowedChats::Space(CHANNEL.into()))));
        assert_eq!(n.allowed_chats("mattermost:team:ops"), None);
        assert_eq!(n.parse_user(&format!("mattermost:{USER}")), Some(("mattermost".into(), USER.into())));
        assert_eq!(n.direct_chat("mattermost", USER), Some(ChatKey::new("mattermost", &format!("user:{USER}"), None)));
        assert_eq!(n.direct_chat("mattermost", "ana"), None);
    }

    #[test]
    fn http_targets_round_trip_and_bad_ones_name_the_field() {
        let fields = |v: Value| v.as_object().cloned().unwrap();
        for target in [
            json!({"platform": "mattermost", "channel_id": CHANNEL}),
            json!({"platform": "mattermost", "channel_id": CHANNEL, "root_id": POST}),
            json!({"platform": "mattermost", "user_id": USER}),
        ] {
            let mut f = fields(target.clone());
            f.remove("platform");
            assert_eq!(Address.target_of(&Address.target_chat(&f).unwrap()), target);
        }
        let err = |v: Value| Address.target_chat(&fields(v)).unwrap_err().0;
        assert_eq!(err(json!({})), "channel_id");
        assert_eq!(err(json!({"channel_id": CHANNEL, "user_id": USER})), "channel_id");
        assert_eq!(err(json!({"channel_id": "ops"})), "channel_id");
        assert_eq!(err(json!({"channel_id": CHANNEL, "root_id": "x"})), "root_id");
        assert_eq!(err(json!({"user_id": USER, "root_id": POST})), "root_id");
        assert_eq!(err(json!({"user_id": 5})), "user_id");
    }
}
