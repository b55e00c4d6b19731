//! Callback tokens (DESIGN.md "Callback tokens"): what a button carries so that a
//! click can be traced back to an interaction and an action without trusting the
//! client. `<version>:<interaction id>:<action code>:<tag>`, where the tag is a
//! truncated HMAC-SHA256 over the rest. Never question text, labels or approval keys.
//!
//! Telegram allows 64 bytes of callback data and Discord 100 characters of custom_id;
//! [`MAX_CODE_BYTES`] keeps every token within the smaller of the two.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// The key that signs button tokens. When unset, the bridge generates one on first
/// run and keeps it in the store, so tokens stay valid across restarts and replicas.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct TokenSettings {
    #[serde(serialize_with = "crate::redact::secret")]
    pub secret: Option<SecretString>,
}

type HmacSha256 = Hmac<Sha256>;

pub const VERSION: &str = "1";
/// Telegram's callback_data limit, the tighter one.
pub const MAX_TOKEN_BYTES: usize = 64;
/// Tag length in base64 characters (72 bits).
const TAG_CHARS: usize = 12;
/// `1:` + 12-char id + `:` + code + `:` + tag must fit in 64 bytes.
pub const MAX_CODE_BYTES: usize = MAX_TOKEN_BYTES - 2 - 12 - 1 - 1 - TAG_CHARS;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("malformed token")]
    Malformed,
    #[error("unknown token version")]
    Version,
    #[error("token signature does not verify")]
    Forged,
    #[error("action code too long for a token ({0} bytes)")]
    TooLong(usize),
}

/// Signs and checks tokens with one secret.
#[derive(Clone)]
pub struct TokenSigner {
    key: Vec<u8>,
}

impl std::fmt::Debug for TokenSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenSigner([redacted])")
    }
}

/// What a verified token names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub interaction_id: String,
    pub code: String,
}

impl TokenSigner {
    pub fn new(secret: &[u8]) -> Self {
        Self { key: secret.to_vec() }
    }

    fn tag(&self, body: &str) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.key).expect("HMAC takes keys of any length");
        mac.update(body.as_bytes());
        mac
    }

    /// A token for `code` on `interaction_id`. Codes must not contain `:`.
    pub fn sign(&self, interaction_id: &str, code: &str) -> Result<String, TokenError> {
        if code.len() > MAX_CODE_BYTES || code.contains(':') || interaction_id.contains(':') {
            return Err(TokenError::TooLong(code.len()));
        }
        let body = format!("{VERSION}:{interaction_id}:{code}");
        let tag = self.tag(&body).finalize().into_bytes();
        let tag = &URL_SAFE_NO_PAD.encode(tag)[..TAG_CHARS];
        Ok(format!("{body}:{tag}"))
    }

    /// Checks a token from a click. Says nothing about whether the interaction exists
    /// or is still open: that is the engine's question.
    pub fn verify(&self, token: &str) -> Result<Verified, TokenError> {
        let mut parts = token.splitn(4, ':');
        let (Some(version), Some(id), Some(code), Some(tag)) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            return Err(TokenError::Malformed);
        };
        if version != VERSION {
            return Err(TokenError::Version);
        }
        if tag.len() != TAG_CHARS || id.is_empty() || code.is_empty() {
            return Err(TokenError::Malformed);
        }
        let given = URL_SAFE_NO_PAD.decode(tag).map_err(|_| TokenError::Malformed)?;
        // verify_truncated_left compares in constant time.
        self.tag(&format!("{version}:{id}:{code}")).verify_truncated_left(&given).map_err(|_| TokenError::Forged)?;
        Ok(Verified { interaction_id: id.to_owned(), code: code.to_owned() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_size() {
        let s = TokenSigner::new(b"secret");
        let code = "x".repeat(MAX_CODE_BYTES);
        let token = s.sign("a1b2c3d4e5f6", &code).unwrap();
        assert_eq!(token.len(), MAX_TOKEN_BYTES);
        assert_eq!(s.verify(&token).unwrap(), Verified { interaction_id: "a1b2c3d4e5f6".into(), code });
        assert!(s.sign("a1b2c3d4e5f6", &"x".repeat(MAX_CODE_BYTES + 1)).is_err());
    }

    #[test]
    fn forged_stale_and_malformed_tokens_are_refused() {
        let s = TokenSigner::new(b"secret");
        let token = s.sign("a1b2c3d4e5f6", "ap.0").unwrap();
        // Same body, another action code: the tag no longer matches.
        let forged = token.replace(":ap.0:", ":rj.0:");
        assert_eq!(s.verify(&forged), Err(TokenError::Forged));
        // Signed with another secret (e.g. before a key rotation).
        assert_eq!(TokenSigner::new(b"other").verify(&token), Err(TokenError::Forged));
        assert_eq!(s.verify("garbage"), Err(TokenError::Malformed));
        assert_eq!(s.verify(&token.replacen('1', "2", 1)), Err(TokenError::Version));
        assert_eq!(s.verify("1:id:code:short"), Err(TokenError::Malformed));
        assert_eq!(s.verify("1:id:code:!!!!!!!!!!!!"), Err(TokenError::Malformed));
    }
}
