//! How Matrix's rooms, people and approver groups are written in configuration,
//! policies, MCP and the HTTP API:
//!
//! - a room `matrix:!ROOM_ID`, a thread in it `matrix:!ROOM_ID/$EVENT` (the
//!   thread's root event), a person's DM with the bot `matrix:user:@USER:SERVER`
//!   (found or created when something is sent: the chat id keeps the `user:` prefix);
//! - a person `matrix:@USER:SERVER`; an approver group `!ROOM_ID@50`: the room's
//!   members at power level 50 or more ([`super::groups`]);
//! - HTTP API targets `{"platform":"matrix","room_id":"…","thread_id":"…"}` and
//!   `{"platform":"matrix","user_id":"…"}`.
//!
//! Identifiers follow the client-server spec's appendix "Identifier Grammar": a sigil
//! (`!` room, `@` user, `$` event), then an opaque or local part, then (for users, and
//! rooms before room version 12) `:` and the server name. Anything else is refused
//! here, before it reaches the homeserver.

use serde_json::{Value, json};

use super::PLATFORM;
use crate::interaction::chat::{AllowedChats, ChatKey, ChatNetwork, TargetFields, target_object_schema};
use crate::platform::kit::address::checked_field;

/// The chat id prefix of a DM target.
pub const DM_PREFIX: &str = "user:";
/// The longest identifier the spec allows (255 bytes, sigil and server included).
const MAX_ID: usize = 255;

/// A server name: a host name or IP literal, with an optional port.
fn is_server_name(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
}

/// `<sigil><local>:<server>`, the local part made of `local_ok` bytes.
fn is_qualified(text: &str, sigil: char, local_ok: fn(u8) -> bool) -> bool {
    let Some(rest) = text.strip_prefix(sigil) else { return false };
    let Some((local, server)) = rest.split_once(':') else { return false };
    text.len() <= MAX_ID && !local.is_empty() && local.bytes().all(local_ok) && is_server_name(server)
}

/// A room id: `!opaque:server`, or from room version 12 on `!opaque` alone (the
/// hash of the room's create event, no server part).
pub fn is_room_id(text: &str) -> bool {
    let Some(rest) = text.strip_prefix('!') else { return false };
    let (opaque, server) = match rest.split_once(':') {
        Some((opaque, server)) => (opaque, Some(server)),
        None => (rest, None),
    };
    text.len() <= MAX_ID && !opaque.is_empty() && opaque.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.=".contains(&b)) && server.is_none_or(is_server_name)
}

/// A user id, `@localpart:server` (the historical grammar: printable ASCII but `:`).
pub fn is_user_id(text: &str) -> bool {
    is_qualified(text, '@', |b| b.is_ascii_graphic() && b != b':')
}

/// An event id, `$opaque` (room versions 4 and later: URL-safe base64, no server).
pub fn is_event_id(text: &str) -> bool {
    text.len() <= MAX_ID
        && text.strip_prefix('$').is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.:+=".contains(&b)))
}

/// An approver group: a room's members at a power level or above, `!ROOM_ID@50`.
pub fn parse_group(text: &str) -> Option<(&str, i64)> {
    let (room, level) = text.rsplit_once('@')?;
    let level: i64 = level.parse().ok().filter(|l| (0..=1_000_000).contains(l))?;
    is_room_id(room).then_some((room, level))
}

/// Matrix's [`ChatNetwork`].
pub struct Address;

impl ChatNetwork for Address {
    fn name(&self) -> &'static str {
        PLATFORM
    }

    fn parse_chat(&self, rest: &str) -> Option<ChatKey> {
        if let Some(user) = rest.strip_prefix(DM_PREFIX) {
            return self.direct_chat(user);
        }
        let (room, thread) = match rest.split_once('/') {
            Some((room, thread)) => (room, Some(thread)),
            None => (rest, None),
        };
        (is_room_id(room) && thread.is_none_or(is_event_id)).then(|| ChatKey::new(PLATFORM, room, thread))
    }

    fn direct_chat(&self, user_id: &str) -> Option<ChatKey> {
        is_user_id(user_id).then(|| ChatKey::new(PLATFORM, &format!("{DM_PREFIX}{user_id}"), None))
    }

    /// One room (its threads too). Matrix has no space the bridge opens whole.
    fn allowed_chats(&self, rest: &str) -> Option<AllowedChats> {
        is_room_id(rest).then(|| AllowedChats::Chat(rest.to_owned()))
    }

    /// A room's members at a power level or above (`!ROOM_ID@50`).
    fn has_groups(&self) -> bool {
        true
    }

    fn is_group_id(&self, id: &str) -> bool {
        parse_group(id).is_some()
    }

    fn group_form(&self) -> Option<&'static str> {
        Some("a room's members at a power level or above `!ROOM_ID@50`")
    }

    fn chat_form(&self) -> Option<&'static str> {
        Some("matrix:!ROOM_ID")
    }

    fn chat_forms(&self) -> &'static [&'static str] {
        &["matrix:!ROOM_ID", "matrix:!ROOM_ID/$THREAD_ROOT", "matrix:user:@USER:SERVER"]
    }

    fn chat_examples(&self) -> &'static [&'static str] {
        &["matrix:!ops:example.org", "matrix:user:@ana:example.org"]
    }

    /// `room_id` (and a thread's `thread_id`), or `user_id` for a DM.
    fn target_chat(&self, fields: &TargetFields) -> Result<ChatKey, (&'static str, String)> {
        let room = checked_field(fields, "room_id", is_room_id, "a Matrix room id (!opaque:server)")?;
        let user = checked_field(fields, "user_id", is_user_id, "a Matrix user id (@name:server)")?;
        let thread = checked_field(fields, "thread_id", is_event_id, "a Matrix event id ($opaque)")?;
        match (room, user) {
            (Some(room), None) => Ok(ChatKey::new(PLATFORM, &room, thread.as_deref())),
            (None, Some(user)) if thread.is_none() => Ok(ChatKey::new(PLATFORM, &format!("{DM_PREFIX}{user}"), None)),
            (None, Some(_)) => Err(("thread_id", "a DM target takes no thread_id".into())),
            _ => Err(("room_id", "a Matrix target needs room_id or user_id (one of them)".into())),
        }
    }

    fn target_of(&self, chat: &ChatKey) -> Value {
        if let Some(user) = chat.chat_id.strip_prefix(DM_PREFIX) {
            return json!({ "platform": PLATFORM, "user_id": user });
        }
        let mut target = json!({ "platform": PLATFORM, "room_id": chat.chat_id });
        if let Some(thread) = &chat.thread_id {
            target["thread_id"] = json!(thread);
        }
        target
    }

    fn target_schema(&self) -> Value {
        target_object_schema(
            PLATFORM,
            &[
                ("room_id", "Matrix room id (!opaque:server)."),
                ("thread_id", "A thread in the room: the event id of its root ($opaque)."),
                ("user_id", "A person (@name:server): their DM with the bot (instead of room_id)."),
            ],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::chat::Networks;
    use std::sync::Arc;

    const ROOM: &str = "!ops0Abc:example.org";
    const EVENT: &str = "$Ab-9_xYz";
    const ANA: &str = "@ana:example.org";

    fn networks() -> Networks {
        Networks::new(vec![Arc::new(Address)])
    }

    #[test]
    fn rooms_threads_and_dms_parse_as_written_and_display_back() {
        let n = networks();
        for (written, key) in [
            (format!("matrix:{ROOM}"), ChatKey::new("matrix", ROOM, None)),
            (format!("matrix:{ROOM}/{EVENT}"), ChatKey::new("matrix", ROOM, Some(EVENT))),
            (format!("matrix:user:{ANA}"), ChatKey::new("matrix", &format!("user:{ANA}"), None)),
            ("matrix:!r:localhost:8008".to_owned(), ChatKey::new("matrix", "!r:localhost:8008", None)),
        ] {
            assert_eq!(n.parse_chat(&written), Some(key.clone()), "{written}");
            assert_eq!(n.display_chat(&key), written);
        }
        assert_eq!(n.parse_chat("matrix:!xk58VJ-_q"), Some(ChatKey::new("matrix", "!xk58VJ-_q", None)), "room version 12");
        for bad in [
            "matrix:",
            "matrix:#ops:example.org",
            "matrix:!",
            "matrix:!:x",
            "matrix:!a b:x",
            "matrix:!a:x/",
            "matrix:!a:x/abc",
            "matrix:!a:b c",
            "matrix:user:ana",
            "matrix:user:@ana",
        ] {
            assert_eq!(n.parse_chat(bad), None, "{bad}");
        }
    }

    #[test]
    fn people_groups_and_access_entries() {
        let n = networks();
        assert_eq!(n.parse_user(&format!("matrix:{ANA}")), Some(("matrix".into(), ANA.into())));
        assert_eq!(n.allowed_chats(&format!("matrix:{ROOM}")), Some(("matrix".into(), AllowedChats::Chat(ROOM.into()))));
        assert_eq!(n.allowed_chats("matrix:#ops:example.org"), None);
        assert_eq!(parse_group(&format!("{ROOM}@50")), Some((ROOM, 50)));
        assert_eq!(parse_group("!r:localhost:8008@100"), Some(("!r:localhost:8008", 100)));
        for bad in [ROOM.to_owned(), format!("{ROOM}@"), format!("{ROOM}@-1"), format!("{ROOM}@x"), "#ops:x@50".into()] {
            assert_eq!(parse_group(&bad), None, "{bad}");
        }
        assert!(n.is_group_id(&format!("{ROOM}@50")) && !n.is_group_id(ANA));
    }

    #[test]
    fn http_targets_round_trip_and_bad_ones_name_the_field() {
        let fields = |v: Value| v.as_object().cloned().unwrap();
        for target in [
            json!({"platform": "matrix", "room_id": ROOM}),
            json!({"platform": "matrix", "room_id": ROOM, "thread_id": EVENT}),
            json!({"platform": "matrix", "user_id": ANA}),
        ] {
            let mut f = fields(target.clone());
            f.remove("platform");
            assert_eq!(Address.target_of(&Address.target_chat(&f).unwrap()), target);
        }
        let err = |v: Value| Address.target_chat(&fields(v)).unwrap_err().0;
        assert_eq!(err(json!({})), "room_id");
        assert_eq!(err(json!({"room_id": ROOM, "user_id": ANA})), "room_id");
        assert_eq!(err(json!({"room_id": "#ops:x"})), "room_id");
        assert_eq!(err(json!({"room_id": ROOM, "thread_id": "x"})), "thread_id");
        assert_eq!(err(json!({"user_id": ANA, "thread_id": EVENT})), "thread_id");
        assert_eq!(err(json!({"user_id": 5})), "user_id");
    }
}
