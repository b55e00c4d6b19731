//! The `[kimi]` config section (`backend.kind = "kimi"`): how the bridge starts
//! `kimi --wire` for a session. Documented key by key in `config/kimi.toml`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::backend::child::settings::{ProcessKeys, process_problem, redact_values};

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct KimiSettings {
    /// The kimi executable: a path, or a name looked up in `PATH`.
    pub command: String,
    /// `--work-dir`, and the process's current directory: where the agent works.
    pub work_dir: String,
    /// `--config-file`: kimi's own config (providers, models). Unset: kimi's default,
    /// `~/.kimi/config.toml`.
    pub config_file: Option<String>,
    /// `--model`. Unset: the config's `default_model`.
    pub model: Option<String>,
    /// More arguments, appended as given (e.g. `["--thinking"]`).
    pub args: Vec<String>,
    /// Environment variables set for the process on top of the bridge's own (e.g.
    /// `HOME`, a provider's API key). Printed redacted.
    #[serde(serialize_with = "redact_values")]
    pub env: BTreeMap<String, String>,
    /// Start kimi with `--session hitl-<bridge session id>`, so a restarted process
    /// (after a crash, an idle close or a bridge restart) continues the conversation.
    pub resume_sessions: bool,
    /// Offer kimi's "approve for session" (approve this kind of action for the rest of
    /// the session) beside approve and reject.
    pub approve_for_session: bool,
    /// How long kimi may take to start and answer `initialize`.
    pub start_timeout_secs: u64,
}

impl Default for KimiSettings {
    fn default() -> Self {
        Self {
            command: "kimi".into(),
            work_dir: ".".into(),
            config_file: None,
            model: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            resume_sessions: true,
            approve_for_session: true,
            start_timeout_secs: 60,
        }
    }
}

impl KimiSettings {
    /// The first key that is wrong, and why.
    pub fn problem(&self) -> Option<(&'static str, &'static str)> {
        let keys = ProcessKeys { command: "kimi.command", work_dir: "kimi.work_dir", start_timeout_secs: "kimi.start_timeout_secs", env: "kimi.env" };
        process_problem(&keys, &self.command, &self.work_dir, self.start_timeout_secs, &self.env)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_env_values_are_not_printed() {
        let mut s = KimiSettings::default();
        assert_eq!(s.problem(), None);
        s.env.insert("MOONSHOT_API_KEY".into(), "sk-secret".into());
        let printed = serde_json::to_string(&s).unwrap();
        assert!(printed.contains("MOONSHOT_API_KEY") && !printed.contains("sk-secret"));
    }

    #[test]
    fn the_example_config_loads() {
        use crate::backend::descriptor::BackendDescriptor;
        // Every key known (the section denies unknown keys); the Telegram token comes
        // from the environment in real use.
        let config = config::Config::builder().add_source(config::File::with_name("config/kimi.toml")).build().expect("config/kimi.toml");
        assert_eq!(config.get_string("backend.kind").expect("backend.kind"), "kimi");
        let section = super::super::descriptor::Kimi.read_section(&config).expect("its [kimi] section");
        assert_eq!(section.as_any().downcast_ref::<KimiSettings>(), Some(&KimiSettings::default()), "the example shows the defaults");
    }

    #[test]
    fn bad_keys_are_named() {
        let bad = |change: fn(&mut KimiSettings)| {
            let mut s = KimiSettings::default();
            change(&mut s);
            s.problem().map(|(key, _)| key)
        };
        assert_eq!(bad(|s| s.command = " ".into()), Some("kimi.command"));
        assert_eq!(bad(|s| s.work_dir = String::new()), Some("kimi.work_dir"));
        assert_eq!(bad(|s| s.start_timeout_secs = 0), Some("kimi.start_timeout_secs"));
        assert_eq!(bad(|s| drop(s.env.insert("A=B".into(), "x".into()))), Some("kimi.env"));
    }
}
