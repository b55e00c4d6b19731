//! JSON columns: values are stored as TEXT, encoded and decoded here so that every
//! table reports failures the same way.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::error::{Result, StoreError};

pub(super) fn encode<T: Serialize + ?Sized>(value: &T, what: &'static str) -> Result<String> {
    serde_json::to_string(value).map_err(|source| StoreError::Encode { what, source })
}

pub(super) fn encode_opt<T: Serialize>(value: Option<&T>, what: &'static str) -> Result<Option<String>> {
    value.map(|v| encode(v, what)).transpose()
}

/// Decodes a column; `id` names the row in the error.
pub(super) fn decode<T: DeserializeOwned>(text: &str, what: &'static str, id: impl ToString) -> Result<T> {
    serde_json::from_str(text).map_err(|source| StoreError::Corrupt { what, id: id.to_string(), source })
}

pub(super) fn decode_opt<T: DeserializeOwned>(text: Option<&str>, what: &'static str, id: impl ToString) -> Result<Option<T>> {
    text.map(|t| decode(t, what, id)).transpose()
}

/// For listings: a row that no longer decodes is logged and left out, so one bad row
/// cannot stop the bridge from serving all the others.
pub(super) fn skip_corrupt<T>(decoded: Result<T>) -> Option<T> {
    match decoded {
        Ok(value) => Some(value),
        Err(error) => {
            tracing::error!(%error, "skipping an unreadable stored row");
            None
        }
    }
}
