//! Claude Code as a chat backend (`backend.kind = "claude_code"`): the CLI bundled by
//! the `claude-agent-sdk` package, driven exactly as that SDK drives it: stream-json
//! on stdin and stdout, permission prompts as `can_use_tool` control requests
//! (`--permission-prompt-tool stdio`). One process per connected session; see
//! `docs/backends/claude_code.md`.
//!
//! - [`settings`]: the `[claude_code]` section.
//! - [`wire`]: the frames written to the CLI (pure).
//! - [`translate`]: frames ↔ updates, replies ↔ control responses (pure).
//! - [`groups`]: tool calls as group status lines (the per-session state).
//! - [`lines`]: bounded, cancel-safe stdout lines.
//! - [`transcript`]: the CLI's record of a conversation, checked before a message that
//!   may have reached it before a crash is written again.
//! - [`process`]: the process, the [`crate::backend::session::Link`].
//!
//! Conversation continuity: each bridge session maps to one Claude session id (the
//! bridge's own id as a UUID). The first process starts it with `--session-id`; every
//! later one (after an idle close, a crash, a bridge restart) continues it with
//! `--resume`. The CLI refuses `--session-id` for a conversation that exists and
//! `--resume` for one that does not, so a refusal simply tries the other.

pub mod descriptor;
pub mod lines;
pub mod process;
pub mod settings;
pub mod transcript;
pub mod translate;
pub mod wire;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use sha2::{Digest, Sha256};

use self::process::{ClaudeCodeLink, StartError};
use self::transcript::Transcripts;
use self::translate::Translator;
use super::child::Agents;
use super::session::{LinkError, Transport};
use crate::backend::tool_groups::ToolGroups;
use crate::interaction::TimeoutDefaults;

pub use settings::ClaudeCodeSettings;

/// How a process joins the session's Claude conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Conversation {
    /// `--session-id`: starts it.
    Start,
    /// `--resume`: continues it.
    Resume,
}

/// Starts Claude Code for each connected session.
pub struct ClaudeCodeTransport {
    settings: ClaudeCodeSettings,
    defaults: TimeoutDefaults,
    /// Sessions whose conversation exists (a process ran for it here), so the next
    /// process resumes first.
    started: Mutex<HashSet<String>>,
    /// Where each process is recorded, for this deployment's next bridge to end it
    /// if this one dies.
    agents: Agents,
}

impl ClaudeCodeTransport {
    pub fn new(settings: ClaudeCodeSettings, defaults: TimeoutDefaults) -> Self {
        Self { settings, defaults, started: Mutex::new(HashSet::new()), agents: Agents::default() }
    }

    /// Records the processes it starts in `agents` (the deployment's registry).
    pub fn with_agents(self, agents: Agents) -> Self {
        Self { agents, ..self }
    }

    /// The CLI's arguments, in the order the SDK builds them.
    fn args(&self, conversation: Option<(Conversation, &str)>) -> Vec<String> {
        let s = &self.settings;
        let mut args: Vec<String> = ["--output-format", "stream-json", "--verbose"].map(String::from).to_vec();
        let mut flag = |name: &str, value: &str| args.extend([name.to_owned(), value.to_owned()]);
        if let Some(prompt) = &s.system_prompt {
            flag("--system-prompt", prompt);
        }
        if let Some(prompt) = &s.append_system_prompt {
            flag("--append-system-prompt", prompt);
        }
        if !s.allowed_tools.is_empty() {
            flag("--allowedTools", &s.allowed_tools.join(","));
        }
        if let Some(turns) = s.max_turns {
            flag("--max-turns", &turns.to_string());
        }
        if !s.disallowed_tools.is_empty() {
            flag("--disallowedTools", &s.disallowed_tools.join(","));
        }
        if let Some(model) = &s.model {
            flag("--model", model);
        }
        flag("--permission-prompt-tool", "stdio");
        if let Some(mode) = &s.permission_mode {
            flag("--permission-mode", mode);
        }
        // The equals form binds the value to the flag whatever it starts with.
        match conversation {
            Some((Conversation::Resume, id)) => args.push(format!("--resume={id}")),
            Some((Conversation::Start, id)) => args.push(format!("--session-id={id}")),
            None => {}
        }
        args.extend(s.extra_args.iter().cloned());
        args.extend(["--input-format", "stream-json"].map(String::from));
        args
    }

    /// The environment on top of the bridge's own: the SDK's entrypoint label, then
    /// the configured `env` (which may override it).
    fn env(&self) -> Vec<(String, String)> {
        let mut env = vec![("CLAUDE_CODE_ENTRYPOINT".to_owned(), "sdk-py".to_owned())];
        env.extend(self.settings.env_pairs().map(|(k, v)| (k.to_owned(), v.to_owned())));
        env
    }

    fn work_dir(&self, session_id: &str) -> PathBuf {
        PathBuf::from(self.settings.work_dir.replace("{session_id}", session_id))
    }

    fn mark_started(&self, session_id: &str) {
        self.started.lock().unwrap_or_else(|p| p.into_inner()).insert(session_id.to_owned());
    }

    /// Which ways to join the conversation, in the order to try them.
    fn conversation_order(&self, session_id: &str) -> Vec<Option<Conversation>> {
        if !self.settings.resume {
            return vec![None];
        }
        let known = self.started.lock().unwrap_or_else(|p| p.into_inner()).contains(session_id);
        if known { vec![Some(Conversation::Resume), Some(Conversation::Start)] } else { vec![Some(Conversation::Start), Some(Conversation::Resume)] }
    }
}

impl Transport for ClaudeCodeTransport {
    type State = ToolGroups;
    type Link = ClaudeCodeLink;

    fn name(&self) -> &'static str {
        "claude_code"
    }

    fn new_state(&self) -> ToolGroups {
        ToolGroups::default()
    }

    async fn connect(&self, session_id: &str) -> Result<ClaudeCodeLink, LinkError> {
        let work_dir = self.work_dir(session_id);
        tokio::fs::create_dir_all(&work_dir)
            .await
            .map_err(|e| LinkError::Transport(format!("cannot create claude_code.work_dir {}: {e}", work_dir.display())))?;
        let claude_session = claude_session_id(session_id);
        let startup = Duration::from_secs(self.settings.startup_timeout_secs.max(1));
        let env = self.env();
        let mut refusals = Vec::new();
        for conversation in self.conversation_order(session_id) {
            let args = self.args(conversation.map(|c| (c, claude_session.as_str())));
            let translator = Translator::new(session_id, self.defaults, &self.settings.deny_message);
            match ClaudeCodeLink::start(&self.settings.cli_path, &args, &env, &work_dir, startup, translator, &self.agents).await {
                Ok(mut link) => {
                    if conversation.is_some() {
                        link.keep_record(Transcripts::locate(&env), claude_session.clone());
                    }
                    tracing::info!(%session_id, %claude_session, ?conversation, "Claude Code joined the conversation");
                    self.mark_started(session_id);
                    return Ok(link);
                }
                Err(StartError::Exited(report)) => {
                    tracing::info!(%session_id, ?conversation, %report, "Claude Code refused to start this way");
                    refusals.push(report);
                }
                Err(StartError::Failed(e)) => return Err(e),
            }
        }
        Err(LinkError::Transport(refusals.join("; ")))
    }
}

/// The Claude session id of a bridge session: the bridge's id when it is a UUID (it
/// is, for chat sessions), else a UUID derived from it. Stable, so a restarted bridge
/// resumes the same conversation.
pub fn claude_session_id(session_id: &str) -> String {
    if let Ok(uuid) = uuid::Uuid::parse_str(session_id) {
        return uuid.hyphenated().to_string();
    }
    let digest = Sha256::digest(session_id.as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_random_bytes(bytes).into_uuid().hyphenated().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_session_ids_are_stable_uuids() {
        assert_eq!(claude_session_id("0f8fad5bd9cb469fa16570867728950e"), "0f8fad5b-d9cb-469f-a165-70867728950e");
        let derived = claude_session_id("api:deploy-42");
        assert_eq!(derived, claude_session_id("api:deploy-42"));
        assert!(uuid::Uuid::parse_str(&derived).is_ok());
        assert_ne!(derived, claude_session_id("api:deploy-43"));
    }

    #[test]
    fn arguments_follow_the_sdk() {
        let settings = ClaudeCodeSettings {
            model: Some("sonnet".into()),
            allowed_tools: vec!["Read".into(), "Bash(git status:*)".into()],
            permission_mode: Some("acceptEdits".into()),
            extra_args: vec!["--effort".into(), "low".into()],
            ..ClaudeCodeSettings::default()
        };
        let transport = ClaudeCodeTransport::new(settings, TimeoutDefaults::default());
        let args = transport.args(Some((Conversation::Resume, "u-1")));
        assert_eq!(
            args.join(" "),
            "--output-format stream-json --verbose --allowedTools Read,Bash(git status:*) --model sonnet \
             --permission-prompt-tool stdio --permission-mode acceptEdits --resume=u-1 --effort low --input-format stream-json"
        );
        assert!(transport.args(Some((Conversation::Start, "u-1"))).contains(&"--session-id=u-1".to_owned()));
    }

    #[test]
    fn a_known_conversation_is_resumed_first_and_none_without_resume() {
        let transport = ClaudeCodeTransport::new(ClaudeCodeSettings::default(), TimeoutDefaults::default());
        assert_eq!(transport.conversation_order("s"), vec![Some(Conversation::Start), Some(Conversation::Resume)]);
        transport.mark_started("s");
        assert_eq!(transport.conversation_order("s"), vec![Some(Conversation::Resume), Some(Conversation::Start)]);
        let fresh = ClaudeCodeTransport::new(ClaudeCodeSettings { resume: false, ..Default::default() }, TimeoutDefaults::default());
        assert_eq!(fresh.conversation_order("s"), vec![None]);
    }

    #[test]
    fn configured_env_comes_after_the_entrypoint_and_the_work_dir_is_per_session() {
        let settings =
            ClaudeCodeSettings { env: vec!["CLAUDE_CODE_ENTRYPOINT=bridge".into()], work_dir: "/srv/chats/{session_id}".into(), ..Default::default() };
        let transport = ClaudeCodeTransport::new(settings, TimeoutDefaults::default());
        assert_eq!(transport.env().last(), Some(&("CLAUDE_CODE_ENTRYPOINT".to_owned(), "bridge".to_owned())));
        assert_eq!(transport.work_dir("abc"), PathBuf::from("/srv/chats/abc"));
    }
}
