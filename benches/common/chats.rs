//! The chat platforms' fakes as the load benchmark's latency runs drive them: one
//! person per session, who says hello in their private chat with the bot; the cards
//! the bridge shows there, found by the approval key they mention; a click on Approve
//! pushed to the bridge and when it was delivered. [`ChatFake`] is all a latency run
//! needs of a platform, so Telegram, Slack, Teams and Discord are measured by the same code
//! (`load.rs`) and their figures compare. Nothing here times or prints anything.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use serde_json::Value;

use crate::support::discord_chat;
use crate::support::fake_discord::{self, FakeDiscord};
use crate::support::fake_slack::{self, FakeSlack, Person};
use crate::support::fake_teams::{self, FakeTeams};
use crate::support::fake_telegram::{self, FakeTelegram, User};
use crate::support::slack_chat;

/// The sessions' people are numbered from here (Telegram user ids, Slack `U…` ids).
pub const FIRST_USER: i64 = 100_000;

/// Whether `text` mentions `key` as a whole (`p1` is not in `p10`).
pub fn mentions(text: &str, key: &str) -> bool {
    text.match_indices(key).any(|(at, _)| !text[at + key.len()..].starts_with(|c: char| c.is_ascii_alphanumeric()))
}

/// A card shown to someone, as (the person's id, the card's text, when it reached the fake).
pub type Shown = (String, String, Instant);

/// What a latency run does on one platform's fake.
pub trait ChatFake {
    /// One of the people the sessions belong to.
    type Person;
    /// A card found and its Approve button, ready to be clicked.
    type Card;
    /// The platform's name, as printed.
    const NAME: &'static str;
    /// The API method that shows a card.
    const SEND: &'static str;
    /// How the bridge's own pacing is turned off, as printed in a run's heading.
    const UNPACED: &'static str;

    /// The `n` people of the sessions.
    fn people(n: usize) -> Vec<Self::Person>;
    /// The person's id as the agent hears it (`user.id` of the `message` command),
    /// which the benchmark's approval keys also carry.
    fn person_id(person: &Self::Person) -> String;
    /// `access.users`' entry for `person`.
    fn access(person: &Self::Person) -> String;
    /// The bridge's settings for this fake, with or without the bridge's own pacing.
    fn settings(&self, paced: bool) -> Vec<(String, String)>;
    /// Whether the bridge is connected to the fake, so what is pushed reaches it.
    fn connected(&self) -> bool;
    /// `person` writes "hello" in their private chat with the bot: their session starts.
    fn say_hello(&self, person: &Self::Person);
    /// How many API calls the fake received so far (cheap).
    fn call_count(&self) -> usize;
    /// Every card shown so far (a message with buttons in someone's private chat).
    fn cards(&self) -> Vec<Shown>;
    /// The card mentioning `key` in `person`'s private chat, with its Approve button.
    fn approve_button(&self, person: &Self::Person, key: &str) -> Self::Card;
    /// Pushes `person`'s click on `card`; the click's id, as [`ChatFake::deliveries`] names it.
    fn click(&self, person: &Self::Person, card: &Self::Card) -> String;
    /// When each click was delivered to the bridge: click id → when.
    fn deliveries(&self) -> HashMap<String, Instant>;
    /// When the bridge answered each click to the platform once decided (Telegram's
    /// `answerCallbackQuery`): click id → when. Empty where the platform's answer
    /// comes before the decision (Slack acknowledges an envelope once stored).
    fn answers(&self) -> HashMap<String, Instant> {
        HashMap::new()
    }
    /// The messages without buttons the bridge sent (the agent's words), as
    /// (the person's id, the text, when it reached the fake).
    fn texts(&self) -> Vec<Shown>;
    fn shutdown(self);
}

impl ChatFake for FakeTelegram {
    type Person = User;
    /// (message id, the Approve button's callback data).
    type Card = (i64, String);
    const NAME: &'static str = "Telegram";
    const SEND: &'static str = "sendMessage";
    const UNPACED: &'static str = "Telegram rate limits off (telegram.rate_limits = false)";

    fn people(n: usize) -> Vec<User> {
        (0..n as i64).map(|k| User::new(FIRST_USER + k, &format!("U{k}"), Some("en"))).collect()
    }

    fn person_id(user: &User) -> String {
        user.id.to_string()
    }

    fn access(user: &User) -> String {
        format!("telegram:{}", user.id)
    }

    fn settings(&self, paced: bool) -> Vec<(String, String)> {
        [
            ("telegram.enabled", "true".to_owned()),
            ("telegram.token", fake_telegram::TOKEN.to_owned()),
            ("telegram.api_url", self.url.clone()),
            ("telegram.rate_limits", paced.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }

    fn connected(&self) -> bool {
        // The bridge polls Telegram: an update pushed before its first poll is read then.
        true
    }

    fn say_hello(&self, user: &User) {
        self.private_chat(user);
        self.push_message(user.id, user, "hello", None, None);
    }

    fn call_count(&self) -> usize {
        self.request_count()
    }

    fn cards(&self) -> Vec<Shown> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == "sendmessage" && r.error.is_none() && r.body.get("reply_markup").is_some())
            .filter_map(|r| Some((r.body["chat_id"].as_i64()?.to_string(), r.body["text"].as_str()?.to_owned(), r.at)))
            .collect()
    }

    fn approve_button(&self, user: &User, key: &str) -> (i64, String) {
        let message = self
            .bot_messages(user.id)
            .into_iter()
            .find(|m| m["text"].as_str().is_some_and(|t| mentions(t, key)) && m.get("reply_markup").is_some())
            .unwrap_or_else(|| panic!("the card of {key} is shown"));
        (message["message_id"].as_i64().expect("a message id"), fake_telegram::button(&message, "Approve"))
    }

    fn click(&self, user: &User, (message_id, data): &(i64, String)) -> String {
        self.push_click(user.id, user, *message_id, data)
    }

    fn deliveries(&self) -> HashMap<String, Instant> {
        FakeTelegram::deliveries(self).into_iter().filter_map(|(u, at)| Some((u["callback_query"]["id"].as_str()?.to_owned(), at))).collect()
    }

    fn answers(&self) -> HashMap<String, Instant> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == "answercallbackquery")
            .filter_map(|r| Some((r.body["callback_query_id"].as_str()?.to_owned(), r.at)))
            .collect()
    }

    fn texts(&self) -> Vec<Shown> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == "sendmessage" && r.error.is_none() && r.body.get("reply_markup").is_none())
            .filter_map(|r| Some((r.body["chat_id"].as_i64()?.to_string(), r.body["text"].as_str()?.to_owned(), r.at)))
            .collect()
    }

    fn shutdown(self) {
        FakeTelegram::shutdown(&self);
    }
}

/// A Slack person's DM channel with the bot (`D…` for `U…`).
fn dm(person: &Person) -> String {
    format!("D{}", &person.id[1..])
}

/// A card on the fake Slack: (channel, ts, the Approve button's action_id and value).
pub struct SlackCard {
    channel: String,
    ts: String,
    action_id: String,
    value: String,
}

impl ChatFake for FakeSlack {
    type Person = Person;
    type Card = SlackCard;
    const NAME: &'static str = "Slack";
    const SEND: &'static str = "chat.postMessage";
    const UNPACED: &'static str = "Slack pacing off (slack.post_interval_ms = 0), Socket Mode";

    fn people(n: usize) -> Vec<Person> {
        (0..n as i64).map(|k| Person::new(&format!("U{}", FIRST_USER + k), &format!("u{k}"))).collect()
    }

    fn person_id(person: &Person) -> String {
        person.id.clone()
    }

    fn access(person: &Person) -> String {
        format!("slack:{}", person.id)
    }

    fn settings(&self, paced: bool) -> Vec<(String, String)> {
        let interval = if paced { "1000" } else { "0" };
        [
            ("slack.enabled", "true".to_owned()),
            ("slack.bot_token", fake_slack::BOT_TOKEN.to_owned()),
            ("slack.app_token", fake_slack::APP_TOKEN.to_owned()),
            ("slack.api_url", self.api_url()),
            ("slack.post_interval_ms", interval.to_owned()),
            // Button values are signed tokens.
            ("tokens.secret", "load-secret".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }

    fn connected(&self) -> bool {
        // Envelopes go down the Socket Mode connection the bridge opened.
        self.connections() >= 1
    }

    fn say_hello(&self, person: &Person) {
        let channel = dm(person);
        self.channel(&channel, true);
        slack_chat::push_event(self, slack_chat::message(&person.id, &channel, "im", "hello", &slack_chat::next_ts(), None));
    }

    fn call_count(&self) -> usize {
        FakeSlack::call_count(self)
    }

    fn cards(&self) -> Vec<Shown> {
        self.calls()
            .into_iter()
            .filter(|c| c.method == "chat.postMessage" && c.error.is_none() && c.body.get("blocks").is_some())
            .filter_map(|c| {
                let person = format!("U{}", c.body["channel"].as_str()?.strip_prefix('D')?);
                Some((person, c.body["blocks"].to_string(), c.at))
            })
            .collect()
    }

    fn approve_button(&self, person: &Person, key: &str) -> SlackCard {
        let channel = dm(person);
        let (ts, message) = self
            .posted()
            .into_iter()
            .filter(|(c, _)| *c == channel)
            .filter_map(|(_, ts)| Some((ts.clone(), self.message(&channel, &ts)?)))
            .find(|(_, m)| fake_slack::has_buttons(m) && mentions(&m["blocks"].to_string(), key))
            .unwrap_or_else(|| panic!("the card of {key} is shown"));
        let button = fake_slack::button(&message, "Approve");
        let text = |field: &str| button[field].as_str().expect("a button's action_id and value").to_owned();
        SlackCard { action_id: text("action_id"), value: text("value"), channel, ts }
    }

    fn click(&self, person: &Person, card: &SlackCard) -> String {
        let envelope = self.click_envelope(person, &card.channel, &card.ts, &card.action_id, &card.value);
        let id = envelope["envelope_id"].as_str().expect("an envelope id").to_owned();
        self.push(envelope);
        id
    }

    fn deliveries(&self) -> HashMap<String, Instant> {
        self.first_deliveries()
    }

    fn texts(&self) -> Vec<Shown> {
        self.calls()
            .into_iter()
            .filter(|c| c.method == "chat.postMessage" && c.error.is_none() && !fake_slack::has_buttons(&c.body))
            .filter_map(|c| {
                let person = format!("U{}", c.body["channel"].as_str()?.strip_prefix('D')?);
                Some((person, c.body.to_string(), c.at))
            })
            .collect()
    }

    fn shutdown(self) {
        FakeSlack::shutdown(self);
    }
}

/// Where the bridge's Teams endpoint listens in a run: one free port per process.
fn teams_endpoint() -> &'static str {
    static LISTEN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    LISTEN.get_or_init(fake_teams::free_addr)
}

/// A Teams person's 1:1 chat with the bot, as the fake creates it.
fn teams_dm(person: &fake_teams::Person) -> String {
    format!("a:dm-{}", person.aad)
}

/// A card on the fake Teams: (its 1:1 chat, its activity id, the card).
pub struct TeamsCard {
    conversation: String,
    id: String,
    card: serde_json::Value,
}

impl ChatFake for FakeTeams {
    type Person = fake_teams::Person;
    type Card = TeamsCard;
    const NAME: &'static str = "Teams";
    const SEND: &'static str = "POST /v3/conversations/{id}/activities";
    const UNPACED: &'static str = "Teams' per-conversation windows kept (they cannot be turned off; one 1:1 chat per session)";

    fn people(n: usize) -> Vec<fake_teams::Person> {
        (0..n as i64).map(|k| fake_teams::Person::new(&format!("{:08x}-0000-4000-8000-{:012x}", FIRST_USER + k, k), &format!("u{k}"))).collect()
    }

    fn person_id(person: &fake_teams::Person) -> String {
        person.aad.clone()
    }

    fn access(person: &fake_teams::Person) -> String {
        format!("teams:{}", person.aad)
    }

    fn settings(&self, _paced: bool) -> Vec<(String, String)> {
        [
            ("teams.enabled", "true".to_owned()),
            ("teams.app_id", fake_teams::APP_ID.to_owned()),
            ("teams.app_password", fake_teams::APP_PASSWORD.to_owned()),
            ("teams.openid_metadata_url", self.openid_url()),
            ("teams.token_url", self.token_url()),
            ("teams.service_url", self.service_url()),
            ("teams.messages_listen", teams_endpoint().to_owned()),
            // Button values are signed tokens.
            ("tokens.secret", "load-secret".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }

    fn connected(&self) -> bool {
        std::net::TcpStream::connect(teams_endpoint()).is_ok()
    }

    fn say_hello(&self, person: &fake_teams::Person) {
        let hello = self.activity_from(person, &teams_dm(person), "personal", serde_json::json!({"text": "hello"}));
        self.send_activity(&format!("http://{}/teams/messages", teams_endpoint()), &hello);
    }

    fn call_count(&self) -> usize {
        FakeTeams::call_count(self)
    }

    fn cards(&self) -> Vec<Shown> {
        self.calls()
            .into_iter()
            .filter(|c| c.method == "POST" && c.status < 300 && c.created.is_some())
            .filter_map(|c| {
                let person = c.conversation.strip_prefix("a:dm-")?.to_owned();
                Some((person, fake_teams::card_of(&c.body)?.to_string(), c.at))
            })
            .collect()
    }

    fn approve_button(&self, person: &fake_teams::Person, key: &str) -> TeamsCard {
        let conversation = teams_dm(person);
        self.calls()
            .into_iter()
            .filter(|c| c.method == "POST" && c.conversation == conversation && c.status < 300)
            .filter_map(|c| {
                let id = c.created?;
                let card = fake_teams::card_of(&self.activity(&conversation, &id)?)?;
                Some(TeamsCard { conversation: conversation.clone(), id, card })
            })
            .find(|c| !fake_teams::executes(&c.card).is_empty() && mentions(&c.card.to_string(), key))
            .unwrap_or_else(|| panic!("the card of {key} is shown"))
    }

    fn click(&self, person: &fake_teams::Person, card: &TeamsCard) -> String {
        let invoke = self.click_activity(person, &card.conversation, &card.id, &card.card, "✅ Approve", 0, serde_json::json!({}));
        self.send_activity(&format!("http://{}/teams/messages", teams_endpoint()), &invoke);
        invoke["id"].as_str().expect("an activity id").to_owned()
    }

    fn deliveries(&self) -> HashMap<String, Instant> {
        self.sent_at()
    }

    /// The invoke's answer comes once the click is decided (it carries the card).
    fn answers(&self) -> HashMap<String, Instant> {
        self.answered_at()
    }

    fn texts(&self) -> Vec<Shown> {
        self.calls()
            .into_iter()
            .filter(|c| c.method == "POST" && c.status < 300 && c.created.is_some() && fake_teams::card_of(&c.body).is_none())
            .filter_map(|c| Some((c.conversation.strip_prefix("a:dm-")?.to_owned(), c.body["text"].as_str()?.to_owned(), c.at)))
            .collect()
    }

    fn shutdown(self) {
        FakeTeams::shutdown(self);
    }
}

/// The fake Discord as a latency run drives it: one guild channel per person, where
/// they mention the bot to start their session, and when each click was dispatched
/// down the gateway (the fake itself does not note it).
pub struct DiscordChat {
    pub fake: FakeDiscord,
    dispatched: Mutex<HashMap<String, Instant>>,
}

impl DiscordChat {
    pub async fn start() -> DiscordChat {
        DiscordChat { fake: FakeDiscord::start().await, dispatched: Mutex::default() }
    }
}

/// A Discord person's guild channel, numbered as their user id is.
fn discord_channel_of(person: &Value) -> String {
    let id = person["id"].as_str().unwrap_or_default();
    format!("81{}", &id[2..])
}

/// A card on the fake Discord: its channel, the message as the fake answered its post
/// (a click carries the whole message, as Discord's interactions do) and the Approve
/// button's custom id.
pub struct DiscordCard {
    channel: String,
    message: Value,
    custom_id: String,
}

/// Whether a recorded request is a message the bridge posted that the fake accepted.
fn is_post(r: &fake_discord::Recorded) -> bool {
    r.method == "POST" && r.path.ends_with("/messages") && r.status == 200
}

/// The person whose channel a post went to, by its path.
fn discord_person_of(path: &str) -> Option<String> {
    let channel = path.strip_prefix("/api/v10/channels/")?.split('/').next()?;
    Some(format!("51{}", channel.strip_prefix("81")?))
}

impl ChatFake for DiscordChat {
    type Person = Value;
    type Card = DiscordCard;
    const NAME: &'static str = "Discord";
    const SEND: &'static str = "POST /channels/{id}/messages";
    const UNPACED: &'static str = "the gateway and REST of the fake Discord (serenity in the bridge)";

    fn people(n: usize) -> Vec<Value> {
        (0..n as i64).map(|k| fake_discord::user(&format!("51{:016}", FIRST_USER + k), &format!("u{k}"))).collect()
    }

    fn person_id(person: &Value) -> String {
        person["id"].as_str().unwrap_or_default().to_owned()
    }

    fn access(person: &Value) -> String {
        format!("discord:{}", Self::person_id(person))
    }

    fn settings(&self, _paced: bool) -> Vec<(String, String)> {
        [("discord.enabled", "true".to_owned()), ("discord.token", "load-token".to_owned()), ("discord.api_url", self.fake.api_url())]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect()
    }

    fn connected(&self) -> bool {
        self.fake.identifies() >= 1
    }

    fn say_hello(&self, person: &Value) {
        let hello = fake_discord::guild_message(&self.fake, &discord_channel_of(person), person, &format!("<@{}> hello", fake_discord::BOT_ID), true);
        self.fake.dispatch("MESSAGE_CREATE", hello);
    }

    fn call_count(&self) -> usize {
        self.fake.request_count()
    }

    fn cards(&self) -> Vec<Shown> {
        self.fake
            .requests()
            .into_iter()
            .filter(|r| is_post(r) && discord_chat::has_embed(&r.body))
            .filter_map(|r| Some((discord_person_of(&r.path)?, r.body.to_string(), r.at)))
            .collect()
    }

    fn approve_button(&self, person: &Value, key: &str) -> DiscordCard {
        let channel = discord_channel_of(person);
        let card = self
            .fake
            .requests()
            .into_iter()
            .filter(|r| is_post(r) && r.path.contains(&channel) && discord_chat::has_embed(&r.body))
            .find(|r| mentions(&r.body.to_string(), key))
            .unwrap_or_else(|| panic!("the card of {key} is shown"));
        let custom_id = discord_chat::button(&card.body, "Approve");
        DiscordCard { channel, message: card.response.expect("the posted message"), custom_id }
    }

    fn click(&self, person: &Value, card: &DiscordCard) -> String {
        let message_id = card.message["id"].as_str().expect("a message id");
        let mut click = fake_discord::click(&self.fake, &card.custom_id, message_id, &card.channel, person, &[]);
        click["message"] = card.message.clone();
        let id = click["id"].as_str().expect("an interaction id").to_owned();
        self.dispatched.lock().unwrap_or_else(|p| p.into_inner()).insert(id.clone(), Instant::now());
        self.fake.dispatch("INTERACTION_CREATE", click);
        id
    }

    fn deliveries(&self) -> HashMap<String, Instant> {
        self.dispatched.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The click's acknowledgement (`POST /interactions/{id}/{token}/callback`).
    fn answers(&self) -> HashMap<String, Instant> {
        self.fake
            .requests()
            .into_iter()
            .filter(|r| r.method == "POST" && r.path.ends_with("/callback"))
            .filter_map(|r| Some((r.path.strip_prefix("/api/v10/interactions/")?.split('/').next()?.to_owned(), r.at)))
            .collect()
    }

    fn texts(&self) -> Vec<Shown> {
        self.fake
            .requests()
            .into_iter()
            .filter(|r| is_post(r) && !discord_chat::has_embed(&r.body))
            .filter_map(|r| Some((discord_person_of(&r.path)?, r.body["content"].as_str()?.to_owned(), r.at)))
            .collect()
    }

    fn shutdown(self) {
        let fake = self.fake;
        tokio::spawn(fake.shutdown());
    }
}
