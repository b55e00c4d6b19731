//! Messages people write → the agent's turns, the `!hitl` commands, and answers by
//! reply. A message in one of `matrix.rooms`, in a DM with the bot, or that mentions
//! the bot elsewhere starts or continues a turn.
//!
//! Each thread is its own session: a top-level message in a room opens a thread at
//! itself (the agent answers in it), a message in a thread continues its thread's. A
//! DM is the person's chat (`matrix:user:@USER:SERVER`), a thread in it its own
//! session. A reply to one of the bridge's cards or polls is an answer, not chat
//! ([`super::answers`]). Whoever may not talk is told in a DM, once per refusal window.

use super::address::DM_PREFIX;
use super::payload::Update;
use super::text::{XMsg, xtext};
use super::{PLATFORM, Shared, answers};
use crate::engine::{CommandOutcome, EngineError};
use crate::interaction::command::ChatCommand;
use crate::platform::kit::commands;
use crate::platform::kit::refusals::{Refused, engine_failure, paired_notice, stranger_notice};
use crate::platform::locale::{self, Locale};
use crate::store::ChatKey;

/// What starts a command.
pub const COMMAND_PREFIX: &str = "!hitl";

/// Where a message goes, if the agent is to hear it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routed {
    pub chat: ChatKey,
    pub text: String,
}

/// The chat a message in `room` belongs to: the sender's DM chat, or the room's
/// thread (a top-level message opens its own).
pub fn chat_of(room: &str, event_id: &str, sender: &str, thread: Option<&str>, direct: bool) -> ChatKey {
    if direct { ChatKey::new(PLATFORM, &format!("{DM_PREFIX}{sender}"), thread) } else { ChatKey::new(PLATFORM, room, Some(thread.unwrap_or(event_id))) }
}

/// Where a message goes, if the agent is to hear it: in a DM, a configured room, or
/// when it mentions the bot.
pub fn route(update: &Update, rooms: &[String]) -> Option<Routed> {
    let Update::Message { room, event_id, sender, body, thread, direct, mentions_bot, .. } = update else { return None };
    let configured = rooms.iter().any(|r| r == room);
    if !(*direct || configured || *mentions_bot) {
        return None;
    }
    let text = body.trim().to_owned();
    (!text.is_empty()).then(|| Routed { chat: chat_of(room, event_id, sender, thread.as_deref(), *direct), text })
}

/// Handles one message: an answer by reply, a command, or chat for the agent.
pub async fn on_message(shared: &Shared, update: Update) {
    let Update::Message { room, event_id, sender, body, thread, reply_to, direct, .. } = &update else { return };
    tracing::debug!(%room, %event_id, %sender, direct, reply = reply_to.is_some(), "a Matrix message");
    if *direct {
        shared.remember_dm(sender, room).await;
    }
    if let Some(to) = reply_to
        && answers::on_reply(shared, room, sender, to, body).await
    {
        return;
    }
    if let Some(rest) = command_text(body) {
        let chat = chat_of(room, event_id, sender, thread.as_deref(), *direct);
        let answer = command(shared, &chat, room, sender, rest, *direct).await;
        let answer = super::render::command_answer(&answer);
        shared.send_in(room, thread.as_deref().or(Some(event_id.as_str())).filter(|_| !*direct || thread.is_some()), answer).await;
        return;
    }
    let Some(routed) = route(&update, &shared.rooms) else { return };
    let actor = shared.actor(room, sender, None).await;
    let locale = shared.locale;
    let tell = |text: String| async move { shared.notice_in_dm(sender, &text).await };
    match shared.engine.admit(routed.chat.clone(), actor.clone(), "message", &routed.text, locale.code()).await {
        Ok(()) => {}
        Err(EngineError::NotAdmitted(stranger)) if stranger.silent => return,
        Err(EngineError::NotAdmitted(stranger)) => return tell(stranger_notice(&stranger, locale)).await,
        Err(e) => return tell(engine_failure(locale, &e, "cannot check who may talk", xtext(locale, XMsg::Internal))).await,
    }
    match shared.engine.user_message(routed.chat, actor, routed.text).await {
        Ok(_) => {}
        Err(EngineError::NotAdmitted(stranger)) if stranger.silent => {}
        Err(EngineError::NotAdmitted(stranger)) => tell(stranger_notice(&stranger, locale)).await,
        Err(e) => tell(engine_failure(locale, &e, "cannot pass a Matrix message to the agent", xtext(locale, XMsg::Internal))).await,
    }
}

/// What follows `!hitl` in `body`, if it is a command.
pub fn command_text(body: &str) -> Option<&str> {
    let rest = body.trim().strip_prefix(COMMAND_PREFIX)?;
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then(|| rest.trim())
}

/// `!hitl` with nothing or something unknown after it.
fn usage(locale: Locale) -> String {
    commands::usage(locale, "•", COMMAND_PREFIX)
}

/// The answer to `!hitl <rest>` from `sender` in `chat`.
async fn command(shared: &Shared, chat: &ChatKey, room: &str, sender: &str, rest: &str, direct: bool) -> String {
    let locale = shared.locale;
    let failed = xtext(locale, XMsg::Internal);
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let Some(parsed) = ChatCommand::parse(name, args.trim()) else { return usage(locale) };
    let actor = shared.actor(room, sender, None).await;
    match &parsed {
        ChatCommand::Id => {
            let here = if direct { format!("{PLATFORM}:{DM_PREFIX}{sender}") } else { format!("{PLATFORM}:{room}") };
            let thread = chat.thread_id.as_deref().filter(|_| !direct).map(|t| format!("{PLATFORM}:{room}/{t}"));
            return locale::ids(locale, &format!("{PLATFORM}:{sender}"), &here, thread.as_deref());
        }
        ChatCommand::Pair { code } => {
            return match shared.engine.pair(chat.clone(), actor, code, direct).await {
                Ok(paired) => paired_notice(locale, &paired),
                Err(refusal) => refusal.notice(locale).unwrap_or_else(|| failed.to_owned()),
            };
        }
        ChatCommand::Web => return commands::web_reply(&*shared.web, &actor, direct, locale).await.unwrap_or_else(|| failed.to_owned()),
        _ => {}
    }
    match shared.engine.admit(chat.clone(), actor.clone(), "command", &format!("{COMMAND_PREFIX} {rest}"), locale.code()).await {
        Ok(()) => {}
        Err(EngineError::NotAdmitted(stranger)) => return stranger_notice(&stranger, locale),
        Err(e) => {
            tracing::error!(error = %e, "cannot check who may run a command");
            return failed.to_owned();
        }
    }
    match shared.engine.run_command(chat.clone(), actor, &parsed).await {
        CommandOutcome::Pending(waiting) => commands::pending_list(locale, &waiting),
        outcome => commands::reply(locale, &outcome, failed).unwrap_or_else(|| failed.to_owned()),
    }
}

/// An encrypted message the bot has no key for: said where it was sent (in a DM, or
/// in the room's thread when the agent would have heard it), never ignored.
pub async fn undecryptable(shared: &Shared, room: &str, event_id: &str, sender: &str, direct: bool) {
    tracing::warn!(%room, %event_id, %sender, "a Matrix message the bot cannot decrypt");
    let text = xtext(shared.locale, XMsg::Undecryptable);
    if direct {
        return shared.notice_in(room, None, text).await;
    }
    if shared.rooms.iter().any(|r| r == room) {
        shared.notice_in(room, Some(event_id), text).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(room: &str, thread: Option<&str>, direct: bool, mentions_bot: bool, body: &str) -> Update {
        Update::Message {
            room: room.into(),
            event_id: "$m".into(),
            sender: "@ana:localhost".into(),
            body: body.into(),
            thread: thread.map(str::to_owned),
            reply_to: None,
            direct,
            mentions_bot,
        }
    }

    #[test]
    fn a_top_level_message_opens_a_thread_and_a_thread_continues() {
        let rooms = vec!["!ops:localhost".to_owned()];
        let top = route(&message("!ops:localhost", None, false, false, "hi"), &rooms).unwrap();
        assert_eq!(top.chat, ChatKey::new("matrix", "!ops:localhost", Some("$m")));
        let more = route(&message("!ops:localhost", Some("$root"), false, false, "more"), &rooms).unwrap();
        assert_eq!(more.chat, ChatKey::new("matrix", "!ops:localhost", Some("$root")));
    }

    #[test]
    fn a_dm_is_the_persons_chat_and_elsewhere_needs_a_mention() {
        let rooms = vec!["!ops:localhost".to_owned()];
        let dm = route(&message("!dm:localhost", None, true, false, "hi"), &rooms).unwrap();
        assert_eq!(dm.chat, ChatKey::new("matrix", "user:@ana:localhost", None));
        assert_eq!(route(&message("!other:localhost", None, false, false, "hi"), &rooms), None);
        assert!(route(&message("!other:localhost", None, false, true, "hi"), &rooms).is_some());
        assert_eq!(route(&message("!ops:localhost", None, false, false, "  "), &rooms), None);
    }

    #[test]
    fn commands_start_with_the_prefix_as_a_word() {
        assert_eq!(command_text("!hitl id"), Some("id"));
        assert_eq!(command_text(" !hitl "), Some(""));
        assert_eq!(command_text("!hitlid"), None);
        assert_eq!(command_text("hello !hitl id"), None);
        let usage = usage(Locale::En);
        for name in ["new", "cancel", "pending", "id", "pair CODE", "web"] {
            assert!(usage.contains(&format!("!hitl {name}")), "{name} in {usage}");
        }
    }
}
