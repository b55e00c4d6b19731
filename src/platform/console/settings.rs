//! The `[console]` section: the terminal chat and who types in it.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConsoleSettings {
    pub enabled: bool,
    pub user_id: String,
    pub user_name: String,
}

impl Default for ConsoleSettings {
    fn default() -> Self {
        Self { enabled: false, user_id: "console".into(), user_name: "console".into() }
    }
}
