//! Who is signed in: the session cookie (a random value the store keeps hashed, so
//! sessions survive a restart and a copy of the database signs nobody in), its idle
//! expiry (`web.session_idle_secs`), and the CSRF token every state-changing form of
//! the session carries.

use axum::http::HeaderMap;
use axum::http::HeaderValue;
use subtle::ConstantTimeEq;

use super::Web;
use super::forms::{Fields, cookie};
use super::links::{hash, secret};
use crate::clock::now_ms;
use crate::interaction::Actor;
use crate::store::StoreError;

/// The session cookie's name.
pub(super) const COOKIE: &str = "hitl_inbox";

/// The hidden field every state-changing form carries.
pub(super) const CSRF_FIELD: &str = "csrf";

/// A signed-in person.
pub(super) struct Viewer {
    /// As the engine sees them: their platform identity, acting through the web, with
    /// the groups of the configuration their platform says they are in now (a page
    /// about one request asks again with its groups: [`Web::acting`]).
    pub actor: Actor,
    pub csrf: String,
    id_hash: String,
}

impl Viewer {
    /// Whether the posted form carries this session's CSRF token.
    pub(super) fn csrf_ok(&self, form: &Fields) -> bool {
        form.get(CSRF_FIELD).is_some_and(|sent| bool::from(sent.as_bytes().ct_eq(self.csrf.as_bytes())))
    }
}

/// The person the request's cookie signs in, if any (unknown, signed-out and idle
/// sessions are nobody).
pub(super) async fn viewer(web: &Web, headers: &HeaderMap) -> Result<Option<Viewer>, StoreError> {
    let Some(value) = cookie(headers, COOKIE).filter(|v| !v.is_empty()) else { return Ok(None) };
    let id_hash = hash(value);
    let idle_ms = i64::try_from(web.settings.session_idle_secs).unwrap_or(i64::MAX / 2000).saturating_mul(1000);
    let Some(session) = web.store.web_session(&id_hash, now_ms(), idle_ms).await? else { return Ok(None) };
    let mut person = session.actor;
    person.channel = Some("web".to_owned());
    // Groups as the platform says now (sessions opened before groups were left out
    // of them may still hold some: never read).
    let actor = web.acting(&person, &[]).await;
    Ok(Some(Viewer { actor, csrf: session.csrf, id_hash }))
}

/// Opens a session for `actor`; returns the `Set-Cookie` value.
pub(super) async fn open(web: &Web, actor: &Actor) -> Result<HeaderValue, StoreError> {
    let value = secret();
    web.store.create_web_session(&hash(&value), actor, &secret(), now_ms()).await?;
    Ok(set_cookie(web, &value, false))
}

/// Ends the session; returns the `Set-Cookie` value that clears the cookie.
pub(super) async fn close(web: &Web, viewer: &Viewer) -> Result<HeaderValue, StoreError> {
    web.store.end_web_session(&viewer.id_hash).await?;
    Ok(set_cookie(web, "", true))
}

/// HttpOnly (no script reads it), SameSite=Strict (no other site's page sends it),
/// Secure when the public URL is https, scoped to the inbox's path.
fn set_cookie(web: &Web, value: &str, clear: bool) -> HeaderValue {
    let secure = if web.settings.https() { "; Secure" } else { "" };
    let expiry = if clear { "; Max-Age=0" } else { "" };
    let cookie = format!("{COOKIE}={value}; Path={}; HttpOnly; SameSite=Strict{secure}{expiry}", web.path("/inbox"));
    // Hex and a URL path: always a valid header value.
    HeaderValue::from_str(&cookie).unwrap_or_else(|_| HeaderValue::from_static("hitl_inbox=; Max-Age=0"))
}
