//! Posts people make → the agent's turns. A post in one of `mattermost.channels`, in a
//! DM with the bot, or that @mentions the bot elsewhere starts or continues a turn;
//! the bot's own posts, system posts and empty ones are not the agent's to hear.
//!
//! Each thread is its own session: a top-level post in a channel opens a thread at
//! itself (the agent answers under it), a reply continues its thread's (`root_id`). A
//! DM is the person's chat (`mattermost:user:<id>`), a thread in it its own session.
//! Whoever may not talk gets an ephemeral notice, once per refusal window.

use super::address::DM_PREFIX;
use super::payload::Posted;
use super::text::{MMsg, mtext};
use super::{PLATFORM, Shared};
use crate::engine::EngineError;
use crate::interaction::Actor;
use crate::platform::kit::refusals::{engine_failure, stranger_notice};
use crate::store::ChatKey;

/// A post the agent hears: where it goes and what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routed {
    pub chat: ChatKey,
    pub user: String,
    pub text: String,
}

/// Where `posted` goes, if the agent is to hear it.
pub fn route(posted: &Posted, bot_id: &str, bot_name: &str, channels: &[String]) -> Option<Routed> {
    let post = &posted.post;
    if !post.kind.is_empty() || post.user_id.is_empty() || post.user_id == bot_id {
        return None;
    }
    let direct = posted.channel_type == "D";
    let configured = channels.iter().any(|c| c.trim() == post.channel_id);
    let mentioned = posted.mentions.iter().any(|m| m == bot_id) || mentions(&post.message, bot_name);
    let root = Some(post.root_id.as_str()).filter(|r| !r.is_empty());
    let chat = if direct {
        ChatKey::new(PLATFORM, &format!("{DM_PREFIX}{}", post.user_id), root)
    } else if configured || mentioned {
        ChatKey::new(PLATFORM, &post.channel_id, Some(root.unwrap_or(&post.id)))
    } else {
        return None;
    };
    let text = strip_mention(&post.message, bot_name);
    (!text.is_empty()).then(|| Routed { chat, user: post.user_id.clone(), text })
}

/// Whether `text` mentions `@name` as a whole word.
fn mentions(text: &str, name: &str) -> bool {
    text.split(|c: char| c.is_whitespace() || ",;:!?()".contains(c)).any(|word| word.strip_prefix('@') == Some(name))
}

/// `text` without the bot's own `@name`, whitespace collapsed.
pub fn strip_mention(text: &str, name: &str) -> String {
    let mention = format!("@{name}");
    text.split_whitespace().filter(|word| *word != mention).collect::<Vec<_>>().join(" ")
}

/// Hands a post to the agent, or tells its author why not.
pub async fn on_post(shared: &Shared, posted: Posted) {
    let Some(routed) = route(&posted, &shared.bot.id, &shared.bot.username, &shared.channels) else { return };
    let name = shared.username(&routed.user).await;
    let mut actor = Actor::new(PLATFORM, &routed.user, &name);
    actor.space = posted.team_id.clone().filter(|t| super::address::is_id(t));
    actor.groups = shared.groups.of(&shared.api, &shared.engine, &routed.user, None).await;
    let locale = shared.locale;
    let channel = posted.post.channel_id.clone();
    let root = routed.chat.thread_id.clone();
    let tell = |text: String| async move { tell(shared, &channel, &routed.user, root.as_deref(), &text).await };
    match shared.engine.admit(routed.chat.clone(), actor.clone(), "message", &routed.text, locale.code()).await {
        Ok(()) => {}
        Err(EngineError::NotAdmitted(stranger)) if stranger.silent => return,
        Err(EngineError::NotAdmitted(stranger)) => return tell(stranger_notice(&stranger, locale)).await,
        Err(e) => return tell(engine_failure(locale, &e, "cannot check who may talk", mtext(locale, MMsg::Internal))).await,
    }
    match shared.engine.user_message(routed.chat.clone(), actor, routed.text.clone()).await {
        Ok(_) => {}
        Err(EngineError::NotAdmitted(stranger)) if stranger.silent => {}
        Err(EngineError::NotAdmitted(stranger)) => tell(stranger_notice(&stranger, locale)).await,
        Err(e) => tell(engine_failure(locale, &e, "cannot pass a Mattermost post to the agent", mtext(locale, MMsg::Internal))).await,
    }
}

/// A notice only `user` sees, in the thread they wrote in.
async fn tell(shared: &Shared, channel: &str, user: &str, root: Option<&str>, text: &str) {
    if let Err(e) = shared.api.ephemeral(user, channel, root, &super::text::escape_cut(text, 3000)).await {
        tracing::warn!(error = %e, "cannot show a notice to the person who wrote");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const BOT: &str = "b0t00000000000000000000000";
    const OPS: &str = "c0ps0000000000000000000000";
    const DEV: &str = "d0ev0000000000000000000000";
    const ANA: &str = "a0a00000000000000000000000";
    const POST: &str = "p0st0000000000000000000000";

    fn posted(value: serde_json::Value) -> Posted {
        serde_json::from_value(value).unwrap()
    }

    fn route_of(value: serde_json::Value) -> Option<Routed> {
        route(&posted(value), BOT, "hitl-bridge", &[OPS.to_owned()])
    }

    #[test]
    fn a_top_level_post_opens_a_thread_and_a_reply_continues_it() {
        let top = route_of(json!({"post": {"id": POST, "channel_id": OPS, "user_id": ANA, "message": "hi"}, "channel_type": "O"})).unwrap();
        assert_eq!(top, Routed { chat: ChatKey::new(PLATFORM, OPS, Some(POST)), user: ANA.into(), text: "hi".into() });
        let reply = route_of(json!({"post": {"id": "x", "root_id": POST, "channel_id": OPS, "user_id": ANA, "message": "more"}, "channel_type": "O"}));
        assert_eq!(reply.unwrap().chat, top.chat);
    }

    #[test]
    fn a_dm_is_the_persons_chat_and_elsewhere_needs_a_mention() {
        let dm = route_of(json!({"post": {"id": POST, "channel_id": DEV, "user_id": ANA, "message": "hi"}, "channel_type": "D"})).unwrap();
        assert_eq!(dm.chat, ChatKey::new(PLATFORM, &format!("user:{ANA}"), None));
        assert_eq!(route_of(json!({"post": {"id": POST, "channel_id": DEV, "user_id": ANA, "message": "hi"}, "channel_type": "O"})), None);
        let mention = route_of(json!({"post": {"id": POST, "channel_id": DEV, "user_id": ANA, "message": "@hitl-bridge  deploy"}, "channel_type": "O"}));
        assert_eq!(mention.unwrap().text, "deploy");
        let by_id = route_of(json!({"post": {"id": POST, "channel_id": DEV, "user_id": ANA, "message": "deploy"}, "channel_type": "O", "mentions": [BOT]}));
        assert!(by_id.is_some());
        assert_eq!(route_of(json!({"post": {"id": POST, "channel_id": DEV, "user_id": ANA, "message": "@hitl-bridgex hi"}, "channel_type": "O"})), None);
    }

    #[test]
    fn the_bots_own_system_and_empty_posts_are_ignored() {
        for ignored in [
            json!({"post": {"id": POST, "channel_id": OPS, "user_id": BOT, "message": "a card"}, "channel_type": "O"}),
            json!({"post": {"id": POST, "channel_id": OPS, "user_id": ANA, "message": "joined", "type": "system_join_channel"}, "channel_type": "O"}),
            json!({"post": {"id": POST, "channel_id": OPS, "user_id": ANA, "message": " @hitl-bridge "}, "channel_type": "O"}),
            json!({"post": {"id": POST, "channel_id": OPS, "message": "nobody"}, "channel_type": "O"}),
        ] {
            assert_eq!(route_of(ignored.clone()), None, "{ignored}");
        }
    }
}
