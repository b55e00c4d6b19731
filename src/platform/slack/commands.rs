//! `/hitl <command>`: the chat commands (`new`, `cancel`, `pending`, `rules`, `id`,
//! `pair CODE`, `web`) as Slack's one slash command, run through the same core
//! commands as every platform ([`ChatCommand`], [`EngineHandle::run_command`](crate::engine::EngineHandle::run_command),
//! `engine.pair`).
//!
//! **Answered to the person only, in the acknowledgement.** Slack shows a slash
//! command's acknowledgement payload (Socket Mode's ack `payload`, HTTP mode's 200 body)
//! to the person who typed it, ephemeral by default. Unlike `chat.postEphemeral` this
//! works in every conversation the command can be typed in, including channels the
//! bot was not invited to and DMs between other people. So the answer rides the ack
//! through the inbox's waiter, as a modal's errors do; after a restart (handled from
//! the store) there is nobody left to answer.
//!
//! `id`, `pair` and `web` need no admission (see
//! [`ChatCommand::needs_admission`]); the others do, and a stranger is answered with
//! the refusal (always: the answer is no channel message, and Slack shows an error to
//! an unanswered command). Slash command payloads carry no thread, so a command in a
//! channel is about the channel itself (`slack:C…`); in a DM with the bot it is about
//! the DM (`slack:user:U…`), the one place `new` and `cancel` steer the conversation.

use serde::Deserialize;
use serde_json::{Value, json};

use super::address::DM_PREFIX;
use super::text::{SMsg, escape_cut, stext};
use super::{PLATFORM, Shared};
use crate::engine::{CommandOutcome, EngineError};
use crate::interaction::command::ChatCommand;
use crate::platform::kit::commands;
use crate::platform::kit::refusals::{Refused, paired_notice, stranger_notice};
use crate::platform::locale::{self, Locale};
use crate::store::ChatKey;

/// The answer's longest text (a section's 3,000 characters).
const ANSWER: usize = 3_000;

/// A `slash_commands` envelope's payload, with the fields the bridge reads.
#[derive(Debug, Clone, Deserialize)]
pub struct SlashCommand {
    pub command: String,
    #[serde(default)]
    pub text: String,
    pub user_id: String,
    #[serde(default)]
    pub user_name: Option<String>,
    pub channel_id: String,
    #[serde(default)]
    pub team_id: Option<String>,
}

/// What `/hitl` takes, shown for an unknown or missing subcommand.
fn usage(locale: Locale) -> String {
    let lead = match locale {
        Locale::En => "Usage",
        Locale::Vi => "Cách dùng",
        Locale::Zh => "用法",
    };
    let lines: Vec<String> = commands::COMMANDS
        .iter()
        .map(|c| {
            let argument = match (c.name, c.argument) {
                ("pair", _) => " CODE",
                ("rules", _) => " [revoke ID]",
                _ => "",
            };
            format!("• /hitl {}{argument}: {}", c.name, c.description(locale))
        })
        .collect();
    format!("{lead}:\n{}", lines.join("\n"))
}

/// The acknowledgement payload answering `payload`: text only its author sees.
pub async fn on_command(shared: &Shared, payload: &Value) -> Option<Value> {
    let command: SlashCommand = match serde_json::from_value(payload.clone()) {
        Ok(command) => command,
        Err(e) => {
            tracing::warn!(error = %e, "a slash command payload that does not read; skipped");
            return None;
        }
    };
    let text = answer(shared, &command).await;
    Some(json!({ "response_type": "ephemeral", "text": escape_cut(&text, ANSWER) }))
}

/// The person, named as Slack gives them, in their workspace.
fn actor(command: &SlashCommand) -> crate::interaction::Actor {
    let mut actor = super::chat::actor(&command.user_id, command.team_id.as_deref());
    if let Some(name) = command.user_name.as_deref().filter(|n| !n.is_empty()) {
        actor.name = name.to_owned();
    }
    actor
}

/// Whether `channel` is the person's own DM with the bot (the conversation
/// `conversations.open` gives for them): `pair` and `web` act there only.
async fn is_dm_with_bot(shared: &Shared, command: &SlashCommand) -> bool {
    if !command.channel_id.starts_with('D') {
        return false;
    }
    let theirs = ChatKey::new(PLATFORM, &format!("{DM_PREFIX}{}", command.user_id), None);
    shared.channel(&theirs).await.is_ok_and(|dm| dm == command.channel_id)
}

async fn answer(shared: &Shared, command: &SlashCommand) -> String {
    let locale = shared.locale;
    let failed = stext(locale, SMsg::Internal);
    let (name, rest) = command.text.trim().split_once(char::is_whitespace).unwrap_or((command.text.trim(), ""));
    let Some(parsed) = ChatCommand::parse(name, rest.trim()) else { return usage(locale) };
    let direct = is_dm_with_bot(shared, command).await;
    let chat =
        if direct { ChatKey::new(PLATFORM, &format!("{DM_PREFIX}{}", command.user_id), None) } else { ChatKey::new(PLATFORM, &command.channel_id, None) };
    let mut actor = actor(command);
    shared.groups.of_person(&shared.api, &mut actor).await;
    match &parsed {
        ChatCommand::Id => {
            let here = if direct { format!("{PLATFORM}:{}", chat.chat_id) } else { format!("{PLATFORM}:{}", command.channel_id) };
            return locale::ids(locale, &format!("{PLATFORM}:{}", command.user_id), &here, None);
        }
        ChatCommand::Pair { code } => {
            return match shared.engine.pair(chat, actor, code, direct).await {
                Ok(paired) => paired_notice(locale, &paired),
                Err(refusal) => refusal.notice(locale).unwrap_or_else(|| failed.to_owned()),
            };
        }
        ChatCommand::Web => return commands::web_reply(&*shared.web, &actor, direct, locale).await.unwrap_or_else(|| stext(locale, SMsg::Internal).to_owned()),
        _ => {}
    }
    match shared.engine.admit(chat.clone(), actor.clone(), "command", &format!("{} {}", command.command, command.text), locale.code()).await {
        Ok(()) => {}
        Err(EngineError::NotAdmitted(stranger)) => return stranger_notice(&stranger, locale),
        Err(e) => {
            tracing::error!(error = %e, "cannot check who may run a command");
            return failed.to_owned();
        }
    }
    match shared.engine.run_command(chat, actor, &parsed).await {
        CommandOutcome::Pending(waiting) => commands::pending_list(locale, &waiting),
        outcome => commands::reply(locale, &outcome, failed).unwrap_or_else(|| failed.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_usage_names_every_subcommand() {
        let usage = usage(Locale::En);
        for name in ["new", "cancel", "pending", "rules", "id", "pair CODE", "web"] {
            assert!(usage.contains(&format!("/hitl {name}")), "{name} in {usage}");
        }
        assert!(usage.starts_with("Usage:\n• /hitl new: Start a new agent session"), "{usage}");
    }
}
