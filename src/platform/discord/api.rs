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
}
