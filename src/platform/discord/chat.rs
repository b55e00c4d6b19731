//! Chat routing: which Discord messages go to the agent, and as which chat.
//!
//! Messages in `discord.channels`, DMs, and messages that mention the bot become
//! `message` commands; everything else (other channels, bots, the bridge itself) is
//! ignored. A chat is a channel, or a thread under its parent channel. With
//! `discord.thread_per_session` a top-level message in a configured channel opens a
//! thread and a fresh session for it, so each conversation stays in its own thread.
//!
//! Before anything reaches the agent (or a thread is opened) the engine's admission
//! decides whether the author may talk; a stranger gets the refusal, or their pairing
//! code, as a reply to their message.

use serenity::all::{Channel, ChannelType, CreateMessage, CreateThread, Message, UserId};

use super::text::{DMsg, dtext, truncate};
use super::{PLATFORM, Shared, members, render, rest};
use crate::engine::EngineError;
use crate::interaction::Actor;
use crate::platform::kit::refusals::{engine_failure, stranger_notice};
use crate::platform::kit::turns::Priority;
use crate::store::ChatKey;

/// Discord's limit on a thread name.
const THREAD_NAME: usize = 100;

fn chat(channel: u64, thread: Option<u64>) -> ChatKey {
    ChatKey { platform: PLATFORM.into(), chat_id: channel.to_string(), thread_id: thread.map(|t| t.to_string()) }
}

/// The message text with the bot's own mention taken out.
pub fn strip_mention(content: &str, bot: UserId) -> String {
    let id = bot.get();
    content.replace(&format!("<@{id}>"), "").replace(&format!("<@!{id}>"), "").trim().to_owned()
}

/// The parent of `channel` if it is a thread, asked of Discord once per channel (the
/// bridge runs without serenity's cache) and remembered.
async fn thread_parent(shared: &Shared, channel: u64) -> Option<u64> {
    if let Some(known) = shared.looked_up(channel) {
        return known;
    }
    let found = rest::retrying(&shared.metrics, "get channel", || shared.http.get_channel(channel.into())).await;
    let parent = match found {
        Ok(Channel::Guild(c)) if matches!(c.kind, ChannelType::PublicThread | ChannelType::PrivateThread | ChannelType::NewsThread) => {
            c.parent_id.map(|p| p.get())
        }
        Ok(_) => None,
        Err(e) => {
            // Not remembered: the next message asks again.
            tracing::warn!(error = %e, channel, "cannot look up a channel; treating it as a plain channel");
            return None;
        }
    };
    shared.remember_lookup(channel, parent);
    parent
}

/// Routes one gateway message. `bot` is the bridge's own user.
pub async fn on_message(shared: &Shared, message: &Message, bot: UserId) {
    if message.author.bot || message.author.id == bot {
        return;
    }
    let channel = message.channel_id.get();
    let configured = |id: u64| shared.settings.channels.iter().any(|c| c.trim() == id.to_string());
    let mentioned = message.mentions.iter().any(|u| u.id == bot);
    let text = strip_mention(&message.content, bot);
    if text.is_empty() {
        return;
    }
    // Where the message belongs; a new thread is opened only once the author is admitted.
    let (key, open_new_thread) = if message.guild_id.is_none() {
        (chat(channel, None), false)
    } else if configured(channel) {
        (chat(channel, None), shared.settings.thread_per_session)
    } else if let Some(parent) = shared.thread_parent(channel) {
        // A thread this bridge opened for a session.
        (chat(parent, Some(channel)), false)
    } else {
        // A thread someone else opened under a configured channel counts as part of
        // it; anywhere else only a mention reaches the agent.
        match thread_parent(shared, channel).await {
            Some(parent) if configured(parent) || mentioned => (chat(parent, Some(channel)), false),
            _ if mentioned => (chat(channel, None), false),
            _ => return,
        }
    };
    // The requester: who may answer what this message starts (roles as in the guild,
    // or looked up in `discord.guild_id` for a DM).
    let mut actor = members::person(shared, &message.author, None, message.guild_id).await;
    if let Some(member) = message.member.as_deref() {
        if let Some(nick) = &member.nick {
            actor.name = nick.clone();
        }
        actor.groups = member.roles.iter().map(|r| r.get().to_string()).collect();
    }
    let locale = shared.locale(None);
    match shared.engine.admit(key.clone(), actor.clone(), "message", &text, locale.code()).await {
        Ok(()) => {}
        // Already answered in this channel within the refusal window: nothing more.
        Err(EngineError::NotAdmitted(stranger)) if stranger.silent => return,
        Err(EngineError::NotAdmitted(stranger)) => return reply(shared, message, &stranger_notice(&stranger, locale), Priority::Refusal).await,
        Err(e) => {
            let notice = engine_failure(locale, &e, "cannot check who may talk", dtext(locale, DMsg::Internal));
            return reply(shared, message, &notice, Priority::Text).await;
        }
    }
    let key = if open_new_thread {
        match open_thread(shared, message, &text).await {
            Some(thread) => {
                let key = chat(channel, Some(thread));
                if let Err(e) = shared.engine.new_session(key.clone()).await {
                    tracing::error!(error = %e, "cannot start a session for a new thread");
                    return;
                }
                key
            }
            None => key,
        }
    } else {
        key
    };
    to_agent(shared, message, key, actor, text).await;
}

/// A message for the agent from someone admitted (the engine checks again).
async fn to_agent(shared: &Shared, message: &Message, key: ChatKey, actor: Actor, text: String) {
    match shared.engine.user_message(key, actor, text).await {
        Ok(_) => {}
        Err(EngineError::NotAdmitted(stranger)) if stranger.silent => {}
        Err(EngineError::NotAdmitted(stranger)) => reply(shared, message, &stranger_notice(&stranger, shared.locale(None)), Priority::Refusal).await,
        Err(e) => {
            let notice = engine_failure(shared.locale(None), &e, "cannot pass a Discord message to the agent", dtext(shared.locale(None), DMsg::Internal));
            reply(shared, message, &notice, Priority::Text).await;
        }
    }
}

/// Answers `message` in its channel, as a reply to it, when its turn comes.
async fn reply(shared: &Shared, message: &Message, text: &str, priority: Priority) {
    let answer = CreateMessage::new().content(truncate(text, render::limits::CONTENT)).reference_message(message);
    if let Err(e) = shared.send(message.channel_id, answer, priority).await {
        tracing::warn!(error = %e, "cannot answer a Discord message");
    }
}

/// Opens a thread on `message`, named after its text.
async fn open_thread(shared: &Shared, message: &Message, text: &str) -> Option<u64> {
    let name = truncate(text.lines().next().unwrap_or(text), THREAD_NAME);
    let builder = CreateThread::new(name);
    let http = &shared.http;
    match rest::retrying(&shared.metrics, "create thread", || message.channel_id.create_thread_from_message(http, message.id, builder.clone())).await {
        Ok(thread) => {
            shared.remember_thread(thread.id.get(), message.channel_id.get());
            Some(thread.id.get())
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot open a thread; answering in the channel");
            None
        }
    }
}
