//! ACP end to end: fake Telegram ↔ the bridge ↔ a real ACP agent,
//! `@zed-industries/claude-code-acp` (installed by `tests/backends/install.sh acp` at
//! the version `tests/backends/acp/package-lock.json` pins) ↔ the scripted Anthropic
//! Messages API the Claude Code tests use (`tests/backends/claude_code/
//! fake_anthropic.py`, standard library only). Every test asserts what the model saw
//! next (the tool result the agent built from the option the bridge chose) and what
//! the tool did in the work directory.

use support::backends;
use support::bridge_process;
use support::fake_telegram;
use support::scripted_model::{ScriptedModel, bash, result_text};
mod support;
use support::backend_bridge::unique;
use support::telegram_chat::{id_of, labels};

use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use fake_telegram::User;
use hitl_bridge::backend::acp::AcpSettings;
use serde_json::json;
use support::backend_bridge::{BackendBridge, processes_in};
use support::wait_until;

fn thao() -> User {
    User::new(1001, "Thảo", Some("en"))
}

/// The scripted model, started once for the whole test binary.
fn fake_model() -> &'static ScriptedModel {
    static MODEL: OnceLock<ScriptedModel> = OnceLock::new();
    MODEL.get_or_init(|| ScriptedModel::start(Path::new("python3"), &backends::spec_dir("claude_code").join("fake_anthropic.py")))
}

fn tool_id(key: &str) -> String {
    format!("toolu_{}", key.replace('-', "_"))
}

/// The environment claude-code-acp runs offline in: the scripted model, no network
/// beside it, and `IS_SANDBOX=1` (as root, Claude Code refuses to start without it).
fn agent_env(model: &ScriptedModel, home: &Path) -> Vec<(String, String)> {
    vec![
        ("ANTHROPIC_BASE_URL".into(), model.url.clone()),
        ("ANTHROPIC_API_KEY".into(), "dummy".into()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(), "1".into()),
        ("DISABLE_TELEMETRY".into(), "1".into()),
        ("DISABLE_AUTOUPDATER".into(), "1".into()),
        ("IS_SANDBOX".into(), "1".into()),
        ("HOME".into(), home.display().to_string()),
    ]
}

/// claude-code-acp in the test's work dir behind a bridge on the fake Telegram, where
/// Thảo has a private chat with the bot.
async fn start(extra: &[(&str, &str)]) -> Option<(BackendBridge, &'static ScriptedModel)> {
    let bin = backends::installed_npm("acp")?;
    let model = fake_model();
    let bridge = BackendBridge::on("acp", thao())
        .settings(extra)
        .prepare(move |settings, dir| {
            let home = dir.join("home");
            let work = dir.join("work");
            std::fs::create_dir_all(&home).expect("home");
            std::fs::create_dir_all(&work).expect("work");
            let acp = settings.backends.get_mut::<AcpSettings>();
            acp.command = bin.join("claude-code-acp").display().to_string();
            acp.args = Vec::new();
            acp.work_dir = work.display().to_string();
            acp.env = agent_env(model, &home).into_iter().collect();
        })
        .runs_in("work")
        .start()
        .await;
    Some((bridge, model))
}

/// Allow once: the card shows the tool call and one button per option the agent
/// offered; the agent is answered with its `allow` option, runs the command, and the
/// model sees its output.
#[tokio::test]
#[ignore = "needs the acp backend: bash tests/backends/install.sh acp, then cargo test -- --include-ignored"]
async fn allow_once_runs_the_command() {
    let Some((h, model)) = start(&[]).await else { return };
    let key = unique("allow");
    let id = tool_id(&key);
    model.script(&key,
        json!([[{"text": "I will make the file."}, bash(&id, "echo allowed > made.txt && cat made.txt", "Make the file")], [{"text": "The file is made."}]]),
    )
    .await;
    h.person().say(&format!("{key}: make it"));
    h.person().message_with("I will make the file.").await;
    let card = h.person().message_with("made.txt").await;
    let text = card["text"].as_str().unwrap();
    assert!(text.contains("execute"), "named by the tool's kind: {text}");
    assert!(text.contains("echo allowed &gt; made.txt &amp;&amp; cat made.txt"), "the raw input: {text}");
    assert!(text.contains("remembered by the agent for this session, not by hitl-bridge"), "what “always” means: {text}");
    // One button per option, in the agent's own words; then the comment every card has.
    let buttons = labels(&card);
    assert_eq!(buttons, ["✅ Allow", "🔓 Always Allow", "❌ Reject", "💬 Comment"], "an ACP agent runs what it asked or nothing: no Edit");
    assert_eq!(h.person().click(id_of(&card), "✅ Allow").await["text"], "Decision saved");
    h.person().message_with("The file is made.").await;
    assert_eq!(result_text(&model.tool_result(&key, &id).await), "allowed");
    assert_eq!(std::fs::read_to_string(h.work_dir().join("made.txt")).unwrap(), "allowed\n");
    h.finish().await;
}

/// Reject: the agent is answered with its `reject` option; the command never runs, and
/// claude-code-acp ends the turn there (as Claude Code does when a person says no),
/// so the model is not asked again.
#[tokio::test]
#[ignore = "needs the acp backend: bash tests/backends/install.sh acp, then cargo test -- --include-ignored"]
async fn reject_does_not_run_the_command() {
    let Some((h, model)) = start(&[]).await else { return };
    let key = unique("reject");
    let id = tool_id(&key);
    model.script(&key, json!([[bash(&id, "echo no > never.txt", "Never written")], [{"text": "Understood, not written."}]])).await;
    h.person().say(&format!("{key}: write it"));
    let card = h.person().message_with("never.txt").await;
    h.person().click(id_of(&card), "Reject").await;
    h.person().message_shows(id_of(&card), "❌ Rejected by Thảo").await;
    h.person().message_with("⚙ tools: Terminal ✗").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(model.requests(&key).await.len(), 1, "the turn ended at the rejection");
    assert!(!h.work_dir().join("never.txt").exists());
    h.finish().await;
}

/// “Always Allow”: the agent remembers it, so a second command of the same kind runs
/// without a second card.
#[tokio::test]
#[ignore = "needs the acp backend: bash tests/backends/install.sh acp, then cargo test -- --include-ignored"]
async fn always_allow_is_remembered_by_the_agent() {
    let Some((h, model)) = start(&[]).await else { return };
    let key = unique("always");
    let (first, second) = (format!("{}_a", tool_id(&key)), format!("{}_b", tool_id(&key)));
    model
        .script(
            &key,
            json!([[bash(&first, "touch one.txt", "First file")], [bash(&second, "touch two.txt", "Second file")], [{"text": "Both files are there."}]]),
        )
        .await;
    h.person().say(&format!("{key}: two files"));
    let card = h.person().message_with("touch one.txt").await;
    h.person().click(id_of(&card), "Always Allow").await;
    h.person().message_with("Both files are there.").await;
    assert!(h.work_dir().join("one.txt").exists() && h.work_dir().join("two.txt").exists());
    let cards = h.telegram().bot_messages(h.chat).into_iter().filter(|m| m["text"].as_str().is_some_and(|t| t.contains("touch two.txt"))).count();
    assert_eq!(cards, 0, "the second command was not asked about");
    h.finish().await;
}

/// An edit's card shows the file's diff; approved, the file is changed.
#[tokio::test]
#[ignore = "needs the acp backend: bash tests/backends/install.sh acp, then cargo test -- --include-ignored"]
async fn an_edit_shows_the_diff_of_the_file() {
    let Some((h, model)) = start(&[]).await else { return };
    let key = unique("diff");
    let id = tool_id(&key);
    let file = h.work_dir().join("notes.txt");
    std::fs::write(&file, "one\ntwo\nthree\n").unwrap();
    let (read_id, edit_id) = (format!("{id}_r"), format!("{id}_e"));
    model
        .script(
            &key,
            json!([
                [{"tool_use": {"id": read_id, "name": "Read", "input": {"file_path": file.display().to_string()}}}],
                [{"tool_use": {"id": edit_id, "name": "Edit", "input": {"file_path": file.display().to_string(), "old_string": "two", "new_string": "TWO"}}}],
                [{"text": "Edited."}],
            ]),
        )
        .await;
    h.person().say(&format!("{key}: edit notes"));
    let card = h.person().message_with("+TWO").await;
    let text = card["text"].as_str().unwrap();
    assert!(text.contains("edit") && text.contains("-two"), "the diff: {text}");
    h.person().click(id_of(&card), "✅ Allow").await;
    h.person().message_with("Edited.").await;
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\nTWO\nthree\n");
    h.finish().await;
}

/// /cancel while a permission request waits: the agent is answered `cancelled` and
/// `session/cancel` ends its turn; the command never runs, and the next message goes
/// on in the same conversation.
#[tokio::test]
#[ignore = "needs the acp backend: bash tests/backends/install.sh acp, then cargo test -- --include-ignored"]
async fn cancel_answers_cancelled_and_the_conversation_goes_on() {
    let Some((h, model)) = start(&[]).await else { return };
    let (key, next) = (unique("cancel"), unique("after-cancel"));
    let id = tool_id(&key);
    model.script(&key, json!([[bash(&id, "echo never > never.txt", "Never written")]])).await;
    model.script(&next, json!([[{"text": "Back after the cancel."}]])).await;
    h.person().say(&format!("{key}: start"));
    let card = h.person().message_with("never.txt").await;
    h.person().say("/cancel");
    h.person().message_shows(id_of(&card), "✖ Cancelled").await;
    h.person().say(&format!("{next}: again"));
    h.person().message_with("Back after the cancel.").await;
    let history = model.requests(&next).await[0]["messages"].to_string();
    assert!(history.contains(&format!("{key}: start")), "the same conversation: {history}");
    assert!(!h.work_dir().join("never.txt").exists());
    h.finish().await;
}

/// A request nobody decides is answered `cancelled` at its deadline: the card says it
/// timed out and the command never runs.
#[tokio::test]
#[ignore = "needs the acp backend: bash tests/backends/install.sh acp, then cargo test -- --include-ignored"]
async fn a_request_nobody_decides_is_cancelled_at_its_deadline() {
    let Some((h, model)) = start(&[("timeouts.approval_secs", "2")]).await else { return };
    let key = unique("deadline");
    let id = tool_id(&key);
    model.script(&key, json!([[bash(&id, "echo late > late.txt", "Too late")], [{"text": "Nobody answered."}]])).await;
    h.person().say(&format!("{key}: start"));
    let card = h.person().message_with("late.txt").await;
    h.person().message_shows(id_of(&card), "⌛ Expired").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!h.work_dir().join("late.txt").exists());
    h.finish().await;
}

/// An idle session's process is closed; the next message starts a new one that loads
/// the same ACP session (`session/load`), so the model sees the first exchange again,
/// and what the agent replays is not shown twice.
#[tokio::test]
#[ignore = "needs the acp backend: bash tests/backends/install.sh acp, then cargo test -- --include-ignored"]
async fn the_conversation_survives_a_process_restart_through_session_load() {
    let Some((h, model)) = start(&[("backend.idle_close_secs", "1")]).await else { return };
    let (first, second) = (unique("first"), unique("second"));
    model.script(&first, json!([[{"text": "First answer."}]])).await;
    model.script(&second, json!([[{"text": "Second answer."}]])).await;
    h.person().say(&format!("{first}: hello"));
    h.person().message_with("First answer.").await;
    assert!(!processes_in(&h.work_dir()).is_empty(), "the agent runs in the work dir");
    wait_until(|| async { processes_in(&h.work_dir()).is_empty().then_some(()) }).await;
    h.person().say(&format!("{second}: again"));
    h.person().message_with("Second answer.").await;
    let history = model.requests(&second).await[0]["messages"].to_string();
    assert!(history.contains(&format!("{first}: hello")) && history.contains("First answer."), "the loaded conversation: {history}");
    let shown = h.telegram().bot_messages(h.chat).into_iter().filter(|m| m["text"] == "First answer.").count();
    assert_eq!(shown, 1, "the replay is not shown again");
    h.finish().await;
}

// ---- SIGKILL while a permission request waits, the real binary ----------------------

use bridge_process::BridgeProcess;

fn acp_bridge(dir: &Path) -> Option<BridgeProcess> {
    let bin = backends::installed_npm("acp")?;
    let model = fake_model();
    let home = dir.join("home");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::create_dir_all(dir.join("work")).expect("work");
    let mut env: Vec<(&str, String)> = vec![
        ("HITL_BRIDGE__BACKEND__KIND", "acp".into()),
        ("HITL_BRIDGE__ACP__COMMAND", bin.join("claude-code-acp").display().to_string()),
        ("HITL_BRIDGE__ACP__ARGS", String::new()),
        ("HITL_BRIDGE__ACP__WORK_DIR", dir.join("work").display().to_string()),
    ];
    // The agent inherits the bridge's environment.
    let agent: Vec<(String, String)> = agent_env(model, &home);
    let agent: Vec<(&'static str, String)> = agent.into_iter().map(|(k, v)| (&*Box::leak(k.into_boxed_str()), v)).collect();
    env.extend(agent);
    Some(BridgeProcess::start(&dir.join("bridge.db"), &env))
}

/// Killed while a permission request is shown: the agent dies with the bridge and its
/// turn with it. The restarted bridge says so once; a click on the old card is not
/// delivered, the command never runs, and nothing is answered twice.
#[test]
#[ignore = "needs the acp backend: bash tests/backends/install.sh acp, then cargo test -- --include-ignored"]
fn sigkill_while_a_request_waits_then_nothing_runs_and_the_chat_is_told_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(mut bridge) = acp_bridge(dir.path()) else { return };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let model = fake_model();
    let key = unique("crash");
    let id = tool_id(&key);
    rt.block_on(model.script(&key, json!([[bash(&id, "echo ran > ran.txt", "Crash write")]])));
    bridge.type_line(&format!("{key}: start"));
    bridge.expect("execute? [a]pprove");
    bridge.kill();

    let mut bridge = acp_bridge(dir.path()).expect("installed");
    bridge.expect_within("execute? [a]pprove", Duration::from_secs(30));
    bridge.type_line("a");
    bridge.expect("not delivered: the agent stopped waiting for this");
    let lines = bridge.drain(Duration::from_secs(2)).join("\n");
    assert_eq!(lines.matches("the bridge restarted while the agent was working").count(), 1, "told once:\n{lines}");
    assert!(!dir.path().join("work/ran.txt").exists(), "the command never ran");
    let asked = rt.block_on(model.requests(&key));
    // The agent that died asked the model once more on its way out (its permission
    // stream closed: an error result); the message itself reached it once.
    let prompted = asked
        .iter()
        .filter(|r| {
            r["messages"].as_array().and_then(|m| m.last()).is_some_and(|m| m["role"] == "user" && m["content"].to_string().contains(&format!("{key}: start")))
        })
        .count();
    assert_eq!(prompted, 1, "the message was prompted once: {asked:?}");
    assert!(asked.iter().all(|r| r["messages"].to_string().matches(&format!("{key}: start")).count() == 1), "never twice in one conversation");
    bridge.stop();
}
