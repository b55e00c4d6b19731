//! Delivering callbacks: once a pushed request leaves `pending`, its state is POSTed
//! to the agent's `callback_url`, signed with the agent's token, from the store's
//! `callback_outbox`, and retried with capped exponential backoff until a 2xx. A row
//! leaves the outbox only after a 2xx, so a restart never loses a callback; a claim on
//! each attempt keeps two replicas from posting the same one at once.
//!
//! Signature: `X-Hitl-Timestamp: <unix seconds>` and `X-Hitl-Signature:
//! sha256=<hex HMAC-SHA256 over "<timestamp>.<body>">` (docs/protocol.md).
//!
//! Deliveries are isolated: each attempt runs as its own task (at most
//! `http.callback_concurrency` at once) with its own timeout, so a receiver that hangs
//! delays only its own callbacks; due callbacks are taken by due time, then creation.
//! Redirects are not followed (a 3xx is a failed attempt): the signed state goes only
//! where the agent said. Unless `http.callback_allow_private`, the connection may
//! only reach a public address ([`super::callback_guard`]).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hmac::{Hmac, Mac};
use sha2::Sha256;
use tokio::sync::{Notify, Semaphore};

use super::auth::Tokens;
use super::{callback_guard, view};
use crate::clock::now_ms;
use crate::interaction::chat::Networks;
use crate::store::{DueCallback, Store, StoreError};

/// Looked at this often even without a wake-up: retries fall due, and other
/// replicas settle requests.
const POLL: Duration = Duration::from_secs(1);

/// How many due callbacks one pass takes.
const BATCH: i64 = 50;

/// `sha256=<hex>` over `"<timestamp>.<body>"` keyed with `secret`.
pub fn signature(secret: &[u8], timestamp: i64, body: &str) -> String {
    // HMAC takes a key of any length; this cannot fail.
    let mut mac = <Hmac<Sha256>>::new_from_slice(secret).expect("HMAC accepts any key length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// The delay before attempt `attempts + 1`: 1 s, 2 s, 4 s, … up to `max`.
pub fn backoff(attempts: i64, max: Duration) -> Duration {
    let exp = attempts.saturating_sub(1).clamp(0, 20) as u32;
    Duration::from_secs(1u64 << exp).min(max)
}

/// The callback client: no redirects, and (unless private addresses are allowed) a
/// resolver that only hands out public addresses.
pub fn client(allow_private: bool) -> reqwest::Client {
    let builder = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none());
    let builder = if allow_private { builder } else { builder.dns_resolver(Arc::new(callback_guard::GuardedResolver)) };
    // Fails only without a TLS backend, which is compiled in; never fall back to a
    // client without the guard.
    builder.build().expect("the callback client builds")
}

pub struct Deliverer {
    pub store: Store,
    pub tokens: Tokens,
    pub http: reqwest::Client,
    pub wake: Arc<Notify>,
    pub timeout: Duration,
    pub max_backoff: Duration,
    pub allow_private: bool,
    /// Attempts at once (`http.callback_concurrency`).
    pub concurrency: usize,
    /// The platforms targets name: a target the platform refused is shown as one.
    pub networks: Networks,
}

impl Deliverer {
    /// Runs until the task is aborted.
    pub async fn run(self) {
        let this = Arc::new(Running { deliverer: self, in_flight: Mutex::new(HashSet::new()), slots: Semaphore::new(0) });
        this.slots.add_permits(this.deliverer.concurrency.max(1));
        loop {
            if let Err(e) = this.clone().deliver_due().await {
                tracing::warn!(error = %e, "cannot read the callback outbox; retrying");
            }
            tokio::select! {
                _ = this.deliverer.wake.notified() => {}
                _ = tokio::time::sleep(POLL) => {}
            }
        }
    }
}

/// The deliverer at work: which callbacks this replica is posting right now.
struct Running {
    deliverer: Deliverer,
    in_flight: Mutex<HashSet<(String, String)>>,
    slots: Semaphore,
}

impl Running {
    fn in_flight(&self) -> std::sync::MutexGuard<'_, HashSet<(String, String)>> {
        self.in_flight.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Claims every due callback not already being posted here, as far as there are
    /// free slots, and posts each in its own task.
    async fn deliver_due(self: Arc<Self>) -> Result<(), StoreError> {
        let d = &self.deliverer;
        let now = now_ms();
        for due in d.store.due_callbacks(now, BATCH).await? {
            let id = (due.agent.clone(), due.approval_key.clone());
            if self.in_flight().contains(&id) {
                continue;
            }
            let Ok(slot) = self.slots.try_acquire() else { break };
            // Held long enough for one attempt; a crash mid-way frees it after that.
            let hold = now + (d.timeout + Duration::from_secs(5)).as_millis() as i64;
            if !d.store.claim_callback(&due, hold).await? {
                continue;
            }
            slot.forget();
            self.in_flight().insert(id.clone());
            let this = self.clone();
            tokio::spawn(async move {
                if let Err(e) = this.deliver(&due).await {
                    tracing::warn!(approval_key = %due.approval_key, error = %e, "cannot record a callback attempt; it is retried when its claim lapses");
                }
                this.in_flight().remove(&id);
                this.slots.add_permits(1);
                // A slot is free: look again at once rather than at the next poll.
                this.deliverer.wake.notify_one();
            });
        }
        Ok(())
    }

    async fn deliver(&self, due: &DueCallback) -> Result<(), StoreError> {
        let d = &self.deliverer;
        let attempts = due.attempts + 1;
        match tokio::time::timeout(d.timeout, d.attempt(due)).await.unwrap_or_else(|_| Err(format!("no answer within {:?}", d.timeout))) {
            Ok(()) => {
                d.store.callback_delivered(due).await?;
                tracing::info!(approval_key = %due.approval_key, attempts, "callback delivered");
            }
            Err(why) => {
                let delay = backoff(attempts, d.max_backoff);
                tracing::warn!(approval_key = %due.approval_key, url = %due.url, attempts, retry_in = ?delay, error = %why, "callback failed");
                d.store.retry_callback_at(due, now_ms() + delay.as_millis() as i64).await?;
            }
        }
        Ok(())
    }
}

impl Deliverer {
    /// One POST. Any 2xx is success; everything else is retried.
    async fn attempt(&self, due: &DueCallback) -> Result<(), String> {
        let secret = self.tokens.secret_of(&due.agent).ok_or_else(|| format!("the API token `{}` is no longer configured; cannot sign", due.agent))?;
        let request = self.store.api_request(&due.agent, &due.approval_key).await.map_err(|e| e.to_string())?.ok_or("the request is gone")?;
        let interaction = self.store.interaction(&due.interaction_id).await.map_err(|e| e.to_string())?.ok_or("the interaction is gone")?;
        let refused = self.store.refused_shows(&due.interaction_id).await.map_err(|e| e.to_string())?;
        let body = serde_json::to_string(&view::state(&request, &interaction, view::not_shown(&self.networks, refused))).map_err(|e| e.to_string())?;
        // A name is checked by the client's resolver; an IP literal never reaches it.
        if !self.allow_private
            && let Some(ip) = reqwest::Url::parse(&due.url).ok().and_then(|u| u.host_str()?.trim_matches(['[', ']']).parse::<std::net::IpAddr>().ok())
            && !callback_guard::is_public(ip)
        {
            return Err(format!("{ip} is a private or internal address (http.callback_allow_private is off)"));
        }
        let timestamp = now_ms() / 1000;
        let response = self
            .http
            .post(&due.url)
            .timeout(self.timeout)
            .header("content-type", "application/json")
            .header("x-hitl-timestamp", timestamp.to_string())
            .header("x-hitl-signature", signature(secret.as_bytes(), timestamp, &body))
            .body(body)
            .send()
            .await
            .map_err(|e| crate::error_chain::one_line(&e))?;
        let status = response.status();
        if status.is_success() {
            Ok(())
        } else if status.is_redirection() {
            let to = response.headers().get(reqwest::header::LOCATION).and_then(|l| l.to_str().ok()).unwrap_or("nowhere");
            Err(format!("the agent answered {status} to {to}; redirects are not followed"))
        } else {
            Err(format!("the agent answered {status}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_is_hmac_sha256_over_timestamp_dot_body() {
        // Computed independently: printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac secret
        assert_eq!(signature(b"secret", 1_700_000_000, r#"{"a":1}"#), "sha256=49f24e537407743fa4a0242bb63b94b9a47ee99cbbe071ccd8a22550ae411686");
    }

    #[test]
    fn backoff_doubles_to_the_cap() {
        let max = Duration::from_secs(300);
        let secs: Vec<u64> = (1..=11).map(|a| backoff(a, max).as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
    }
}
