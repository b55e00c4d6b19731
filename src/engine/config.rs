//! What the engine is configured with, in its own terms: who may talk, answer and
//! pair, where requests go, the deadlines' grace, the policies. The bridge's
//! configuration ([`crate::config`]) builds one; the engine never reads the file's
//! sections itself.

use serde::{Deserialize, Serialize};

use super::routing::RoutingSettings;
use crate::interaction::admission::PairingAdmins;
use crate::interaction::chat::Networks;
use crate::interaction::{AccessPolicy, Allowlist, PolicyRule};

/// Everything [`super::Engine::start`] needs from the configuration.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Who may answer requests (`access.approvers`, `access.approver_roles`).
    pub policy: AccessPolicy,
    /// Who may talk to the agent.
    pub allowlist: Allowlist,
    /// Who may approve pairing codes with `/pair CODE`, and where.
    pub pairing_admins: PairingAdmins,
    /// A stranger is answered once per this long per chat.
    pub refusal_window_ms: i64,
    /// How long a pairing code stays valid.
    pub pairing_ttl_ms: i64,
    /// Where chat turns' requests are also shown (`routing.target`).
    pub routing: RoutingSettings,
    /// The chat platforms the bridge knows and how they write their chats.
    pub networks: Networks,
    /// How long after a deadline the bridge waits for the backend's own timeout.
    pub grace_ms: i64,
    pub on_expiry: OnExpiry,
    /// This replica's stable name (on the show claims it takes).
    pub replica_id: String,
    /// The `[[policies]]` entries, in file order.
    pub policies: Vec<PolicyRule>,
    /// The chat connector's kind as policies and remembered rules name it (`stream`,
    /// `kimi`, …).
    pub backend_kind: String,
}

/// What the bridge sends when it expires an approval itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OnExpiry {
    Reject,
    Leave,
}
