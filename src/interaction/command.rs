//! The chat commands as data: what a person asked for with `/new`, `/cancel`,
//! `/pending`, `/rules [revoke ID]`, `/id`, `/pair CODE` or `/web`, whichever platform they
//! typed or clicked it on. Each platform turns its own input (a Telegram message, a
//! Discord slash command, a terminal line) into a [`ChatCommand`]; the engine runs
//! those that steer a session; the platform shows the outcome. The list platforms
//! register in their menus is [`crate::platform::kit::commands`]' (it carries the texts).

/// One chat command, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChatCommand {
    /// Start a new agent session in this chat.
    New,
    /// Cancel the current turn and its pending requests.
    Cancel,
    /// List the requests waiting here.
    Pending,
    /// List the remembered approvals that apply here.
    Rules,
    /// Revoke one remembered approval.
    Revoke { id: String },
    /// `/rules` with words it does not take: answered with its usage.
    RulesUsage,
    /// The person's and the chat's ids.
    Id,
    /// Approve a pairing code (admins).
    Pair { code: String },
    /// A one-time sign-in link to the web inbox, in a direct message with the bot.
    Web,
}

impl ChatCommand {
    /// Every command's name, as [`ChatCommand::parse`] reads it: what a platform's
    /// list of its commands (Slack's `/hitl` usage hint) names.
    pub const NAMES: [&'static str; 7] = ["new", "cancel", "pending", "rules", "id", "pair", "web"];

    /// `name` (without its slash, any case) with the text after it; `None` for a name
    /// that is no command of the bridge's (the platform passes it to the agent or
    /// says it is unknown).
    pub fn parse(name: &str, args: &str) -> Option<ChatCommand> {
        let mut words = args.split_whitespace();
        Some(match name.to_ascii_lowercase().as_str() {
            "new" => ChatCommand::New,
            "cancel" => ChatCommand::Cancel,
            "pending" => ChatCommand::Pending,
            "id" => ChatCommand::Id,
            "pair" => ChatCommand::Pair { code: args.to_owned() },
            "web" => ChatCommand::Web,
            "rules" => match (words.next(), words.next()) {
                (None | Some("list"), None) => ChatCommand::Rules,
                (Some("revoke"), Some(id)) => ChatCommand::Revoke { id: id.to_owned() },
                _ => ChatCommand::RulesUsage,
            },
            _ => return None,
        })
    }

    /// Whether only someone admitted to talk may run it: everything but `/id` (a
    /// newcomer needs their id before anyone can admit them), `/pair` (the admins'
    /// business, whoever may talk) and `/web` (an approver named on a request answers
    /// its card without being admitted to talk; the inbox shows a person only what
    /// they may answer).
    pub fn needs_admission(&self) -> bool {
        !matches!(self, ChatCommand::Id | ChatCommand::Pair { .. } | ChatCommand::Web)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_listed_is_a_command() {
        for name in ChatCommand::NAMES {
            assert!(ChatCommand::parse(name, "x").is_some(), "{name}");
        }
        assert_eq!(ChatCommand::parse("help", ""), None);
    }

    #[test]
    fn commands_parse_as_people_type_them() {
        assert_eq!(ChatCommand::parse("NEW", ""), Some(ChatCommand::New));
        assert_eq!(ChatCommand::parse("rules", ""), Some(ChatCommand::Rules));
        assert_eq!(ChatCommand::parse("rules", " list "), Some(ChatCommand::Rules));
        assert_eq!(ChatCommand::parse("rules", "revoke a1b2"), Some(ChatCommand::Revoke { id: "a1b2".into() }));
        assert_eq!(ChatCommand::parse("rules", "revoke"), Some(ChatCommand::RulesUsage));
        assert_eq!(ChatCommand::parse("rules", "drop a1b2"), Some(ChatCommand::RulesUsage));
        assert_eq!(ChatCommand::parse("pair", "ABCD-1234"), Some(ChatCommand::Pair { code: "ABCD-1234".into() }));
        assert_eq!(ChatCommand::parse("weather", "today"), None);
        assert_eq!(ChatCommand::parse("Web", ""), Some(ChatCommand::Web));
        assert!(!ChatCommand::Id.needs_admission() && ChatCommand::Cancel.needs_admission());
        assert!(!ChatCommand::Web.needs_admission());
    }
}
