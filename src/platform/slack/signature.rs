//! Slack's request signatures, for HTTP mode. Every post Slack makes to the bridge
//! carries `X-Slack-Request-Timestamp` and `X-Slack-Signature: v0=<hex>`, the
//! HMAC-SHA256 of `v0:{timestamp}:{body}` keyed with the app's signing secret
//! (<https://api.slack.com/authentication/verifying-requests-from-slack>). It is
//! checked on the raw body before anything parses it, in constant time, and:
//!
//! - a timestamp more than [`WINDOW_SECS`] from now is refused, so a captured request
//!   cannot be replayed later;
//! - a signature already accepted within that window is refused, so it cannot be
//!   replayed now either (on this replica; on another, the durable inbox's key, the
//!   event's or interaction's own id, makes the replay a no-op).
//!
//! Only verified signatures are remembered, so a stranger cannot fill the memory;
//! what Slack itself sends in five minutes is the bound.

use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;

use hmac::{Hmac, Mac};
use secrecy::{ExposeSecret, SecretString};
use sha2::Sha256;

/// How far a request's timestamp may be from now, either way (Slack's own advice).
pub const WINDOW_SECS: i64 = 300;

/// Why a request is refused (each answered 401, nothing changed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("X-Slack-Request-Timestamp is missing or not a number")]
    Timestamp,
    #[error("the request is {0} s away from now (at most {WINDOW_SECS} s is accepted)")]
    Stale(i64),
    #[error("X-Slack-Signature is missing or not v0=<64 hex digits>")]
    Malformed,
    #[error("X-Slack-Signature does not match slack.signing_secret")]
    Mismatch,
    #[error("this signed request was already received")]
    Replayed,
}

/// A post's two headers, read and checked ([`Verifier::headers`]).
#[derive(Debug, Clone, Copy)]
pub struct SignedHeaders<'a> {
    timestamp_text: &'a str,
    signed_at: i64,
    digest: [u8; 32],
}

/// Checks requests against one signing secret and remembers what it accepted.
pub struct Verifier {
    secret: SecretString,
    accepted: Mutex<Accepted>,
}

/// Signatures accepted within the window, oldest first.
#[derive(Default)]
struct Accepted {
    order: VecDeque<(i64, [u8; 32])>,
    seen: HashSet<[u8; 32]>,
}

impl Accepted {
    /// Forgets what is older than the window: its timestamp is refused anyway.
    fn prune(&mut self, now_secs: i64) {
        while let Some(&(timestamp, signature)) = self.order.front() {
            if timestamp >= now_secs - WINDOW_SECS {
                break;
            }
            self.order.pop_front();
            self.seen.remove(&signature);
        }
    }
}

impl Verifier {
    pub fn new(secret: SecretString) -> Self {
        Self { secret, accepted: Mutex::new(Accepted::default()) }
    }

    /// Accepts the request once if `signature` is `body`'s, signed at `timestamp`
    /// (the two headers as received) within the window of `now_secs`.
    pub fn verify(&self, timestamp: Option<&str>, signature: Option<&str>, body: &[u8], now_secs: i64) -> Result<(), SignatureError> {
        let headers = Self::headers(timestamp, signature, now_secs)?;
        self.verify_body(&headers, body, now_secs)
    }

    /// The checks that need no body: both headers present and well formed, the
    /// timestamp within the window. The endpoint makes them before it reads a byte of
    /// the body, so a post without them costs nothing.
    pub fn headers<'a>(timestamp: Option<&'a str>, signature: Option<&str>, now_secs: i64) -> Result<SignedHeaders<'a>, SignatureError> {
        let timestamp_text = timestamp.map(str::trim).ok_or(SignatureError::Timestamp)?;
        let signed_at: i64 = timestamp_text.parse().map_err(|_| SignatureError::Timestamp)?;
        let offset = now_secs.saturating_sub(signed_at);
        if offset.abs() > WINDOW_SECS {
            return Err(SignatureError::Stale(offset));
        }
        let digest =
            signature.and_then(|s| s.trim().strip_prefix("v0=")).and_then(|hex_digits| hex::decode(hex_digits).ok()).ok_or(SignatureError::Malformed)?;
        let digest: [u8; 32] = digest.try_into().map_err(|_| SignatureError::Malformed)?;
        Ok(SignedHeaders { timestamp_text, signed_at, digest })
    }

    /// Accepts the request once if the signature of `headers` is `body`'s.
    pub fn verify_body(&self, headers: &SignedHeaders<'_>, body: &[u8], now_secs: i64) -> Result<(), SignatureError> {
        let SignedHeaders { timestamp_text, signed_at, digest } = *headers;
        let mut mac = Hmac::<Sha256>::new_from_slice(self.secret.expose_secret().as_bytes()).expect("HMAC takes a key of any length");
        mac.update(b"v0:");
        mac.update(timestamp_text.as_bytes());
        mac.update(b":");
        mac.update(body);
        // Constant time: how much of a guess matched does not show in the timing.
        mac.verify_slice(&digest).map_err(|_| SignatureError::Mismatch)?;
        let mut accepted = self.accepted.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        accepted.prune(now_secs);
        if !accepted.seen.insert(digest) {
            return Err(SignatureError::Replayed);
        }
        accepted.order.push_back((signed_at, digest));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Slack's own example (the page cited above): this secret, timestamp and body
    // sign to this signature.
    const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
    const TIMESTAMP: &str = "1531420618";
    const BODY: &str = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    const SIGNATURE: &str = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
    const NOW: i64 = 1_531_420_618 + 10;

    fn verifier() -> Verifier {
        Verifier::new(SecretString::from(SECRET))
    }

    #[test]
    fn slacks_own_example_is_accepted_once() {
        let v = verifier();
        assert_eq!(v.verify(Some(TIMESTAMP), Some(SIGNATURE), BODY.as_bytes(), NOW), Ok(()));
        assert_eq!(v.verify(Some(TIMESTAMP), Some(SIGNATURE), BODY.as_bytes(), NOW + 1), Err(SignatureError::Replayed));
    }

    #[test]
    fn a_changed_body_timestamp_or_secret_does_not_match() {
        let v = verifier();
        let changed = BODY.replace("roadrunner", "coyote");
        assert_eq!(v.verify(Some(TIMESTAMP), Some(SIGNATURE), changed.as_bytes(), NOW), Err(SignatureError::Mismatch));
        assert_eq!(v.verify(Some("1531420619"), Some(SIGNATURE), BODY.as_bytes(), NOW), Err(SignatureError::Mismatch));
        let other = Verifier::new(SecretString::from("another secret"));
        assert_eq!(other.verify(Some(TIMESTAMP), Some(SIGNATURE), BODY.as_bytes(), NOW), Err(SignatureError::Mismatch));
        // None of these was remembered: the genuine request still goes through.
        assert_eq!(v.verify(Some(TIMESTAMP), Some(SIGNATURE), BODY.as_bytes(), NOW), Ok(()));
    }

    #[test]
    fn timestamps_outside_five_minutes_are_refused_before_the_signature_is_computed() {
        let v = verifier();
        assert_eq!(v.verify(Some(TIMESTAMP), Some(SIGNATURE), BODY.as_bytes(), 1_531_420_618 + 301), Err(SignatureError::Stale(301)));
        assert_eq!(v.verify(Some(TIMESTAMP), Some(SIGNATURE), BODY.as_bytes(), 1_531_420_618 - 301), Err(SignatureError::Stale(-301)));
        assert_eq!(v.verify(Some(TIMESTAMP), Some(SIGNATURE), BODY.as_bytes(), 1_531_420_618 + 300), Ok(()));
    }

    #[test]
    fn malformed_headers_are_named() {
        let v = verifier();
        for timestamp in [None, Some(""), Some("soon"), Some("1e9")] {
            assert_eq!(v.verify(timestamp, Some(SIGNATURE), BODY.as_bytes(), NOW), Err(SignatureError::Timestamp), "{timestamp:?}");
        }
        let short = &SIGNATURE[..SIGNATURE.len() - 2];
        let v1 = SIGNATURE.replace("v0=", "v1=");
        for signature in [None, Some(""), Some("a2114d57"), Some(short), Some(v1.as_str()), Some("v0=zz")] {
            assert_eq!(v.verify(Some(TIMESTAMP), signature, BODY.as_bytes(), NOW), Err(SignatureError::Malformed), "{signature:?}");
        }
    }

    #[test]
    fn accepted_signatures_are_forgotten_once_their_window_passed() {
        let v = verifier();
        let sign = |at: i64, body: &str| {
            let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
            mac.update(format!("v0:{at}:{body}").as_bytes());
            format!("v0={}", hex::encode(mac.finalize().into_bytes()))
        };
        for n in 0..1000 {
            let at = 2_000_000_000 + n;
            assert_eq!(v.verify(Some(&at.to_string()), Some(&sign(at, "x")), b"x", at), Ok(()));
        }
        let later = 2_000_000_000 + 1000 + WINDOW_SECS;
        assert_eq!(v.verify(Some(&later.to_string()), Some(&sign(later, "y")), b"y", later), Ok(()));
        let accepted = v.accepted.lock().unwrap();
        assert_eq!(accepted.order.len(), accepted.seen.len());
        assert!(accepted.seen.len() <= WINDOW_SECS as usize + 2, "{} kept", accepted.seen.len());
    }
}
