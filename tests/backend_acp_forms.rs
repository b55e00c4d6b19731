//! ACP forms, policies and terminals end to end: fake Telegram ↔ the bridge ↔ a scripted ACP
//! agent (`tests/backends/acp/scripted_agent.py`, standard library only) that asks a
//! form with `elicitation/create`, permissions under the bridge's policies, or runs a
//! command in a terminal of the bridge's. No real
//! agent here asks a form (claude-code-acp and Gemini CLI do not use elicitation
//! yet), so the scripted agent follows the protocol's schema and says back, word for
//! word, the result the bridge answered it with.

use support::backends;
mod support;
use support::telegram_chat::id_of;

use serde_json::{Value, json};

use hitl_bridge::backend::acp::AcpSettings;
use hitl_bridge::interaction::PolicySpec;
use support::backend_bridge::BackendBridge;
use support::fake_telegram::User;

fn thao() -> User {
    User::new(1001, "Thảo", Some("en"))
}

/// The scripted agent behind a bridge on the fake Telegram, where Thảo has a private
/// chat with the bot.
async fn start(extra: &[(&str, &str)]) -> BackendBridge {
    start_with(extra, Vec::new()).await
}

async fn start_with(extra: &[(&str, &str)], policies: Vec<Value>) -> BackendBridge {
    let script = backends::spec_dir("acp").join("scripted_agent.py");
    let policies: Vec<PolicySpec> = policies.into_iter().map(|p| serde_json::from_value(p).expect("a policy spec")).collect();
    BackendBridge::on("acp", thao())
        .settings(extra)
        .prepare(move |settings, dir| {
            settings.policies = policies;
            let work = dir.join("work");
            std::fs::create_dir_all(&work).expect("work");
            let acp = settings.backends.get_mut::<AcpSettings>();
            acp.command = "python3".into();
            acp.args = vec![script.display().to_string()];
            acp.work_dir = work.display().to_string();
        })
        .runs_in("work")
        .start()
        .await
}

/// The form is one question card: a choice, a multi-select, Yes/No and typed text.
/// The agent gets the content its schema asked for: the choices' values (not their
/// titles), a boolean, an integer.
#[tokio::test]
async fn a_form_is_a_question_card_and_the_agent_gets_its_content() {
    let h = start(&[]).await;
    h.person().say("form");
    let card = h.person().message_with("Environment").await;
    let text = card["text"].as_str().unwrap();
    assert!(text.contains("Before I deploy:"), "the form's message shows with it: {text}");
    let id = id_of(&card);
    h.person().click(id, "Production").await;
    h.person().message_shows(id, "Regions").await;
    h.person().click(id, "eu").await;
    h.person().click(id, "us").await;
    h.person().click(id, "Done").await;
    h.person().message_shows(id, "Run the migration?").await;
    h.person().click(id, "Yes").await;
    h.person().message_shows(id, "How many replicas?").await;
    h.person().click(id, "Other").await;
    h.person().reply_to_prompt("Reply with your answer", "3").await;
    h.person().message_shows(id, "Your answers").await;
    h.person().click(id, "Submit").await;
    h.person().message_with(r#"RESULT {"action": "accept", "content": {"confirm": true, "env": "prod", "regions": ["eu", "us"], "replicas": 3}}"#).await;
    h.finish().await;
}

/// Skipping a required field declines the form; the chat is told why, and a field
/// left blank is not sent.
#[tokio::test]
async fn skipping_a_required_field_declines_the_form() {
    let h = start(&[]).await;
    h.person().say("form");
    let id = id_of(&h.person().message_with("Environment").await);
    h.person().click(id, "Skip").await;
    h.person().message_shows(id, "Regions").await;
    h.person().click(id, "Skip").await;
    h.person().message_shows(id, "Run the migration?").await;
    h.person().click(id, "No").await;
    h.person().message_shows(id, "How many replicas?").await;
    h.person().click(id, "Skip").await;
    h.person().message_shows(id, "Your answers").await;
    h.person().click(id, "Submit").await;
    h.person().message_with("The form was declined: “Environment” is required and was skipped.").await;
    h.person().message_with(r#"RESULT {"action": "decline"}"#).await;
    h.finish().await;
}

/// Typed text that is not a number declines the form: the agent is never sent a
/// string where its schema asked for an integer.
#[tokio::test]
async fn text_where_a_number_was_asked_declines_the_form() {
    let h = start(&[]).await;
    h.person().say("form");
    let id = id_of(&h.person().message_with("Environment").await);
    h.person().click(id, "Staging").await;
    h.person().message_shows(id, "Regions").await;
    h.person().click(id, "Skip").await;
    h.person().message_shows(id, "Run the migration?").await;
    h.person().click(id, "Yes").await;
    h.person().message_shows(id, "How many replicas?").await;
    h.person().click(id, "Other").await;
    h.person().reply_to_prompt("Reply with your answer", "three").await;
    h.person().message_shows(id, "Your answers").await;
    h.person().click(id, "Submit").await;
    h.person().message_with("“three” does not answer “How many replicas?”").await;
    h.person().message_with(r#"RESULT {"action": "decline"}"#).await;
    h.finish().await;
}

/// Nobody answers: at the card's deadline the agent is told `cancel`, and the card
/// says it expired.
#[tokio::test]
async fn an_unanswered_form_is_cancelled_at_its_deadline() {
    let h = start(&[("timeouts.question_secs", "2")]).await;
    h.person().say("form");
    let id = id_of(&h.person().message_with("Environment").await);
    h.person().message_with(r#"RESULT {"action": "cancel"}"#).await;
    h.person().message_shows(id, "Expired").await;
    h.finish().await;
}

/// `/cancel` while the form waits: the agent is told `cancel` before its turn is
/// cancelled, as ACP asks of a client.
#[tokio::test]
async fn cancel_withdraws_the_form() {
    let h = start(&[]).await;
    h.person().say("form");
    h.person().message_with("Environment").await;
    h.person().say("/cancel");
    h.person().message_with(r#"RESULT {"action": "cancel"}"#).await;
    h.finish().await;
}

/// A policy's fallback decides for nobody: the agent gets the exact `optionId` of the
/// option the decision means (`allow`), with no click.
#[tokio::test]
async fn a_policy_fallback_answers_with_the_agents_option() {
    let policy = json!({"tools":["execute"],"backends":["acp"],"escalation":[{"after":"1s","fallback":"approve"}]});
    let h = start_with(&[], vec![policy]).await;
    h.person().say("permission execute 1");
    let card = h.person().message_with("execute").await;
    h.person().message_with(r#"OUTCOME {"outcome": {"optionId": "allow", "outcome": "selected"}}"#).await;
    h.person().message_shows(id_of(&card), "Approved").await;
    h.finish().await;
}

/// A policy's "for this session" (the bridge remembers it, for these arguments): the
/// first call is approved on the card, the second by the rule, each answered `allow`;
/// the agent's own "Always Allow" is not offered beside it.
#[tokio::test]
async fn a_remembered_approval_answers_the_next_call_with_allow() {
    let policy = json!({"tools":["execute"],"remember":["session"]});
    let mut h = start_with(&[], vec![policy]).await;
    h.allow_unmodified_edits();
    h.person().say("permission execute 2");
    let card = h.person().message_with("execute").await;
    let labels: Vec<String> = card["reply_markup"]["inline_keyboard"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|row| row.as_array().cloned().unwrap_or_default())
        .filter_map(|b| b["text"].as_str().map(str::to_owned))
        .collect();
    assert!(!labels.iter().any(|l| l.contains("Always Allow")), "{labels:?}");
    h.person().click(id_of(&card), "Approve for this session").await;
    h.person().message_with("Approved by rule set by Thảo").await;
    let allow = r#"OUTCOME {"outcome": {"optionId": "allow", "outcome": "selected"}}"#;
    support::wait_until(|| async {
        let texts: String = h.telegram().bot_messages(h.chat).iter().filter_map(|m| m["text"].as_str().map(str::to_owned)).collect::<Vec<_>>().join("\n");
        (texts.matches(allow).count() == 2).then_some(())
    })
    .await;
    h.finish().await;
}

/// With `acp.allow_terminal`, the agent runs a command in a terminal of the bridge's:
/// in the work directory, with the environment it gave, and reads its exit status and
/// output. Without it, the bridge offers no terminal.
#[tokio::test]
async fn a_terminal_runs_the_agents_command_in_the_work_dir_only_when_allowed() {
    let h = start(&[("acp.allow_terminal", "true")]).await;
    h.person().say("terminal basename \"$PWD\"; echo \"$GREETING\"; exit 4");
    h.person().message_with(r#"TERMINAL {"exitStatus": {"exitCode": 4, "signal": null}, "output": "work\nxin chào\n", "truncated": false}"#).await;
    h.finish().await;

    let h = start(&[]).await;
    h.person().say("terminal echo hi");
    h.person().message_with("NO TERMINAL").await;
    h.finish().await;
}
