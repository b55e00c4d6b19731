//! The few room events the bridge reads, from their JSON as `/sync` gives them (after
//! decryption): a text message (with its thread and the event it replies to), a
//! reaction (`m.reaction`, an `m.annotation` of one of its cards), a poll vote
//! (`org.matrix.msc3381.poll.response`, or the stable `m.poll.response`), and an
//! encrypted event the bot could not decrypt. Everything else is not the bridge's.
//!
//! Shapes follow the client-server spec: `m.room.message` (§ Instant Messaging),
//! `m.relates_to` with `m.in_reply_to` (§ Rich replies) and `rel_type: m.thread`
//! (§ Threading), `m.annotation` (§ Reactions), `m.replace` (§ Event replacements),
//! and MSC3381 (polls) for the vote's `answers` / `m.selections`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One event the bridge handles, as stored in the durable inbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Update {
    /// Someone wrote in a room.
    Message {
        room: String,
        event_id: String,
        sender: String,
        /// The text, without a reply's quoted fallback.
        body: String,
        /// The thread it is in: its root event.
        thread: Option<String>,
        /// The event it answers (a rich reply), if not only a thread's fallback.
        reply_to: Option<String>,
        /// Whether the room is a DM with the bot (two members, or marked direct).
        direct: bool,
        /// Whether the message mentions the bot (`m.mentions` or its id in the text).
        mentions_bot: bool,
    },
    /// Someone reacted to an event with `key`.
    Reaction { room: String, event_id: String, sender: String, target: String, key: String },
    /// Someone voted in a poll: the answer ids they chose now (a vote replaces their
    /// earlier one; none withdraws it).
    Vote { room: String, event_id: String, sender: String, poll: String, answers: Vec<String> },
    /// An encrypted event the bot has no key for.
    Undecryptable { room: String, event_id: String, sender: String, direct: bool },
}

impl Update {
    /// The room it happened in: its lane.
    pub fn room(&self) -> &str {
        match self {
            Update::Message { room, .. } | Update::Reaction { room, .. } | Update::Vote { room, .. } | Update::Undecryptable { room, .. } => room,
        }
    }

    /// Its event id: its key in the inbox.
    pub fn event_id(&self) -> &str {
        match self {
            Update::Message { event_id, .. } | Update::Reaction { event_id, .. } | Update::Vote { event_id, .. } | Update::Undecryptable { event_id, .. } => {
                event_id
            }
        }
    }

    pub fn sender(&self) -> &str {
        match self {
            Update::Message { sender, .. } | Update::Reaction { sender, .. } | Update::Vote { sender, .. } | Update::Undecryptable { sender, .. } => sender,
        }
    }
}

/// What the room says about an event beyond its JSON.
#[derive(Debug, Clone, Copy)]
pub struct RoomFacts<'a> {
    pub room: &'a str,
    pub bot: &'a str,
    pub direct: bool,
}

/// The update `event` (a timeline event's JSON, decrypted) is, if the bridge reads
/// it: the bot's own events, state events, edits and redactions are not.
pub fn read(event: &Value, facts: RoomFacts<'_>) -> Option<Update> {
    let sender = event["sender"].as_str()?;
    let event_id = event["event_id"].as_str()?;
    if sender == facts.bot || event.get("state_key").is_some() || !super::address::is_user_id(sender) {
        return None;
    }
    let content = &event["content"];
    let relates = &content["m.relates_to"];
    let (room, event_id, sender) = (facts.room.to_owned(), event_id.to_owned(), sender.to_owned());
    match event["type"].as_str()? {
        "m.room.message" => {
            // An edit of an earlier message is not a new message.
            if relates["rel_type"] == "m.replace" {
                return None;
            }
            if !matches!(content["msgtype"].as_str(), Some("m.text" | "m.notice" | "m.emote")) {
                return None;
            }
            let body = strip_reply_fallback(content["body"].as_str()?);
            let thread = (relates["rel_type"] == "m.thread").then(|| relates["event_id"].as_str().map(str::to_owned)).flatten();
            // In a thread, `m.in_reply_to` is only a fallback for clients without
            // threads unless `is_falling_back` is false.
            let falling_back = thread.is_some() && relates["is_falling_back"].as_bool().unwrap_or(true);
            let reply_to = relates["m.in_reply_to"]["event_id"].as_str().filter(|_| !falling_back).map(str::to_owned);
            let mentions_bot = content["m.mentions"]["user_ids"].as_array().is_some_and(|ids| ids.iter().any(|id| id == facts.bot)) || body.contains(facts.bot);
            Some(Update::Message { room, event_id, sender, body, thread, reply_to, direct: facts.direct, mentions_bot })
        }
        "m.reaction" => {
            if relates["rel_type"] != "m.annotation" {
                return None;
            }
            let target = relates["event_id"].as_str()?.to_owned();
            let key = relates["key"].as_str()?.to_owned();
            Some(Update::Reaction { room, event_id, sender, target, key })
        }
        "org.matrix.msc3381.poll.response" | "m.poll.response" => {
            if relates["rel_type"] != "m.reference" {
                return None;
            }
            let poll = relates["event_id"].as_str()?.to_owned();
            let answers = content["org.matrix.msc3381.poll.response"]["answers"].as_array().or_else(|| content["m.selections"].as_array())?;
            let answers = answers.iter().filter_map(Value::as_str).map(str::to_owned).collect();
            Some(Update::Vote { room, event_id, sender, poll, answers })
        }
        _ => None,
    }
}

/// A reply's text without the quoted fallback older clients put before it (lines
/// starting with `> ` then a blank line, § Rich replies, "Fallbacks").
pub fn strip_reply_fallback(body: &str) -> String {
    if !body.starts_with("> ") {
        return body.trim().to_owned();
    }
    let mut lines = body.lines();
    for line in lines.by_ref() {
        if !line.starts_with('>') {
            break;
        }
    }
    lines.collect::<Vec<_>>().join("\n").trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const BOT: &str = "@hitl:localhost";
    const ROOM: &str = "!ops:localhost";

    fn facts() -> RoomFacts<'static> {
        RoomFacts { room: ROOM, bot: BOT, direct: false }
    }

    #[test]
    fn a_message_in_a_thread_replying_to_a_card() {
        let event = json!({"type": "m.room.message", "sender": "@ana:localhost", "event_id": "$m1", "content": {
            "msgtype": "m.text", "body": "> <@hitl:localhost> card\n\nreject too risky",
            "m.relates_to": {"rel_type": "m.thread", "event_id": "$root", "is_falling_back": false, "m.in_reply_to": {"event_id": "$card"}}
        }});
        let Some(Update::Message { body, thread, reply_to, mentions_bot, .. }) = read(&event, facts()) else { panic!() };
        assert_eq!((body.as_str(), thread.as_deref(), reply_to.as_deref(), mentions_bot), ("reject too risky", Some("$root"), Some("$card"), false));
        // Without is_falling_back: false, the reply is only the thread's fallback.
        let mut plain = event.clone();
        plain["content"]["m.relates_to"]["is_falling_back"] = json!(true);
        let Some(Update::Message { reply_to, .. }) = read(&plain, facts()) else { panic!() };
        assert_eq!(reply_to, None);
    }

    #[test]
    fn reactions_and_votes_in_both_forms() {
        let reaction = json!({"type": "m.reaction", "sender": "@ana:localhost", "event_id": "$r", "content": {"m.relates_to": {"rel_type": "m.annotation", "event_id": "$card", "key": "✅"}}});
        assert_eq!(
            read(&reaction, facts()),
            Some(Update::Reaction { room: ROOM.into(), event_id: "$r".into(), sender: "@ana:localhost".into(), target: "$card".into(), key: "✅".into() })
        );
        let unstable = json!({"type": "org.matrix.msc3381.poll.response", "sender": "@ana:localhost", "event_id": "$v", "content": {
            "org.matrix.msc3381.poll.response": {"answers": ["o1", "o0"]}, "m.relates_to": {"rel_type": "m.reference", "event_id": "$poll"}}});
        let stable = json!({"type": "m.poll.response", "sender": "@ana:localhost", "event_id": "$v", "content": {
            "m.selections": ["o1", "o0"], "m.relates_to": {"rel_type": "m.reference", "event_id": "$poll"}}});
        for vote in [unstable, stable] {
            assert_eq!(
                read(&vote, facts()),
                Some(Update::Vote {
                    room: ROOM.into(),
                    event_id: "$v".into(),
                    sender: "@ana:localhost".into(),
                    poll: "$poll".into(),
                    answers: vec!["o1".into(), "o0".into()]
                })
            );
        }
    }

    #[test]
    fn the_bots_own_edits_state_and_strangers_forms_are_not_read() {
        for ignored in [
            json!({"type": "m.room.message", "sender": BOT, "event_id": "$1", "content": {"msgtype": "m.text", "body": "card"}}),
            json!({"type": "m.room.message", "sender": "@ana:localhost", "event_id": "$2", "content": {"msgtype": "m.text", "body": "x", "m.relates_to": {"rel_type": "m.replace", "event_id": "$1"}}}),
            json!({"type": "m.room.member", "sender": "@ana:localhost", "event_id": "$3", "state_key": "@ana:localhost", "content": {}}),
            json!({"type": "m.room.message", "sender": "@ana:localhost", "event_id": "$4", "content": {"msgtype": "m.image", "body": "x.png"}}),
            json!({"type": "m.reaction", "sender": "@ana:localhost", "event_id": "$5", "content": {"m.relates_to": {"rel_type": "m.reference", "event_id": "$1", "key": "✅"}}}),
            json!({"type": "m.room.message", "sender": "ana", "event_id": "$6", "content": {"msgtype": "m.text", "body": "x"}}),
        ] {
            assert_eq!(read(&ignored, facts()), None, "{ignored}");
        }
    }

    #[test]
    fn a_mention_is_seen_in_m_mentions_or_the_text() {
        let mention = json!({"type": "m.room.message", "sender": "@ana:localhost", "event_id": "$1", "content": {"msgtype": "m.text", "body": "hi", "m.mentions": {"user_ids": [BOT]}}});
        assert!(matches!(read(&mention, facts()), Some(Update::Message { mentions_bot: true, .. })));
        assert_eq!(strip_reply_fallback("> <@a:x> one\n> two\n\nthree"), "three");
        assert_eq!(strip_reply_fallback(" plain "), "plain");
    }
}
