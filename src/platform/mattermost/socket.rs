//! The WebSocket (`/api/v4/websocket`): the bridge authenticates with an
//! `authentication_challenge` (`{"seq": 1, "action": "authentication_challenge",
//! "data": {"token": …}}`), the server greets with `hello`, then every event carries
//! the connection's next `seq` (0, 1, 2…). Each `posted` event is stored in the
//! durable inbox as its post (`post:<id>`) before it is handled.
//!
//! A `seq` that skips one means events were lost: the posts since the last one seen
//! are fetched (`GET channels/{id}/posts?since=`) for every channel the bridge
//! listens in (`mattermost.channels`, and those it has heard from). A dropped
//! connection is opened again with a backoff (0.5 s doubling to 30 s, reset once
//! greeted), and the posts made while it was down are fetched the same way, at every
//! `hello`. Stored under the post's id, a post both delivered and fetched is handled
//! once.
//!
//! The cursor (the newest post stored, and the channels heard from) is kept in
//! Mattermost's own keys of the store ([`CURSOR_KEY`]) once the posts it passes are
//! stored, never before: a bridge killed between receiving a post and storing it
//! fetches that post again at its next start, from the cursor it kept.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use super::inbox::Handler;
use super::payload::Update;
use crate::clock::now_ms;
use crate::store::PlatformState;

const FIRST_PAUSE: Duration = Duration::from_millis(500);
const LONGEST_PAUSE: Duration = Duration::from_secs(30);

/// The key of the cursor in Mattermost's own keys of the store.
pub const CURSOR_KEY: &str = "socket:cursor";

/// What the connection knows across reconnects and restarts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Cursor {
    /// The newest post stored (its `create_at`): missed posts are fetched from here.
    since_ms: i64,
    /// Channels to fetch missed posts of, with their type (`O`, `P`, `D`, `G`).
    channels: BTreeMap<String, String>,
}

impl Cursor {
    /// The cursor kept by the last run, with `configured` channels added; from now
    /// when none was kept (a first start hears only what is posted from then on).
    async fn load(state: &PlatformState, configured: Vec<String>) -> Cursor {
        let kept = match state.get(CURSOR_KEY, now_ms()).await {
            Ok(kept) => kept.and_then(|kept| serde_json::from_str::<Cursor>(&kept.value).ok()),
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the Mattermost WebSocket's cursor; posts made while the bridge was down are not fetched");
                None
            }
        };
        let mut cursor = kept.unwrap_or_else(|| Cursor { since_ms: now_ms(), channels: BTreeMap::new() });
        for channel in configured {
            cursor.channels.entry(channel.trim().to_owned()).or_insert_with(|| "O".to_owned());
        }
        cursor
    }

    async fn save(&self, state: &PlatformState) {
        let value = serde_json::to_string(self).unwrap_or_default();
        if let Err(e) = state.put(CURSOR_KEY, &value, now_ms(), None).await {
            tracing::warn!(error = %e, "cannot keep the Mattermost WebSocket's cursor");
        }
    }
}

/// Connects and reconnects until the bridge stops.
pub async fn run(handler: Arc<Handler>, state: PlatformState, url: String, token: String, configured: Vec<String>) {
    let mut cursor = Cursor::load(&state, configured).await;
    let mut pause = FIRST_PAUSE;
    loop {
        let greeted = connection(&handler, &state, &url, &token, &mut cursor).await;
        if greeted {
            pause = FIRST_PAUSE;
        }
        tracing::info!(pause_ms = pause.as_millis() as u64, "Mattermost WebSocket lost; reconnecting");
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(LONGEST_PAUSE);
    }
}

/// One connection, until it drops: whether it was greeted.
async fn connection(handler: &Arc<Handler>, state: &PlatformState, url: &str, token: &str, cursor: &mut Cursor) -> bool {
    // Nagle off: a small frame written right after another must not wait for the
    // server's delayed ACK (up to 40 ms).
    let (mut ws, _) = match tokio_tungstenite::connect_async_with_config(url, None, true).await {
        Ok(connected) => connected,
        Err(e) => {
            tracing::warn!(error = %e, "cannot connect the Mattermost WebSocket");
            return false;
        }
    };
    let challenge = json!({ "seq": 1, "action": "authentication_challenge", "data": { "token": token } });
    if ws.send(Message::Text(challenge.to_string())).await.is_err() {
        return false;
    }
    let mut greeted = false;
    let mut expected: i64 = 0;
    while let Some(message) = ws.next().await {
        let text = match message {
            Ok(Message::Text(text)) => text,
            Ok(Message::Close(_)) | Err(_) => break,
            Ok(_) => continue,
        };
        let Ok(event) = serde_json::from_str::<Value>(&text) else {
            tracing::warn!("a Mattermost WebSocket message that does not read; skipped");
            continue;
        };
        let Some(kind) = event["event"].as_str() else {
            // A reply: the challenge's is the one that can fail.
            if event["status"] == "FAIL" {
                tracing::warn!(error = %event["error"], "Mattermost refused the WebSocket's authentication challenge (mattermost.bot_token); reconnecting");
                break;
            }
            continue;
        };
        if let Some(seq) = event["seq"].as_i64() {
            if seq != expected {
                tracing::warn!(expected, seq, "Mattermost WebSocket events were lost; fetching the posts since the last one");
                if !catch_up(handler, state, cursor).await {
                    break;
                }
            }
            expected = seq + 1;
        }
        match kind {
            "hello" => {
                greeted = true;
                tracing::info!("Mattermost WebSocket connected");
                // What was posted while no connection was open (or no bridge ran).
                if !catch_up(handler, state, cursor).await {
                    break;
                }
            }
            "posted" if !posted(handler, state, cursor, &event).await => break,
            _ => {}
        }
    }
    greeted
}

/// A `posted` event, stored as its post.
async fn posted(handler: &Arc<Handler>, state: &PlatformState, cursor: &mut Cursor, event: &Value) -> bool {
    let data = &event["data"];
    let Some(post) = data["post"].as_str().and_then(|p| serde_json::from_str::<Value>(p).ok()) else {
        tracing::warn!("a posted event without a post; skipped");
        return true;
    };
    let channel_type = data["channel_type"].as_str().unwrap_or("O").to_owned();
    let mentions: Vec<String> = data["mentions"].as_str().and_then(|m| serde_json::from_str(m).ok()).unwrap_or_default();
    let team = event["broadcast"]["team_id"].as_str().filter(|t| !t.is_empty()).or(data["team_id"].as_str()).map(str::to_owned);
    let channel = post["channel_id"].as_str().filter(|c| super::address::is_id(c)).map(str::to_owned);
    let update = Update::Posted(json!({ "post": post, "channel_type": channel_type, "mentions": mentions, "team_id": team }));
    let mut moved = cursor.clone();
    if let Some(channel) = channel {
        moved.channels.entry(channel).or_insert(channel_type);
    }
    store(handler, state, cursor, moved, vec![update]).await
}

/// Fetches the posts since the cursor in every channel it knows, and stores them:
/// false when a fetch or the store failed (the connection is then dropped and opened
/// again after a pause, and everything fetched again).
async fn catch_up(handler: &Arc<Handler>, state: &PlatformState, cursor: &mut Cursor) -> bool {
    let mut updates = Vec::new();
    let mut moved = cursor.clone();
    for (channel, channel_type) in &cursor.channels {
        match handler.shared.api.posts_since(channel, cursor.since_ms).await {
            Ok(posts) => updates.extend(posts.into_iter().map(|post| Update::Posted(json!({ "post": post, "channel_type": channel_type, "mentions": [] })))),
            // The bot left the channel, or it is gone: nothing more to hear there.
            Err(e) if e.refused_for_good() => {
                tracing::warn!(%channel, error = %e, "cannot read a Mattermost channel's posts any more; no longer fetching them");
                moved.channels.remove(channel);
            }
            // Posts not fetched now would be passed by the cursor: all again later.
            Err(e) => {
                tracing::warn!(%channel, error = %e, "cannot fetch the posts missed while disconnected; reconnecting to try again");
                return false;
            }
        }
    }
    // Oldest first across channels, the order they were made in.
    updates.sort_by_key(|update| match update {
        Update::Posted(body) => body["post"]["create_at"].as_i64().unwrap_or_default(),
        _ => 0,
    });
    store(handler, state, cursor, moved, updates).await
}

/// Stores `updates` (posts), each under its post id; once they are stored, the cursor
/// becomes `moved` past them, and is kept. Not stored (false), the cursor stays where
/// it was and the connection is dropped, so they are fetched again at the next
/// `hello`: a later post stored first would move the cursor past them.
async fn store(handler: &Arc<Handler>, state: &PlatformState, cursor: &mut Cursor, mut moved: Cursor, updates: Vec<Update>) -> bool {
    let mut rows = Vec::new();
    for update in updates {
        let Update::Posted(body) = &update else { continue };
        let Some(id) = body["post"]["id"].as_str().filter(|id| super::address::is_id(id)) else { continue };
        // An edit is fetched again with `since`; only a new post starts a turn.
        let created = body["post"]["create_at"].as_i64().unwrap_or_default();
        if body["post"]["update_at"].as_i64().is_some_and(|u| u > created) && created < cursor.since_ms {
            continue;
        }
        moved.since_ms = moved.since_ms.max(created);
        rows.push((format!("post:{id}"), update));
    }
    if !rows.is_empty()
        && let Err(e) = handler.receive_posts(rows).await
    {
        tracing::warn!(error = %e, "cannot store Mattermost posts; reconnecting to fetch them again");
        return false;
    }
    if moved != *cursor {
        *cursor = moved;
        cursor.save(state).await;
    }
    true
}

/// The WebSocket's URL: `mattermost.url`'s scheme made `ws`/`wss`.
pub fn url_of(server: &str) -> String {
    let socket = if let Some(rest) = server.strip_prefix("https://") {
        format!("wss://{rest}")
    } else if let Some(rest) = server.strip_prefix("http://") {
        format!("ws://{rest}")
    } else {
        server.to_owned()
    };
    format!("{socket}/api/v4/websocket")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_socket_url_follows_the_servers_scheme() {
        assert_eq!(url_of("https://chat.example.com"), "wss://chat.example.com/api/v4/websocket");
        assert_eq!(url_of("http://127.0.0.1:8065"), "ws://127.0.0.1:8065/api/v4/websocket");
    }
}
