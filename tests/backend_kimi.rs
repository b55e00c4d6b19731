//! Kimi CLI end to end: the real `kimi --wire` (kimi-cli from PyPI, installed by
//! `tests/backends/install.sh kimi`) with its scripted model, the bridge, and the
//! real teloxide client against the fake Telegram. A chat message starts a kimi turn;
//! its approvals and questions are clicked; what kimi received is read back from
//! kimi itself: the tool results it recorded in its session's `wire.jsonl` (kimi
//! writes there what the tool returned after our response: the rejection with the
//! feedback, the answers JSON, the command's output).
//!
//! They are `#[ignore]`d: a plain `cargo test` reports them ignored; `cargo test -- --include-ignored` runs them, and fails without the install.

use support::backends;
use support::bridge_process;
use support::fake_telegram;
mod support;
use support::telegram_chat::{id_of, labels};

use std::path::{Path, PathBuf};

use fake_telegram::User;
use hitl_bridge::backend::kimi::KimiSettings;
use serde_json::{Value, json};
use support::backend_bridge::{BackendBridge, processes_in};
use support::wait_until;

fn lan() -> User {
    User::new(1001, "Lan", Some("en"))
}

/// One scripted model turn that calls a tool.
fn tool_call(id: &str, name: &str, arguments: Value) -> String {
    format!("tool_call: {}", json!({"id":id,"name":name,"arguments":arguments.to_string()}))
}

fn shell(id: &str, command: &str) -> String {
    tool_call(id, "Shell", json!({"command":command}))
}

fn text(t: &str) -> String {
    format!("text: {t}")
}

/// A kimi home, work dir, config and script in the test's directory, and a bridge in
/// front of kimi on the fake Telegram, where Lan has a private chat with the bot.
/// (`installed` fails the test when kimi is not installed.)
async fn start(scripts: &[String]) -> Option<BackendBridge> {
    start_with(scripts, &[]).await
}

/// As [`start`], with more settings.
async fn start_with(scripts: &[String], extra: &[(&str, &str)]) -> Option<BackendBridge> {
    let venv = backends::installed("kimi")?;
    let scripts = scripts.to_vec();
    let bridge = BackendBridge::on("kimi", lan())
        .settings(extra)
        .prepare(move |settings, dir| {
            for sub in ["home", "work"] {
                std::fs::create_dir_all(dir.join(sub)).expect("mkdir");
            }
            std::fs::copy(backends::spec_dir("kimi").join("config.toml"), dir.join("config.toml")).expect("kimi config");
            write_script(dir, &scripts);
            let path = |p: &str| dir.join(p).display().to_string();
            *settings.backends.get_mut::<KimiSettings>() = KimiSettings {
                command: venv.join("bin/kimi").display().to_string(),
                work_dir: path("work"),
                config_file: Some(path("config.toml")),
                env: [("HOME".to_owned(), path("home")), ("KIMI_SCRIPTED_ECHO_SCRIPTS".to_owned(), path("scripts.json"))].into(),
                ..KimiSettings::default()
            };
        })
        // Stopping the bridge kills its kimi processes.
        .runs_in("work")
        .start()
        .await;
    Some(bridge)
}

/// The scripted model's turns for the next kimi process (read when it starts).
fn write_script(dir: &Path, scripts: &[String]) {
    std::fs::write(dir.join("scripts.json"), serde_json::to_string(scripts).unwrap()).expect("scripts");
}

fn home(h: &BackendBridge) -> PathBuf {
    h.dir.path().join("home")
}

/// The `ToolResult` kimi recorded for tool call `id` (waits for it).
async fn tool_result(h: &BackendBridge, id: &str) -> Value {
    wait_until(|| async { kimi_records(&home(h), "ToolResult").into_iter().find(|r| r["tool_call_id"] == id) }).await
}

/// The pids of this test's kimi processes: the bridge starts them in the test's work
/// dir.
fn kimi_pids(h: &BackendBridge) -> Vec<u32> {
    processes_in(&h.dir.path().join("work"))
}

/// Every payload of `kind` in the wire.jsonl files of kimi's sessions under `home`.
fn kimi_records(home: &Path, kind: &str) -> Vec<Value> {
    let mut files = Vec::new();
    let mut dirs = vec![home.join(".kimi/sessions")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.file_name().is_some_and(|n| n == "wire.jsonl") {
                files.push(path);
            }
        }
    }
    files
        .iter()
        .flat_map(|f| std::fs::read_to_string(f).unwrap_or_default().lines().map(str::to_owned).collect::<Vec<_>>())
        .filter_map(|line| serde_json::from_str::<Value>(&line).ok())
        .filter(|record| record["message"]["type"] == kind)
        .map(|record| record["message"]["payload"].clone())
        .collect()
}

/// Approve, then approve for the session: kimi runs both commands and then a third of
/// the same kind without asking again; the agent's text reaches the chat.
#[tokio::test]
#[ignore = "needs the kimi backend: bash tests/backends/install.sh kimi, then cargo test -- --include-ignored"]
async fn approve_and_approve_for_session() {
    let Some(h) = start(&[
        format!("{}\n{}", text("Let me check."), shell("tc-1", "echo one")),
        shell("tc-2", "echo two"),
        shell("tc-3", "echo three"),
        text("All three ran."),
    ])
    .await
    else {
        return;
    };
    h.person().say("run the checks");
    h.person().message_with("Let me check.").await;
    let first = h.person().message_with("Run command `echo one`").await;
    assert_eq!(labels(&first), ["✅ Approve", "🔓 Approve for session", "❌ Reject", "💬 Comment"]);
    assert!(first["text"].as_str().unwrap().contains("\"command\": \"echo one\""), "{}", first["text"]);
    h.person().click(id_of(&first), "Approve").await;
    h.person().message_shows(id_of(&first), "✅ Approved by Lan").await;
    assert!(tool_result(&h, "tc-1").await["return_value"]["output"].as_str().unwrap().contains("one"));

    let second = h.person().message_with("Run command `echo two`").await;
    h.person().click(id_of(&second), "Approve for session").await;
    h.person().message_shows(id_of(&second), "🔓 Approved for the session by Lan").await;
    h.person().message_with("All three ran.").await;
    for (id, out) in [("tc-2", "two"), ("tc-3", "three")] {
        let result = tool_result(&h, id).await;
        assert_eq!(result["return_value"]["is_error"], false, "{result}");
        assert!(result["return_value"]["output"].as_str().unwrap().contains(out), "{result}");
    }
    // The third command ran on the session approval: kimi asked no one.
    let asked = h.telegram().bot_messages(h.chat).into_iter().filter(|m| m["text"].as_str().is_some_and(|t| t.contains("Run command"))).count();
    assert_eq!(asked, 2);
    h.finish().await;
}

/// A comment is a reject with feedback, and kimi's turn goes on; a plain reject makes
/// kimi stop and wait.
#[tokio::test]
#[ignore = "needs the kimi backend: bash tests/backends/install.sh kimi, then cargo test -- --include-ignored"]
async fn reject_with_feedback_and_without() {
    let Some(h) = start(&[shell("tc-1", "rm -rf build"), shell("tc-2", "rm -rf dist"), text("never said")]).await else {
        return;
    };
    h.person().say("clean up");
    let first = h.person().message_with("Run command `rm -rf build`").await;
    h.person().click(id_of(&first), "Comment").await;
    h.person().reply_to_prompt("Reply with your comment.", "use git clean instead").await;
    h.person().message_shows(id_of(&first), "by Lan").await;
    let rejected = tool_result(&h, "tc-1").await;
    assert_eq!(rejected["return_value"]["is_error"], true);
    assert_eq!(rejected["return_value"]["message"], "The tool call is rejected by the user. User feedback: use git clean instead");

    let second = h.person().message_with("Run command `rm -rf dist`").await;
    h.person().click(id_of(&second), "Reject").await;
    h.person().message_shows(id_of(&second), "❌ Rejected by Lan").await;
    let rejected = tool_result(&h, "tc-2").await;
    assert_eq!(
        rejected["return_value"]["message"],
        "The tool call is rejected by the user. Stop what you are doing and wait for the user to tell you how to proceed."
    );
    // Kimi ended the turn: the next scripted step never ran.
    wait_until(|| async { (!kimi_records(&home(&h), "TurnEnd").is_empty()).then_some(()) }).await;
    assert!(h.telegram().bot_messages(h.chat).iter().all(|m| !m["text"].as_str().unwrap_or("").contains("never said")));
    h.finish().await;
}

/// Seed 001: a multi-select question and a single one in one request, answered in
/// the wizard (`{"Q":"A, B"}`); then a question skipped, which is kimi's "dismissed"
/// (`{"answers":{}}`).
#[tokio::test]
#[ignore = "needs the kimi backend: bash tests/backends/install.sh kimi, then cargo test -- --include-ignored"]
async fn questions_multi_select_and_dismissed() {
    let questions = json!({"questions":[
        {"question":"Which colors?","header":"Colors","options":[{"label":"Red"},{"label":"Green","description":"like grass"},{"label":"Blue"}],"multi_select":true},
        {"question":"Where?","options":[{"label":"Here"},{"label":"There"}],"multi_select":false}]});
    let Some(h) = start(&[
        tool_call("tc-1", "AskUserQuestion", questions),
        tool_call("tc-2", "AskUserQuestion", json!({"questions":[{"question":"Deploy now?","options":[{"label":"Yes"},{"label":"No"}]}]})),
        text("Thanks."),
    ])
    .await
    else {
        return;
    };
    h.person().say("ask me");
    let q = h.person().message_with("[1/2] Colors").await;
    assert!(q["text"].as_str().unwrap().contains("Choose one or more, then press Done."), "{}", q["text"]);
    let id = id_of(&q);
    h.person().click(id, "Red").await;
    h.person().message_shows(id, "→ Red").await;
    h.person().click(id, "Blue").await;
    h.person().message_shows(id, "→ Red, Blue").await;
    h.person().click(id, "Done").await;
    h.person().message_shows(id, "[2/2]").await;
    h.person().click(id, "There").await;
    h.person().message_shows(id, "Your answers").await;
    h.person().click(id, "Submit").await;
    let answered = tool_result(&h, "tc-1").await;
    assert_eq!(answered["return_value"]["output"], r#"{"answers": {"Which colors?": "Red, Blue", "Where?": "There"}}"#);

    let q2 = h.person().message_with("Deploy now?").await;
    h.person().click(id_of(&q2), "Skip").await;
    h.person().message_shows(id_of(&q2), "Your answers").await;
    h.person().click(id_of(&q2), "Submit").await;
    let dismissed = tool_result(&h, "tc-2").await;
    assert_eq!(dismissed["return_value"]["message"], "User dismissed the question without answering.");
    assert!(dismissed["return_value"]["output"].as_str().unwrap().starts_with(r#"{"answers": {}, "note": "#), "{dismissed}");
    h.person().message_with("Thanks.").await;
    h.finish().await;
}

/// Kimi killed while it waits for an approval: the chat is told, the approval ends
/// (its buttons go), and the next message starts a new kimi that continues the same
/// kimi session.
#[tokio::test]
#[ignore = "needs the kimi backend: bash tests/backends/install.sh kimi, then cargo test -- --include-ignored"]
async fn killed_mid_turn_is_restarted_by_the_next_message() {
    let Some(h) = start(&[shell("tc-1", "echo slow")]).await else {
        return;
    };
    h.person().say("start");
    let approval = h.person().message_with("Run command `echo slow`").await;
    let pids = kimi_pids(&h);
    assert_eq!(pids.len(), 1, "one kimi per session");
    // The next process reads a new script.
    write_script(h.dir.path(), &[text("I am back.")]);
    let killed = std::process::Command::new("kill").args(["-KILL", &pids[0].to_string()]).status().expect("kill");
    assert!(killed.success());

    h.person().message_with("The agent reported an error: kimi stopped unexpectedly (killed by signal 9); its open request can no longer be answered. Your next message starts it again.").await;
    let ended = wait_until(|| async { h.telegram().message(h.chat, id_of(&approval)).filter(|m| m.get("reply_markup").is_none()) }).await;
    assert!(ended["text"].as_str().unwrap().contains("Expired"), "{}", ended["text"]);

    h.person().say("are you there?");
    h.person().message_with("I am back.").await;
    let now = kimi_pids(&h);
    assert_eq!(now.len(), 1);
    assert_ne!(now, pids, "a new process");
    // The same kimi session (`--session`): both turns are in its record.
    let turns: Vec<Value> = kimi_records(&home(&h), "TurnBegin").into_iter().map(|t| t["user_input"].clone()).collect();
    assert_eq!(turns, [json!("start"), json!("are you there?")]);
    h.finish().await;
}

/// Kimi waits for an answer without limit; at the question's deadline the bridge
/// dismisses it (`{"answers":{}}`) and the message shows it expired.
#[tokio::test]
#[ignore = "needs the kimi backend: bash tests/backends/install.sh kimi, then cargo test -- --include-ignored"]
async fn an_unanswered_question_is_dismissed_at_its_deadline() {
    let ask = json!({"questions":[{"question":"Deploy now?","options":[{"label":"Yes"},{"label":"No"}]}]});
    let Some(h) = start_with(&[tool_call("tc-1", "AskUserQuestion", ask), text("Not deploying then.")], &[("timeouts.question_secs", "2")]).await else {
        return;
    };
    h.person().say("deploy?");
    let q = h.person().message_with("Deploy now?").await;
    let dismissed = tool_result(&h, "tc-1").await;
    assert_eq!(dismissed["return_value"]["message"], "User dismissed the question without answering.");
    h.person().message_with("Not deploying then.").await;
    let ended = h.person().message_shows(id_of(&q), "Expired").await;
    assert!(ended.get("reply_markup").is_none(), "{ended}");
    h.finish().await;
}

/// `/cancel` while kimi waits for an approval: kimi cancels the turn (the request
/// ends as cancelled), and the next message is a new turn, not a steer into the old.
#[tokio::test]
#[ignore = "needs the kimi backend: bash tests/backends/install.sh kimi, then cargo test -- --include-ignored"]
async fn cancel_ends_kimis_turn() {
    let Some(h) = start(&[shell("tc-1", "echo later"), text("A fresh turn.")]).await else {
        return;
    };
    h.person().say("start");
    let approval = h.person().message_with("Run command `echo later`").await;
    h.person().say("/cancel");
    let ended = h.person().message_shows(id_of(&approval), "Cancelled").await;
    assert!(ended.get("reply_markup").is_none(), "{ended}");
    // Kimi ended the turn without running the command.
    wait_until(|| async { (!kimi_records(&home(&h), "TurnEnd").is_empty()).then_some(()) }).await;
    assert!(kimi_records(&home(&h), "ToolResult").is_empty());
    // The tool status line shows the command did not run.
    h.person().message_with("⚙ tools: Shell ✗").await;
    h.person().say("again");
    h.person().message_with("A fresh turn.").await;
    let turns: Vec<Value> = kimi_records(&home(&h), "TurnBegin").into_iter().map(|t| t["user_input"].clone()).collect();
    assert_eq!(turns, [json!("start"), json!("again")]);
    h.finish().await;
}

// ---- SIGKILL at each point of a turn, the real binary ------------------------------

use bridge_process::BridgeProcess;

/// A bridge process on kimi with the scripted model playing `scripts`, everything
/// (store, kimi's home and work dir) under `dir`.
fn kimi_bridge(dir: &Path, scripts: &[String]) -> Option<BridgeProcess> {
    let venv = backends::installed("kimi")?;
    for sub in ["home", "work"] {
        std::fs::create_dir_all(dir.join(sub)).expect("mkdir");
    }
    std::fs::copy(backends::spec_dir("kimi").join("config.toml"), dir.join("config.toml")).expect("kimi config");
    std::fs::write(dir.join("scripts.json"), serde_json::to_string(scripts).expect("json")).expect("scripts");
    let path = |p: &str| dir.join(p).display().to_string();
    Some(BridgeProcess::start(
        &dir.join("bridge.db"),
        &[
            ("HITL_BRIDGE__BACKEND__KIND", "kimi".into()),
            ("HITL_BRIDGE__KIMI__COMMAND", venv.join("bin/kimi").display().to_string()),
            ("HITL_BRIDGE__KIMI__WORK_DIR", path("work")),
            ("HITL_BRIDGE__KIMI__CONFIG_FILE", path("config.toml")),
            // Inherited by kimi from the bridge.
            ("HOME", path("home")),
            ("KIMI_SCRIPTED_ECHO_SCRIPTS", path("scripts.json")),
        ],
    ))
}

/// Whether `pid` is a process that has not ended (a zombie has: it waits only for a
/// parent to read its status).
fn still_running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')))
}

/// The last lines of the newest log in `logs`, to say where a process hung.
fn log_tail(logs: &Path) -> String {
    let newest = std::fs::read_dir(logs).into_iter().flatten().flatten().max_by_key(|entry| entry.metadata().and_then(|m| m.modified()).ok());
    let Some(newest) = newest else { return format!("(no log in {})", logs.display()) };
    let text = std::fs::read_to_string(newest.path()).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

/// A bridge process whose kimi asks to run `scripts`' shell command, the request shown;
/// with the kimi processes running (`None` when kimi is not installed).
fn shell_request_shown(dir: &Path, scripts: &[String]) -> Option<(BridgeProcess, Vec<u32>)> {
    let mut bridge = kimi_bridge(dir, scripts)?;
    bridge.type_line("run it");
    bridge.expect("Shell? [a]pprove");
    let kimi = processes_in(&dir.join("work"));
    assert!(!kimi.is_empty(), "kimi runs");
    Some((bridge, kimi))
}

/// Killed while kimi's approval request is shown: kimi ends with the bridge (no
/// orphan goes on with the turn), the restarted bridge shows the request again, says
/// once that kimi's turn ended with the bridge, and the click is reported as not
/// delivered (no kimi process waits for it); the tool never runs.
#[test]
#[ignore = "needs the kimi backend: bash tests/backends/install.sh kimi, then cargo test -- --include-ignored"]
fn sigkill_while_the_request_is_shown_kimi_ends_and_the_click_is_not_delivered() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scripts = [shell("c1", "echo ran > ran.txt"), text("after")];
    let Some((bridge, kimi)) = shell_request_shown(dir.path(), &scripts) else { return };
    bridge.kill();
    // Kimi gets SIGINT as the bridge dies and exits within a second or two. On a loaded
    // CI machine it was seen to hang on its way out (its turn never ended); the restarted
    // bridge ends such a leftover before it starts anything, so none runs beside it.
    let killed = std::time::Instant::now();
    let deadline = killed + std::time::Duration::from_secs(10);
    while kimi.iter().any(|pid| still_running(*pid)) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    match kimi.iter().any(|pid| still_running(*pid)) {
        false => println!("kimi exited {} ms after the bridge was killed", killed.elapsed().as_millis()),
        true => println!("kimi still runs 10 s after the bridge was killed; its log ends:\n{}", log_tail(&dir.path().join("home/.kimi/logs"))),
    }

    let mut bridge = kimi_bridge(dir.path(), &scripts).expect("installed");
    bridge.expect("Shell? [a]pprove");
    let left = kimi.iter().filter(|pid| still_running(**pid)).collect::<Vec<_>>();
    assert!(left.is_empty(), "the kimi of the killed bridge still runs after the restart: {left:?}");
    bridge.type_line("a");
    bridge.expect("not delivered: the agent stopped waiting for this");
    std::thread::sleep(std::time::Duration::from_secs(1));
    assert!(!dir.path().join("work/ran.txt").exists(), "the tool never ran");
    let lines = bridge.drain(std::time::Duration::from_millis(500)).join("\n");
    assert_eq!(lines.matches("the bridge restarted while Kimi was working on your last message").count(), 1, "told once:\n{lines}");
    bridge.stop();
}

/// A kimi that does not exit on the SIGINT it gets when the bridge dies (stopped here,
/// as one stuck on its way out) is ended by the restarted bridge before the bridge
/// starts anything: after its grace, with SIGKILL.
#[test]
#[ignore = "needs the kimi backend: bash tests/backends/install.sh kimi, then cargo test -- --include-ignored"]
fn a_kimi_stuck_when_the_bridge_died_is_ended_by_the_restarted_bridge() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scripts = [shell("c1", "echo ran > ran.txt"), text("after")];
    let Some((bridge, kimi)) = shell_request_shown(dir.path(), &scripts) else { return };
    for pid in &kimi {
        assert!(std::process::Command::new("kill").args(["-STOP", &pid.to_string()]).status().expect("kill").success());
    }
    bridge.kill();
    std::thread::sleep(std::time::Duration::from_secs(1));
    assert!(kimi.iter().all(|pid| still_running(*pid)), "a stopped kimi outlives the SIGINT");

    let restarted = std::time::Instant::now();
    let mut bridge = kimi_bridge(dir.path(), &scripts).expect("installed");
    bridge.expect("Shell? [a]pprove");
    let left = kimi.iter().filter(|pid| still_running(**pid)).collect::<Vec<_>>();
    assert!(left.is_empty(), "the stuck kimi still runs after the restart: {left:?}");
    println!("the stuck kimi was ended and the request shown again {} ms after the restart", restarted.elapsed().as_millis());
    bridge.type_line("a");
    bridge.expect("not delivered: the agent stopped waiting for this");
    assert!(!dir.path().join("work/ran.txt").exists(), "the tool never ran");
    bridge.stop();
}

/// Killed right after the click, at several delays: the tool runs at most once, and
/// the chat says which happened: it ran (delivered before the kill) or the click was
/// not delivered (kimi died with the bridge before it read it).
#[test]
#[ignore = "needs the kimi backend: bash tests/backends/install.sh kimi, then cargo test -- --include-ignored"]
fn sigkill_right_after_the_click_runs_the_tool_at_most_once_and_says_which() {
    for delay_ms in [0u64, 100, 400] {
        let dir = tempfile::tempdir().expect("tempdir");
        let scripts = [shell("c1", "echo ran >> ran.txt"), text("after")];
        let Some(mut bridge) = kimi_bridge(dir.path(), &scripts) else { return };
        bridge.type_line("run it");
        bridge.expect("Shell? [a]pprove");
        bridge.type_line("a");
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        bridge.kill();

        let mut bridge = kimi_bridge(dir.path(), &scripts).expect("installed");
        let lines = bridge.drain(std::time::Duration::from_secs(4)).join("\n");
        let ran = std::fs::read_to_string(dir.path().join("work/ran.txt")).unwrap_or_default().lines().count();
        let still_shown = lines.contains("Shell? [a]pprove");
        println!("kimi: killed {delay_ms} ms after the click: tool ran {ran} time(s), request shown again: {still_shown}");
        assert!(ran <= 1, "delay {delay_ms} ms: the tool ran {ran} times");
        if ran == 0 && !still_shown {
            // The click was saved but never reached kimi: the card must say so.
            assert!(lines.contains("not delivered: the agent stopped waiting for this"), "delay {delay_ms} ms:\n{lines}");
        }
        bridge.stop();
    }
}
