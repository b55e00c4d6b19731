//! Checking `discord.token` before anything else starts: `GET /users/@me` with the
//! bot's REST client. Discord answers 401 to a bad token; serenity's gateway would
//! only log that and retry forever, leaving a bridge that looks up but never hears
//! anything. Here a refused token is a startup error naming the key, and a Discord
//! that cannot be reached is retried a few times before it is one too.

use std::time::Duration;

use serenity::all::{CurrentUser, Http};

/// Waits between attempts when Discord cannot be reached (network error, 5xx, 429):
/// four attempts over about 7 s, then startup fails and the supervisor retries.
const RETRY_WAITS: [Duration; 3] = [Duration::from_secs(1), Duration::from_secs(2), Duration::from_secs(4)];

#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    #[error(
        "discord.token was refused by Discord (HTTP {status} on GET /users/@me): set the bot token from the Developer Portal (env HITL_BRIDGE__DISCORD__TOKEN)"
    )]
    Refused { status: u16 },
    #[error("cannot reach Discord to check discord.token after {attempts} attempts: {last}")]
    Unreachable { attempts: usize, last: String },
}

/// What one failed attempt means.
#[derive(Debug, PartialEq, Eq)]
enum Failure {
    /// The token (or the request) is wrong: trying again cannot help.
    Fatal(u16),
    /// Network trouble, Discord down or busy: worth another try.
    Transient,
}

fn classify(e: &serenity::Error) -> Failure {
    match e {
        serenity::Error::Http(http) => match http.status_code().map(|s| s.as_u16()) {
            Some(status) if status == 429 || status >= 500 => Failure::Transient,
            Some(status) => Failure::Fatal(status),
            None => Failure::Transient,
        },
        _ => Failure::Transient,
    }
}

/// The bot's own user when Discord accepts the token.
pub async fn check_token(http: &Http) -> Result<CurrentUser, LoginError> {
    let mut waits = RETRY_WAITS.iter();
    let mut attempts = 0;
    loop {
        attempts += 1;
        let e = match http.get_current_user().await {
            Ok(me) => return Ok(me),
            Err(e) => e,
        };
        match (classify(&e), waits.next()) {
            (Failure::Fatal(status), _) => return Err(LoginError::Refused { status }),
            (Failure::Transient, Some(wait)) => {
                tracing::warn!(error = %e, attempt = attempts, wait_s = wait.as_secs(), "cannot reach Discord to check the token; retrying");
                tokio::time::sleep(*wait).await;
            }
            (Failure::Transient, None) => return Err(LoginError::Unreachable { attempts, last: e.to_string() }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_without_an_http_status_are_retried() {
        assert_eq!(classify(&serenity::Error::Other("connection refused")), Failure::Transient);
        assert_eq!(classify(&serenity::Error::Http(serenity::http::HttpError::InvalidScheme)), Failure::Transient);
    }
}
