//! The links the bridge hands out: a one-time sign-in link bound to one platform user
//! (what `/web` in a chat and `hitl-bridge web login` answer with), and the link to a
//! request's page (what a chat card's "Open in browser" points at); and [`ChatLinks`],
//! the same two as the chat platforms reach them.

use futures_util::future::BoxFuture;
use sha2::{Digest, Sha256};

use super::WebSettings;
use crate::clock::now_ms;
use crate::interaction::Actor;
use crate::platform::descriptor::{SignInLinkError, WebLinks};
use crate::store::{Store, StoreError};

/// How long a sign-in link is valid, by the wall clock.
pub const SIGN_IN_LINK_SECS: i64 = 600;

/// A fresh one-time sign-in link for `person` (their platform, user id, name and the
/// space they asked from, as the platform vouches for them; never their groups): valid
/// [`SIGN_IN_LINK_SECS`], usable once. The store keeps only the token's hash.
pub async fn sign_in_link(store: &Store, settings: &WebSettings, person: &Actor) -> Result<String, StoreError> {
    let token = secret();
    let now = now_ms();
    // Who they are, not what they may do: their groups are asked of their platform
    // each time they read or decide, so none are copied into the link or the session.
    let mut who = person.clone();
    who.groups.clear();
    store.create_sign_in_link(&hash(&token), &who, now, now + SIGN_IN_LINK_SECS * 1000).await?;
    Ok(format!("{}/inbox/sign-in/{token}", settings.base()))
}

/// The page of request `interaction_id`, when the inbox is on.
pub fn request_link(settings: &WebSettings, interaction_id: &str) -> Option<String> {
    settings
        .enabled
        .then(|| format!("{}/inbox/requests/{}", settings.base(), url::form_urlencoded::byte_serialize(interaction_id.as_bytes()).collect::<String>()))
}

/// The inbox's links for the chat platforms ([`WebLinks`]): none while `web.enabled`
/// is off.
pub struct ChatLinks {
    store: Store,
    settings: WebSettings,
}

impl ChatLinks {
    pub fn new(store: Store, settings: WebSettings) -> Self {
        Self { store, settings }
    }
}

impl WebLinks for ChatLinks {
    fn request_link(&self, interaction_id: &str) -> Option<String> {
        request_link(&self.settings, interaction_id)
    }

    fn is_on(&self) -> bool {
        self.settings.enabled
    }

    fn sign_in_link<'a>(&'a self, person: &'a Actor) -> BoxFuture<'a, Result<Option<String>, SignInLinkError>> {
        Box::pin(async move {
            if !self.settings.enabled {
                return Ok(None);
            }
            sign_in_link(&self.store, &self.settings, person).await.map(Some).map_err(|e| SignInLinkError(e.to_string()))
        })
    }
}

/// 256 random bits from the operating system, as 64 hex digits: a session cookie, a
/// sign-in link's token or a CSRF token. (Two v4 UUIDs would be 244: each fixes six
/// of its bits.)
pub(super) fn secret() -> String {
    let mut bytes = [0u8; 32];
    if let Err(e) = getrandom::fill(&mut bytes) {
        // uuid draws from the same source and panics the same way: without the
        // operating system's randomness no secret can be made, and none must be
        // made from less.
        panic!("the operating system gave no random bytes: {e}");
    }
    hex::encode(bytes)
}

/// What the store keeps of a secret.
pub(super) fn hash(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_links_only_when_enabled_and_under_the_public_url() {
        let off = WebSettings::default();
        assert_eq!(request_link(&off, "abc"), None);
        let on = WebSettings { enabled: true, public_url: "https://ops.example.com/bridge/".into(), ..WebSettings::default() };
        assert_eq!(request_link(&on, "abc-1").as_deref(), Some("https://ops.example.com/bridge/inbox/requests/abc-1"));
    }

    #[test]
    fn secrets_are_fresh_and_hashed() {
        let (a, b) = (secret(), secret());
        assert_ne!(a, b);
        assert_eq!(a.len(), 64);
        assert_eq!(hash(&a).len(), 64);
        assert_ne!(hash(&a), a);
    }

    /// Every one of the 256 bits varies: a v4 UUID's version and variant bits (the
    /// 13th and 17th hex digits) would be the same in every secret.
    #[test]
    fn every_bit_of_a_secret_is_random() {
        let secrets: Vec<Vec<u8>> = (0..64).map(|_| hex::decode(secret()).expect("hex")).collect();
        assert!(secrets.iter().all(|s| s.len() == 32));
        for bit in 0..256 {
            let ones = secrets.iter().filter(|s| s[bit / 8] >> (bit % 8) & 1 == 1).count();
            // 64 draws: all the same by chance is 2 in 2^64.
            assert!(ones > 0 && ones < 64, "bit {bit} is {ones} of 64");
        }
    }
}
