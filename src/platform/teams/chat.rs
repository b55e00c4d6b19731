//! Chat: which Teams messages go to the agent, and as which chat.
//!
//! A `message` activity starts or continues a turn when it is
//! - in one of `teams.channels` (every message there),
//! - in a 1:1 chat with the bot (`conversationType: personal`), or
//! - an @mention of the bot anywhere else the bot is (a `mention` entity naming the
//!   bot, the activity's `recipient`).
//!
//! **Each thread is its own session.** In a channel a top-level message starts a thread
//! at its own id and replies carry the thread's `replyToId` (Teams also writes it in
//! the conversation id, `…;messageid=…`): the chat is `teams:CONVERSATION/MESSAGE`, so
//! the agent's answer, its cards and the next messages stay in that thread. A 1:1 chat
//! is one conversation, `teams:user:AAD_OBJECT_ID` (the same chat a card sent to that
//! person is in); a group chat has no threads.
//!
//! The commands of the app manifest's command list (`new`, `cancel`, `pending`,
//! `rules`, `id`, `pair CODE`, `web`) arrive as a message that is the command alone;
//! `id` answers `teams:<aadObjectId>`, never the per-bot `29:` id. The bridge's own
//! messages (`from` a `28:` bot) are not heard.

use super::address::DM_PREFIX;
use super::payload::Activity;
use super::text::{TMsg, ttext};
use super::{PLATFORM, Shared};
use crate::engine::{CommandOutcome, EngineError};
use crate::interaction::command::ChatCommand;
use crate::platform::kit::commands;
use crate::platform::kit::refusals::{Refused, engine_failure, paired_notice, stranger_notice};
use crate::platform::locale;
use crate::store::ChatKey;

/// What a message is for the bridge: text for the agent in `chat`, or nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routed {
    pub chat: ChatKey,
    /// The text with the bot's mention taken out.
    pub text: String,
    /// A 1:1 chat with the bot.
    pub direct: bool,
}

/// Where `activity` goes, given the configured channels; `None` for what the agent
/// does not hear (pure, so every rule is tested without Teams).
pub fn route(activity: &Activity, channels: &[String]) -> Option<Routed> {
    if activity.kind != "message" || activity.from.id.starts_with("28:") {
        return None;
    }
    let person = activity.person()?;
    let (conversation, thread_in_id) = activity.conversation_and_thread();
    let kind = activity.conversation.kind.as_deref().unwrap_or("");
    let mentioned = activity.entities.iter().any(|e| e.kind == "mention" && e.mentioned.as_ref().is_some_and(|m| m.id == activity.recipient.id));
    let configured = channels.iter().any(|c| c.trim() == conversation);
    let chat = match kind {
        "personal" => ChatKey::new(PLATFORM, &format!("{DM_PREFIX}{person}"), None),
        "channel" if configured || mentioned => {
            let thread = activity.reply_to_id.as_deref().or(thread_in_id).or(activity.id.as_deref()).filter(|t| super::address::is_message_id(t));
            ChatKey::new(PLATFORM, conversation, thread)
        }
        _ if configured || mentioned => ChatKey::new(PLATFORM, conversation, None),
        _ => return None,
    };
    let text = strip_mentions(activity);
    (!text.is_empty()).then(|| Routed { chat, text, direct: kind == "personal" })
}

/// The text without the bot's `<at>…</at>` mentions, spaces tidied.
pub fn strip_mentions(activity: &Activity) -> String {
    let mut text = activity.text.clone().unwrap_or_default();
    for entity in &activity.entities {
        if entity.kind == "mention"
            && entity.mentioned.as_ref().is_some_and(|m| m.id == activity.recipient.id)
            && let Some(tag) = entity.text.as_deref().filter(|t| !t.is_empty())
        {
            text = text.replace(tag, " ");
        }
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A message that is one of the manifest's commands alone (`id`, `/pair 1234`).
pub fn command_of(text: &str) -> Option<ChatCommand> {
    let text = text.trim().trim_start_matches('/');
    let (name, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let known = commands::COMMANDS.iter().find(|c| c.name.eq_ignore_ascii_case(name))?;
    if known.argument.is_none() && !rest.trim().is_empty() {
        return None; // "new feature please" is a message, not `new`.
    }
    ChatCommand::parse(name, rest.trim())
}

/// Handles one `message` activity.
pub async fn on_message(shared: &Shared, activity: &Activity) {
    let Some(routed) = route(activity, &shared.channels) else { return };
    let Some(mut actor) = super::clicks::actor(activity) else { return };
    shared.groups.of_writer(shared, &mut actor).await;
    let locale = shared.locale;
    let failed = ttext(locale, TMsg::Internal);
    if let Some(command) = command_of(&routed.text) {
        let reply = run_command(shared, &routed, actor, &command).await;
        return shared.tell(&routed.chat, &reply).await;
    }
    match shared.engine.admit(routed.chat.clone(), actor.clone(), "message", &routed.text, locale.code()).await {
        Ok(()) => {}
        Err(EngineError::NotAdmitted(stranger)) if stranger.silent => return,
        Err(EngineError::NotAdmitted(stranger)) => return shared.tell(&routed.chat, &stranger_notice(&stranger, locale)).await,
        Err(e) => return shared.tell(&routed.chat, &engine_failure(locale, &e, "cannot check who may talk", failed)).await,
    }
    match shared.engine.user_message(routed.chat.clone(), actor, routed.text.clone()).await {
        Ok(_) => {}
        Err(EngineError::NotAdmitted(stranger)) if stranger.silent => {}
        Err(EngineError::NotAdmitted(stranger)) => shared.tell(&routed.chat, &stranger_notice(&stranger, locale)).await,
        Err(e) => shared.tell(&routed.chat, &engine_failure(locale, &e, "cannot pass a Teams message to the agent", failed)).await,
    }
}

/// A command's answer, in the chat it was typed in.
async fn run_command(shared: &Shared, routed: &Routed, actor: crate::interaction::Actor, command: &ChatCommand) -> String {
    let locale = shared.locale;
    let failed = ttext(locale, TMsg::Internal);
    match command {
        ChatCommand::Id => {
            let here = super::address::Address;
            let chat = crate::interaction::chat::ChatNetwork::display_chat(&here, &routed.chat);
            return locale::ids(locale, &format!("{PLATFORM}:{}", actor.user_id), &chat, None);
        }
        ChatCommand::Pair { code } => {
            return match shared.engine.pair(routed.chat.clone(), actor, code, routed.direct).await {
                Ok(paired) => paired_notice(locale, &paired),
                Err(refusal) => refusal.notice(locale).unwrap_or_else(|| failed.to_owned()),
            };
        }
        ChatCommand::Web => return commands::web_reply(&*shared.web, &actor, routed.direct, locale).await.unwrap_or_else(|| failed.to_owned()),
        _ => {}
    }
    match shared.engine.admit(routed.chat.clone(), actor.clone(), "command", &routed.text, locale.code()).await {
        Ok(()) => {}
        Err(EngineError::NotAdmitted(stranger)) => return stranger_notice(&stranger, locale),
        Err(e) => return engine_failure(locale, &e, "cannot check who may run a command", failed),
    }
    let outcome = shared.engine.run_command(routed.chat.clone(), actor, command).await;
    match &outcome {
        CommandOutcome::Pending(waiting) => {
            if waiting.is_empty() {
                locale::text(locale, locale::Msg::NoPending).to_owned()
            } else {
                waiting
                    .iter()
                    .map(|(i, _)| format!("⏳ {} · ⏰ {}", locale::text(locale, locale::Msg::Pending), locale::clock(i.deadline_ms)))
                    .collect::<Vec<_>>()
                    .join("\n")
            }
        }
        outcome => commands::reply(locale, outcome, failed).unwrap_or_else(|| failed.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ANA: &str = "6b1e3f0a-2c4d-4e5f-8a9b-0c1d2e3f4a5b";

    fn activity(conversation: serde_json::Value, text: &str, extra: serde_json::Value) -> Activity {
        let mut value = json!({
            "type": "message", "id": "1700000000456", "serviceUrl": "https://x/", "channelId": "msteams",
            "from": {"id": "29:1ana", "name": "Ana", "aadObjectId": ANA}, "recipient": {"id": "28:bot", "name": "HITL"},
            "conversation": conversation, "text": text,
        });
        for (k, v) in extra.as_object().unwrap() {
            value[k] = v.clone();
        }
        serde_json::from_value(value).unwrap()
    }

    fn mention() -> serde_json::Value {
        json!({"entities": [{"type": "mention", "mentioned": {"id": "28:bot", "name": "HITL"}, "text": "<at>HITL</at>"}]})
    }

    #[test]
    fn a_dm_is_the_persons_chat_and_a_channel_thread_its_own_session() {
        let dm = activity(json!({"id": "a:1xyz", "conversationType": "personal"}), "deploy", json!({}));
        assert_eq!(route(&dm, &[]).unwrap().chat, ChatKey::new("teams", &format!("user:{ANA}"), None));
        let channels = vec!["19:ops@thread.tacv2".to_owned()];
        let top = activity(json!({"id": "19:ops@thread.tacv2;messageid=1700000000456", "conversationType": "channel"}), "deploy", json!({}));
        assert_eq!(route(&top, &channels).unwrap().chat, ChatKey::new("teams", "19:ops@thread.tacv2", Some("1700000000456")));
        let reply =
            activity(json!({"id": "19:ops@thread.tacv2;messageid=1700000000123", "conversationType": "channel"}), "and", json!({"replyToId": "1700000000123"}));
        assert_eq!(route(&reply, &channels).unwrap().chat, ChatKey::new("teams", "19:ops@thread.tacv2", Some("1700000000123")));
    }

    #[test]
    fn elsewhere_only_a_mention_of_the_bot_is_heard_without_the_tag() {
        let plain = activity(json!({"id": "19:dev@thread.tacv2", "conversationType": "channel"}), "hello all", json!({}));
        assert_eq!(route(&plain, &[]), None);
        let mentioned = activity(json!({"id": "19:dev@thread.v2", "conversationType": "groupChat"}), "<at>HITL</at> deploy  it", mention());
        let routed = route(&mentioned, &[]).unwrap();
        assert_eq!((routed.chat, routed.text.as_str()), (ChatKey::new("teams", "19:dev@thread.v2", None), "deploy it"));
        let mut own = activity(json!({"id": "a:1", "conversationType": "personal"}), "echo", json!({}));
        own.from.id = "28:bot".into();
        assert_eq!(route(&own, &[]), None, "the bridge's own messages");
    }

    #[test]
    fn a_command_is_the_message_alone() {
        assert_eq!(command_of("id"), Some(ChatCommand::Id));
        assert_eq!(command_of("/new"), Some(ChatCommand::New));
        assert_eq!(command_of("new feature please"), None);
        assert!(matches!(command_of("pair 123456"), Some(ChatCommand::Pair { .. })));
        assert_eq!(command_of("deploy"), None);
    }
}
