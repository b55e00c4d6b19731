//! Outgoing REST calls and Discord's 429s.
//!
//! With the default client serenity's own rate limiter reads `retry_after` and waits.
//! Behind `discord.api_url` (a proxy or the tests' fake) serenity only honours the
//! proxy with its rate limiter off, so a 429 comes back to us: [`retrying`] waits
//! and tries again, so that nothing the bridge sends is lost to a rate limit.
//! Every failed attempt is counted in `platform_errors_total`.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serenity::all::{Http, HttpBuilder};
use serenity::http::HttpError;

use super::settings::DiscordSettings;
use crate::metrics::{Metrics, PlatformErrorKind};

/// Attempts per call, the first included.
const ATTEMPTS: u32 = 5;

/// The REST client: straight to Discord with serenity's rate limiter, or to
/// `api_url` without it (serenity ignores the proxy when its limiter is on).
pub fn http(settings: &DiscordSettings, token: &str) -> Http {
    let mut builder = HttpBuilder::new(token);
    if let Some(url) = settings.api_url.as_deref().filter(|u| !u.is_empty()) {
        builder = builder.proxy(url.trim_end_matches('/')).ratelimiter_disabled(true);
    }
    builder.build()
}

pub fn client(settings: &DiscordSettings, token: &str) -> Arc<Http> {
    Arc::new(http(settings, token))
}

fn status(e: &serenity::Error) -> Option<u16> {
    match e {
        serenity::Error::Http(http) => http.status_code().map(|s| s.as_u16()),
        _ => None,
    }
}

/// What kind of failure a serenity error is: by the HTTP status Discord answered,
/// else no answer at all (network) or one that could not be read (server). The rest
/// are refused before anything is sent (a message over a limit, a bad URL): the
/// bridge's request is at fault, as with a 4xx.
fn error_kind(e: &serenity::Error) -> PlatformErrorKind {
    match e {
        serenity::Error::Http(HttpError::UnsuccessfulRequest(response)) => {
            PlatformErrorKind::from_status(response.status_code.as_u16()).unwrap_or(PlatformErrorKind::Server)
        }
        serenity::Error::Http(HttpError::Request(_)) | serenity::Error::Io(_) => PlatformErrorKind::Network,
        serenity::Error::Json(_) | serenity::Error::Decode(..) => PlatformErrorKind::Server,
        _ => PlatformErrorKind::Client,
    }
}

/// Discord's JSON error codes that mean a channel or person this bot can never post
/// to (<https://discord.com/developers/docs/topics/opcodes-and-status-codes#json>):
/// Unknown Channel, Unknown Guild, Unknown User, Missing Access, Cannot send messages
/// to this user, Missing Permissions, and a thread that is archived or locked.
const REFUSED_FOR_GOOD: [isize; 8] = [10003, 10004, 10013, 50001, 50007, 50013, 50083, 160005];

/// Whether an answer with this HTTP status and JSON error code refuses for good: any
/// 403 or 404 (the channel is unknown, or the bot may not post there), and the codes
/// of [`REFUSED_FOR_GOOD`] whatever their status. 429, 5xx and 401 (the token, not
/// the channel) pass.
pub fn refuses_for_good(status: u16, code: isize) -> bool {
    matches!(status, 403 | 404) || REFUSED_FOR_GOOD.contains(&code)
}

/// [`refuses_for_good`] for a serenity error: only an answer from Discord can.
pub fn refused_for_good(e: &serenity::Error) -> bool {
    match e {
        serenity::Error::Http(HttpError::UnsuccessfulRequest(response)) => refuses_for_good(response.status_code.as_u16(), response.error.code),
        _ => false,
    }
}

/// Runs `call` until it succeeds, fails with something other than a 429, or has
/// been tried [`ATTEMPTS`] times. Waits grow 0.5 s, 1 s, 2 s, 4 s: serenity drops the
/// 429's body, so `retry_after` cannot be read here; a proxy is expected to hold
/// requests back itself, and this only covers what slips through.
pub async fn retrying<T, F, Fut>(metrics: &Metrics, what: &str, mut call: F) -> Result<T, serenity::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, serenity::Error>>,
{
    let mut wait = Duration::from_millis(500);
    let mut attempt = 1;
    loop {
        let result = call().await;
        if let Err(e) = &result {
            metrics.platform_error(super::PLATFORM, error_kind(e));
        }
        match result {
            Err(e) if status(&e) == Some(429) && attempt < ATTEMPTS => {
                tracing::warn!(%what, attempt, wait_ms = wait.as_millis() as u64, "rate limited by Discord; retrying");
                tokio::time::sleep(wait).await;
                wait *= 2;
                attempt += 1;
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The status-carrying errors are checked end to end against the fake Discord
    /// (tests/metrics.rs); serenity does not let them be built here.
    #[test]
    fn errors_without_a_status_map_to_metric_kinds() {
        let io = serenity::Error::Io(std::io::Error::other("connection reset"));
        assert_eq!(error_kind(&io), PlatformErrorKind::Network);
        let unreadable = serde_json::from_str::<serde_json::Value>("<html>").expect_err("not JSON");
        assert_eq!(error_kind(&serenity::Error::Json(unreadable)), PlatformErrorKind::Server);
        assert_eq!(error_kind(&serenity::Error::Http(HttpError::InvalidScheme)), PlatformErrorKind::Client);
        assert_eq!(error_kind(&serenity::Error::Other("refused before sending")), PlatformErrorKind::Client);
    }

    #[test]
    fn unknown_channels_and_missing_access_are_refused_for_good_and_the_rest_retried() {
        assert!(refuses_for_good(404, 10003), "Unknown Channel");
        assert!(refuses_for_good(403, 50001), "Missing Access");
        assert!(refuses_for_good(403, 50007), "Cannot send messages to this user");
        assert!(refuses_for_good(403, 50013), "Missing Permissions");
        assert!(refuses_for_good(400, 50083), "a thread that is archived");
        assert!(!refuses_for_good(429, 0), "a rate limit");
        assert!(!refuses_for_good(500, 0) && !refuses_for_good(502, 0), "a server error");
        assert!(!refuses_for_good(401, 0), "the token, not the channel");
        assert!(!refuses_for_good(400, 50035), "a message Discord could not take");
        assert!(!refused_for_good(&serenity::Error::Io(std::io::Error::other("connection reset"))), "the network");
    }
}
