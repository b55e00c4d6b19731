//! Paging `GET /v1/requests`: the `limit` and the opaque `cursor` a page hands out for
//! the next one. A cursor is the last row's push time and key, base64url-encoded; the
//! agent must not build one, and one the bridge did not give out is refused.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::store::PageMark;

/// Rows per page when the agent names no `limit`.
pub const DEFAULT_LIMIT: u32 = 100;
/// The largest `limit` accepted.
pub const MAX_LIMIT: u32 = 1000;

/// The page size asked for, or why it is refused.
pub fn limit(asked: Option<u32>) -> Result<u32, String> {
    match asked.unwrap_or(DEFAULT_LIMIT) {
        n @ 1..=MAX_LIMIT => Ok(n),
        n => Err(format!("limit must be between 1 and {MAX_LIMIT}, not {n}")),
    }
}

/// The cursor that continues after `mark`.
pub fn cursor(mark: &PageMark) -> String {
    URL_SAFE_NO_PAD.encode(format!("{}:{}", mark.created_at_ms, mark.approval_key))
}

/// The row a cursor continues after, or why it is not one of ours.
pub fn mark(cursor: &str) -> Result<PageMark, String> {
    let refused = || "cursor is not one this bridge gave out; start again without it".to_owned();
    let text = URL_SAFE_NO_PAD.decode(cursor).ok().and_then(|bytes| String::from_utf8(bytes).ok()).ok_or_else(refused)?;
    let (ms, key) = text.split_once(':').ok_or_else(refused)?;
    let created_at_ms = ms.parse().map_err(|_| refused())?;
    Ok(PageMark { created_at_ms, approval_key: key.to_owned() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_round_trips_keys_with_colons() {
        let mark = PageMark { created_at_ms: 1_795_552_633_315, approval_key: "deploy:42/ü".into() };
        assert_eq!(super::mark(&cursor(&mark)), Ok(mark));
    }

    #[test]
    fn forged_cursors_and_bad_limits_are_refused() {
        assert!(mark("not base64!").is_err());
        assert!(mark(&URL_SAFE_NO_PAD.encode("no-colon")).is_err());
        assert!(mark(&URL_SAFE_NO_PAD.encode("soon:key")).is_err());
        assert_eq!(limit(None), Ok(DEFAULT_LIMIT));
        assert_eq!(limit(Some(MAX_LIMIT)), Ok(MAX_LIMIT));
        assert!(limit(Some(0)).is_err());
        assert!(limit(Some(MAX_LIMIT + 1)).is_err());
    }
}
