//! Delivering callbacks: once a pushed request leaves `pending`, its state is POSTed
//! to the agent's `callback_url`, signed with the agent's token, from the store's
//! `callback_outbox`, and retried with capped exponential backoff until a 2xx. A row
//! leaves the outbox only after a 2xx, so a restart never loses a callback; a claim on
//! each attempt keeps two replicas from posting the same one at once.
//!
//! Signature: `X-Hitl-Timestamp: <unix seconds>` and `X-Hitl-Signature:
//! sha256=<hex HMAC-SHA256 over "<timestamp>.<body>">` (PROTOCOL.md §8).

use std::sync::Arc;
use std::time::Duration;

use hmac::{Hmac, Mac};
use sha2::Sha256;
use tokio::sync::Notify;

use super::auth::Tokens;
use super::view;
use crate::clock::now_ms;
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

pub struct Deliverer {
    pub store: Store,
    pub tokens: Tokens,
    pub http: reqwest::Client,
    pub wake: Arc<Notify>,
    pub timeout: Duration,
    pub max_backoff: Duration,
}

impl Deliverer {
    /// Runs until the task is aborted.
    pub async fn run(self) {
        loop {
            if let Err(e) = self.deliver_due().await {
                tracing::warn!(error = %e, "cannot read the callback outbox; retrying");
            }
            tokio::select! {
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(POLL) => {}
            }
        }
    }

    async fn deliver_due(&self) -> Result<(), StoreError> {
        let now = now_ms();
        for due in self.store.due_callbacks(now, BATCH).await? {
            // Held long enough for one attempt; a crash mid-way frees it after that.
            let hold = now + (self.timeout + Duration::from_secs(5)).as_millis() as i64;
            if !self.store.claim_callback(&due, hold).await? {
                continue;
            }
            let attempts = due.attempts + 1;
            match self.attempt(&due).await {
                Ok(()) => {
                    self.store.callback_delivered(&due.approval_key).await?;
                    tracing::info!(approval_key = %due.approval_key, attempts, "callback delivered");
                }
                Err(why) => {
                    let delay = backoff(attempts, self.max_backoff);
                    tracing::warn!(approval_key = %due.approval_key, url = %due.url, attempts, retry_in = ?delay, error = %why, "callback failed");
                    self.store.retry_callback_at(&due.approval_key, now_ms() + delay.as_millis() as i64).await?;
                }
            }
        }
        Ok(())
    }

    /// One POST. Any 2xx is success; everything else is retried.
    async fn attempt(&self, due: &DueCallback) -> Result<(), String> {
        let secret = self.tokens.secret_of(&due.agent).ok_or_else(|| format!("the API token `{}` is no longer configured; cannot sign", due.agent))?;
        let request = self.store.api_request(&due.approval_key).await.map_err(|e| e.to_string())?.ok_or("the request is gone")?;
        let interaction = self.store.interaction(&due.interaction_id).await.map_err(|e| e.to_string())?.ok_or("the interaction is gone")?;
        let body = serde_json::to_string(&view::state(&request, &interaction)).map_err(|e| e.to_string())?;
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
            .map_err(|e| e.to_string())?;
        if response.status().is_success() { Ok(()) } else { Err(format!("the agent answered {}", response.status())) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_is_hmac_sha256_over_timestamp_dot_body() {
        // Computed independently: printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac secret
        assert_eq!(
            signature(b"secret", 1_700_000_000, r#"{"a":1}"#),
            "sha256=49f24e537407743fa4a0242bb63b94b9a47ee99cbbe071ccd8a22550ae411686"
        );
    }

    #[test]
    fn backoff_doubles_to_the_cap() {
        let max = Duration::from_secs(300);
        let secs: Vec<u64> = (1..=11).map(|a| backoff(a, max).as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
    }
}
