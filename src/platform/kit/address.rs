//! The one `access.chats` grammar of platforms with spaces (a Discord guild, a Slack
//! workspace): `PREFIX:ID` opens the whole space, anything else names one chat. Each
//! platform brings its prefix and what its ids look like.

use crate::interaction::chat::AllowedChats;

/// A space's entry needs a prefix of its own, so that it never reads as a chat.
#[derive(Debug, Clone, Copy)]
pub struct SpaceGrammar {
    /// `guild:`, `team:`.
    pub prefix: &'static str,
    pub is_space_id: fn(&str) -> bool,
    pub is_chat_id: fn(&str) -> bool,
}

impl SpaceGrammar {
    /// What the part of an `access.chats` entry after `platform:` opens; `None` when
    /// it is neither a well-formed space nor a well-formed chat.
    pub fn allowed_chats(&self, rest: &str) -> Option<AllowedChats> {
        match rest.strip_prefix(self.prefix) {
            Some(space) => (self.is_space_id)(space).then(|| AllowedChats::Space(space.to_owned())),
            None => (self.is_chat_id)(rest).then(|| AllowedChats::Chat(rest.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_decides_between_space_and_chat() {
        let grammar = SpaceGrammar { prefix: "guild:", is_space_id: |id| id == "7", is_chat_id: |id| id == "8" };
        assert_eq!(grammar.allowed_chats("guild:7"), Some(AllowedChats::Space("7".into())));
        assert_eq!(grammar.allowed_chats("8"), Some(AllowedChats::Chat("8".into())));
        for bad in ["guild:8", "guild:", "7", "guild:guild:7"] {
            assert_eq!(grammar.allowed_chats(bad), None, "{bad}");
        }
    }
}
