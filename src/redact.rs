//! Secrets as the bridge prints them: in `check-config`'s JSON, in logs and in error
//! messages a secret reads `[redacted]`, never its value. The serializers are used by
//! every settings section that holds one.

use secrecy::{ExposeSecret, SecretString};
use serde::Serializer;

/// Serializes a URL with its password redacted ([`url_without_password`]).
pub fn url_password<S: Serializer>(url: &str, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&url_without_password(url))
}

/// `url` with the password of its user info (`postgres://user:secret@host/db`) replaced
/// by `[redacted]`, for printing and error messages.
pub fn url_without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let Some((user_info, host)) = authority.rsplit_once('@') else { return url.to_owned() };
    match user_info.split_once(':') {
        Some((user, _password)) => format!("{scheme}://{user}:[redacted]@{host}{path}"),
        None => url.to_owned(),
    }
}

/// Serializes a secret as `[redacted]` (or none when unset or empty).
pub fn secret<S: Serializer>(secret: &Option<SecretString>, serializer: S) -> Result<S::Ok, S::Error> {
    match secret {
        Some(s) if !s.expose_secret().is_empty() => serializer.serialize_str("[redacted]"),
        _ => serializer.serialize_none(),
    }
}
