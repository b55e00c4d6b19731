//! Chats as the core knows them: a [`ChatKey`] names one, and a [`ChatNetwork`] says
//! how its platform writes its chats in configuration (`telegram:-100123/7`,
//! `discord:user:80…`, `console`) and where a person's direct chat is. The core never
//! names a platform: the networks the bridge has are a [`Networks`] registry, built
//! from each platform's own descriptor.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Where a chat lives: `("telegram", chat id, optional topic/thread id)`,
/// `("discord", channel id, thread)`, `("console", "stdin", None)`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChatKey {
    pub platform: String,
    pub chat_id: String,
    pub thread_id: Option<String>,
}

impl ChatKey {
    pub fn new(platform: &str, chat_id: &str, thread_id: Option<&str>) -> Self {
        Self { platform: platform.to_owned(), chat_id: chat_id.to_owned(), thread_id: thread_id.map(str::to_owned) }
    }
}

/// What the core and the configuration know of one chat platform.
pub trait ChatNetwork: Send + Sync {
    /// The name in chat keys and in configuration (`telegram`).
    fn name(&self) -> &'static str;

    /// The chat that `rest` names, as written after `name:` in configuration (empty
    /// when the name stands alone); `None` when it names none.
    fn parse_chat(&self, rest: &str) -> Option<ChatKey>;

    /// A person's direct chat with the bot, when the platform has them.
    fn direct_chat(&self, user_id: &str) -> Option<ChatKey>;

    /// What an `access.chats` entry opens, as written after `name:`; `None` when the
    /// platform takes no such entry (the console needs none: it is always open).
    fn allowed_chats(&self, _rest: &str) -> Option<AllowedChats> {
        None
    }

    /// How an entry naming one chat is written (`telegram:CHAT_ID`), for messages.
    fn chat_form(&self) -> Option<&'static str> {
        None
    }

    /// Examples of its chats as configuration writes them (`telegram:-100123/7`), for
    /// messages that say what a chat looks like.
    fn chat_examples(&self) -> &'static [&'static str] {
        &[]
    }

    /// Every form of its chats as configuration writes them, with placeholders
    /// (`telegram:CHAT_ID/TOPIC_ID`), for the docs' table of addresses.
    fn chat_forms(&self) -> &'static [&'static str] {
        &[]
    }

    /// How an entry naming a space is written (`discord:guild:GUILD_ID`), for messages.
    fn space_form(&self) -> Option<&'static str> {
        None
    }

    /// Whether its people are in groups the configuration may name (Discord's roles:
    /// `access.roles`, `access.approver_roles`).
    fn has_groups(&self) -> bool {
        false
    }

    /// Whether `id` is a group id as the platform writes them (`approver_roles`
    /// entries); only asked of platforms that [`has_groups`](Self::has_groups).
    fn is_group_id(&self, _id: &str) -> bool {
        false
    }

    /// How a group id is written, for messages (`a Discord role id (digits)`).
    fn group_form(&self) -> Option<&'static str> {
        None
    }

    /// Whether anyone writing in its chats may talk without an `[access]` entry: the
    /// local terminal, whose only user is whoever started the bridge.
    fn always_open(&self) -> bool {
        false
    }

    /// The chat an HTTP API target names, from the target object's fields besides
    /// `platform` (`{"platform": "telegram", "chat_id": "-100…"}`); on error, the
    /// field at fault and why. The platform's target grammar, as its
    /// [`target_schema`](Self::target_schema) publishes it.
    fn target_chat(&self, fields: &TargetFields) -> Result<ChatKey, (&'static str, String)>;

    /// The target object naming `chat` (the inverse of [`target_chat`](Self::target_chat)).
    fn target_of(&self, chat: &ChatKey) -> serde_json::Value;

    /// The JSON Schema of its target object, for the HTTP API's OpenAPI document: an
    /// object whose `platform` is this platform's name.
    fn target_schema(&self) -> serde_json::Value;

    /// A chat as configuration writes it, the inverse of [`parse_chat`](Self::parse_chat):
    /// `name:CHAT` or `name:CHAT/THREAD`.
    fn display_chat(&self, chat: &ChatKey) -> String {
        match &chat.thread_id {
            Some(thread) => format!("{}:{}/{thread}", chat.platform, chat.chat_id),
            None => format!("{}:{}", chat.platform, chat.chat_id),
        }
    }
}

/// What an `access.chats` entry opens: one chat (every topic or thread in it), or
/// every chat of a space (a Discord guild).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowedChats {
    Chat(String),
    Space(String),
}

/// The chat platforms the bridge knows, in the order messages list them.
#[derive(Clone)]
pub struct Networks {
    list: Arc<[Arc<dyn ChatNetwork>]>,
}

impl std::fmt::Debug for Networks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.list.iter().map(|n| n.name())).finish()
    }
}

impl Networks {
    pub fn new(list: Vec<Arc<dyn ChatNetwork>>) -> Self {
        Self { list: list.into() }
    }

    fn get(&self, name: &str) -> Option<&dyn ChatNetwork> {
        self.list.iter().find(|n| n.name() == name).map(|n| n.as_ref())
    }

    /// Whether `platform` is one of them.
    pub fn knows(&self, platform: &str) -> bool {
        self.get(platform).is_some()
    }

    /// Their names, as a sentence lists them: `telegram, discord or console`.
    pub fn listed(&self) -> String {
        as_sentence(&self.list.iter().map(|n| n.name()).collect::<Vec<_>>())
    }

    /// A chat as written in configuration: `platform:…`, or a platform's name alone.
    pub fn parse_chat(&self, text: &str) -> Option<ChatKey> {
        match text.split_once(':') {
            Some((_, "")) => None,
            Some((platform, rest)) => self.get(platform)?.parse_chat(rest),
            None => self.get(text)?.parse_chat(""),
        }
    }

    /// `user_id`'s direct chat on `platform`, when it has them.
    pub fn direct_chat(&self, platform: &str, user_id: &str) -> Option<ChatKey> {
        self.get(platform)?.direct_chat(user_id)
    }

    /// An `access.chats` entry (`platform:…`): its platform and what it opens.
    pub fn allowed_chats(&self, entry: &str) -> Option<(String, AllowedChats)> {
        let (platform, rest) = entry.split_once(':')?;
        Some((platform.to_owned(), self.get(platform)?.allowed_chats(rest)?))
    }

    /// The ways an `access.chats` entry is written, as a sentence lists them: each
    /// platform's chat form, then (with `spaces`) each space form.
    pub fn allowed_chats_forms(&self, spaces: bool) -> String {
        let chats = self.list.iter().filter_map(|n| n.chat_form());
        let space_forms = self.list.iter().filter(|_| spaces).filter_map(|n| n.space_form());
        as_sentence(&chats.chain(space_forms).collect::<Vec<_>>())
    }

    /// Examples of chats on every platform, for messages: `(e.g. telegram:-100123/7,
    /// discord:1100…)`; with `open`, the always-open platforms' too.
    pub fn chat_examples(&self, open: bool) -> String {
        let examples: Vec<&str> = self.list.iter().filter(|n| open || !n.always_open()).flat_map(|n| n.chat_examples().iter().copied()).collect();
        format!("(e.g. {})", examples.join(", "))
    }

    /// Whether `platform`'s people are in groups the configuration may name.
    pub fn has_groups(&self, platform: &str) -> bool {
        self.get(platform).is_some_and(|n| n.has_groups())
    }

    /// The platforms whose people are in groups.
    pub fn with_groups(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.list.iter().filter(|n| n.has_groups()).map(|n| n.name())
    }

    /// Whether `id` is a group id on some platform whose people are in groups.
    pub fn is_group_id(&self, id: &str) -> bool {
        self.list.iter().any(|n| n.has_groups() && n.is_group_id(id))
    }

    /// How group ids are written, as a sentence lists them, for messages.
    pub fn group_forms(&self) -> String {
        as_sentence(&self.list.iter().filter_map(|n| n.group_form()).collect::<Vec<_>>())
    }

    /// The platforms anyone may talk in without an `[access]` entry.
    pub fn always_open(&self) -> Vec<String> {
        self.list.iter().filter(|n| n.always_open()).map(|n| n.name().to_owned()).collect()
    }

    /// The chat an HTTP API target names: `platform` must be one of them; on error,
    /// the field at fault and why.
    pub fn target_chat(&self, platform: &str, fields: &TargetFields) -> Result<ChatKey, (&'static str, String)> {
        match self.get(platform) {
            Some(network) => network.target_chat(fields),
            None => Err(("platform", format!("unknown platform `{platform}` ({})", self.listed()))),
        }
    }

    /// The HTTP API target naming `chat`, when its platform is one of them.
    pub fn target_of(&self, chat: &ChatKey) -> Option<serde_json::Value> {
        self.get(&chat.platform).map(|network| network.target_of(chat))
    }

    /// The target object's schema: one of each platform's.
    pub fn target_schema(&self) -> serde_json::Value {
        let each: Vec<serde_json::Value> = self.list.iter().map(|n| n.target_schema()).collect();
        serde_json::json!({ "description": "A chat, channel or person to show the request to.", "oneOf": each })
    }

    /// A chat as configuration and operators write it (`telegram:-100123/7`,
    /// `console`): the one chat-to-text, the inverse of [`Networks::parse_chat`]. A
    /// chat of a platform the bridge does not know (an old row) is written
    /// `platform:chat[/thread]`.
    pub fn display_chat(&self, chat: &ChatKey) -> String {
        match self.get(&chat.platform) {
            Some(network) => network.display_chat(chat),
            None => PlainChat.display_chat(chat),
        }
    }

    /// A person as `[access]`, policies, the HTTP API and the CLI write them:
    /// `platform:user_id` on a platform the bridge knows. The one parser of that form.
    pub fn parse_user(&self, entry: &str) -> Option<(String, String)> {
        let (platform, id) = entry.split_once(':')?;
        (self.knows(platform) && !id.is_empty()).then(|| (platform.to_owned(), id.to_owned()))
    }
}

/// The default way of writing a chat, for chats of platforms no longer registered.
struct PlainChat;

impl ChatNetwork for PlainChat {
    fn name(&self) -> &'static str {
        ""
    }
    fn parse_chat(&self, _rest: &str) -> Option<ChatKey> {
        None
    }
    fn direct_chat(&self, _user_id: &str) -> Option<ChatKey> {
        None
    }
    fn target_chat(&self, _fields: &TargetFields) -> Result<ChatKey, (&'static str, String)> {
        Err(("platform", "no such platform".into()))
    }
    fn target_of(&self, chat: &ChatKey) -> serde_json::Value {
        serde_json::json!({ "platform": chat.platform })
    }
    fn target_schema(&self) -> serde_json::Value {
        serde_json::json!({})
    }
}

/// An HTTP API target object's fields besides `platform`.
pub type TargetFields = serde_json::Map<String, serde_json::Value>;

/// A target's field `name` that must be an id of at most 20 digits (after a `-` when
/// `signed`): `None` when absent.
pub fn id_field(fields: &TargetFields, name: &'static str, signed: bool) -> Result<Option<String>, (&'static str, String)> {
    let value = match fields.get(name) {
        None | Some(serde_json::Value::Null) => return Ok(None),
        Some(serde_json::Value::String(value)) => value,
        Some(other) => return Err((name, format!("`{other}` is not a string"))),
    };
    let digits = if signed { value.strip_prefix('-').unwrap_or(value) } else { value };
    if !digits.is_empty() && digits.len() <= 20 && digits.bytes().all(|b| b.is_ascii_digit()) {
        Ok(Some(value.clone()))
    } else {
        Err((name, format!("`{value}` is not a numeric id")))
    }
}

/// The target object naming `chat` by its `field` (`chat_id`, `channel_id`), with
/// its `thread_id` when it has one.
pub fn chat_target(chat: &ChatKey, field: &str) -> serde_json::Value {
    let mut target = serde_json::json!({ "platform": chat.platform, field: chat.chat_id });
    if let Some(thread) = &chat.thread_id {
        target["thread_id"] = serde_json::json!(thread);
    }
    target
}

/// The schema of a target object: `platform` fixed to `name`, and `fields` as
/// `(name, description)` string properties.
pub fn target_object_schema(name: &str, fields: &[(&str, &str)]) -> serde_json::Value {
    let mut properties = serde_json::Map::new();
    properties.insert("platform".into(), serde_json::json!({ "type": "string", "const": name }));
    for (field, description) in fields {
        properties.insert((*field).into(), serde_json::json!({ "type": "string", "description": description }));
    }
    serde_json::json!({ "type": "object", "title": name, "required": ["platform"], "properties": properties })
}

/// `a, b or c`.
fn as_sentence(items: &[&str]) -> String {
    match items.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        Some((last, _)) => (*last).to_owned(),
        None => String::new(),
    }
}

/// A platform id as written in `access.chats`: digits, after leading `-`s (Telegram's
/// groups have negative ids).
pub fn is_numeric_id(text: &str) -> bool {
    let digits = text.trim_start_matches('-');
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// The grammar of platforms whose chats are numeric ids: `ID[/THREAD]` for a chat
/// (and its thread or topic; an id may be negative, as Telegram's groups are), or
/// `user:USER` for a person's direct chat.
pub fn numbered_chat(network: &dyn ChatNetwork, rest: &str) -> Option<ChatKey> {
    match user_reference(rest) {
        Some(user) => network.direct_chat(user?),
        None => numeric_chat(network.name(), rest),
    }
}

fn numeric_chat(platform: &str, rest: &str) -> Option<ChatKey> {
    let (chat, thread) = match rest.split_once('/') {
        Some((chat, thread)) if !thread.is_empty() => (chat, Some(thread)),
        Some(_) => return None,
        None => (rest, None),
    };
    let numeric = |s: &str| !s.is_empty() && s.trim_start_matches('-').bytes().all(|b| b.is_ascii_digit());
    (numeric(chat) && thread.is_none_or(numeric)).then(|| ChatKey::new(platform, chat, thread))
}

/// A person written as `user:USER` in configuration: `None` when `rest` is not one,
/// `Some(None)` when it is one but malformed (the id must be digits).
fn user_reference(rest: &str) -> Option<Option<&str>> {
    let user = rest.strip_prefix("user:")?;
    Some((!user.is_empty() && user.bytes().all(|b| b.is_ascii_digit())).then_some(user))
}
