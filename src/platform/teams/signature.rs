//! The check every request to `/teams/messages` passes before its body is used: its
//! `Authorization: Bearer` token is a JWT the Bot Connector signed, as
//! learn.microsoft.com, "Authentication with the Bot Connector API" ("Authenticate
//! requests from the Bot Connector service to your bot") lays it out:
//!
//! 1. the token is RS256, signed by a key listed at the `jwks_uri` of the OpenID
//!    metadata (`teams.openid_metadata_url`); the keys are cached, fetched again when
//!    a token names a `kid` the cache does not hold (at most once every
//!    [`REFETCH_AT_MOST`], so a stream of forged `kid`s cannot make the bridge hammer
//!    Microsoft) and every [`KEYS_FOR`] in any case;
//! 2. a key that lists `endorsements` must endorse the activity's `channelId`;
//! 3. the issuer is `https://api.botframework.com`, the audience the bot's app id,
//!    and the token has not expired, with five minutes of clock skew;
//! 4. its `serviceUrl` claim equals the activity's `serviceUrl`, so a token taken from
//!    one request cannot send the bridge's answers somewhere else.
//!
//! Anything else is a [`Refused`] with the reason, which the endpoint answers 401.
//!
//! A token that passed is remembered by its exact text until it expires
//! ([`Verified`]): a token is good for many requests, and its RSA check was most of a
//! click's cost in a burst. Only the signature and the registered claims are taken as
//! read; the endorsement and the `serviceUrl` are checked against each activity as
//! before. A changed byte is another text and gets the full check, and the memory is
//! dropped whenever the keys are fetched again, so a key Microsoft withdraws stops
//! counting for the tokens it signed.
//! `jsonwebtoken` (RS256 on `ring`, already in the tree through rustls, without its
//! PEM parsing) does the signature and the registered claims.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use tokio::sync::Mutex;

/// The issuer of the Bot Connector's tokens.
pub const ISSUER: &str = "https://api.botframework.com";
/// The clock skew allowed on `exp` and `nbf`.
pub const SKEW: Duration = Duration::from_secs(300);
/// The least time between two fetches of the keys for an unknown `kid`.
pub const REFETCH_AT_MOST: Duration = Duration::from_secs(10);
/// How long fetched keys are trusted before they are fetched again (Microsoft rotates
/// them and asks bots to refresh at least daily).
pub const KEYS_FOR: Duration = Duration::from_secs(24 * 3600);
/// Verified tokens remembered at most. Only tokens Microsoft's keys signed get in, and
/// the connector sends a handful at a time, so this is never reached in practice; if
/// it is, the expired ones go, then all of them.
const VERIFIED_MAX: usize = 256;

/// Why a request was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Refused {
    #[error("no Authorization: Bearer token")]
    NoToken,
    #[error("the token does not read as a JWT: {0}")]
    Malformed(String),
    #[error("the token is signed with {0:?}, not RS256")]
    Algorithm(String),
    #[error("the token names no key (kid)")]
    NoKeyId,
    #[error("the token's key {0:?} is not among Microsoft's published keys")]
    UnknownKey(String),
    #[error("the token's key does not endorse channel {0:?}")]
    NotEndorsed(String),
    #[error("the token does not verify: {0}")]
    Invalid(String),
    #[error("the token's serviceUrl is not the activity's")]
    ServiceUrl,
    #[error("cannot fetch the signing keys: {0}")]
    Keys(String),
}

/// What the bridge reads of a verified token.
#[derive(Debug, Deserialize)]
struct Claims {
    #[serde(rename = "serviceUrl", default)]
    service_url: Option<String>,
    /// Seconds since the epoch; required, so present once verified.
    exp: u64,
}

/// A token that verified: the key that signed it, when it expires, and the
/// `serviceUrl` it names.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Verified {
    kid: String,
    expires: u64,
    service_url: Option<String>,
}

impl Verified {
    /// Whether it still counts at `now` (seconds since the epoch): the same skew as
    /// the full check.
    fn live_at(&self, now: u64) -> bool {
        now <= self.expires.saturating_add(SKEW.as_secs())
    }
}

fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// A published key and the channels it endorses (empty: any).
struct Key {
    key: DecodingKey,
    endorsements: Vec<String>,
}

struct Cached {
    keys: HashMap<String, Key>,
    fetched: Option<Instant>,
    /// Tokens that verified against `keys`, by their exact text.
    verified: HashMap<String, Verified>,
}

impl Cached {
    /// Remembers a token that verified, keeping the memory bounded.
    fn remember(&mut self, token: &str, verified: Verified) {
        if self.verified.len() >= VERIFIED_MAX {
            let now = now_secs();
            self.verified.retain(|_, v| v.live_at(now));
            if self.verified.len() >= VERIFIED_MAX {
                self.verified.clear();
            }
        }
        self.verified.insert(token.to_owned(), verified);
    }
}

impl Key {
    /// The checks that bind a verified token to one activity: the key endorses its
    /// channel, and the token names its `serviceUrl`.
    fn binds(&self, token_service_url: Option<&str>, channel_id: &str, service_url: &str) -> Result<(), Refused> {
        if !self.endorsements.is_empty() && !self.endorsements.iter().any(|e| e == channel_id) {
            return Err(Refused::NotEndorsed(channel_id.to_owned()));
        }
        if token_service_url != Some(service_url) {
            return Err(Refused::ServiceUrl);
        }
        Ok(())
    }
}

/// Verifies the Bot Connector's tokens against the keys it publishes.
pub struct Verifier {
    http: reqwest::Client,
    metadata_url: String,
    app_id: String,
    cache: Mutex<Cached>,
}

#[derive(Deserialize)]
struct Metadata {
    jwks_uri: String,
}

#[derive(Deserialize)]
struct Jwks {
    keys: Vec<Jwk>,
}

#[derive(Deserialize)]
struct Jwk {
    #[serde(default)]
    kid: Option<String>,
    #[serde(default)]
    kty: String,
    #[serde(default)]
    n: Option<String>,
    #[serde(default)]
    e: Option<String>,
    #[serde(default)]
    endorsements: Vec<String>,
}

impl Verifier {
    pub fn new(http: reqwest::Client, metadata_url: &str, app_id: &str) -> Self {
        Self {
            http,
            metadata_url: metadata_url.to_owned(),
            app_id: app_id.to_owned(),
            cache: Mutex::new(Cached { keys: HashMap::new(), fetched: None, verified: HashMap::new() }),
        }
    }

    /// Checks `authorization` (the header's value) for an activity of `channel_id`
    /// at `service_url`.
    pub async fn verify(&self, authorization: Option<&str>, channel_id: &str, service_url: &str) -> Result<(), Refused> {
        let token = authorization.and_then(|h| h.strip_prefix("Bearer ")).map(str::trim).filter(|t| !t.is_empty()).ok_or(Refused::NoToken)?;
        if let Some(known) = self.remembered(token, channel_id, service_url).await {
            return known;
        }
        let header = jsonwebtoken::decode_header(token).map_err(|e| Refused::Malformed(e.to_string()))?;
        if header.alg != Algorithm::RS256 {
            return Err(Refused::Algorithm(format!("{:?}", header.alg)));
        }
        let kid = header.kid.ok_or(Refused::NoKeyId)?;
        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_issuer(&[ISSUER]);
        validation.set_audience(&[&self.app_id]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.leeway = SKEW.as_secs();
        validation.validate_nbf = true;
        let mut cache = self.keys_with(&kid).await?;
        let key = cache.keys.get(&kid).ok_or_else(|| Refused::UnknownKey(kid.clone()))?;
        let claims = jsonwebtoken::decode::<Claims>(token, &key.key, &validation).map_err(|e| Refused::Invalid(e.to_string()))?.claims;
        let bound = key.binds(claims.service_url.as_deref(), channel_id, service_url);
        cache.remember(token, Verified { kid, expires: claims.exp, service_url: claims.service_url });
        bound
    }

    /// The answer for a token that verified before and has not expired: only the
    /// checks against this activity are made again. `None`: not remembered (or
    /// expired, or the keys are due to be fetched again): the full check decides.
    async fn remembered(&self, token: &str, channel_id: &str, service_url: &str) -> Option<Result<(), Refused>> {
        let mut cache = self.cache.lock().await;
        let verified = cache.verified.get(token)?;
        let keys_due = cache.fetched.is_none_or(|at| at.elapsed() > KEYS_FOR);
        if keys_due || !verified.live_at(now_secs()) {
            cache.verified.remove(token);
            return None;
        }
        let key = cache.keys.get(&verified.kid)?;
        Some(key.binds(verified.service_url.as_deref(), channel_id, service_url))
    }

    /// The cache, holding `kid` if Microsoft publishes it: fetched again when it is
    /// stale, or when `kid` is unknown and the last fetch is not too recent.
    async fn keys_with(&self, kid: &str) -> Result<tokio::sync::MutexGuard<'_, Cached>, Refused> {
        let mut cache = self.cache.lock().await;
        let age = cache.fetched.map(|at| at.elapsed());
        let stale = age.is_none_or(|age| age > KEYS_FOR);
        let unknown = !cache.keys.contains_key(kid) && age.is_none_or(|age| age > REFETCH_AT_MOST);
        if stale || unknown {
            match self.fetch().await {
                Ok(keys) => {
                    cache.keys = keys;
                    cache.fetched = Some(Instant::now());
                    // What the old keys verified is checked again against the new.
                    cache.verified.clear();
                }
                // Stale keys still verify what they signed; with none, nothing can.
                Err(e) if cache.keys.is_empty() => return Err(e),
                Err(e) => tracing::warn!(error = %e, "cannot fetch Microsoft's signing keys again; the cached ones still count"),
            }
        }
        Ok(cache)
    }

    /// The metadata, then its `jwks_uri`: every RSA key with a `kid`.
    async fn fetch(&self) -> Result<HashMap<String, Key>, Refused> {
        let get = |url: String| async move {
            let response = self.http.get(&url).timeout(Duration::from_secs(10)).send().await.map_err(|e| Refused::Keys(format!("{url}: {e}")))?;
            if !response.status().is_success() {
                return Err(Refused::Keys(format!("{url}: HTTP {}", response.status().as_u16())));
            }
            response.bytes().await.map_err(|e| Refused::Keys(format!("{url}: {e}")))
        };
        let metadata: Metadata =
            serde_json::from_slice(&get(self.metadata_url.clone()).await?).map_err(|e| Refused::Keys(format!("the OpenID metadata does not read: {e}")))?;
        let jwks: Jwks = serde_json::from_slice(&get(metadata.jwks_uri).await?).map_err(|e| Refused::Keys(format!("the JWKS does not read: {e}")))?;
        let mut keys = HashMap::new();
        for jwk in jwks.keys {
            let (Some(kid), Some(n), Some(e)) = (jwk.kid, jwk.n, jwk.e) else { continue };
            if jwk.kty != "RSA" {
                continue;
            }
            match DecodingKey::from_rsa_components(&n, &e) {
                Ok(key) => {
                    keys.insert(kid, Key { key, endorsements: jwk.endorsements });
                }
                Err(error) => tracing::warn!(%kid, %error, "a published key that does not read; skipped"),
            }
        }
        Ok(keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verified(expires: u64) -> Verified {
        Verified { kid: "k".into(), expires, service_url: Some("https://smba.trafficmanager.net/amer/".into()) }
    }

    #[test]
    fn a_remembered_token_counts_until_its_expiry_plus_the_skew() {
        let token = verified(1_000_000);
        assert!(token.live_at(999_000));
        assert!(token.live_at(1_000_000 + SKEW.as_secs()));
        assert!(!token.live_at(1_000_001 + SKEW.as_secs()));
    }

    #[test]
    fn the_binding_to_an_activity_is_checked_every_time() {
        let key = |endorsements: &[&str]| Key { key: DecodingKey::from_secret(b"unused"), endorsements: endorsements.iter().map(|e| e.to_string()).collect() };
        let url = "https://smba.trafficmanager.net/amer/";
        assert_eq!(key(&[]).binds(Some(url), "msteams", url), Ok(()));
        assert_eq!(key(&["msteams"]).binds(Some(url), "msteams", url), Ok(()));
        assert_eq!(key(&["skype"]).binds(Some(url), "msteams", url), Err(Refused::NotEndorsed("msteams".into())));
        assert_eq!(key(&[]).binds(Some(url), "msteams", "https://attacker.example/"), Err(Refused::ServiceUrl));
        assert_eq!(key(&[]).binds(None, "msteams", url), Err(Refused::ServiceUrl));
    }

    #[test]
    fn the_memory_of_verified_tokens_stays_bounded() {
        let mut cache = Cached { keys: HashMap::new(), fetched: None, verified: HashMap::new() };
        let live = now_secs() + 3600;
        for n in 0..VERIFIED_MAX {
            // Every other one long expired: they go first.
            cache.remember(&format!("t{n}"), verified(if n % 2 == 0 { live } else { 1 }));
        }
        cache.remember("one more", verified(live));
        assert_eq!(cache.verified.len(), VERIFIED_MAX / 2 + 1, "the expired ones went");
        assert!(cache.verified.contains_key("t0") && cache.verified.contains_key("one more"));
        for n in 0..VERIFIED_MAX {
            cache.remember(&format!("u{n}"), verified(live));
        }
        assert!(cache.verified.len() <= VERIFIED_MAX);
    }
}
