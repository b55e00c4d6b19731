//! The `[claude_code]` section: how the bridge starts Claude Code for a chat session
//! (which binary, where, with which model, tools, prompt and environment). Every key
//! is documented in `config/claude_code.toml` and `docs/backends/claude_code.md`.

use serde::{Deserialize, Serialize, Serializer};

/// Permission modes the CLI accepts (`--permission-mode`).
pub const PERMISSION_MODES: [&str; 6] = ["default", "acceptEdits", "auto", "bypassPermissions", "dontAsk", "plan"];

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClaudeCodeSettings {
    /// The `claude` executable: the one bundled in the `claude-agent-sdk` wheel
    /// (`…/site-packages/claude_agent_sdk/_bundled/claude`) or any Claude Code install.
    pub cli_path: String,
    /// The CLI's working directory; `{session_id}` is replaced by the bridge session,
    /// so each chat can get its own directory. Created when missing.
    pub work_dir: String,
    /// `--model`; the CLI's default when unset.
    pub model: Option<String>,
    /// `--system-prompt`: replaces Claude Code's own system prompt. Unset keeps it.
    pub system_prompt: Option<String>,
    /// `--append-system-prompt`: added to the end of the system prompt.
    pub append_system_prompt: Option<String>,
    /// `--permission-mode` (default, acceptEdits, auto, bypassPermissions, dontAsk, plan).
    pub permission_mode: Option<String>,
    /// `--allowedTools`: rules that run without asking (e.g. `"Bash(git status:*)"`).
    pub allowed_tools: Vec<String>,
    /// `--disallowedTools`: tools the model may not use at all.
    pub disallowed_tools: Vec<String>,
    /// `--max-turns`: model round trips per user message.
    pub max_turns: Option<u32>,
    /// Extra environment for the CLI, `"NAME=value"` each (e.g. `ANTHROPIC_API_KEY=…`);
    /// the bridge's own environment is inherited as well.
    #[serde(serialize_with = "redact_env")]
    pub env: Vec<String>,
    /// More CLI arguments, passed as they are, before `--input-format`.
    pub extra_args: Vec<String>,
    /// What Claude is told when someone rejects a tool call without saying why.
    pub deny_message: String,
    /// Continue the same Claude conversation when the process is started again (after
    /// an idle close, a crash or a bridge restart): `--resume` with the session's id.
    pub resume: bool,
    /// How long the CLI may take to answer the `initialize` request after starting.
    pub startup_timeout_secs: u64,
}

/// What Claude Code's own terminal UI tells the model when a person rejects a tool.
pub const DEFAULT_DENY_MESSAGE: &str = "The user doesn't want to proceed with this tool use. The tool use was rejected. \
     STOP what you are doing and wait for the user to tell you how to proceed.";

impl Default for ClaudeCodeSettings {
    fn default() -> Self {
        Self {
            cli_path: "claude".into(),
            work_dir: ".".into(),
            model: None,
            system_prompt: None,
            append_system_prompt: None,
            permission_mode: None,
            allowed_tools: Vec::new(),
            disallowed_tools: Vec::new(),
            max_turns: None,
            env: Vec::new(),
            extra_args: Vec::new(),
            deny_message: DEFAULT_DENY_MESSAGE.into(),
            resume: true,
            startup_timeout_secs: 60,
        }
    }
}

impl ClaudeCodeSettings {
    /// Checks the keys; the error names the key and says what is wrong.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.cli_path.trim().is_empty() {
            return Err(("claude_code.cli_path", "must name the claude executable".into()));
        }
        if self.work_dir.trim().is_empty() {
            return Err(("claude_code.work_dir", "must be a directory".into()));
        }
        if let Some(mode) = &self.permission_mode
            && !PERMISSION_MODES.contains(&mode.as_str())
        {
            return Err(("claude_code.permission_mode", format!("must be one of {}", PERMISSION_MODES.join(", "))));
        }
        for entry in &self.env {
            if self.env_pair(entry).is_none() {
                return Err(("claude_code.env", format!("`{}` is not NAME=value", entry.split('=').next().unwrap_or(""))));
            }
        }
        if self.deny_message.trim().is_empty() {
            return Err(("claude_code.deny_message", "must not be empty".into()));
        }
        if self.startup_timeout_secs == 0 {
            return Err(("claude_code.startup_timeout_secs", "must be at least 1".into()));
        }
        if self.max_turns == Some(0) {
            return Err(("claude_code.max_turns", "must be at least 1".into()));
        }
        Ok(())
    }

    /// The `env` entries as (name, value).
    pub fn env_pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.env.iter().filter_map(|e| self.env_pair(e))
    }

    fn env_pair<'a>(&self, entry: &'a str) -> Option<(&'a str, &'a str)> {
        let (name, value) = entry.split_once('=')?;
        (!name.is_empty() && !name.contains(char::is_whitespace)).then_some((name, value))
    }
}

/// Environment values often hold API keys: printed configs show the names only.
fn redact_env<S: Serializer>(env: &[String], serializer: S) -> Result<S::Ok, S::Error> {
    let names: Vec<String> = env
        .iter()
        .map(|e| match e.split_once('=') {
            Some((name, _)) => format!("{name}=[redacted]"),
            None => "[redacted]".into(),
        })
        .collect();
    names.serialize(serializer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        assert_eq!(ClaudeCodeSettings::default().validate(), Ok(()));
    }

    #[test]
    fn bad_keys_are_named() {
        let bad = |change: fn(&mut ClaudeCodeSettings)| {
            let mut s = ClaudeCodeSettings::default();
            change(&mut s);
            s.validate().unwrap_err().0
        };
        assert_eq!(bad(|s| s.cli_path = " ".into()), "claude_code.cli_path");
        assert_eq!(bad(|s| s.permission_mode = Some("yolo".into())), "claude_code.permission_mode");
        assert_eq!(bad(|s| s.env = vec!["NOVALUE".into()]), "claude_code.env");
        assert_eq!(bad(|s| s.env = vec!["=x".into()]), "claude_code.env");
        assert_eq!(bad(|s| s.deny_message = "".into()), "claude_code.deny_message");
        assert_eq!(bad(|s| s.startup_timeout_secs = 0), "claude_code.startup_timeout_secs");
        assert_eq!(bad(|s| s.max_turns = Some(0)), "claude_code.max_turns");
    }

    /// The example config parses, passes validation, and shows every key.
    #[test]
    fn the_example_config_documents_every_key() {
        let example = include_str!("../../../config/claude_code.toml");
        let config = config::Config::builder().add_source(config::File::from_str(example, config::FileFormat::Toml)).build().unwrap();
        let settings: ClaudeCodeSettings = config.get("claude_code").unwrap();
        assert_eq!(settings.validate(), Ok(()));
        assert_eq!(config.get_string("backend.kind").unwrap(), "claude_code");
        let keys = serde_json::to_value(ClaudeCodeSettings::default()).unwrap();
        for key in keys.as_object().unwrap().keys() {
            let shown = example.lines().any(|l| l.trim_start_matches("# ").starts_with(&format!("{key} =")));
            assert!(shown, "config/claude_code.toml does not show `{key}`");
        }
    }

    #[test]
    fn env_values_are_split_once_and_redacted_when_printed() {
        let s = ClaudeCodeSettings { env: vec!["ANTHROPIC_API_KEY=sk-a=b".into()], ..Default::default() };
        assert_eq!(s.env_pairs().collect::<Vec<_>>(), vec![("ANTHROPIC_API_KEY", "sk-a=b")]);
        let printed = serde_json::to_string(&s).unwrap();
        assert!(printed.contains("ANTHROPIC_API_KEY=[redacted]") && !printed.contains("sk-a"), "{printed}");
    }
}
