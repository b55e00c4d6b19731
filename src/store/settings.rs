//! The `[store]` section: where the bridge keeps what it must not forget, and for how
//! long.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StoreSettings {
    #[serde(serialize_with = "crate::redact::url_password")]
    pub url: String,
    /// Settled requests, their callbacks' leftovers and audit entries older than this
    /// many days are pruned (hourly); 0 keeps everything.
    #[serde(default = "default_retention_days")]
    pub retention_days: u64,
}

fn default_retention_days() -> u64 {
    30
}

impl StoreSettings {
    /// What is wrong with the section, as (key, reason); `None` when it is sound.
    pub fn problem(&self) -> Option<(&'static str, &'static str)> {
        let known = ["sqlite:", "postgres://", "postgresql://"].iter().any(|p| self.url.starts_with(p));
        (!known).then_some(("store.url", "must start with sqlite: or postgres://"))
    }
}
