//! The agent's text streamed into one Slack message: the first progress report of a
//! block posts it (`chat.postMessage`), later reports and the complete text edit it
//! (`chat.update`), at most one call per [`EDIT_INTERVAL`] per message. A report that
//! comes sooner waits out the rest of the interval; the engine's lane meanwhile keeps
//! only the newest report, so the intermediate ones are dropped, never queued.
//!
//! One message carries one [`TEXT_PIECE`](super::TEXT_PIECE) of text: while the text streams the message
//! shows its first piece, and the complete text edits that piece in and posts the rest
//! after it, as [`Slack::send_text`](super::Slack) would. An edit Slack refuses (the
//! message was deleted, its edit window closed) posts the text as a new message, so
//! the complete text is always shown in full.

use std::sync::Mutex;
use std::time::Duration;

use serde_json::json;
use tokio::time::Instant;

use super::text::escape;
use super::{CACHE_CAP, PlatformError, Shared, pieces};
use crate::platform::kit::bounded::BoundedMap;
use crate::platform::kit::turns::Priority;
use crate::store::ChatKey;

/// The least time between two calls (the post and its edits) on one streamed message:
/// about one edit a second, the pace Slack allows one message's updates to keep.
pub const EDIT_INTERVAL: Duration = Duration::from_secs(1);

/// A message a text block streams into.
#[derive(Debug, Clone)]
struct Streamed {
    channel: String,
    ts: String,
    /// When the last call on it started.
    last_call: Instant,
    /// The piece of text it shows (before escaping).
    shown: String,
}

/// The messages of the blocks streaming now, per (chat, block). A block's entry goes
/// when its complete text is shown; one whose text never completes (the turn was
/// cancelled mid-block) is forgotten with the oldest once the map is full.
pub struct Streams {
    messages: Mutex<BoundedMap<(ChatKey, u64), Streamed>>,
}

impl Default for Streams {
    fn default() -> Self {
        Self { messages: Mutex::new(BoundedMap::new(CACHE_CAP)) }
    }
}

impl Streams {
    fn get(&self, key: &(ChatKey, u64)) -> Option<Streamed> {
        Shared::lock(&self.messages).get(key).cloned()
    }

    fn put(&self, key: (ChatKey, u64), message: Streamed) {
        Shared::lock(&self.messages).insert(key, message);
    }

    fn take(&self, key: &(ChatKey, u64)) -> Option<Streamed> {
        Shared::lock(&self.messages).remove(key)
    }
}

/// Shows `text_so_far` of block `block` in `chat`: posts its message on the first
/// report, edits it after.
pub async fn progress(shared: &Shared, chat: &ChatKey, block: u64, text_so_far: &str) -> Result<(), PlatformError> {
    let Some(first) = pieces(text_so_far).into_iter().next() else { return Ok(()) };
    let key = (chat.clone(), block);
    match shared.streams.get(&key) {
        None => {
            let message = post(shared, chat, &first).await?;
            shared.streams.put(key, message);
        }
        // The message is full: what streams in now shows with the complete text.
        Some(message) if message.shown == first => {}
        Some(message) => {
            let message = edit(shared, chat, message, &first).await?;
            shared.streams.put(key, message);
        }
    }
    Ok(())
}

/// Shows the complete `text` of block `block` in `chat`: its streamed message is
/// edited to the first piece and the other pieces are posted after it; a block with
/// no message (its reports never reached Slack) is posted as any text is.
pub async fn finish(shared: &Shared, chat: &ChatKey, block: u64, text: &str) -> Result<(), PlatformError> {
    let mut rest = pieces(text).into_iter();
    // A streamed message shows the first piece: edited in when it changed.
    if let Some(message) = shared.streams.take(&(chat.clone(), block))
        && let Some(first) = rest.next()
        && first != message.shown
    {
        edit(shared, chat, message, &first).await?;
    }
    shared.post_pieces(chat, rest).await
}

async fn post(shared: &Shared, chat: &ChatKey, piece: &str) -> Result<Streamed, PlatformError> {
    let last_call = Instant::now();
    let (channel, ts) = shared.post(chat, json!({ "text": escape(piece) }), Priority::Text).await?;
    Ok(Streamed { channel, ts, last_call, shown: piece.to_owned() })
}

/// Edits `message` to show `piece` once its interval has passed; a message Slack will
/// not edit is replaced by a new one showing `piece`.
async fn edit(shared: &Shared, chat: &ChatKey, message: Streamed, piece: &str) -> Result<Streamed, PlatformError> {
    tokio::time::sleep_until(message.last_call + EDIT_INTERVAL).await;
    let last_call = Instant::now();
    match shared.api.update_message(&message.channel, &message.ts, &json!({ "text": escape(piece) })).await {
        Ok(()) => Ok(Streamed { last_call, shown: piece.to_owned(), ..message }),
        Err(e) => {
            tracing::warn!(channel = %message.channel, ts = %message.ts, error = %e, "cannot edit a streamed message; posting the text anew");
            post(shared, chat, piece).await
        }
    }
}
