//! `/hitl <command>`: the slash command Mattermost posts to [`COMMAND_PATH`]
//! (form fields: `token`, `command`, `text`, `user_id`, `user_name`, `channel_id`,
//! `team_id`, `trigger_id`), its token checked against `mattermost.slash_token` before
//! anything is stored ([`verify_token`]). The answer goes back in the response as an
//! ephemeral message only the person sees. `id` answers `mattermost:<user_id>` and the
//! channel's address; the rest run as on every platform.
//!
//! [`COMMAND_PATH`]: super::setup::COMMAND_PATH

use serde_json::{Value, json};
use subtle::ConstantTimeEq;

use super::address::DM_PREFIX;
use super::payload::SlashCommand;
use super::text::{MMsg, escape_cut, mtext};
use super::{PLATFORM, Shared};
use crate::engine::{CommandOutcome, EngineError};
use crate::interaction::Actor;
use crate::interaction::command::ChatCommand;
use crate::platform::kit::commands;
use crate::platform::kit::refusals::{Refused, paired_notice, stranger_notice};
use crate::platform::locale::{self, Locale};
use crate::store::ChatKey;

/// The longest answer shown.
const ANSWER: usize = 4_000;

/// Whether the posted `token` is `mattermost.slash_token`, in constant time; without a
/// configured token nothing is accepted.
pub fn verify_token(configured: Option<&str>, posted: Option<&str>) -> bool {
    match (configured, posted) {
        (Some(configured), Some(posted)) => configured.as_bytes().ct_eq(posted.as_bytes()).into(),
        _ => false,
    }
}

/// `/hitl` with nothing or something unknown after it.
fn usage(locale: Locale) -> String {
    commands::usage(locale, "-", "/hitl")
}

/// The response Mattermost shows the person.
pub async fn on_command(shared: &Shared, command: &SlashCommand) -> Value {
    let text = answer(shared, command).await;
    json!({ "response_type": "ephemeral", "text": escape_cut(&text, ANSWER) })
}

async fn answer(shared: &Shared, command: &SlashCommand) -> String {
    let locale = shared.locale;
    let failed = mtext(locale, MMsg::Internal);
    if !super::address::is_id(&command.user_id) || !super::address::is_id(&command.channel_id) {
        return usage(locale);
    }
    let trimmed = command.text.trim();
    let (name, rest) = trimmed.split_once(char::is_whitespace).unwrap_or((trimmed, ""));
    let Some(parsed) = ChatCommand::parse(name, rest.trim()) else { return usage(locale) };
    let theirs = ChatKey::new(PLATFORM, &format!("{DM_PREFIX}{}", command.user_id), None);
    // The person's DM with the bot is theirs; any other channel is the channel.
    let direct = shared.channel(&theirs).await.is_ok_and(|dm| dm == command.channel_id);
    let chat = if direct { theirs } else { ChatKey::new(PLATFORM, &command.channel_id, None) };
    let name = match command.user_name.as_deref().filter(|n| !n.is_empty()) {
        Some(name) => name.to_owned(),
        None => shared.username(&command.user_id).await,
    };
    let mut actor = Actor::new(PLATFORM, &command.user_id, &name);
    actor.space = command.team_id.clone().filter(|t| super::address::is_id(t));
    actor.groups = shared.groups.of(&shared.api, &shared.engine, &command.user_id, None).await;
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
        ChatCommand::Web => return commands::web_reply(&*shared.web, &actor, direct, locale).await.unwrap_or_else(|| failed.to_owned()),
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
    fn the_token_must_match_and_none_configured_accepts_nothing() {
        assert!(verify_token(Some("s3cret"), Some("s3cret")));
        assert!(!verify_token(Some("s3cret"), Some("s3cre")));
        assert!(!verify_token(Some("s3cret"), None));
        assert!(!verify_token(None, Some("")));
        assert!(!verify_token(None, None));
    }

    #[test]
    fn the_usage_names_every_subcommand() {
        let usage = usage(Locale::En);
        for name in ["new", "cancel", "pending", "id", "pair CODE", "web"] {
            assert!(usage.contains(&format!("/hitl {name}")), "{name} in {usage}");
        }
    }
}
