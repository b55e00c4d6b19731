//! How `kimi --wire` is started for a session: its command line and its session name.
//! The process itself is a [`StdioAgent`](crate::backend::child::stdio::StdioAgent).

use std::path::Path;

use super::settings::KimiSettings;
use crate::backend::child::Agents;
use crate::backend::child::stdio::StdioAgent;

/// The kimi session id for a bridge session: kimi keeps a session in a directory of
/// that name, so anything but `[A-Za-z0-9_-]` is replaced (bridge ids are hex already).
pub fn kimi_session_id(session_id: &str) -> String {
    let safe: String = session_id.chars().take(100).map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    format!("hitl-{safe}")
}

/// The command line for `session_id` (without the program).
pub fn arguments(settings: &KimiSettings, session_id: &str) -> Vec<String> {
    let mut args = vec!["--wire".to_owned(), "--work-dir".to_owned(), settings.work_dir.clone()];
    if let Some(config) = &settings.config_file {
        args.extend(["--config-file".to_owned(), config.clone()]);
    }
    if let Some(model) = &settings.model {
        args.extend(["--model".to_owned(), model.clone()]);
    }
    if settings.resume_sessions {
        args.extend(["--session".to_owned(), kimi_session_id(session_id)]);
    }
    args.extend(settings.args.iter().cloned());
    args
}

/// Starts `kimi --wire` for `session_id`.
pub fn spawn(settings: &KimiSettings, session_id: &str, agents: &Agents) -> std::io::Result<StdioAgent> {
    let args = arguments(settings, session_id);
    StdioAgent::spawn("kimi", &settings.command, &args, &settings.env, Path::new(&settings.work_dir), agents)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_are_safe_directory_names() {
        assert_eq!(kimi_session_id("0a1b2c"), "hitl-0a1b2c");
        assert_eq!(kimi_session_id("../x y"), "hitl-___x_y");
    }

    #[test]
    fn the_command_line() {
        let settings = KimiSettings {
            config_file: Some("/etc/kimi.toml".into()),
            work_dir: "/srv/w".into(),
            model: Some("k2".into()),
            args: vec!["--thinking".into()],
            ..KimiSettings::default()
        };
        assert_eq!(
            arguments(&settings, "abc"),
            ["--wire", "--work-dir", "/srv/w", "--config-file", "/etc/kimi.toml", "--model", "k2", "--session", "hitl-abc", "--thinking"]
        );
        let fresh = KimiSettings { resume_sessions: false, ..KimiSettings::default() };
        assert_eq!(arguments(&fresh, "abc"), ["--wire", "--work-dir", "."]);
    }
}
