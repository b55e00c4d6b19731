//! The bridge's own token for the Connector API: the client-credentials grant of the
//! bot's app (`app_id`, `app_password`, scope `https://api.botframework.com/.default`)
//! at `teams.token_url`, as learn.microsoft.com, "Authentication with the Bot
//! Connector API" ("Authenticate requests from your bot to the Bot Connector service")
//! describes it. The token is cached until [`EARLY`] before it expires, and one
//! request at a time asks for a new one.
//!
//! A refusal names the setting at fault from Microsoft Entra's `AADSTS` code, so the
//! bridge's start says which key to fix rather than "400 Bad Request".

use std::time::{Duration, Instant};

use serde::Deserialize;
use tokio::sync::Mutex;

/// The scope of a Connector API token.
pub const SCOPE: &str = "https://api.botframework.com/.default";
/// A token is renewed this long before it expires.
pub const EARLY: Duration = Duration::from_secs(300);

/// Why no token came.
#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    /// Microsoft refused the app's credentials: the setting at fault and its words.
    #[error("Microsoft refused {setting}: {description}")]
    Refused { setting: &'static str, description: String },
    #[error("cannot reach the token endpoint: {0}")]
    Network(String),
}

#[derive(Deserialize)]
struct Granted {
    access_token: String,
    #[serde(default)]
    expires_in: Option<u64>,
}

#[derive(Deserialize, Default)]
struct Denied {
    #[serde(default)]
    error: String,
    #[serde(default)]
    error_description: String,
}

/// The setting an Entra refusal is about: the tenant (`AADSTS90002` tenant not found,
/// `AADSTS900023` a malformed one), the app id (`AADSTS700016` no such application in
/// the tenant, `unauthorized_client`), else the password (`AADSTS7000215` invalid
/// secret, `AADSTS7000222` expired secret, `invalid_client`).
pub fn setting_at_fault(denied_error: &str, description: &str) -> &'static str {
    if description.contains("AADSTS90002") || description.contains("AADSTS900023") {
        "teams.tenant_id"
    } else if description.contains("AADSTS700016") || denied_error == "unauthorized_client" {
        "teams.app_id"
    } else {
        "teams.app_password"
    }
}

/// Gets and caches the bot's token.
pub struct Login {
    http: reqwest::Client,
    token_url: String,
    app_id: String,
    app_password: String,
    cached: Mutex<Option<(String, Instant)>>,
}

impl Login {
    pub fn new(http: reqwest::Client, token_url: &str, app_id: &str, app_password: &str) -> Self {
        Self { http, token_url: token_url.to_owned(), app_id: app_id.to_owned(), app_password: app_password.to_owned(), cached: Mutex::new(None) }
    }

    /// A token valid for at least [`EARLY`] more.
    pub async fn token(&self) -> Result<String, LoginError> {
        let mut cached = self.cached.lock().await;
        if let Some((token, until)) = cached.as_ref()
            && Instant::now() < *until
        {
            return Ok(token.clone());
        }
        let (token, lasts) = self.ask().await?;
        *cached = Some((token.clone(), Instant::now() + lasts.saturating_sub(EARLY)));
        Ok(token)
    }

    /// Forgets the cached token (the Connector API said 401: it was revoked).
    pub async fn forget(&self) {
        *self.cached.lock().await = None;
    }

    async fn ask(&self) -> Result<(String, Duration), LoginError> {
        let form = [("grant_type", "client_credentials"), ("client_id", &self.app_id), ("client_secret", &self.app_password), ("scope", SCOPE)];
        let response = self
            .http
            .post(&self.token_url)
            .form(&form)
            .timeout(Duration::from_secs(15))
            .send()
            .await
            .map_err(|e| LoginError::Network(format!("{}: {e}", self.token_url)))?;
        let status = response.status();
        let body = response.bytes().await.map_err(|e| LoginError::Network(e.to_string()))?;
        if status.is_success() {
            let granted: Granted = serde_json::from_slice(&body).map_err(|e| LoginError::Network(format!("a token answer that does not read: {e}")))?;
            return Ok((granted.access_token, Duration::from_secs(granted.expires_in.unwrap_or(3600))));
        }
        if status.is_server_error() || status.as_u16() == 429 {
            return Err(LoginError::Network(format!("{}: HTTP {}", self.token_url, status.as_u16())));
        }
        let denied: Denied = serde_json::from_slice(&body).unwrap_or_default();
        let setting = setting_at_fault(&denied.error, &denied.error_description);
        let description = if denied.error_description.is_empty() { format!("HTTP {} {}", status.as_u16(), denied.error) } else { denied.error_description };
        Err(LoginError::Refused { setting, description })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entra_refusals_name_the_setting_at_fault() {
        assert_eq!(setting_at_fault("invalid_client", "AADSTS7000215: Invalid client secret provided."), "teams.app_password");
        assert_eq!(setting_at_fault("invalid_client", "AADSTS7000222: The provided client secret keys are expired."), "teams.app_password");
        assert_eq!(setting_at_fault("unauthorized_client", "AADSTS700016: Application with identifier 'x' was not found"), "teams.app_id");
        assert_eq!(setting_at_fault("invalid_request", "AADSTS90002: Tenant 'x' not found."), "teams.tenant_id");
    }
}
