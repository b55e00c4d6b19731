//! The agent's text streamed into one Mattermost post, through the kit's streaming
//! ([`kit::stream`](crate::platform::kit::stream): the pace of about one edit a
//! second, the pieces, which post a block streams into): the first progress report of
//! a block creates the post (`POST posts`), later reports and the complete text edit
//! it (`PUT posts/{id}/patch`). An edit Mattermost refuses (the post was deleted)
//! posts the text anew.

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
            let channel = self.channel(chat).await?;
            let id = Shared::post(self, chat, json!({ "message": escape(piece) }), Priority::Text).await?;
            Ok(Posted { channel, id })
        })
    }

    fn edit<'a>(&'a self, message: &'a Posted, piece: &'a str) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            self.api.patch_post(&message.id, &json!({ "message": escape(piece) })).await.map_err(|e| api_error(&format!("edit post {}", message.id), e))
        })
    }
}
