//! `hitl-bridge pair`: approving, listing and revoking pairings (`access.pairing`) from
//! a shell. The store keeps codes and paired users and approves a typed code
//! ([`Store::approve_typed_pairing`], shared with an admin's `/pair CODE`); who may
//! talk is [`crate::interaction::admission`]'s call.

use crate::clock::now_ms;
use crate::config::Settings;
use crate::store::{PairError, Store, StoreError};

/// What `hitl-bridge pair` was asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PairCommand {
    Approve(String),
    List,
    /// `platform:user_id`.
    Revoke(String),
}

/// Runs one `hitl-bridge pair` command against the store in `settings`; returns what
/// to print. An unknown or expired code, or revoking someone not paired, is an error.
pub async fn run_cli(settings: &Settings, command: &PairCommand) -> Result<String, PairCliError> {
    let store = Store::connect(&settings.store.url).await?;
    let result = run_on(&store, command).await;
    store.close().await;
    result
}

async fn run_on(store: &Store, command: &PairCommand) -> Result<String, PairCliError> {
    match command {
        PairCommand::Approve(code) => {
            let user = store.approve_typed_pairing(code, None, now_ms(), false).await?;
            Ok(format!("paired {} ({}:{}); they may now talk to the agent", user.user_name, user.platform, user.user_id))
        }
        PairCommand::List => {
            let users = store.paired_users().await?;
            if users.is_empty() {
                return Ok("nobody is paired".to_owned());
            }
            let lines: Vec<String> = users
                .iter()
                .map(|u| format!("{}:{}\t{}\tpaired by {} at {}", u.platform, u.user_id, u.user_name, u.paired_by, rfc3339(u.paired_at_ms)))
                .collect();
            Ok(lines.join("\n"))
        }
        PairCommand::Revoke(who) => {
            let (platform, user_id) = crate::platform::registry::networks().parse_user(who).ok_or_else(|| PairCliError::BadUser(who.clone()))?;
            if store.revoke_pairing(&platform, &user_id).await? {
                Ok(format!("revoked {who}; they may no longer talk to the agent"))
            } else {
                Err(PairCliError::NotPaired(who.clone()))
            }
        }
    }
}

fn rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map_or_else(|| ms.to_string(), |t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}

#[derive(Debug, thiserror::Error)]
pub enum PairCliError {
    #[error(transparent)]
    Pair(#[from] PairError),
    #[error("cannot open the store: {0}")]
    Store(#[from] StoreError),
    #[error("`{0}` is not platform:user_id (e.g. telegram:123456)")]
    BadUser(String),
    #[error("{0} is not paired")]
    NotPaired(String),
}
