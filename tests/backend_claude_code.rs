//! Claude Code end to end: fake Telegram ↔ the bridge ↔ the real Claude Code CLI
//! (bundled by `claude-agent-sdk`, installed by `tests/backends/install.sh
//! claude_code`) ↔ a scripted Anthropic Messages API (`tests/backends/claude_code/
//! fake_anthropic.py`, one per test binary). Every test asserts what the model saw
//! next: the `tool_result` Claude Code built from the bridge's control response (the
//! tool's output with the approved or edited input, the deny message, the answers).

use support::backends;
use support::bridge_process;
use support::fake_telegram;
use support::scripted_model::{ScriptedModel, bash, result_text};
mod support;
use support::backend_bridge::unique;
use support::telegram_chat::id_of;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

use fake_telegram::User;
use hitl_bridge::backend::claude_code::ClaudeCodeSettings;
use serde_json::{Value, json};
use support::backend_bridge::{BackendBridge, processes_in};
use support::wait_until;

fn thao() -> User {
    User::new(1001, "Thảo", Some("en"))
}

/// The scripted model, started once for the whole test binary.
fn fake_model(venv: &Path) -> &'static ScriptedModel {
    static MODEL: OnceLock<ScriptedModel> = OnceLock::new();
    MODEL.get_or_init(|| ScriptedModel::start(&venv.join("bin/python"), &backends::spec_dir("claude_code").join("fake_anthropic.py")))
}

/// The bundled CLI inside the venv's claude_agent_sdk package.
fn bundled_cli(venv: &Path) -> PathBuf {
    let lib = venv.join("lib");
    let python = std::fs::read_dir(&lib)
        .expect("venv lib")
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().starts_with("python"))
        .expect("lib/python3.x");
    let cli = python.path().join("site-packages/claude_agent_sdk/_bundled/claude");
    assert!(cli.exists(), "no bundled CLI at {}", cli.display());
    cli
}

/// Claude Code in the test's work dir, its fake model, and a bridge in front of it on
/// the fake Telegram, where Thảo has a private chat with the bot. (`installed` fails
/// the test when Claude Code is not installed.)
async fn start(extra: &[(&str, &str)]) -> Option<(BackendBridge, &'static ScriptedModel)> {
    let venv = backends::installed("claude_code")?;
    let model = fake_model(&venv);
    let bridge = BackendBridge::on("claude_code", thao())
        .settings(extra)
        .prepare(move |settings, dir| {
            let home = dir.join("home");
            std::fs::create_dir_all(&home).expect("home");
            let cc = settings.backends.get_mut::<ClaudeCodeSettings>();
            cc.cli_path = bundled_cli(&venv).display().to_string();
            cc.work_dir = dir.join("work").display().to_string();
            cc.env = vec![
                format!("ANTHROPIC_BASE_URL={}", model.url),
                "ANTHROPIC_API_KEY=dummy".into(),
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1".into(),
                "DISABLE_TELEMETRY=1".into(),
                "DISABLE_AUTOUPDATER=1".into(),
                format!("HOME={}", home.display()),
            ];
        })
        // Its Claude Code processes end with the bridge.
        .runs_in("work")
        .start()
        .await;
    Some((bridge, model))
}

/// Approve: the CLI runs the tool with its own input (`allow` + `updatedInput` =
/// the input), and the model sees its output; the chat shows Claude's text, the
/// request with its arguments, the decision, and the final answer.
#[tokio::test]
#[ignore = "needs the claude_code backend: bash tests/backends/install.sh claude_code, then cargo test -- --include-ignored"]
async fn approve_runs_the_tool_and_the_model_sees_its_output() {
    let Some((h, model)) = start(&[]).await else { return };
    let key = unique("approve");
    let id = format!("toolu_{}", key.replace('-', "_"));
    model
        .script(
            &key,
            json!([
                [{"text": "I will write the file."}, bash(&id, "echo approved > out.txt && cat out.txt", "Write out.txt")],
                [{"text": "Done: the file says approved."}],
            ]),
        )
        .await;
    h.person().say(&format!("{key}: write the file"));
    h.person().message_with("I will write the file.").await;
    let request = h.person().message_with("cat out.txt").await;
    let text = request["text"].as_str().unwrap();
    assert!(text.contains("echo approved &gt; out.txt &amp;&amp; cat out.txt"), "{text}");
    assert!(text.contains("Write out.txt"), "the description is shown: {text}");
    assert_eq!(h.person().click(id_of(&request), "Approve").await["text"], "Decision saved");
    h.person().message_shows(id_of(&request), "✅ Approve").await;
    h.person().message_with("Done: the file says approved.").await;
    let result = model.tool_result(&key, &id).await;
    assert_eq!(result_text(&result), "approved");
    assert_ne!(result["is_error"], true, "{result}");
    assert_eq!(std::fs::read_to_string(h.work_dir().join("out.txt")).unwrap(), "approved\n");
    h.finish().await;
}

/// Edit: the JSON typed in the chat is the `updatedInput` the tool runs with.
#[tokio::test]
#[ignore = "needs the claude_code backend: bash tests/backends/install.sh claude_code, then cargo test -- --include-ignored"]
async fn edit_runs_the_tool_with_the_edited_input() {
    let Some((h, model)) = start(&[]).await else { return };
    let key = unique("edit");
    let id = format!("toolu_{}", key.replace('-', "_"));
    model
        .script(
            &key,
            json!([
                [bash(&id, "echo original > out.txt && cat out.txt", "Write out.txt")],
                [{"text": "Edited run finished."}],
            ]),
        )
        .await;
    h.person().say(&format!("{key}: write it"));
    let request = h.person().message_with("echo original").await;
    h.person().click(id_of(&request), "Edit").await;
    h.person()
        .reply_to_prompt(
            "Reply with the new arguments as a JSON object.",
            r#"{"command":"echo edited > out.txt && cat out.txt","description":"Write the edited file"}"#,
        )
        .await;
    h.person().message_with("Edited run finished.").await;
    let result = model.tool_result(&key, &id).await;
    assert_eq!(result_text(&result), "edited");
    assert_eq!(std::fs::read_to_string(h.work_dir().join("out.txt")).unwrap(), "edited\n");
    h.finish().await;
}

/// Reject denies with the configured message; a comment denies with the person's own
/// words. Neither tool runs, and the model sees each message as an error result.
#[tokio::test]
#[ignore = "needs the claude_code backend: bash tests/backends/install.sh claude_code, then cargo test -- --include-ignored"]
async fn reject_and_comment_deny_with_a_message() {
    let Some((h, model)) = start(&[("claude_code.deny_message", "Not now, says the bridge.")]).await else { return };
    let key = unique("deny");
    let (first, second) = (format!("toolu_{}_a", key.replace('-', "_")), format!("toolu_{}_b", key.replace('-', "_")));
    model
        .script(
            &key,
            json!([
                [bash(&first, "echo one > one.txt", "First write")],
                [bash(&second, "echo two > two.txt", "Second write")],
                [{"text": "Understood, nothing was written."}],
            ]),
        )
        .await;
    h.person().say(&format!("{key}: write two files"));
    let request = h.person().message_with("First write").await;
    h.person().click(id_of(&request), "Reject").await;
    let result = model.tool_result(&key, &first).await;
    assert_eq!(result_text(&result), "Not now, says the bridge.");
    assert_eq!(result["is_error"], true);

    let request = h.person().message_with("Second write").await;
    h.person().click(id_of(&request), "Comment").await;
    h.person().reply_to_prompt("Reply with your comment.", "Use the staging bucket instead.").await;
    h.person().message_with("Understood, nothing was written.").await;
    let result = model.tool_result(&key, &second).await;
    assert_eq!(result_text(&result), "Use the staging bucket instead.");
    assert_eq!(result["is_error"], true);
    assert!(!h.work_dir().join("one.txt").exists() && !h.work_dir().join("two.txt").exists());
    h.finish().await;
}

/// AskUserQuestion: Claude's questions are the bridge's own shape; a multi-select and
/// a typed "Other" answer go back as `updatedInput.answers`, which Claude Code turns
/// into the tool result the model reads.
#[tokio::test]
#[ignore = "needs the claude_code backend: bash tests/backends/install.sh claude_code, then cargo test -- --include-ignored"]
async fn ask_user_question_multi_select_and_free_text_answers() {
    let Some((h, model)) = start(&[]).await else { return };
    let key = unique("ask");
    let id = format!("toolu_{}", key.replace('-', "_"));
    let questions = json!({"questions": [
        {"question": "Which colours?", "header": "Colours", "multiSelect": true, "options": [
            {"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cold"}, {"label": "Green", "description": "calm"}]},
        {"question": "Which size?", "header": "Size", "multiSelect": false, "options": [
            {"label": "Small", "description": "S"}, {"label": "Large", "description": "L"}]},
    ]});
    model
        .script(
            &key,
            json!([
                [{"tool_use": {"id": id, "name": "AskUserQuestion", "input": questions}}],
                [{"text": "Thanks for choosing."}],
            ]),
        )
        .await;
    h.person().say(&format!("{key}: ask me"));
    let m = h.person().message_with("Which colours?").await;
    let id_q = id_of(&m);
    h.person().click(id_q, "Red").await;
    h.person().message_shows(id_q, "→ Red").await;
    h.person().click(id_q, "Green").await;
    h.person().message_shows(id_q, "→ Red, Green").await;
    h.person().click(id_q, "Done").await;
    h.person().message_shows(id_q, "Which size?").await;
    h.person().click(id_q, "Other").await;
    h.person().reply_to_prompt("Reply with your answer", "Medium").await;
    h.person().message_shows(id_q, "Your answers").await;
    h.person().click(id_q, "Submit").await;
    h.person().message_with("Thanks for choosing.").await;
    // Claude Code words the result around the answers (the wording changes with
    // the answers, e.g. typed text); the answers are what the bridge sent.
    let result = result_text(&model.tool_result(&key, &id).await);
    assert!(result.contains(r#""Which colours?"="Red, Green", "Which size?"="Medium""#), "{result}");
    h.finish().await;
}

/// An idle session's process is closed; the next message starts a new one that
/// resumes the same Claude conversation (`--resume`), so the model sees the first
/// exchange again.
#[tokio::test]
#[ignore = "needs the claude_code backend: bash tests/backends/install.sh claude_code, then cargo test -- --include-ignored"]
async fn the_conversation_survives_a_process_restart() {
    let Some((h, model)) = start(&[("backend.idle_close_secs", "1")]).await else { return };
    let (first, second) = (unique("first"), unique("second"));
    model.script(&first, json!([[{"text": "First answer."}]])).await;
    model.script(&second, json!([[{"text": "Second answer."}]])).await;
    h.person().say(&format!("{first}: hello"));
    h.person().message_with("First answer.").await;
    assert!(!processes_in(&h.work_dir()).is_empty(), "Claude Code runs in the work dir");
    wait_until(|| async { processes_in(&h.work_dir()).is_empty().then_some(()) }).await;
    h.person().say(&format!("{second}: again"));
    h.person().message_with("Second answer.").await;
    let requests = model.requests(&second).await;
    let history = requests[0]["messages"].to_string();
    assert!(history.contains(&format!("{first}: hello")) && history.contains("First answer."), "the resumed conversation: {history}");
    // The resumed process does not replay the old turn into the chat.
    let shown = h.telegram().bot_messages(h.chat).into_iter().filter(|m| m["text"] == "First answer.").count();
    assert_eq!(shown, 1);
    h.finish().await;
}

/// /cancel interrupts the turn: Claude Code withdraws its permission request, the
/// request shows cancelled, the tool never runs, and the interrupted turn's end is not
/// reported as an error. The next message continues the same conversation.
#[tokio::test]
#[ignore = "needs the claude_code backend: bash tests/backends/install.sh claude_code, then cargo test -- --include-ignored"]
async fn cancel_interrupts_the_turn_without_an_error() {
    let Some((h, model)) = start(&[]).await else { return };
    let (key, next) = (unique("cancel"), unique("after-cancel"));
    let id = format!("toolu_{}", key.replace('-', "_"));
    model.script(&key, json!([[bash(&id, "echo never > never.txt", "Never written")]])).await;
    model.script(&next, json!([[{"text": "Back after the cancel."}]])).await;
    h.person().say(&format!("{key}: start"));
    let request = h.person().message_with("Never written").await;
    h.person().say("/cancel");
    h.person().message_shows(id_of(&request), "✖ Cancelled").await;
    h.person().say(&format!("{next}: go on"));
    h.person().message_with("Back after the cancel.").await;
    let history = model.requests(&next).await[0]["messages"].to_string();
    assert!(history.contains(&id), "the cancelled tool call is in the continued conversation: {history}");
    assert!(!h.work_dir().join("never.txt").exists());
    let errors: Vec<Value> =
        h.telegram().bot_messages(h.chat).into_iter().filter(|m| m["text"].as_str().is_some_and(|t| t.contains("reported an error"))).collect();
    assert!(errors.is_empty(), "{errors:?}");
    h.finish().await;
}

/// A bridge restart ends the process that asked: the request stays in the chat, the
/// new process resumes the conversation (its `--session-id` is refused as in use, so
/// `--resume` follows), and a late click is shown as not delivered (the agent stopped
/// waiting for it) instead of running the tool.
#[tokio::test]
#[ignore = "needs the claude_code backend: bash tests/backends/install.sh claude_code, then cargo test -- --include-ignored"]
async fn a_reply_after_a_bridge_restart_is_not_delivered_and_the_conversation_goes_on() {
    let Some((mut h, model)) = start(&[]).await else { return };
    let (key, next) = (unique("restart"), unique("after-restart"));
    let id = format!("toolu_{}", key.replace('-', "_"));
    model.script(&key, json!([[bash(&id, "echo late > late.txt", "Late write")]])).await;
    model.script(&next, json!([[{"text": "Resumed after the restart."}]])).await;
    h.person().say(&format!("{key}: start"));
    let request = h.person().message_with("Late write").await;
    h.restart_bridge().await;
    // The pending request keeps the session connected: a new process starts.
    wait_until(|| async { (!processes_in(&h.work_dir()).is_empty()).then_some(()) }).await;
    h.person().click(id_of(&request), "Approve").await;
    h.person().message_shows(id_of(&request), "not delivered: the agent stopped waiting for this").await;
    h.person().say(&format!("{next}: go on"));
    h.person().message_with("Resumed after the restart.").await;
    let history = model.requests(&next).await[0]["messages"].to_string();
    assert!(history.contains(&format!("{key}: start")) && history.contains(&id), "the resumed conversation: {history}");
    assert!(!h.work_dir().join("late.txt").exists(), "the tool never ran");
    // The model was asked once for the first message: it was proven read before the
    // restart (the ping after it was answered), so the new process did not get it
    // again, and the old one was interrupted on its way out instead of answering its
    // open permission request with an error and asking the model again.
    assert_eq!(model.requests(&key).await.len(), 1);
    h.finish().await;
}

// ---------------------------------------------------------------------------------
// Claude Code as an MCP client: its permission prompts routed to the chat through the
// bridge's /mcp (`--permission-prompt-tool mcp__hitl__approval_prompt`).

/// Runs `claude -p` (the bundled CLI, the scripted model) with the bridge's `/mcp` as
/// MCP server `hitl` and its permission prompts through `approval_prompt`, in `work`;
/// returns the CLI's JSON result once it exits.
async fn claude_with_mcp(h: &BackendBridge, prompt: &str, work: &Path) -> tokio::task::JoinHandle<Value> {
    let venv = backends::installed("claude_code").expect("installed");
    let base = format!("http://{}", h.app().http_addr().expect("http listener"));
    let config = json!({"mcpServers": {"hitl": {"type": "http", "url": format!("{base}/mcp"), "headers": {"Authorization": "Bearer mcp-secret"}}}});
    let mut command = tokio::process::Command::new(bundled_cli(&venv));
    command
        .args([
            "-p",
            prompt,
            "--output-format",
            "json",
            "--debug",
            "--mcp-config",
            &config.to_string(),
            "--permission-prompt-tool",
            "mcp__hitl__approval_prompt",
        ])
        .current_dir(work)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(work.join("claude.stderr")).expect("stderr file"))
        .kill_on_drop(true);
    for pair in &h.settings.backends.get::<ClaudeCodeSettings>().env {
        let (name, value) = pair.split_once('=').expect("NAME=value");
        command.env(name, value);
    }
    let child = command.spawn().expect("start claude");
    let stderr = work.join("claude.stderr");
    let debug_log = h.dir.path().join("home/.claude/debug/latest");
    tokio::spawn(async move {
        let output = tokio::time::timeout(Duration::from_secs(90), child.wait_with_output())
            .await
            .unwrap_or_else(|_| {
                let log = std::fs::read_to_string(&debug_log).unwrap_or_default();
                let hitl: Vec<&str> = log.lines().filter(|l| l.contains("hitl") || l.contains("ERROR") || l.contains("ermission")).collect();
                panic!("claude did not finish; its stderr:\n{}\nits log:\n{}", std::fs::read_to_string(&stderr).unwrap_or_default(), hitl.join("\n"))
            })
            .expect("claude ran");
        let stdout = String::from_utf8_lossy(&output.stdout);
        serde_json::from_str(stdout.trim()).unwrap_or_else(|_| panic!("not JSON: {stdout}\nstderr: {}", std::fs::read_to_string(&stderr).unwrap_or_default()))
    })
}

/// Claude Code asks to run a Bash command that writes a file; the card appears in the
/// Telegram chat through `/mcp`: Approve → the file exists; a Comment → it does not and
/// the model got the comment; Reject → it does not; Edit → the edited command ran.
#[tokio::test]
#[ignore = "needs the claude_code backend: bash tests/backends/install.sh claude_code, then cargo test -- --include-ignored"]
async fn claude_codes_permission_prompts_go_to_the_chat_over_mcp() {
    let Some((mut h, model)) = start(&[]).await else { return };
    h.settings.http.api_tokens = vec!["claude:mcp-secret".into()];
    h.settings.mcp.default_targets = vec![format!("telegram:{}", h.chat)];
    h.restart_bridge().await;
    let work = h.dir.path().join("mcp-work");
    std::fs::create_dir_all(&work).unwrap();

    // Approve.
    let key = unique("mcp-approve");
    let id = format!("toolu_{}", key.replace('-', "_"));
    model.script(&key, json!([[bash(&id, "echo approved > approved.txt", "Write approved.txt")], [{"text": "Wrote it."}]])).await;
    let run = claude_with_mcp(&h, &format!("{key}: write the file"), &work).await;
    let card = h.person().message_with("echo approved").await;
    h.person().click(id_of(&card), "Approve").await;
    let result = run.await.unwrap();
    assert_eq!(result["result"], "Wrote it.", "{result}");
    assert_eq!(std::fs::read_to_string(work.join("approved.txt")).unwrap(), "approved\n");

    // Comment: denied with the commenter's words, which the model reads.
    let key = unique("mcp-comment");
    let id = format!("toolu_{}", key.replace('-', "_"));
    model.script(&key, json!([[bash(&id, "echo no > commented.txt", "Write commented.txt")], [{"text": "Understood, staging."}]])).await;
    let run = claude_with_mcp(&h, &format!("{key}: write the file"), &work).await;
    let card = h.person().message_with("commented.txt").await;
    h.person().click(id_of(&card), "Comment").await;
    h.person().reply_to_prompt("Reply with your comment.", "Use the staging bucket instead.").await;
    assert_eq!(run.await.unwrap()["result"], "Understood, staging.");
    let denied = model.tool_result(&key, &id).await;
    assert!(result_text(&denied).contains("Use the staging bucket instead."), "{denied}");
    assert!(!work.join("commented.txt").exists());

    // Reject: denied with the approver's name, and the tool never runs.
    let key = unique("mcp-reject");
    let id = format!("toolu_{}", key.replace('-', "_"));
    model.script(&key, json!([[bash(&id, "echo no > refused.txt", "Write refused.txt")], [{"text": "Understood."}]])).await;
    let run = claude_with_mcp(&h, &format!("{key}: write the file"), &work).await;
    let card = h.person().message_with("refused.txt").await;
    h.person().click(id_of(&card), "Reject").await;
    assert_eq!(run.await.unwrap()["result"], "Understood.");
    let denied = model.tool_result(&key, &id).await;
    assert!(result_text(&denied).contains("Rejected by Thảo."), "{denied}");
    assert!(!work.join("refused.txt").exists());

    // Edit.
    let key = unique("mcp-edit");
    let id = format!("toolu_{}", key.replace('-', "_"));
    model.script(&key, json!([[bash(&id, "echo original > edited.txt", "Write edited.txt")], [{"text": "Edited run finished."}]])).await;
    let run = claude_with_mcp(&h, &format!("{key}: write the file"), &work).await;
    let card = h.person().message_with("echo original").await;
    h.person().click(id_of(&card), "Edit").await;
    h.person()
        .reply_to_prompt("Reply with the new arguments as a JSON object.", r#"{"command":"echo edited > edited.txt","description":"Write the edited file"}"#)
        .await;
    assert_eq!(run.await.unwrap()["result"], "Edited run finished.");
    assert_eq!(std::fs::read_to_string(work.join("edited.txt")).unwrap(), "edited\n");
    h.finish().await;
}

// ---- SIGKILL at each point of a turn, the real binary ------------------------------

use bridge_process::BridgeProcess;

/// A bridge process on Claude Code (through the proof-withholding wrapper, which
/// passes everything while `flag` does not exist) with the scripted model; its
/// store, work dirs and Claude's home under `dir`.
fn claude_bridge(dir: &Path, flag: &Path) -> Option<BridgeProcess> {
    let venv = backends::installed("claude_code")?;
    let model = fake_model(&venv);
    let wrapper = dir.join("claude-withholding");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec {} {} {} \"$@\"\n",
            venv.join("bin/python").display(),
            backends::spec_dir("claude_code").join("withhold_proofs.py").display(),
            bundled_cli(&venv).display()
        ),
    )
    .expect("wrapper");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let home = dir.join("home");
    std::fs::create_dir_all(&home).expect("home");
    Some(BridgeProcess::start(
        &dir.join("bridge.db"),
        &[
            ("HITL_BRIDGE__BACKEND__KIND", "claude_code".into()),
            ("HITL_BRIDGE__CLAUDE_CODE__CLI_PATH", wrapper.display().to_string()),
            ("HITL_BRIDGE__CLAUDE_CODE__WORK_DIR", dir.join("work").display().to_string()),
            ("WITHHOLD_PROOFS_FLAG", flag.display().to_string()),
            ("ANTHROPIC_BASE_URL", model.url.clone()),
            ("ANTHROPIC_API_KEY", "dummy".into()),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
            ("DISABLE_TELEMETRY", "1".into()),
            ("DISABLE_AUTOUPDATER", "1".into()),
            ("HOME", home.display().to_string()),
        ],
    ))
}

/// The user entries of every transcript under `projects`, as (uuid, content).
fn transcript_users(projects: &Path) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for project in std::fs::read_dir(projects).into_iter().flatten().flatten() {
        for file in std::fs::read_dir(project.path()).into_iter().flatten().flatten() {
            for line in std::fs::read_to_string(file.path()).unwrap_or_default().lines() {
                let entry: Value = serde_json::from_str(line).unwrap_or_default();
                if entry["type"] == "user" {
                    found.push((entry["uuid"].as_str().unwrap_or("").to_owned(), entry["message"]["content"].to_string()));
                }
            }
        }
    }
    found
}

/// Killed after Claude Code read a message (it answered, and its transcript holds the
/// message's uuid) but before the bridge had the proof: the restarted bridge finds the
/// message in the transcript and does not send it again, so the model is asked once.
#[test]
#[ignore = "needs the claude_code backend: bash tests/backends/install.sh claude_code, then cargo test -- --include-ignored"]
fn sigkill_after_claude_code_read_the_message_does_not_run_it_twice() {
    let dir = tempfile::tempdir().expect("tempdir");
    let flag = dir.path().join("withhold");
    let Some(mut bridge) = claude_bridge(dir.path(), &flag) else { return };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let venv = backends::installed("claude_code").expect("installed");
    let model = fake_model(&venv);
    let key = unique("crash-msg");
    rt.block_on(model.script(&key, json!([[{"text": "Answered once."}]])));
    bridge.type_line("/new");
    bridge.expect("· new session ");
    std::fs::write(&flag, "").expect("flag");
    bridge.type_line(&format!("{key}: start"));
    bridge.expect("Answered once.");
    bridge.kill();
    let recorded = transcript_users(&dir.path().join("home/.claude/projects"));

    std::fs::remove_file(&flag).expect("flag");
    let restarted = std::time::Instant::now();
    let mut bridge = claude_bridge(dir.path(), &flag).expect("installed");
    // The session has work (the unproven message), so a new process starts and resumes.
    let transcripts = dir.path().join("home/.claude/projects");
    assert!(transcripts.exists(), "Claude Code keeps its transcripts under {}", transcripts.display());
    std::thread::sleep(Duration::from_secs(3));
    let lines = bridge.drain(Duration::from_millis(200)).join("\n");
    println!(
        "claude_code: killed after the message; {:?} after the restart the model had {} request(s)",
        restarted.elapsed(),
        rt.block_on(model.requests(&key)).len()
    );
    assert_eq!(
        rt.block_on(model.requests(&key)).len(),
        1,
        "the message ran once; the transcript's user entries before the restart: {recorded:?}; the restarted bridge printed:\n{lines}"
    );
    assert!(!lines.contains("Answered once."), "no second answer:\n{lines}");
    bridge.stop();
}

/// Killed while a permission request is shown: the process that asked is gone with
/// the bridge; after the restart the click is reported as not delivered (the agent
/// stopped waiting for it), the tool never runs, and nothing is asked twice.
#[test]
#[ignore = "needs the claude_code backend: bash tests/backends/install.sh claude_code, then cargo test -- --include-ignored"]
fn sigkill_while_the_request_is_shown_then_the_click_is_not_delivered_and_nothing_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let flag = dir.path().join("withhold");
    let Some(mut bridge) = claude_bridge(dir.path(), &flag) else { return };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let venv = backends::installed("claude_code").expect("installed");
    let model = fake_model(&venv);
    let key = unique("crash-shown");
    let id = format!("toolu_{}", key.replace('-', "_"));
    rt.block_on(model.script(&key, json!([[bash(&id, "echo ran > ran.txt", "Crash write")]])));
    bridge.type_line(&format!("{key}: start"));
    bridge.expect("Bash? [a]pprove");
    // Claude Code writes its transcript a moment after it asks: killed before that,
    // its resumed session has no answer to the message and asks the model again
    // (Claude Code's doing, not the bridge's; one run in three here). The request is
    // still shown and unanswered when the bridge dies.
    std::thread::sleep(Duration::from_secs(1));
    bridge.kill();

    let mut bridge = claude_bridge(dir.path(), &flag).expect("installed");
    bridge.expect("Bash? [a]pprove");
    bridge.type_line("a");
    bridge.expect("not delivered: the agent stopped waiting for this");
    std::thread::sleep(Duration::from_secs(1));
    assert!(!dir.path().join("work/ran.txt").exists(), "the tool never ran");
    assert_eq!(rt.block_on(model.requests(&key)).len(), 1, "the message was asked once");
    bridge.stop();
}

/// Killed while the model works on the message (3 s): Claude Code ended with the
/// bridge, and its turn with it. The restarted bridge connects the session again by
/// itself (the turn was open) and says so once in the chat, with how to go on.
#[test]
#[ignore = "needs the claude_code backend: bash tests/backends/install.sh claude_code, then cargo test -- --include-ignored"]
fn sigkill_while_the_model_works_then_the_chat_is_told_once_that_the_turn_ended() {
    let dir = tempfile::tempdir().expect("tempdir");
    let flag = dir.path().join("withhold");
    let Some(mut bridge) = claude_bridge(dir.path(), &flag) else { return };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let venv = backends::installed("claude_code").expect("installed");
    let model = fake_model(&venv);
    let key = unique("crash-thinking");
    rt.block_on(model.script(&key, json!([[{"delay": 3}, {"text": "Slow answer."}]])));
    bridge.type_line(&format!("{key}: start"));
    rt.block_on(wait_until(|| async { (!model.requests(&key).await.is_empty()).then_some(()) }));
    std::thread::sleep(Duration::from_millis(500));
    bridge.kill();

    let restarted = std::time::Instant::now();
    let mut bridge = claude_bridge(dir.path(), &flag).expect("installed");
    bridge.expect_within("the bridge restarted while Claude Code was working on your last message", Duration::from_secs(30));
    println!("claude_code: killed while the model worked; the chat was told {:?} after the restart", restarted.elapsed());
    let lines = bridge.drain(Duration::from_secs(4)).join("\n");
    assert_eq!(lines.matches("the bridge restarted while Claude Code was working").count(), 1, "told once:\n{lines}");
    assert!(!lines.contains("Slow answer."), "the turn died with the bridge:\n{lines}");
    bridge.stop();
}
