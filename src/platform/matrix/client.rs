//! The bot's Matrix client: `matrix-sdk` with its SQLite store under
//! `matrix.store_path` (the device's encryption keys, its session, the rooms' state),
//! logged in once and restored after.
//!
//! - With `matrix.access_token`, the token is checked with `whoami` (which also names
//!   the device it belongs to) before anything else; a token the homeserver refuses
//!   is an error naming `matrix.access_token`.
//! - With `matrix.password`, the first start logs in (cross-signing is then
//!   bootstrapped from the password, so the bot's device is verified by its own
//!   identity) and keeps the session in `session.json` beside the store; later starts
//!   restore it, so the device and its keys stay the same. A kept session the
//!   homeserver no longer accepts logs in again (a new device, said in the log).
//!
//! `M_LIMIT_EXCEEDED` is the SDK's to meet: its HTTP client waits `retry_after_ms`
//! and sends again (a 429 is a transient error in `matrix_sdk::http_client`), so a
//! burst is slowed down, never dropped.

use std::path::{Path, PathBuf};

use matrix_sdk::authentication::matrix::MatrixSession;
use matrix_sdk::encryption::EncryptionSettings;
use matrix_sdk::ruma::{OwnedDeviceId, OwnedUserId};
use matrix_sdk::{Client, SessionMeta, SessionTokens};
use serde::Deserialize;

use super::send_error;
use super::settings::MatrixSettings;
use crate::platform::PlatformError;

/// The kept session, beside the SDK's store.
const SESSION_FILE: &str = "session.json";

/// What `whoami` says of a token.
#[derive(Debug, Deserialize)]
struct WhoAmI {
    user_id: String,
    device_id: Option<String>,
}

/// Logs the bot in (or restores its device) and checks it is who `matrix.user_id`
/// says: the client, ready to sync.
pub async fn connect(settings: &MatrixSettings) -> Result<Client, PlatformError> {
    let store = settings.store_path.clone();
    std::fs::create_dir_all(&store).map_err(|e| send_error(format!("cannot create matrix.store_path = {}: {e}", store.display())))?;
    let client = Client::builder()
        .homeserver_url(settings.homeserver())
        .sqlite_store(&store, settings.store_passphrase())
        .with_encryption_settings(EncryptionSettings { auto_enable_cross_signing: true, ..Default::default() })
        .build()
        .await
        .map_err(|e| send_error(format!("cannot open the Matrix store at matrix.store_path = {}: {e}", store.display())))?;
    match (settings.access_token(), settings.password()) {
        (Some(token), _) => restore_token(&client, settings, token).await?,
        (None, Some(password)) => login_password(&client, settings, &store, password).await?,
        (None, None) => return Err(send_error("matrix.enabled is set but neither matrix.access_token nor matrix.password is")),
    }
    Ok(client)
}

/// Restores the session an access token stands for, after `whoami` vouched for it.
async fn restore_token(client: &Client, settings: &MatrixSettings, token: &str) -> Result<(), PlatformError> {
    let who = whoami(settings.homeserver(), token).await.map_err(|e| match e {
        WhoAmIError::Refused(status, body) => send_error(format!(
            "the homeserver refused matrix.access_token (whoami: HTTP {status} {body}); copy the bot's access token again (Element: Settings > Help & About > Access Token)"
        )),
        WhoAmIError::Unreachable(why) => send_error(format!("cannot check matrix.access_token at matrix.homeserver_url = {}: {why}", settings.homeserver())),
    })?;
    if who.user_id != settings.user_id {
        return Err(send_error(format!("matrix.access_token belongs to {}, not to matrix.user_id = {}", who.user_id, settings.user_id)));
    }
    let Some(device) = who.device_id else {
        return Err(send_error("matrix.access_token has no device (an appservice token?): log in with matrix.password instead"));
    };
    let session = session_of(&settings.user_id, &device, token)?;
    client.restore_session(session).await.map_err(|e| send_error(format!("cannot restore the Matrix session: {e}")))?;
    tracing::info!(user = %who.user_id, %device, "matrix.access_token accepted");
    Ok(())
}

/// Restores the kept session, or logs in with the password once and keeps it.
async fn login_password(client: &Client, settings: &MatrixSettings, store: &Path, password: &str) -> Result<(), PlatformError> {
    let file = store.join(SESSION_FILE);
    if let Some(session) = read_session(&file) {
        let token = session.tokens.access_token.clone();
        match whoami(settings.homeserver(), &token).await {
            Ok(_) => {
                client.restore_session(session).await.map_err(|e| send_error(format!("cannot restore the Matrix session: {e}")))?;
                tracing::info!(user = %settings.user_id, "the kept Matrix session is accepted");
                return Ok(());
            }
            Err(WhoAmIError::Refused(status, body)) => {
                tracing::warn!(status, %body, "the kept Matrix session is refused; logging in again (a new device)");
            }
            Err(WhoAmIError::Unreachable(why)) => {
                return Err(send_error(format!("cannot reach matrix.homeserver_url = {}: {why}", settings.homeserver())));
            }
        }
    }
    let response = client
        .matrix_auth()
        .login_username(&settings.user_id, password)
        .initial_device_display_name(&settings.device_name)
        .send()
        .await
        .map_err(|e| send_error(format!("the homeserver refused matrix.user_id = {} with matrix.password: {e}", settings.user_id)))?;
    if response.user_id.as_str() != settings.user_id {
        return Err(send_error(format!("matrix.password logged in {}, not matrix.user_id = {}", response.user_id, settings.user_id)));
    }
    let session = client.matrix_auth().session().ok_or_else(|| send_error("logged in to Matrix, yet no session"))?;
    write_session(&file, &session)?;
    tracing::info!(user = %response.user_id, device = %response.device_id, "logged in to Matrix; the session is kept in matrix.store_path");
    Ok(())
}

fn session_of(user: &str, device: &str, token: &str) -> Result<MatrixSession, PlatformError> {
    let user_id: OwnedUserId = user.try_into().map_err(|e| send_error(format!("matrix.user_id: {e}")))?;
    let device_id: OwnedDeviceId = device.into();
    Ok(MatrixSession { meta: SessionMeta { user_id, device_id }, tokens: SessionTokens { access_token: token.to_owned(), refresh_token: None } })
}

fn read_session(file: &Path) -> Option<MatrixSession> {
    let text = std::fs::read_to_string(file).ok()?;
    serde_json::from_str(&text).map_err(|e| tracing::warn!(file = %file.display(), error = %e, "the kept Matrix session does not read; logging in again")).ok()
}

/// Writes the session readable by this user only, replacing the old one atomically.
fn write_session(file: &PathBuf, session: &MatrixSession) -> Result<(), PlatformError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let partial = file.with_extension("json.partial");
    let json = serde_json::to_vec(session).map_err(|e| send_error(format!("cannot encode the Matrix session: {e}")))?;
    let write = || -> std::io::Result<()> {
        let mut out = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&partial)?;
        out.write_all(&json)?;
        out.sync_all()?;
        std::fs::rename(&partial, file)
    };
    write().map_err(|e| send_error(format!("cannot keep the Matrix session in {}: {e}", file.display())))
}

enum WhoAmIError {
    Refused(u16, String),
    Unreachable(String),
}

/// `GET /_matrix/client/v3/account/whoami` with `token` (spec § Current account
/// information): who the token is, and its device.
async fn whoami(homeserver: &str, token: &str) -> Result<WhoAmI, WhoAmIError> {
    let response = reqwest::Client::new()
        .get(format!("{homeserver}/_matrix/client/v3/account/whoami"))
        .bearer_auth(token)
        .timeout(std::time::Duration::from_secs(30))
        .send()
        .await
        .map_err(|e| WhoAmIError::Unreachable(e.to_string()))?;
    let status = response.status();
    let body = response.text().await.map_err(|e| WhoAmIError::Unreachable(e.to_string()))?;
    if !status.is_success() {
        let errcode = serde_json::from_str::<serde_json::Value>(&body).ok().and_then(|v| v["errcode"].as_str().map(str::to_owned)).unwrap_or_default();
        return Err(WhoAmIError::Refused(status.as_u16(), errcode));
    }
    serde_json::from_str(&body).map_err(|e| WhoAmIError::Unreachable(format!("whoami answered {e}")))
}
