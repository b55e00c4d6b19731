//! The agent's text streamed into one Slack message, through the kit's streaming
//! ([`kit::stream`](crate::platform::kit::stream): the pace of about one edit a
//! second, the pieces, which message a block streams into): the first progress report
//! of a block posts the message (`chat.postMessage`), later reports and the complete
//! text edit it (`chat.update`). An edit Slack refuses (the message was deleted, its
//! edit window closed) posts the text as a new message.

use futures_util::future::BoxFuture;
use serde_json::json;

use super::text::escape;
use super::{PlatformError, Shared, TEXT_PIECE, api_error};
use crate::platform::kit::stream::{Posted, Sink};
use crate::platform::kit::turns::Priority;
use crate::store::ChatKey;

impl Sink for Shared {
    fn piece_chars(&self) -> usize {
        TEXT_PIECE
    }

    fn post<'a>(&'a self, chat: &'a ChatKey, piece: &'a str) -> BoxFuture<'a, Result<Posted, PlatformError>> {
        Box::pin(async move {
            let (channel, ts) = Shared::post(self, chat, json!({ "text": escape(piece) }), Priority::Text).await?;
            Ok(Posted { channel, id: ts })
        })
    }

    fn edit<'a>(&'a self, message: &'a Posted, piece: &'a str) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            self.api
                .update_message(&message.channel, &message.id, &json!({ "text": escape(piece) }))
                .await
                .map_err(|e| api_error(&format!("edit message {}", message.id), e))
        })
    }
}
