//! `hitl-bridge demo`: the reference agent and the bridge in one process. Without
//! flags the terminal is the chat. With `--telegram` or `--discord` the chat is the
//! user's own bot (its token and other keys from `HITL_BRIDGE__TELEGRAM__*` /
//! `HITL_BRIDGE__DISCORD__*`), and the terminal is where its owner lets people in:
//! whoever writes to the bot is asked about here ("Lan (telegram:123456) wants to
//! talk: approve? [y/N]"), so the first message needs no id looked up.

use std::collections::HashSet;
use std::io::BufRead;
use std::time::Duration;

use crate::clock::now_ms;
use crate::config::sources::Environment;
use crate::config::{ConfigError, Settings};
use crate::store::Store;

/// The demo's own store, apart from a real bridge's.
pub const STORE: &str = "sqlite://data/demo.db";

/// How often the terminal looks for someone new asking to talk.
const PAIRING_POLL: Duration = Duration::from_millis(500);

/// Which chat the demo uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DemoChat {
    /// The terminal (the platform that is always open).
    Terminal,
    /// A chat platform's bot (its name in the registry, e.g. `telegram`).
    Bot(&'static str),
}

impl DemoChat {
    /// The bot chat of the platform named `name`, when the registry has it and it
    /// is not the terminal.
    pub fn bot(name: &str) -> Option<Self> {
        let descriptor = crate::platform::registry::descriptor(name)?;
        let network = descriptor.network();
        (!network.always_open()).then_some(Self::Bot(network.name()))
    }
}

/// The demo's settings: the reference agent at `backend_url` / `history_url`, the
/// demo's store, the HTTP API on `http_listen`; for a bot chat, that platform on with
/// pairing (so strangers get a code the terminal approves) and the terminal chat off.
pub fn settings(chat: DemoChat, backend_url: &str, history_url: &str, http_listen: &str) -> Result<Settings, ConfigError> {
    settings_from(chat, backend_url, history_url, http_listen, Environment::from_process())
}

/// Owned overrides as `Settings` takes them.
fn pairs(overrides: &[(String, String)]) -> Vec<(&str, &str)> {
    overrides.iter().map(|(key, value)| (key.as_str(), value.as_str())).collect()
}

fn settings_from(chat: DemoChat, backend_url: &str, history_url: &str, http_listen: &str, environment: Environment) -> Result<Settings, ConfigError> {
    let mut overrides: Vec<(String, String)> =
        [("backend.kind", "stream"), ("backend.url", backend_url), ("backend.history_url", history_url), ("store.url", STORE), ("http.listen", http_listen)]
            .into_iter()
            .map(|(key, value)| (key.to_owned(), value.to_owned()))
            .collect();
    // One chat: the chosen bot, or the terminal; no other bot is started whatever the
    // environment says.
    for descriptor in crate::platform::registry::DESCRIPTORS {
        let network = descriptor.network();
        let on = match chat {
            DemoChat::Terminal => network.always_open(),
            DemoChat::Bot(name) => network.name() == name,
        };
        overrides.push((format!("{}.enabled", network.name()), on.to_string()));
    }
    if chat == DemoChat::Terminal {
        return Settings::from_pairs(&pairs(&overrides));
    }
    overrides.push(("access.pairing".into(), "true".into()));
    // The bot's keys (token, api_url, channels, …) come from the environment.
    let mut settings = Settings::load_from(None, environment, &pairs(&overrides))?;
    // Nobody needs to be in access.admins: this terminal approves the codes.
    settings.pairing_approved_at_terminal = true;
    Ok(settings)
}

/// The scenarios of the reference agent, as the demo's banner lists them: what to
/// type and what the agent then does (the README's table says the same).
pub const SCENARIOS: &[(&str, &str)] = &[
    ("hỏi 2 lần", "two rounds of questions"),
    ("trade", "approve / edit / reject a trade"),
    ("two actions", "two tool calls in one request"),
    ("timeout", "nobody answers in time"),
    ("shapes", "the two request shapes"),
    ("multi", "multi-select + Other"),
    ("migration", "a comment is the decision"),
    ("malformed", "broken frames, then carries on"),
];

/// What the demo prints first. `program` is how it was started (`hitl-bridge`, or
/// `target/release/hitl-bridge` after `cargo run`), so the command it suggests runs
/// as written.
pub fn banner(chat: DemoChat, agent: &str, http_listen: &str, token: &str, timeout_secs: u64, program: &str) -> String {
    let scenarios: Vec<String> = SCENARIOS
        .iter()
        .map(|(keyword, what)| match *keyword {
            "timeout" => format!("\"{keyword}\" ({what}, {timeout_secs} s)"),
            _ => format!("\"{keyword}\" ({what})"),
        })
        .collect();
    let scenarios = format!("Keywords pick a scenario:\n  {},\n  {},\n  {}.", scenarios[..3].join(", "), scenarios[3..6].join(", "), scenarios[6..].join(", "));
    match chat {
        DemoChat::Terminal => format!(
            "hitl-bridge demo: a reference agent at {agent} and this terminal as the chat.\n\
             Type a message for the agent. {scenarios}\n\
             /new starts a new session, /cancel cancels the turn, /quit or Ctrl-D exits.\n\
             Agents can push requests here too: POST http://{http_listen}/v1/requests with\n  \
             Authorization: Bearer {token} and \"targets\":[{{\"platform\":\"console\"}}] (see the README).\n\
             Its store is {STORE}: `HITL_BRIDGE__STORE__URL={STORE} {program} pending` reads it."
        ),
        DemoChat::Bot(name) => format!(
            "hitl-bridge demo: a reference agent at {agent} and your {} bot as the chat.\n\
             Write to the bot (in a group, mention it). Whoever does is asked about here first:\n  \
             answer y to let them talk. {scenarios}\n\
             Its store is {STORE}. Ctrl-C stops the demo.",
            crate::platform::registry::descriptor(name).map_or(name, |d| d.title())
        ),
    }
}

/// Asks at the terminal about everyone given a pairing code, one at a time, and
/// approves those the owner answers `y` for. Runs until stdin ends.
pub async fn approve_at_the_terminal(store: Store) {
    let (lines_tx, mut lines) = tokio::sync::mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut asked: HashSet<String> = HashSet::new();
    loop {
        let waiting = match store.waiting_pairing_codes(now_ms()).await {
            Ok(waiting) => waiting,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the pairing codes");
                Vec::new()
            }
        };
        for (code, who) in waiting {
            if !asked.insert(code.code.clone()) {
                continue;
            }
            println!("{} ({}:{}) wants to talk: approve? [y/N]", who.name, who.platform, who.user_id);
            let Some(answer) = lines.recv().await else { return };
            if !matches!(answer.trim().to_lowercase().as_str(), "y" | "yes") {
                println!("not approved; they stay refused");
                continue;
            }
            match store.approve_typed_pairing(&code.code, None, now_ms(), false).await {
                Ok(user) => println!("approved: {} may talk to the agent now (they are told within 10 s)", user.user_name),
                Err(e) => println!("cannot approve: {e}"),
            }
        }
        tokio::time::sleep(PAIRING_POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_banner_names_every_scenario_and_a_command_that_runs_as_started() {
        let banner = banner(DemoChat::Terminal, "127.0.0.1:1", "127.0.0.1:8790", "demo-token", 20, "target/release/hitl-bridge");
        for (keyword, _) in SCENARIOS {
            assert!(banner.contains(&format!("\"{keyword}\"")), "{keyword} missing from:\n{banner}");
        }
        assert!(banner.contains("\"timeout\" (nobody answers in time, 20 s)"), "{banner}");
        assert!(banner.contains("`HITL_BRIDGE__STORE__URL=sqlite://data/demo.db target/release/hitl-bridge pending` reads it"), "{banner}");
    }

    #[test]
    fn a_bot_demo_is_not_warned_about_pairing_without_admins() {
        let environment = Environment::from_vars([("HITL_BRIDGE__TELEGRAM__TOKEN".to_owned(), "123456:abc".to_owned())]);
        let settings =
            settings_from(DemoChat::Bot("telegram"), "ws://127.0.0.1:1/ws/{session_id}", "http://127.0.0.1:1/h", "127.0.0.1:0", environment).unwrap();
        assert!(settings.platforms.named("telegram").is_some_and(|s| s.enabled()) && settings.access.pairing && settings.access.admins.is_empty());
        assert!(settings.access_warnings().is_empty(), "{:?}", settings.access_warnings());
        let mut s = Settings::from_pairs(&[("access.pairing", "true")]).unwrap();
        assert_eq!(s.access_warnings().len(), 1, "a real bridge is still warned");
        s.pairing_approved_at_terminal = true;
        assert!(s.access_warnings().is_empty());
    }
}
