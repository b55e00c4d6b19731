//! ACP end to end with Gemini CLI: fake Telegram ↔ the bridge ↔ the real
//! `@google/gemini-cli` (`gemini --acp`, installed by `tests/backends/install.sh acp`
//! at the version `tests/backends/acp/package-lock.json` pins) ↔ a scripted Gemini API
//! (`tests/backends/acp/fake_gemini.py`, standard library only, through
//! `GOOGLE_GEMINI_BASE_URL`). Every test asserts what the model saw next (the
//! `functionResponse` Gemini CLI built from the option the bridge chose) and what the
//! tool did in the work directory.

use support::backends;
use support::bridge_process;
use support::fake_telegram;
use support::scripted_model::ScriptedModel;
mod support;
use support::backend_bridge::unique;
use support::telegram_chat::{id_of, labels};

use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use fake_telegram::User;
use hitl_bridge::backend::acp::AcpSettings;
use serde_json::{Value, json};
use support::backend_bridge::BackendBridge;

fn thao() -> User {
    User::new(1001, "Thảo", Some("en"))
}

/// The scripted Gemini API, started once for the whole test binary.
fn fake_gemini() -> &'static ScriptedModel {
    static MODEL: OnceLock<ScriptedModel> = OnceLock::new();
    MODEL.get_or_init(|| ScriptedModel::start(Path::new("python3"), &backends::spec_dir("acp").join("fake_gemini.py")))
}

fn shell(command: &str, description: &str) -> Value {
    json!({"call": {"name": "run_shell_command", "args": {"command": command, "description": description}}})
}

/// The `functionResponse` parts the model was sent, in the latest request that has one.
async fn function_responses(model: &ScriptedModel, key: &str) -> Vec<Value> {
    support::wait_until(|| async {
        let requests = model.requests(key).await;
        let found: Vec<Value> = requests
            .last()?
            .pointer("/contents")?
            .as_array()?
            .iter()
            .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
            .filter_map(|p| p.get("functionResponse").cloned())
            .collect();
        (!found.is_empty()).then_some(found)
    })
    .await
}

/// The environment Gemini CLI runs offline in: the scripted API, a dummy key, its
/// own home, and no relaunch into a second process.
fn agent_env(model: &ScriptedModel, home: &Path) -> Vec<(String, String)> {
    vec![
        ("GOOGLE_GEMINI_BASE_URL".into(), model.url.clone()),
        ("GEMINI_API_KEY".into(), "dummy".into()),
        ("GEMINI_CLI_NO_RELAUNCH".into(), "true".into()),
        ("HOME".into(), home.display().to_string()),
    ]
}

/// Gemini CLI in the test's work dir behind a bridge on the fake Telegram, where Thảo
/// has a private chat with the bot.
async fn start(extra: &[(&str, &str)]) -> Option<(BackendBridge, &'static ScriptedModel)> {
    let bin = backends::installed_npm("acp")?;
    let model = fake_gemini();
    let bridge = BackendBridge::on("acp", thao())
        .settings(extra)
        .prepare(move |settings, dir| {
            let (home, work) = (dir.join("home"), dir.join("work"));
            std::fs::create_dir_all(&home).expect("home");
            std::fs::create_dir_all(&work).expect("work");
            let acp = settings.backends.get_mut::<AcpSettings>();
            acp.command = bin.join("gemini").display().to_string();
            acp.args = vec!["--acp".into()];
            acp.work_dir = work.display().to_string();
            acp.env = agent_env(model, &home).into_iter().collect();
        })
        .runs_in("work")
        .start()
        .await;
    Some((bridge, model))
}

/// Allow: the card shows the command and Gemini CLI's own option names; the agent is
/// answered `proceed_once`, runs the command, and the model sees its output.
#[tokio::test]
#[ignore = "needs the acp backend: bash tests/backends/install.sh acp, then cargo test -- --include-ignored"]
async fn allow_runs_the_command() {
    let Some((h, model)) = start(&[]).await else { return };
    let key = unique("allow");
    model.script(&key, json!([[{"text": "I will make the file."}, shell("echo allowed > made.txt", "Make the file")], [{"text": "The file is made."}]])).await;
    h.person().say(&format!("{key}: make it"));
    let card = h.person().message_with("made.txt").await;
    let text = card["text"].as_str().unwrap();
    assert!(text.contains("execute") && text.contains("echo allowed &gt; made.txt"), "{text}");
    assert!(text.contains("(Make the file)"), "what Gemini CLI says about the call: {text}");
    assert_eq!(labels(&card), ["✅ Allow", "🔓 Allow for this session", "❌ Reject", "💬 Comment"]);
    h.person().click(id_of(&card), "✅ Allow").await;
    h.person().message_with("The file is made.").await;
    assert_eq!(std::fs::read_to_string(h.work_dir().join("made.txt")).unwrap(), "allowed\n");
    let responses = function_responses(model, &key).await;
    assert_eq!(responses[0]["name"], "run_shell_command", "{responses:?}");
    h.finish().await;
}

/// Reject: the agent is answered `cancel` (Gemini CLI's reject option); the command
/// never runs and the model is told the call was refused.
#[tokio::test]
#[ignore = "needs the acp backend: bash tests/backends/install.sh acp, then cargo test -- --include-ignored"]
async fn reject_does_not_run_the_command() {
    let Some((h, model)) = start(&[]).await else { return };
    let key = unique("reject");
    model.script(&key, json!([[shell("echo no > never.txt", "Never written")], [{"text": "Understood, not written."}]])).await;
    h.person().say(&format!("{key}: write it"));
    let card = h.person().message_with("never.txt").await;
    h.person().click(id_of(&card), "Reject").await;
    h.person().message_shows(id_of(&card), "❌ Rejected by Thảo").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!h.work_dir().join("never.txt").exists());
    h.finish().await;
}

/// "Allow for this session": Gemini CLI remembers it, so a second command of the same
/// kind runs without a second card.
#[tokio::test]
#[ignore = "needs the acp backend: bash tests/backends/install.sh acp, then cargo test -- --include-ignored"]
async fn allow_for_this_session_is_remembered_by_the_agent() {
    let Some((h, model)) = start(&[]).await else { return };
    let key = unique("always");
    model.script(&key, json!([[shell("touch one.txt", "First file")], [shell("touch two.txt", "Second file")], [{"text": "Both files are there."}]])).await;
    h.person().say(&format!("{key}: two files"));
    let card = h.person().message_with("touch one.txt").await;
    h.person().click(id_of(&card), "Allow for this session").await;
    h.person().message_with("Both files are there.").await;
    assert!(h.work_dir().join("one.txt").exists() && h.work_dir().join("two.txt").exists());
    let cards = h
        .telegram()
        .bot_messages(h.chat)
        .into_iter()
        .filter(|m| m["text"].as_str().is_some_and(|t| t.contains("touch two.txt") && t.contains("Approval")))
        .count();
    assert_eq!(cards, 0, "the second command was not asked about");
    h.finish().await;
}

/// An edit's card shows the file's diff; allowed, the file is changed.
#[tokio::test]
#[ignore = "needs the acp backend: bash tests/backends/install.sh acp, then cargo test -- --include-ignored"]
async fn an_edit_shows_the_diff_of_the_file() {
    let Some((h, model)) = start(&[]).await else { return };
    let key = unique("diff");
    let file = h.work_dir().join("notes.txt");
    std::fs::write(&file, "one\ntwo\nthree\n").unwrap();
    let edit = json!({"call": {"name": "replace", "args": {"file_path": file.display().to_string(), "old_string": "two", "new_string": "TWO", "instruction": "Capitalise two"}}});
    model.script(&key, json!([[edit], [{"text": "Edited."}]])).await;
    h.person().say(&format!("{key}: edit notes"));
    let card = h.person().message_with("+TWO").await;
    let text = card["text"].as_str().unwrap();
    assert!(text.contains("edit") && text.contains("-two"), "the diff: {text}");
    h.person().click(id_of(&card), "✅ Allow").await;
    h.person().message_with("Edited.").await;
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\nTWO\nthree\n");
    h.finish().await;
}

/// /cancel while a permission request waits: the agent is answered `cancelled` and its
/// turn cancelled; the command never runs, and the next message goes on.
#[tokio::test]
#[ignore = "needs the acp backend: bash tests/backends/install.sh acp, then cargo test -- --include-ignored"]
async fn cancel_answers_cancelled_and_the_conversation_goes_on() {
    let Some((h, model)) = start(&[]).await else { return };
    let (key, next) = (unique("cancel"), unique("after-cancel"));
    model.script(&key, json!([[shell("echo never > never.txt", "Never written")]])).await;
    model.script(&next, json!([[{"text": "Back after the cancel."}]])).await;
    h.person().say(&format!("{key}: start"));
    let card = h.person().message_with("never.txt").await;
    h.person().say("/cancel");
    h.person().message_shows(id_of(&card), "✖ Cancelled").await;
    h.person().say(&format!("{next}: again"));
    h.person().message_with("Back after the cancel.").await;
    let history = model.requests(&next).await[0]["contents"].to_string();
    assert!(history.contains(&format!("{key}: start")), "the same conversation: {history}");
    assert!(!h.work_dir().join("never.txt").exists());
    h.finish().await;
}

// ---- SIGKILL while a permission request waits, the real binary ----------------------

use bridge_process::BridgeProcess;

fn gemini_bridge(dir: &Path) -> Option<BridgeProcess> {
    let bin = backends::installed_npm("acp")?;
    let home = dir.join("home");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::create_dir_all(dir.join("work")).expect("work");
    let mut env: Vec<(String, String)> = vec![
        ("HITL_BRIDGE__BACKEND__KIND".into(), "acp".into()),
        ("HITL_BRIDGE__ACP__COMMAND".into(), bin.join("gemini").display().to_string()),
        ("HITL_BRIDGE__ACP__ARGS".into(), "--acp".into()),
        ("HITL_BRIDGE__ACP__WORK_DIR".into(), dir.join("work").display().to_string()),
    ];
    // The agent inherits the bridge's environment.
    env.extend(agent_env(fake_gemini(), &home));
    let env: Vec<(&str, String)> = env.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    Some(BridgeProcess::start(&dir.join("bridge.db"), &env))
}

/// Killed while a permission request is shown: Gemini CLI dies with the bridge and its
/// turn with it. The restarted bridge says so once; a click on the old card is not
/// delivered and the command never runs.
#[test]
#[ignore = "needs the acp backend: bash tests/backends/install.sh acp, then cargo test -- --include-ignored"]
fn sigkill_while_a_request_waits_then_nothing_runs_and_the_chat_is_told_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(mut bridge) = gemini_bridge(dir.path()) else { return };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let key = unique("crash");
    rt.block_on(fake_gemini().script(&key, json!([[shell("echo ran > ran.txt", "Crash write")]])));
    bridge.type_line(&format!("{key}: start"));
    bridge.expect("execute? [a]pprove");
    bridge.kill();

    let mut bridge = gemini_bridge(dir.path()).expect("installed");
    bridge.expect_within("execute? [a]pprove", Duration::from_secs(30));
    bridge.type_line("a");
    bridge.expect("not delivered: the agent stopped waiting for this");
    let lines = bridge.drain(Duration::from_secs(2)).join("\n");
    assert_eq!(lines.matches("the bridge restarted while the agent was working").count(), 1, "told once:\n{lines}");
    assert!(!dir.path().join("work/ran.txt").exists(), "the command never ran");
    bridge.stop();
}
