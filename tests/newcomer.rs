//! The README's "try it with your own bot", as a newcomer runs it: from an empty
//! directory, with environment variables only (no config file, no checkout), the
//! `hitl-bridge` binary runs the reference agent and the bridge; the person asks `/id`,
//! writes to the bot, gets the approval keyboard, clicks, and the agent carries on with
//! the decision. Telegram is the fake Bot API (`telegram.api_url`), the one thing a
//! newcomer would not set.

use support::fake_telegram;
mod support;
use support::telegram_chat;

use std::process::{Child, Command, Stdio};

use fake_telegram::{FakeTelegram, User};
use telegram_chat::{TelegramChat, text_of};

/// A child process that dies with the test.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// `hitl-bridge ARGS` in `dir` with only `env` of our variables; what it logs (at
/// info) comes back on the channel, line by line.
fn hitl_bridge(dir: &std::path::Path, args: &[&str], env: &[(&str, String)]) -> (Running, std::sync::mpsc::Receiver<String>) {
    use std::io::BufRead;
    let mut command = Command::new(env!("CARGO_BIN_EXE_hitl-bridge"));
    command.current_dir(dir).args(args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("HITL_BRIDGE")) {
        command.env_remove(key);
    }
    command.env("RUST_LOG", "info").env("HITL_BRIDGE__LOG__FORMAT", "pretty");
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().expect("spawn hitl-bridge");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    (Running(child), lines)
}

#[tokio::test]
async fn from_an_empty_directory_to_a_first_approval_with_env_vars_only() {
    let empty = tempfile::tempdir().expect("tempdir");
    let fake = FakeTelegram::start().await;
    let me = User::new(123456789, "Lan", Some("en"));
    let chat = fake.private_chat(&me);
    let agent_port = free_port();
    let _agent = hitl_bridge(empty.path(), &["agent-sim", "--listen", &format!("127.0.0.1:{agent_port}")], &[]);
    let http = format!("127.0.0.1:{}", free_port());
    let (_bridge, log) = hitl_bridge(
        empty.path(),
        &["run"],
        &[
            ("HITL_BRIDGE__TELEGRAM__ENABLED", "true".into()),
            ("HITL_BRIDGE__TELEGRAM__TOKEN", fake_telegram::TOKEN.into()),
            ("HITL_BRIDGE__TELEGRAM__API_URL", fake.url.clone()),
            ("HITL_BRIDGE__ACCESS__USERS", format!("telegram:{}", me.id)),
            ("HITL_BRIDGE__BACKEND__URL", format!("ws://127.0.0.1:{agent_port}/ws/{{session_id}}")),
            // Only so that parallel tests do not share a port; a newcomer keeps 8790.
            ("HITL_BRIDGE__HTTP__LISTEN", http.clone()),
        ],
    );
    // One line says which bridge this is and what it talks to.
    let started = loop {
        let line = log.recv_timeout(support::WAIT).expect("the bridge logs its start");
        if line.contains("starting: config") {
            break line;
        }
    };
    assert!(
        started.contains(&format!(
            "starting: config built-in defaults + environment; store sqlite://data/hitl-bridge.db; backend stream ws://127.0.0.1:{agent_port}/ws/{{session_id}}; platforms telegram; http {http}"
        )),
        "{started}"
    );
    let person = TelegramChat { fake: &fake, chat, user: me.clone() };

    person.say("/id");
    let ids = person.message_with("🆔").await;
    assert!(text_of(&ids).contains(&format!("telegram:{}", me.id)), "{ids}");

    person.say("trade");
    let card = person.message_with("execute_trade").await;
    assert!(card["reply_markup"]["inline_keyboard"].is_array(), "an approval keyboard: {card}");
    person.click(card["message_id"].as_i64().expect("id"), "Approve").await;
    // The agent got the decision: it goes on with the trade and says so.
    person.message_with("Đã đặt lệnh: buy 100 VNM @ 82000").await;
    assert!(empty.path().join("data/hitl-bridge.db").exists(), "the default store, in the working directory");
    fake.shutdown();
}

/// `hitl-bridge demo --telegram`: the reference agent and the user's own bot (token
/// from the environment), with whoever writes to it let in from the terminal: the
/// first message gets a pairing code, the terminal asks, `y` admits them, and their
/// next message gets the approval keyboard.
#[tokio::test]
async fn demo_with_your_own_telegram_bot_lets_people_in_from_the_terminal() {
    use std::io::{BufRead, Write};
    let empty = tempfile::tempdir().expect("tempdir");
    let fake = FakeTelegram::start().await;
    let me = User::new(123456789, "Lan", Some("en"));
    let chat = fake.private_chat(&me);
    let mut command = Command::new(env!("CARGO_BIN_EXE_hitl-bridge"));
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("HITL_BRIDGE")) {
        command.env_remove(key);
    }
    let child = command
        .current_dir(empty.path())
        .args(["demo", "--telegram", "--http-listen", &format!("127.0.0.1:{}", free_port())])
        .env("HITL_BRIDGE__TELEGRAM__TOKEN", fake_telegram::TOKEN)
        .env("HITL_BRIDGE__TELEGRAM__API_URL", &fake.url)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn the demo");
    let mut demo = Running(child);
    let mut stdin = demo.0.stdin.take().expect("stdin");
    let (lines_tx, lines) = std::sync::mpsc::channel::<String>();
    let stdout = demo.0.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    let expect_line = |needle: &str| loop {
        let line = lines.recv_timeout(support::WAIT).unwrap_or_else(|e| panic!("the demo never printed {needle:?}: {e}"));
        if line.contains(needle) {
            return line;
        }
    };
    expect_line("your Telegram bot as the chat");

    let person = TelegramChat { fake: &fake, chat, user: me.clone() };
    person.say("trade");
    person.message_with("pairing code").await;
    assert_eq!(expect_line("wants to talk"), "Lan (telegram:123456789) wants to talk: approve? [y/N]");
    writeln!(stdin, "y").expect("answer");
    stdin.flush().expect("flush");
    expect_line("approved: Lan may talk to the agent now");

    person.say("trade");
    let card = person.message_with("execute_trade").await;
    person.click(card["message_id"].as_i64().expect("id"), "Approve").await;
    person.message_with("Đã đặt lệnh: buy 100 VNM @ 82000").await;
    drop(stdin);
    fake.shutdown();
}
