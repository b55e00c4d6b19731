//! Claude Code's own record of a conversation, read to tell whether a message the
//! bridge wrote before a crash reached it. The CLI appends every message to
//! `<config dir>/projects/<its work dir, mangled>/<session id>.jsonl` and keeps the
//! `uuid` a stream-json user message carries, so a message whose uuid is in the
//! transcript was read, and one whose uuid is not was never seen.

use std::io::ErrorKind;
use std::path::PathBuf;

use serde_json::Value;

use super::claude_session_id;

/// Where the CLI keeps its transcripts.
#[derive(Debug, Clone)]
pub struct Transcripts {
    projects: PathBuf,
}

impl Transcripts {
    /// From the environment the CLI runs with (`env` over the bridge's own):
    /// `CLAUDE_CONFIG_DIR`, else `$HOME/.claude`, as the CLI decides.
    pub fn locate(env: &[(String, String)]) -> Option<Transcripts> {
        let lookup = |name: &str| env.iter().rev().find(|(key, _)| key == name).map(|(_, value)| value.clone()).or_else(|| std::env::var(name).ok());
        let config = lookup("CLAUDE_CONFIG_DIR").map(PathBuf::from).or_else(|| lookup("HOME").map(|home| PathBuf::from(home).join(".claude")))?;
        Some(Transcripts { projects: config.join("projects") })
    }

    /// Whether conversation `claude_session` holds the user message `uuid`. The work
    /// dir's mangled name is not guessed: every project folder is looked in, since a
    /// session id names one conversation.
    pub async fn has_message(&self, claude_session: &str, uuid: &str) -> std::io::Result<bool> {
        let file_name = format!("{claude_session}.jsonl");
        let mut projects = match tokio::fs::read_dir(&self.projects).await {
            Ok(projects) => projects,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        };
        while let Some(project) = projects.next_entry().await? {
            match tokio::fs::read_to_string(project.path().join(&file_name)).await {
                Ok(transcript) if holds_user_message(&transcript, uuid) => return Ok(true),
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(false)
    }
}

/// Whether a transcript's lines hold a user message with `uuid`.
pub fn holds_user_message(transcript: &str, uuid: &str) -> bool {
    transcript
        .lines()
        .filter(|line| line.contains(uuid))
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .any(|entry| entry["type"] == "user" && entry["uuid"] == uuid)
}

/// The uuid the bridge gives the message of command `command_id` in `session_id`:
/// the same every time it is written, so its record can be found after a restart.
pub fn message_uuid(session_id: &str, command_id: &str) -> String {
    claude_session_id(&format!("{session_id}/message/{command_id}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_found_by_its_uuid_as_a_user_entry_only() {
        let transcript = [
            r#"{"type":"user","uuid":"aaaa-1","message":{"role":"user","content":"hi"}}"#,
            r#"{"type":"assistant","uuid":"bbbb-2","parentUuid":"aaaa-1"}"#,
            "not json",
        ]
        .join("\n");
        assert!(holds_user_message(&transcript, "aaaa-1"));
        assert!(!holds_user_message(&transcript, "bbbb-2"), "an assistant entry is not the message");
        assert!(!holds_user_message(&transcript, "cccc-3"));
    }

    #[test]
    fn message_uuids_are_stable_and_distinct() {
        assert_eq!(message_uuid("s", "7-100"), message_uuid("s", "7-100"));
        assert_ne!(message_uuid("s", "7-100"), message_uuid("s", "8-100"));
        assert_ne!(message_uuid("s", "7-100"), message_uuid("t", "7-100"));
        assert!(uuid::Uuid::parse_str(&message_uuid("s", "7-100")).is_ok());
    }

    #[test]
    fn the_config_dir_comes_from_the_cli_env_first() {
        let env = vec![("HOME".to_owned(), "/home/a".to_owned()), ("CLAUDE_CONFIG_DIR".to_owned(), "/etc/claude".to_owned())];
        assert_eq!(Transcripts::locate(&env).unwrap().projects, PathBuf::from("/etc/claude/projects"));
        let env = vec![("HOME".to_owned(), "/home/a".to_owned())];
        assert_eq!(Transcripts::locate(&env).unwrap().projects, PathBuf::from("/home/a/.claude/projects"));
    }

    #[tokio::test]
    async fn a_missing_transcript_holds_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let transcripts = Transcripts { projects: dir.path().join("projects") };
        assert!(!transcripts.has_message("s", "u").await.unwrap());
        std::fs::create_dir_all(dir.path().join("projects/-work-x")).unwrap();
        std::fs::write(dir.path().join("projects/-work-x/s.jsonl"), r#"{"type":"user","uuid":"u"}"#).unwrap();
        assert!(transcripts.has_message("s", "u").await.unwrap());
        assert!(!transcripts.has_message("other", "u").await.unwrap());
    }
}
