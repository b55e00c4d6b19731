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
//! greeted), and the posts made while it was down are fetched the same way. Stored
//! under the post's id, a post both delivered and fetched is handled once.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use super::inbox::Handler;
use super::payload::Update;
use crate::clock::now_ms;

const FIRST_PAUSE: Duration = Duration::from_millis(500);
const LONGEST_PAUSE: Duration = Duration::from_secs(30);

/// What the connection knows across reconnects.
struct Cursor {
    /// The newest post seen (its `create_at`): missed posts are fetched from here.
    since_ms: i64,
    /// Channels to fetch missed posts of, with their type (`O`, `P`, `D`, `G`).
    channels: BTreeMap<String, String>,
}

/// Connects and reconnects until the bridge stops.
pub async fn run(handler: Arc<Handler>, url: String, token: String, configured: Vec<String>) {
    let channels = configured.into_iter().map(|c| (c, "O".to_owned())).collect();
    let mut cursor = Cursor { since_ms: now_ms(), channels };
    let mut pause = FIRST_PAUSE;
    let mut first = true;
    loop {
        let greeted = connection(&handler, &url, &token, &mut cursor, first).await;
        first = false;
        if greeted {
            pause = FIRST_PAUSE;
        }
        tracing::info!(pause_ms = pause.as_millis() as u64, "Mattermost WebSocket lost; reconnecting");
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(LONGEST_PAUSE);
    }
}

/// One connection, until it drops: whether it was greeted.
async fn connection(handler: &Arc<Handler>, url: &str, token: &str, cursor: &mut Cursor, first: bool) -> bool {
    let (mut ws, _) = match tokio_tungstenite::connect_async(url).await {
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
        let Some(kind) = event["event"].as_str() else { continue }; // a reply to the challenge
        if let Some(seq) = event["seq"].as_i64() {
            if seq != expected {
                tracing::warn!(expected, seq, "Mattermost WebSocket events were lost; fetching the posts since the last one");
                catch_up(handler, cursor).await;
            }
            expected = seq + 1;
        }
        match kind {
            "hello" => {
                greeted = true;
                tracing::info!("Mattermost WebSocket connected");
                // What was posted while no connection was open.
                if !first {
                    catch_up(handler, cursor).await;
                }
            }
            "posted" => posted(handler, cursor, &event).await,
            _ => {}
        }
    }
    greeted
}

/// A `posted` event, stored as its post.
async fn posted(handler: &Arc<Handler>, cursor: &mut Cursor, event: &Value) {
    let data = &event["data"];
    let Some(post) = data["post"].as_str().and_then(|p| serde_json::from_str::<Value>(p).ok()) else {
        tracing::warn!("a posted event without a post; skipped");
        return;
    };
    let channel_type = data["channel_type"].as_str().unwrap_or("O").to_owned();
    let mentions: Vec<String> = data["mentions"].as_str().and_then(|m| serde_json::from_str(m).ok()).unwrap_or_default();
    let team = event["broadcast"]["team_id"].as_str().or(data["team_id"].as_str()).map(str::to_owned);
    if let Some(channel) = post["channel_id"].as_str() {
        cursor.channels.entry(channel.to_owned()).or_insert(channel_type.clone());
    }
    let update = Update::Posted(json!({ "post": post, "channel_type": channel_type, "mentions": mentions, "team_id": team }));
    store(handler, cursor, vec![update]).await;
}

/// Fetches the posts since the cursor in every channel it knows, and stores them.
async fn catch_up(handler: &Arc<Handler>, cursor: &mut Cursor) {
    let channels: BTreeSet<(String, String)> = cursor.channels.iter().map(|(c, t)| (c.clone(), t.clone())).collect();
    let mut updates = Vec::new();
    for (channel, channel_type) in channels {
        match handler.shared.api.posts_since(&channel, cursor.since_ms).await {
            Ok(posts) => updates.extend(posts.into_iter().map(|post| Update::Posted(json!({ "post": post, "channel_type": channel_type, "mentions": [] })))),
            Err(e) => tracing::warn!(%channel, error = %e, "cannot fetch the posts missed while disconnected"),
        }
    }
    store(handler, cursor, updates).await;
}

/// Stores `updates` (posts), each under its post id, and moves the cursor past them.
async fn store(handler: &Arc<Handler>, cursor: &mut Cursor, updates: Vec<Update>) {
    let mut rows = Vec::new();
    for update in updates {
        let Update::Posted(body) = &update else { continue };
        let Some(id) = body["post"]["id"].as_str().filter(|id| super::address::is_id(id)) else { continue };
        // An edit is fetched again with `since`; only a new post starts a turn.
        let created = body["post"]["create_at"].as_i64().unwrap_or_default();
        if body["post"]["update_at"].as_i64().is_some_and(|u| u > created) && created < cursor.since_ms {
            continue;
        }
        cursor.since_ms = cursor.since_ms.max(created);
        rows.push((format!("post:{id}"), update));
    }
    if rows.is_empty() {
        return;
    }
    if let Err(e) = handler.receive_posts(rows).await {
        tracing::warn!(error = %e, "cannot store Mattermost posts; they are fetched again after the next reconnect");
    }
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
