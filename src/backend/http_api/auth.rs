//! Named bearer tokens (`http.api_tokens = ["name:secret"]`): which agent is calling,
//! and the key its callbacks are signed with. Secrets are compared in constant time
//! and never logged.

use axum::http::HeaderMap;
use secrecy::ExposeSecret;
use subtle::ConstantTimeEq;

use crate::listener::ApiToken;

#[derive(Clone, Default)]
pub struct Tokens {
    tokens: Vec<ApiToken>,
}

impl Tokens {
    pub fn new(tokens: Vec<ApiToken>) -> Self {
        Self { tokens }
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The name of the token in `Authorization: Bearer <secret>`, if it is one of ours.
    pub fn agent(&self, headers: &HeaderMap) -> Option<String> {
        let value = headers.get(axum::http::header::AUTHORIZATION)?.to_str().ok()?;
        let (scheme, presented) = value.split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        let presented = presented.trim().as_bytes();
        // Every token is compared, so the time taken does not tell which one matched.
        let mut found = None;
        for token in &self.tokens {
            if bool::from(token.secret.expose_secret().as_bytes().ct_eq(presented)) {
                found = Some(token.name.clone());
            }
        }
        found
    }

    /// The secret of the token named `agent` (callbacks are signed with it).
    pub fn secret_of(&self, agent: &str) -> Option<&str> {
        self.tokens.iter().find(|t| t.name == agent).map(|t| t.secret.expose_secret())
    }
}
