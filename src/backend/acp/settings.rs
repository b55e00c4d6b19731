//! The `[acp]` config section (`backend.kind = "acp"`): which Agent Client Protocol
//! agent the bridge starts for a session, and what it lets that agent do. Documented
//! key by key in `config/acp.toml` and `docs/backends/acp.md`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::backend::child::settings::{ProcessKeys, process_problem, redact_values};

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct AcpSettings {
    /// The agent's executable: a path, or a name looked up in `PATH` (`gemini`,
    /// `claude-code-acp`, `npx`).
    pub command: String,
    /// Its arguments (`["--acp"]` for Gemini CLI).
    pub args: Vec<String>,
    /// Where the agent works: the process's current directory and the session's `cwd`
    /// (made absolute, as ACP requires).
    pub work_dir: String,
    /// Environment variables set for the process on top of the bridge's own (a
    /// provider's API key, `HOME`). Printed redacted.
    #[serde(serialize_with = "redact_values")]
    pub env: BTreeMap<String, String>,
    /// Let the agent read and write text files through the bridge (`fs/read_text_file`,
    /// `fs/write_text_file`), confined to `work_dir`. Off: the bridge offers no file
    /// system, and the agent uses its own tools (which ask permission).
    pub allow_fs: bool,
    /// Let the agent run commands in terminals the bridge opens (`terminal/*`), in
    /// `work_dir`. Off: the bridge offers no terminal, and the agent runs commands with
    /// its own tools (which ask permission).
    pub allow_terminal: bool,
    /// Continue the agent's conversation after a restart with `session/load` when the
    /// agent offers `loadSession`; off, or not offered: a new process starts a new
    /// conversation.
    pub load_sessions: bool,
    /// How long the agent may take to start and answer `initialize` and `session/new`.
    pub start_timeout_secs: u64,
}

impl Default for AcpSettings {
    fn default() -> Self {
        Self {
            command: "gemini".into(),
            args: vec!["--acp".into()],
            work_dir: ".".into(),
            env: BTreeMap::new(),
            allow_fs: false,
            allow_terminal: false,
            load_sessions: true,
            start_timeout_secs: 60,
        }
    }
}

impl AcpSettings {
    /// The first key that is wrong, and why.
    pub fn problem(&self) -> Option<(&'static str, &'static str)> {
        let keys = ProcessKeys { command: "acp.command", work_dir: "acp.work_dir", start_timeout_secs: "acp.start_timeout_secs", env: "acp.env" };
        process_problem(&keys, &self.command, &self.work_dir, self.start_timeout_secs, &self.env)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_env_values_are_not_printed() {
        let mut s = AcpSettings::default();
        assert_eq!(s.problem(), None);
        s.env.insert("GEMINI_API_KEY".into(), "sk-secret".into());
        let printed = serde_json::to_string(&s).unwrap();
        assert!(printed.contains("GEMINI_API_KEY") && !printed.contains("sk-secret"));
    }

    #[test]
    fn the_example_config_loads() {
        use crate::backend::descriptor::BackendDescriptor;
        let config = config::Config::builder().add_source(config::File::with_name("config/acp.toml")).build().expect("config/acp.toml");
        assert_eq!(config.get_string("backend.kind").expect("backend.kind"), "acp");
        let section = super::super::descriptor::Acp.read_section(&config).expect("its [acp] section");
        assert_eq!(section.as_any().downcast_ref::<AcpSettings>(), Some(&AcpSettings::default()), "the example shows the defaults");
    }

    #[test]
    fn bad_keys_are_named() {
        let bad = |change: fn(&mut AcpSettings)| {
            let mut s = AcpSettings::default();
            change(&mut s);
            s.problem().map(|(key, _)| key)
        };
        assert_eq!(bad(|s| s.command = " ".into()), Some("acp.command"));
        assert_eq!(bad(|s| s.work_dir = String::new()), Some("acp.work_dir"));
        assert_eq!(bad(|s| s.start_timeout_secs = 0), Some("acp.start_timeout_secs"));
        assert_eq!(bad(|s| drop(s.env.insert("A=B".into(), "x".into()))), Some("acp.env"));
    }
}
