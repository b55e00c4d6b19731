//! The agent's text streamed into one message, for a platform that can edit what it
//! posted: the first progress report of a block posts the message, later reports and
//! the complete text edit it, at most one call per [`EDIT_INTERVAL`] per message. A
//! report that comes sooner waits out the rest of the interval; the engine's lane
//! meanwhile keeps only the newest report, so the intermediate ones are dropped,
//! never queued.
//!
//! One message carries one piece of text ([`Sink::piece_chars`]): while the text
//! streams the message shows its first piece, and the complete text edits that piece
//! in and posts the rest after it, as sending the text whole would. An edit the
//! platform refuses (the message was deleted, its edit window closed) posts the text
//! as a new message, so the complete text is always shown in full.
//!
//! The platform says how it posts and edits ([`Sink`]); the pacing, the pieces and
//! which message a block streams into are kept here ([`Streams`]).

use std::sync::Mutex;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::time::Instant;

use super::bounded::BoundedMap;
use crate::interaction::readable;
use crate::platform::PlatformError;
use crate::store::ChatKey;

/// The least time between two calls (the post and its edits) on one streamed message:
/// about one edit a second, a pace Slack and Mattermost both keep without a 429.
pub const EDIT_INTERVAL: Duration = Duration::from_secs(1);

/// A message the platform posted: its channel and its id there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Posted {
    pub channel: String,
    pub id: String,
}

/// How a platform posts a piece of agent text and edits one it posted.
pub trait Sink: Send + Sync {
    /// The most characters of text (before escaping) one message carries.
    fn piece_chars(&self) -> usize;

    /// Posts `piece` (plain text, escaped here) to `chat`.
    fn post<'a>(&'a self, chat: &'a ChatKey, piece: &'a str) -> BoxFuture<'a, Result<Posted, PlatformError>>;

    /// Replaces the text of `message` with `piece`.
    fn edit<'a>(&'a self, message: &'a Posted, piece: &'a str) -> BoxFuture<'a, Result<(), PlatformError>>;
}

/// Agent text as the messages that carry it: made [`readable`], cut into pieces of at
/// most `max_chars` characters (before escaping), blank pieces left out (a platform
/// refuses an empty message).
pub fn pieces(text: &str, max_chars: usize) -> Vec<String> {
    let text = readable::text(text);
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(max_chars.max(1)).map(|piece| piece.iter().collect::<String>()).filter(|piece| !piece.trim().is_empty()).collect()
}

/// A message a text block streams into.
#[derive(Debug, Clone)]
struct Streamed {
    at: Posted,
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

impl Streams {
    /// Remembering at most `cap` streaming blocks.
    pub fn new(cap: usize) -> Self {
        Self { messages: Mutex::new(BoundedMap::new(cap)) }
    }

    fn messages(&self) -> std::sync::MutexGuard<'_, BoundedMap<(ChatKey, u64), Streamed>> {
        self.messages.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Shows `text_so_far` of block `block` in `chat`: posts its message on the first
    /// report, edits it after.
    pub async fn progress(&self, sink: &dyn Sink, chat: &ChatKey, block: u64, text_so_far: &str) -> Result<(), PlatformError> {
        let Some(first) = pieces(text_so_far, sink.piece_chars()).into_iter().next() else { return Ok(()) };
        let key = (chat.clone(), block);
        let streamed = self.messages().get(&key).cloned();
        let message = match streamed {
            None => post(sink, chat, &first).await?,
            // The message is full: what streams in now shows with the complete text.
            Some(message) if message.shown == first => return Ok(()),
            Some(message) => edit(sink, chat, message, &first).await?,
        };
        self.messages().insert(key, message);
        Ok(())
    }

    /// Shows the complete `text` of block `block` in `chat`: its streamed message is
    /// edited to the first piece and the other pieces are posted after it; a block with
    /// no message (its reports never reached the platform) is posted as any text is.
    pub async fn finish(&self, sink: &dyn Sink, chat: &ChatKey, block: u64, text: &str) -> Result<(), PlatformError> {
        let mut rest = pieces(text, sink.piece_chars()).into_iter();
        let streamed = self.messages().remove(&(chat.clone(), block));
        // A streamed message shows the first piece: edited in when it changed.
        if let Some(message) = streamed
            && let Some(first) = rest.next()
            && first != message.shown
        {
            edit(sink, chat, message, &first).await?;
        }
        for piece in rest {
            sink.post(chat, &piece).await?;
        }
        Ok(())
    }
}

async fn post(sink: &dyn Sink, chat: &ChatKey, piece: &str) -> Result<Streamed, PlatformError> {
    let last_call = Instant::now();
    let at = sink.post(chat, piece).await?;
    Ok(Streamed { at, last_call, shown: piece.to_owned() })
}

/// Edits `message` to show `piece` once its interval has passed; a message the
/// platform will not edit is replaced by a new one showing `piece`.
async fn edit(sink: &dyn Sink, chat: &ChatKey, message: Streamed, piece: &str) -> Result<Streamed, PlatformError> {
    tokio::time::sleep_until(message.last_call + EDIT_INTERVAL).await;
    let last_call = Instant::now();
    match sink.edit(&message.at, piece).await {
        Ok(()) => Ok(Streamed { last_call, shown: piece.to_owned(), ..message }),
        Err(e) => {
            tracing::warn!(channel = %message.at.channel, message = %message.at.id, error = %e, "cannot edit a streamed message; posting the text anew");
            post(sink, chat, piece).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_cut_by_characters_and_blank_ones_left_out() {
        assert_eq!(pieces("abcdé", 2), ["ab", "cd", "é"]);
        assert_eq!(pieces("ab  ", 2), ["ab"]);
        assert_eq!(pieces("   ", 10), Vec::<String>::new());
    }
}
