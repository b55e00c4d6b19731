//! A person on Matrix, as the tests play them: a real `matrix-sdk` client (its own
//! device, its own encryption keys, syncing in the background) against the real
//! Synapse of [`super::synapse`], so what they read in an encrypted room is what they
//! decrypted, and what they send the bridge must decrypt.
//!
//! Event shapes follow the client-server spec: `m.reaction` with `m.annotation`
//! (§ Reactions), rich replies with `m.in_reply_to` (§ Rich replies), MSC3381 poll
//! responses (`org.matrix.msc3381.poll.response`, as Element sends them).

#![allow(dead_code)]

use std::time::Duration;

use matrix_sdk::config::SyncSettings;
use matrix_sdk::room::MessagesOptions;
use matrix_sdk::ruma::api::client::room::create_room::v3::Request as CreateRoom;
use matrix_sdk::ruma::{OwnedUserId, RoomId};
use matrix_sdk::{Client, Room};
use serde_json::{Value, json};

/// A person logged in on their own device, syncing until dropped.
pub struct MatrixPerson {
    pub client: Client,
    pub user_id: String,
    sync: tokio::task::JoinHandle<()>,
    _store: tempfile::TempDir,
}

impl Drop for MatrixPerson {
    fn drop(&mut self) {
        self.sync.abort();
    }
}

impl MatrixPerson {
    /// Logs `user_id` in with `password` on a new device and starts syncing.
    pub async fn login(homeserver: &str, user_id: &str, password: &str) -> Self {
        let store = tempfile::tempdir().expect("temp dir");
        let client = Client::builder().homeserver_url(homeserver).sqlite_store(store.path(), None).build().await.expect("a Matrix client");
        client.matrix_auth().login_username(user_id, password).initial_device_display_name("test person").send().await.expect("log in");
        // One sync first, so rooms and keys are known before the test acts.
        client.sync_once(SyncSettings::default()).await.expect("first sync");
        let syncing = client.clone();
        let sync = tokio::spawn(async move {
            // One short sync after another (the SDK keeps the token): what the
            // person's client shows is at most half a second old.
            loop {
                if syncing.sync_once(SyncSettings::default().timeout(Duration::from_millis(500))).await.is_err() {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        });
        Self { client, user_id: user_id.to_owned(), sync, _store: store }
    }

    fn room(&self, room_id: &str) -> Room {
        self.client.get_room(<&RoomId>::try_from(room_id).expect("a room id")).expect("a room this person is in")
    }

    /// A new room inviting `invite`; encrypted (Megolm) when `encrypted`.
    pub async fn create_room(&self, invite: &[&str], encrypted: bool) -> String {
        let mut request = CreateRoom::new();
        request.invite = invite.iter().map(|u| OwnedUserId::try_from(*u).expect("a user id")).collect();
        let room = self.client.create_room(request).await.expect("create a room");
        if encrypted {
            room.enable_encryption().await.expect("enable encryption");
        }
        room.room_id().to_string()
    }

    /// Waits until `user` has joined `room` (the bot answering its invitation).
    pub async fn wait_joined(&self, room_id: &str, user: &str) {
        let user_id = <&matrix_sdk::ruma::UserId>::try_from(user).expect("a user id");
        for _ in 0..300 {
            let room = self.room(room_id);
            if let Ok(Some(member)) = room.get_member(user_id).await
                && *member.membership() == matrix_sdk::ruma::events::room::member::MembershipState::Join
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{user} did not join {room_id}");
    }

    /// Sends `content` as an event of `kind`: its id.
    pub async fn send(&self, room_id: &str, kind: &str, content: Value) -> String {
        self.room(room_id).send_raw(kind, content).await.expect("send an event").response.event_id.to_string()
    }

    pub async fn say(&self, room_id: &str, body: &str) -> String {
        self.send(room_id, "m.room.message", json!({"msgtype": "m.text", "body": body})).await
    }

    /// A rich reply to `to` (in thread `thread` when given, as Element's "reply in
    /// thread" sends it).
    pub async fn reply(&self, room_id: &str, to: &str, thread: Option<&str>, body: &str) -> String {
        let relates = match thread {
            Some(root) => json!({"rel_type": "m.thread", "event_id": root, "is_falling_back": false, "m.in_reply_to": {"event_id": to}}),
            None => json!({"m.in_reply_to": {"event_id": to}}),
        };
        self.send(room_id, "m.room.message", json!({"msgtype": "m.text", "body": body, "m.relates_to": relates})).await
    }

    pub async fn react(&self, room_id: &str, to: &str, key: &str) -> String {
        self.send(room_id, "m.reaction", json!({"m.relates_to": {"rel_type": "m.annotation", "event_id": to, "key": key}})).await
    }

    pub async fn vote(&self, room_id: &str, poll: &str, answers: &[&str]) -> String {
        let content = json!({
            "org.matrix.msc3381.poll.response": {"answers": answers},
            "m.relates_to": {"rel_type": "m.reference", "event_id": poll},
        });
        self.send(room_id, "org.matrix.msc3381.poll.response", content).await
    }

    /// The room's last 200 events as this person reads them (decrypted), oldest first.
    pub async fn events(&self, room_id: &str) -> Vec<Value> {
        let mut options = MessagesOptions::backward();
        options.limit = 200u32.into();
        let messages = self.room(room_id).messages(options).await.expect("read messages");
        let mut events: Vec<Value> = messages.chunk.iter().filter_map(|e| serde_json::from_str(e.raw().json().get()).ok()).collect();
        events.reverse();
        events
    }

    /// Every event of the room as this person reads them, oldest first (paged back
    /// 1,000 at a time, up to `most`).
    pub async fn all_events(&self, room_id: &str, most: usize) -> Vec<Value> {
        let room = self.room(room_id);
        let mut events: Vec<Value> = Vec::new();
        let mut from = None;
        while events.len() < most {
            let mut options = MessagesOptions::backward();
            options.limit = 1000u32.into();
            options.from = from.clone();
            let page = room.messages(options).await.expect("read messages");
            if page.chunk.is_empty() {
                break;
            }
            events.extend(page.chunk.iter().filter_map(|e| serde_json::from_str(e.raw().json().get()).ok()));
            match page.end {
                Some(end) => from = Some(end),
                None => break,
            }
        }
        events.reverse();
        events
    }

    /// The first event `matches` finds, waiting for it up to 60 s.
    pub async fn wait_for(&self, room_id: &str, matches: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..600 {
            if let Some(found) = self.events(room_id).await.into_iter().find(|e| matches(e)) {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let seen: Vec<String> = self.events(room_id).await.iter().map(|e| format!("{} {}", e["type"], e["content"])).collect();
        panic!("no such event in {room_id}; seen:\n{}", seen.join("\n"));
    }

    /// The bot's card: the first message from `bot` whose body starts with `title`.
    pub async fn card(&self, room_id: &str, bot: &str, title: &str) -> Value {
        self.wait_for(room_id, |e| e["sender"] == bot && e["type"] == "m.room.message" && e["content"]["body"].as_str().is_some_and(|b| b.starts_with(title)))
            .await
    }

    /// The newest content of message `id`: its last replacement's `m.new_content`.
    pub async fn current(&self, room_id: &str, id: &str) -> Value {
        let events = self.events(room_id).await;
        events
            .iter()
            .rev()
            .find(|e| e["content"]["m.relates_to"]["rel_type"] == "m.replace" && e["content"]["m.relates_to"]["event_id"] == id)
            .map(|e| e["content"]["m.new_content"].clone())
            .or_else(|| events.iter().find(|e| e["event_id"] == id).map(|e| e["content"].clone()))
            .unwrap_or(Value::Null)
    }

    /// Waits until message `id` reads (its newest content's body) as `matches` wants.
    pub async fn wait_current(&self, room_id: &str, id: &str, matches: impl Fn(&str) -> bool) -> String {
        for _ in 0..600 {
            let body = self.current(room_id, id).await["body"].as_str().unwrap_or_default().to_owned();
            if matches(&body) {
                return body;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("message {id} never read as expected; it reads {:?}", self.current(room_id, id).await["body"]);
    }

    /// The bot's notices (`m.notice`) in `room`, oldest first.
    pub async fn notices(&self, room_id: &str, bot: &str) -> Vec<String> {
        self.events(room_id)
            .await
            .iter()
            .filter(|e| e["sender"] == bot && e["content"]["msgtype"] == "m.notice")
            .filter_map(|e| e["content"]["body"].as_str().map(str::to_owned))
            .collect()
    }
}

/// Points `settings` at Synapse `homeserver` as bot `user_id` (logging in with
/// `password`, its device kept under `dir`), listening in `rooms`.
pub fn bridge_on_matrix(settings: &mut hitl_bridge::config::Settings, homeserver: &str, user_id: &str, password: &str, rooms: &[&str], dir: &std::path::Path) {
    let matrix = settings.platforms.get_mut::<hitl_bridge::platform::matrix::settings::MatrixSettings>();
    matrix.enabled = true;
    matrix.homeserver_url = homeserver.to_owned();
    matrix.user_id = user_id.to_owned();
    matrix.password = Some(password.to_owned().into());
    matrix.rooms = rooms.iter().map(|r| (*r).to_owned()).collect();
    matrix.store_path = dir.join("matrix-store");
}

/// The text of an event as its reader sees it now: an edit's new content, else its own.
pub fn body_of(event: &Value) -> &str {
    event["content"]["m.new_content"]["body"].as_str().or(event["content"]["body"].as_str()).unwrap_or_default()
}
