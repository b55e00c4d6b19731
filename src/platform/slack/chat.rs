//! Chat: which Slack messages go to the agent, and as which chat.
//!
//! An `events_api` envelope starts or continues a turn when its event is
//! - a `message` in one of `slack.channels` (every message there, top-level or in a
//!   thread),
//! - a `message` in a DM with the bot (`channel_type: "im"`), or
//! - an `app_mention` in any other channel the bot is in.
//!
//! In a configured channel Slack sends a mention twice (a `message` and an
//! `app_mention`): the `message` counts there and the `app_mention` is ignored, so the
//! agent hears it once. Everything else is ignored: the bot's own messages (`bot_id`,
//! `subtype: bot_message`, or the bot's user id from `auth.test`), edits, deletes, joins
//! and every other `subtype`, and plain messages in channels not configured.
//!
//! **Each thread is its own session.** A top-level message in a channel starts a thread
//! at its own `ts`: the chat is `slack:C…/TS`, so the agent's answer, its cards and the
//! next messages in that thread stay together, and a new top-level message is a new
//! conversation. A DM is one conversation, `slack:user:U…` (the same chat a card sent
//! to that person is in), unless the person replies in a thread there.
//!
//! Before anything reaches the agent the engine's admission decides whether the author
//! may talk; a stranger gets the refusal, or their pairing code, in a message only they
//! see (`chat.postEphemeral`), once per refusal window.

use serde::Deserialize;

use super::address::DM_PREFIX;
use super::text::{SMsg, stext};
use super::{PLATFORM, Shared};
use crate::engine::EngineError;
use crate::interaction::Actor;
use crate::platform::kit::refusals::{engine_failure, stranger_notice};
use crate::store::ChatKey;

/// The longest notice shown to one person (a section's 3,000 characters).
const NOTICE: usize = 3_000;

/// An `events_api` envelope's payload (the event callback), with what is read of it.
#[derive(Debug, Clone, Deserialize)]
pub struct EventCallback {
    #[serde(default)]
    pub team_id: Option<String>,
    pub event: Event,
}

/// A `message` or `app_mention` event, as Slack's Events API documents both.
#[derive(Debug, Clone, Deserialize)]
pub struct Event {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub subtype: Option<String>,
    /// Who wrote it; absent on some subtypes.
    #[serde(default)]
    pub user: Option<String>,
    /// Set on messages a bot or an app posted (the bridge's own included).
    #[serde(default)]
    pub bot_id: Option<String>,
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub channel: String,
    /// `channel`, `group`, `im` or `mpim` (`message` events only).
    #[serde(default)]
    pub channel_type: Option<String>,
    #[serde(default)]
    pub ts: String,
    /// The thread the message is in, when it is a reply (or the thread's first).
    #[serde(default)]
    pub thread_ts: Option<String>,
    /// The person's workspace.
    #[serde(default)]
    pub team: Option<String>,
}

/// Subtypes that are still a person writing: a thread reply also sent to the channel,
/// and a message with a file (its text is what they typed).
const PERSON_SUBTYPES: &[&str] = &["thread_broadcast", "file_share"];

/// What an event is for the bridge: a message for the agent in `chat`, or nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routed {
    pub chat: ChatKey,
    pub user: String,
    /// The text with the bot's mention taken out.
    pub text: String,
}

/// Where `event` goes, given the bot's user id and the configured channels; `None` for
/// what the agent does not hear (pure, so every rule is tested without Slack).
pub fn route(event: &Event, bot_user: &str, channels: &[String]) -> Option<Routed> {
    if event.bot_id.is_some() || event.subtype.as_deref().is_some_and(|s| !PERSON_SUBTYPES.contains(&s)) {
        return None;
    }
    let user = event.user.as_deref().filter(|u| !u.is_empty() && *u != bot_user)?;
    let configured = channels.iter().any(|c| c.trim() == event.channel);
    let direct = event.channel_type.as_deref() == Some("im");
    let chat = match event.kind.as_str() {
        "message" if direct => ChatKey::new(PLATFORM, &format!("{DM_PREFIX}{user}"), event.thread_ts.as_deref()),
        "message" if configured => in_thread(event),
        // Heard as a `message` in a configured channel already.
        "app_mention" if !configured => in_thread(event),
        _ => return None,
    };
    let text = strip_mention(&event.text, bot_user);
    (!text.is_empty()).then(|| Routed { chat, user: user.to_owned(), text })
}

/// The thread a channel message belongs to: its own when it is top-level.
fn in_thread(event: &Event) -> ChatKey {
    let thread = event.thread_ts.as_deref().unwrap_or(&event.ts);
    ChatKey::new(PLATFORM, &event.channel, Some(thread))
}

/// `text` without the bot's mention (`<@U…>`, or `<@U…|name>` as older clients write
/// it), spaces tidied.
pub fn strip_mention(text: &str, bot_user: &str) -> String {
    let mut rest = text;
    let mut out = String::with_capacity(text.len());
    let open = format!("<@{bot_user}");
    while let Some(at) = rest.find(&open) {
        let after = &rest[at + open.len()..];
        match after.find('>') {
            // Exactly the bot: `>` right away, or `|name>`.
            Some(end) if end == 0 || after.starts_with('|') => {
                out.push_str(&rest[..at]);
                out.push(' ');
                rest = &after[end + 1..];
            }
            _ => {
                out.push_str(&rest[..at + open.len()]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The person who wrote, with their workspace as the space `access.chats` may open.
pub fn actor(user: &str, team: Option<&str>) -> Actor {
    let mut actor = Actor::new(PLATFORM, user, user);
    actor.space = team.map(str::to_owned);
    actor
}

/// Handles one `events_api` payload.
pub async fn on_event(shared: &Shared, payload: &serde_json::Value) {
    let callback: EventCallback = match serde_json::from_value(payload.clone()) {
        Ok(callback) => callback,
        Err(e) => {
            tracing::debug!(error = %e, "an event the bridge does not read; skipped");
            return;
        }
    };
    let event = &callback.event;
    let Some(routed) = route(event, &shared.bot_user, &shared.channels) else { return };
    let mut actor = actor(&routed.user, event.team.as_deref().or(callback.team_id.as_deref()));
    // `access.roles` may name user groups: whoever is in one may talk.
    shared.groups.of_person(&shared.api, &mut actor).await;
    let locale = shared.locale;
    // Where a notice for the author goes: the conversation and thread they wrote in.
    let thread = routed.chat.thread_id.clone();
    let tell = |text: String| async move { tell(shared, &event.channel, &routed.user, thread.as_deref(), &text).await };
    match shared.engine.admit(routed.chat.clone(), actor.clone(), "message", &routed.text, locale.code()).await {
        Ok(()) => {}
        // Already answered here within the refusal window: nothing more.
        Err(EngineError::NotAdmitted(stranger)) if stranger.silent => return,
        Err(EngineError::NotAdmitted(stranger)) => return tell(stranger_notice(&stranger, locale)).await,
        Err(e) => return tell(engine_failure(locale, &e, "cannot check who may talk", stext(locale, SMsg::Internal))).await,
    }
    match shared.engine.user_message(routed.chat.clone(), actor, routed.text.clone()).await {
        Ok(_) => {}
        Err(EngineError::NotAdmitted(stranger)) if stranger.silent => {}
        Err(EngineError::NotAdmitted(stranger)) => tell(stranger_notice(&stranger, locale)).await,
        Err(e) => tell(engine_failure(locale, &e, "cannot pass a Slack message to the agent", stext(locale, SMsg::Internal))).await,
    }
}

/// A notice only `user` sees, in `channel` (and `thread`).
async fn tell(shared: &Shared, channel: &str, user: &str, thread: Option<&str>, text: &str) {
    let text = super::text::escape_cut(text, NOTICE);
    if let Err(e) = shared.api.post_ephemeral(channel, user, thread, &text).await {
        tracing::warn!(error = %e, "cannot show a notice to the person who wrote");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const BOT: &str = "U0BOT";

    fn event(value: serde_json::Value) -> Event {
        serde_json::from_value(value).unwrap()
    }

    fn channels() -> Vec<String> {
        vec!["C0OPS".into()]
    }

    #[test]
    fn a_top_level_channel_message_starts_a_thread_at_its_own_ts() {
        let top = event(json!({"type": "message", "channel": "C0OPS", "channel_type": "channel", "user": "U0ANA", "text": "hi", "ts": "1.000100"}));
        let routed = route(&top, BOT, &channels()).unwrap();
        assert_eq!(routed, Routed { chat: ChatKey::new(PLATFORM, "C0OPS", Some("1.000100")), user: "U0ANA".into(), text: "hi".into() });
        let reply = event(
            json!({"type": "message", "channel": "C0OPS", "channel_type": "channel", "user": "U0ANA", "text": "more", "ts": "2.0", "thread_ts": "1.000100"}),
        );
        assert_eq!(route(&reply, BOT, &channels()).unwrap().chat, routed.chat, "a reply continues the thread's session");
    }

    #[test]
    fn a_dm_is_the_persons_chat_and_other_channels_need_a_mention() {
        let dm = event(json!({"type": "message", "channel": "D0ANA", "channel_type": "im", "user": "U0ANA", "text": "hi", "ts": "1.0"}));
        assert_eq!(route(&dm, BOT, &channels()).unwrap().chat, ChatKey::new(PLATFORM, "user:U0ANA", None));
        let elsewhere = event(json!({"type": "message", "channel": "C0DEV", "channel_type": "channel", "user": "U0ANA", "text": "<@U0BOT> hi", "ts": "1.0"}));
        assert_eq!(route(&elsewhere, BOT, &channels()), None, "the app_mention carries it");
        let mention = event(json!({"type": "app_mention", "channel": "C0DEV", "user": "U0ANA", "text": "<@U0BOT> hi", "ts": "1.0"}));
        assert_eq!(route(&mention, BOT, &channels()).unwrap().text, "hi");
        let mention_here = event(json!({"type": "app_mention", "channel": "C0OPS", "user": "U0ANA", "text": "<@U0BOT> hi", "ts": "1.0"}));
        assert_eq!(route(&mention_here, BOT, &channels()), None, "the message event carries it");
    }

    #[test]
    fn bots_edits_and_empty_messages_are_ignored() {
        for ignored in [
            json!({"type": "message", "channel": "C0OPS", "user": "U0BOT", "text": "mine", "ts": "1.0"}),
            json!({"type": "message", "channel": "C0OPS", "bot_id": "B0OTHER", "user": "U0X", "text": "a bot", "ts": "1.0"}),
            json!({"type": "message", "channel": "C0OPS", "subtype": "bot_message", "text": "a bot", "ts": "1.0"}),
            json!({"type": "message", "channel": "C0OPS", "subtype": "message_changed", "ts": "1.0"}),
            json!({"type": "message", "channel": "C0OPS", "subtype": "message_deleted", "ts": "1.0"}),
            json!({"type": "message", "channel": "C0OPS", "subtype": "channel_join", "user": "U0ANA", "text": "joined", "ts": "1.0"}),
            json!({"type": "message", "channel": "C0OPS", "user": "U0ANA", "text": " <@U0BOT> ", "ts": "1.0"}),
        ] {
            assert_eq!(route(&event(ignored.clone()), BOT, &channels()), None, "{ignored}");
        }
        let broadcast =
            event(json!({"type": "message", "subtype": "thread_broadcast", "channel": "C0OPS", "user": "U0ANA", "text": "x", "ts": "2.0", "thread_ts": "1.0"}));
        assert!(route(&broadcast, BOT, &channels()).is_some());
    }

    #[test]
    fn only_the_bots_own_mention_is_removed() {
        assert_eq!(strip_mention("<@U0BOT>  trade now", BOT), "trade now");
        assert_eq!(strip_mention("ask <@U0BOT|hitl> and <@U0BOTX> too", BOT), "ask and <@U0BOTX> too");
        assert_eq!(strip_mention("hỏi <@U0BOT>", BOT), "hỏi");
        assert_eq!(strip_mention("<@U0BOT", BOT), "<@U0BOT");
    }
}
