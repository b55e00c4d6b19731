//! The agent's text streamed into one Teams message: the first progress report of a
//! block sends it, later reports and the complete text update it (`PUT` on the
//! activity), at most one call per [`EDIT_INTERVAL`] per message. A report that comes
//! sooner waits out the rest of the interval; the engine's lane meanwhile keeps only
//! the newest report, so the intermediate ones are dropped, never queued.
//!
//! One message carries one [`TEXT_PIECE`](super::limits::TEXT_PIECE) of text: while
//! the text streams the message shows its first piece, and the complete text updates
//! that piece in and sends the rest after it, as `send_text` would. An update Teams
//! refuses (the message was deleted) sends the text as a new message, so the complete
//! text is always shown in full.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use super::render::text_message;
use super::{CACHE_CAP, PlatformError, Shared, pieces};
use crate::platform::kit::bounded::BoundedMap;
use crate::platform::kit::turns::Priority;
use crate::store::ChatKey;

/// The least time between two calls (the send and its updates) on one streamed
/// message: about one a second, well within Teams' 7 a second per conversation.
pub const EDIT_INTERVAL: Duration = Duration::from_secs(1);

/// A message a text block streams into.
#[derive(Debug, Clone)]
struct Streamed {
    id: String,
    /// When the last call on it started.
    last_call: Instant,
    /// The piece of text it shows.
    shown: String,
}

/// The messages of the blocks streaming now, per (chat, block).
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

/// Shows `text_so_far` of block `block` in `chat`: sends its message on the first
/// report, updates it after.
pub async fn progress(shared: &Shared, chat: &ChatKey, block: u64, text_so_far: &str) -> Result<(), PlatformError> {
    let Some(first) = pieces(text_so_far).into_iter().next() else { return Ok(()) };
    let key = (chat.clone(), block);
    match shared.streams.get(&key) {
        None => {
            let message = send(shared, chat, &first).await?;
            shared.streams.put(key, message);
        }
        // The message is full: what streams in now shows with the complete text.
        Some(message) if message.shown == first => {}
        Some(message) => {
            let message = update(shared, chat, message, &first).await?;
            shared.streams.put(key, message);
        }
    }
    Ok(())
}

/// Shows the complete `text` of block `block` in `chat`: its streamed message is
/// updated to the first piece and the other pieces are sent after it; a block with no
/// message is sent as any text is.
pub async fn finish(shared: &Shared, chat: &ChatKey, block: u64, text: &str) -> Result<(), PlatformError> {
    let mut rest = pieces(text).into_iter();
    if let Some(message) = shared.streams.take(&(chat.clone(), block))
        && let Some(first) = rest.next()
        && first != message.shown
    {
        update(shared, chat, message, &first).await?;
    }
    for piece in rest {
        shared.post(chat, &text_message(&piece), Priority::Text).await?;
    }
    Ok(())
}

async fn send(shared: &Shared, chat: &ChatKey, piece: &str) -> Result<Streamed, PlatformError> {
    let last_call = Instant::now();
    let id = shared.post(chat, &text_message(piece), Priority::Text).await?;
    Ok(Streamed { id, last_call, shown: piece.to_owned() })
}

/// Updates `message` to show `piece` once its interval has passed; a message Teams
/// will not update is replaced by a new one showing `piece`.
async fn update(shared: &Shared, chat: &ChatKey, message: Streamed, piece: &str) -> Result<Streamed, PlatformError> {
    tokio::time::sleep_until(message.last_call + EDIT_INTERVAL).await;
    let last_call = Instant::now();
    let (service_url, conversation) = shared.conversation(chat).await?;
    match shared.api.update(&service_url, &conversation, &message.id, &text_message(piece)).await {
        Ok(()) => Ok(Streamed { last_call, shown: piece.to_owned(), ..message }),
        Err(e) => {
            tracing::warn!(%conversation, id = %message.id, error = %e, "cannot update a streamed message; sending the text anew");
            send(shared, chat, piece).await
        }
    }
}
