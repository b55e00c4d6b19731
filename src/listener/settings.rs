//! The `[http]` section: the bridge's HTTP listener, its limits, and the inbound API's
//! tokens and callbacks.

use secrecy::SecretString;
use serde::{Deserialize, Serialize, Serializer};

/// The bridge's HTTP listener: `/healthz`, `/readyz`, and the inbound API (`/v1/*`,
/// PROTOCOL.md §8), which is on when at least one API token is configured.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpSettings {
    pub enabled: bool,
    pub listen: String,
    /// `"name:secret"` entries. The name is what the audit log records as the agent;
    /// the secret is the bearer token and the key that signs its callbacks.
    #[serde(serialize_with = "redact_tokens")]
    pub api_tokens: Vec<String>,
    /// How long one callback POST may take.
    pub callback_timeout_secs: u64,
    /// Callback retries back off from 1 s, doubling up to this.
    pub callback_max_backoff_secs: u64,
    /// Callback attempts in flight at once; each has its own timeout, so a receiver
    /// that hangs holds one slot, not the others' callbacks.
    pub callback_concurrency: usize,
    /// Callback URLs may point at loopback, private and link-local addresses (an
    /// on-prem receiver, the tests). Off: they must be public, checked at push time and
    /// again on the address dialled.
    pub callback_allow_private: bool,
    /// Open connections per listener (lowered to fit the open-files limit; see
    /// [`crate::listener`]).
    pub max_connections: usize,
    /// A request's headers must arrive within this; also how long a keep-alive
    /// connection may sit idle.
    pub header_read_timeout_secs: u64,
    /// A request's body must arrive whole within this.
    pub body_read_timeout_secs: u64,
    /// The largest body `/v1` and `/mcp` accept, checked from `Content-Length` before
    /// a byte is read and again while the body streams in.
    pub max_body_bytes: usize,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            listen: "127.0.0.1:8790".into(),
            api_tokens: Vec::new(),
            callback_timeout_secs: 10,
            callback_max_backoff_secs: 300,
            callback_concurrency: 16,
            callback_allow_private: false,
            max_connections: 4096,
            header_read_timeout_secs: 10,
            body_read_timeout_secs: 30,
            max_body_bytes: crate::listener::DEFAULT_MAX_BODY_BYTES,
        }
    }
}

/// The smallest `http.max_body_bytes` allowed.
const MIN_BODY_BYTES: usize = 1024;

/// One named API token.
#[derive(Debug, Clone)]
pub struct ApiToken {
    pub name: String,
    pub secret: SecretString,
}

impl HttpSettings {
    /// The parsed tokens; entries that do not parse were refused by `validate`.
    pub fn tokens(&self) -> Vec<ApiToken> {
        self.api_tokens.iter().filter_map(|t| parse_token(t)).collect()
    }
}

fn parse_token(entry: &str) -> Option<ApiToken> {
    let (name, secret) = entry.split_once(':')?;
    (!name.trim().is_empty() && !secret.is_empty()).then(|| ApiToken { name: name.trim().to_owned(), secret: SecretString::from(secret.to_owned()) })
}

fn redact_tokens<S: Serializer>(tokens: &[String], serializer: S) -> Result<S::Ok, S::Error> {
    let names: Vec<String> = tokens
        .iter()
        .map(|t| match t.split_once(':') {
            Some((name, _)) => format!("{name}:[redacted]"),
            None => "[redacted]".to_owned(),
        })
        .collect();
    names.serialize(serializer)
}

impl HttpSettings {
    /// What is wrong with the section, as (key, reason); `None` when it is sound.
    pub fn problem(&self) -> Option<(&'static str, String)> {
        let mut names = std::collections::BTreeSet::new();
        for token in &self.api_tokens {
            match parse_token(token) {
                Some(t) if names.insert(t.name.clone()) => {}
                Some(t) => return Some(("http.api_tokens", format!("the name `{}` is used twice", t.name))),
                None => return Some(("http.api_tokens", "each entry must be \"name:secret\" with both parts non-empty".to_owned())),
            }
        }
        if self.max_body_bytes < MIN_BODY_BYTES {
            return Some(("http.max_body_bytes", format!("must be at least {MIN_BODY_BYTES} (a request with one action takes a few hundred bytes)")));
        }
        if self.enabled && self.listen.parse::<std::net::SocketAddr>().is_err() {
            return Some(("http.listen", "must be an address like 127.0.0.1:8790".to_owned()));
        }
        None
    }
}
