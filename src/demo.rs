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
use crate::config::{ConfigError, Settings};
use crate::store::Store;

/// The demo's own store, apart from a real bridge's.
pub const STORE: &str = "sqlite://data/demo.db";

/// How often the terminal looks for someone new asking to talk.
const PAIRING_POLL: Duration = Duration::from_millis(500);

/// Which chat the demo uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DemoChat {
    Terminal,
    Telegram,
    Discord,
}

/// The demo's settings: the reference agent at `backend_url` / `history_url`, the
/// demo's store, the HTTP API on `http_listen`; for a bot chat, that platform on with
/// pairing (so strangers get a code the terminal approves) and the terminal chat off.
pub fn settings(chat: DemoChat, backend_url: &str, history_url: &str, http_listen: &str) -> Result<Settings, ConfigError> {
    let mut overrides = vec![
        ("backend.kind", "stream"),
        ("backend.url", backend_url),
        ("backend.history_url", history_url),
        ("store.url", STORE),
        ("http.listen", http_listen),
    ];
    match chat {
        DemoChat::Terminal => {
            overrides.push(("console.enabled", "true"));
            // The terminal is the chat: no bot is started whatever the environment says.
            overrides.extend([("telegram.enabled", "false"), ("discord.enabled", "false")]);
            return Settings::from_pairs(&overrides);
        }
        DemoChat::Telegram => overrides.extend([("telegram.enabled", "true"), ("discord.enabled", "false")]),
        DemoChat::Discord => overrides.extend([("discord.enabled", "true"), ("telegram.enabled", "false")]),
    }
    overrides.extend([("console.enabled", "false"), ("access.pairing", "true")]);
    // The bot's keys (token, api_url, channels, …) come from the environment.
    Settings::load_with_overrides(None, &overrides)
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
