//! The wire contract (PROTOCOL.md) against the seeds' own JSON: every fixture parses into
//! the type it shows, the commands the bridge emits have exactly the seeds' shape, and
//! both approval_request shapes merge to the same request.

use std::path::{Path, PathBuf};

use hitl_bridge::backend::SessionUpdate;
use hitl_bridge::backend::assembler::Assembler;
use hitl_bridge::interaction::question::questions_from_args;
use hitl_bridge::interaction::{Action, FreeText, Question, QuestionOption, Request, RequestKind, TimeoutDefaults};
use hitl_bridge::protocol::{
    Answers, BackendEvent, Command, ContentBlock, Decision, DecisionType, EditedAction, HistoryBlock, HistoryMessage, Reply, UserInfo,
};
use serde_json::{Value, json};

// ---------------------------------------------------------------- helpers

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A fixture file as JSON, by its path under tests/fixtures.
fn fixture(path: &str) -> Value {
    let full = fixtures_dir().join(path);
    let text = std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: not JSON: {e}"))
}

fn approval(reply: Reply) -> Command {
    Command::Approval { session_id: "abc-123".into(), approval_key: "abc-123_1".into(), reply }
}

fn decisions(decisions: Vec<Decision>) -> Reply {
    Reply::Decisions { decisions, user_edit_content: None }
}

fn answers(pairs: &[(&str, &str)]) -> Reply {
    Reply::Answers { answers: Answers(pairs.iter().map(|(q, a)| (q.to_string(), a.to_string())).collect()) }
}

fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("serializes")
}

/// The keys of a JSON object, in order (Value equality ignores key order).
fn keys(value: &Value) -> Vec<String> {
    value.as_object().expect("an object").keys().cloned().collect()
}

/// Feeds JSON events to a fresh assembler with distinctive timeout defaults, so that a
/// timeout taken from the request is never mistaken for a default.
fn assemble(events: &[Value]) -> Vec<SessionUpdate> {
    let mut assembler = Assembler::new(TimeoutDefaults { approval_secs: 999, question_secs: 998 });
    events
        .iter()
        .flat_map(|e| {
            let event: BackendEvent = serde_json::from_value(e.clone()).unwrap_or_else(|err| panic!("event {e}: {err}"));
            // All at one instant: texts come out whole, with no progress reports.
            assembler.push(event, 0)
        })
        .collect()
}

/// The one request a list of events assembles into.
fn assemble_request(events: &[Value]) -> Request {
    match assemble(events).as_slice() {
        [SessionUpdate::Request(request)] => request.clone(),
        other => panic!("expected one request, got {other:?}"),
    }
}

fn option(label: &str, description: Option<&str>, input: bool) -> QuestionOption {
    QuestionOption { label: label.into(), description: description.map(Into::into), input }
}

// ------------------------------------------------- every fixture parses

/// How a fixture file is read.
#[derive(Debug, Clone, Copy, PartialEq)]
enum As {
    /// One stream event (`*_stream_*`).
    Event,
    /// One bridge command (`*_command_*`).
    Command,
    /// One history message.
    History,
    /// A history endpoint's list of messages.
    HistoryList,
    /// Action args, read by `questions_from_args` as they are.
    QuestionArgs,
    /// One question object, wrapped in `{"questions":[…]}`.
    Question,
    /// One option object, wrapped as the only option of a question.
    QuestionOption,
    /// A list of option objects, wrapped as the options of a question.
    QuestionOptions,
    /// A partial approval body: `{"decisions":[…]}` or `{"answers":{…}}`.
    Reply,
}

/// Every fixture, how to read it, and a summary of what it must parse into.
/// A new fixture without a row here fails `every_fixture_file_is_in_the_table`.
const FIXTURES: &[(&str, As, &str)] = &[
    ("seed000/01_stream_approval_request_start.json", As::Event, "start 3 approval_request session-id_1: 0 actions, 0 configs, timeout None"),
    (
        "seed000/02_stream_approval_request_delta_questions.json",
        As::Event,
        "delta 3: 1 actions [ask_user_question], 1 configs, timeout Some(600), decisions None, answers None",
    ),
    ("seed000/03_stream_approval_request_stop.json", As::Event, "stop 3"),
    (
        "seed000/04_question_structure.json",
        As::Question,
        "Câu hỏi hiển thị cho user [Tiêu đề nhóm (optional)] single: Option 1 | Option 2 (Recommended) | Khác; free text InputOption(2)",
    ),
    ("seed000/05_other_option_auto_added.json", As::QuestionOption, "Q? [-] single: Khác; free text InputOption(0)"),
    (
        "seed000/06_command_answers.json",
        As::Command,
        "approval abc-123 abc-123_1: answers Thảo muốn tập trung vào mục tiêu nào?=Cổ tức bền vững (Recommended); Thời gian nắm giữ dự kiến?=Trên 3 năm",
    ),
    ("seed000/07_answers_multi_select.json", As::Reply, "answers Nhóm ngành quan tâm?=Ngân hàng, Thép (Steel)"),
    ("seed000/08_answers_skipped.json", As::Reply, "answers Câu hỏi bị bỏ qua?=[No preference]"),
    ("seed000/09_history_resolved_question_message.json", As::History, "assistant: request resolved=true [ask_user_question] answers 2"),
    (
        "seed000/10_history_two_rounds.json",
        As::HistoryList,
        "user: text \"hãy hỏi 2 lần\" | assistant: other | assistant:  | tool:  | assistant: request resolved=true [ask_user_question] answers 1 | assistant: other | assistant:  | tool:  | assistant: request resolved=true [ask_user_question] answers 1 | assistant: text \"Cảm ơn! Tổng kết...\" final",
    ),
    (
        "seed001/01_tool_params_questions.json",
        As::QuestionArgs,
        "How should we handle authentication for this API? [Auth] single: JWT (Recommended) | Session Cookie; free text Other",
    ),
    ("seed001/02_dismissed_output.json", As::Reply, "answers "),
    ("seed001/03_options_example.json", As::QuestionOptions, "Q? [-] single: Expand-Contract (Recommended) | Direct Cutover; free text Other"),
    ("seed002/01_stream_approval_request_shape_a.json", As::Event, "start 4 approval_request abc-123_1: 1 actions, 1 configs, timeout None"),
    ("seed002/02_stream_approval_request_stop.json", As::Event, "stop 4"),
    ("seed002/03_command_approve.json", As::Command, "approval abc-123 abc-123_1: decisions approve"),
    ("seed002/04_command_reject.json", As::Command, "approval abc-123 abc-123_1: decisions reject"),
    ("seed002/05_command_edit.json", As::Command, "approval abc-123 abc-123_1: decisions edit(execute_trade)"),
    (
        "seed002/06_command_approve_with_user_edit_content.json",
        As::Command,
        "approval abc-123 abc-123_1: decisions approve; user_edit_content OK nhưng chỉ mua 50 cổ thôi",
    ),
    ("seed002/07_decisions_two_actions.json", As::Reply, "decisions approve, reject"),
    ("seed002/08_stream_approval_result_start.json", As::Event, "start 5 approval_result abc-123_1"),
    ("seed002/09_stream_approval_result_delta.json", As::Event, "delta 5: 0 actions [], 0 configs, timeout None, decisions Some(1), answers None"),
    ("seed002/10_stream_approval_result_stop.json", As::Event, "stop 5"),
    ("seed002/11_stream_approval_timeout_start.json", As::Event, "start 5 approval_timeout abc-123_1"),
    ("seed002/12_stream_approval_timeout_stop.json", As::Event, "stop 5"),
];

fn summarize_event(event: &BackendEvent) -> String {
    match event {
        BackendEvent::ContentBlockStart { index, content_block, .. } => match content_block {
            ContentBlock::ApprovalRequest { approval_key, actions, action_requests, review_configs, timeout_seconds } => {
                format!(
                    "start {index} approval_request {approval_key}: {} actions, {} configs, timeout {timeout_seconds:?}",
                    actions.len() + action_requests.len(),
                    review_configs.len()
                )
            }
            ContentBlock::ApprovalResult { approval_key } => format!("start {index} approval_result {approval_key}"),
            ContentBlock::ApprovalTimeout { approval_key } => format!("start {index} approval_timeout {approval_key}"),
            other => format!("start {index} {other:?}"),
        },
        BackendEvent::ContentBlockDelta { index, delta } => {
            let names: Vec<&str> = delta.actions.iter().chain(&delta.action_requests).map(|a| a.name.as_str()).collect();
            format!(
                "delta {index}: {} actions [{}], {} configs, timeout {:?}, decisions {:?}, answers {:?}",
                names.len(),
                names.join(", "),
                delta.review_configs.len(),
                delta.timeout_seconds,
                delta.decisions.as_ref().map(Vec::len),
                delta.answers.as_ref().map(|a| a.0.len()),
            )
        }
        BackendEvent::ContentBlockStop { index } => format!("stop {index}"),
        other => format!("{other:?}"),
    }
}

fn summarize_reply(reply: &Reply) -> String {
    match reply {
        Reply::Decisions { decisions, user_edit_content } => {
            let list: Vec<String> = decisions
                .iter()
                .map(|d| match d {
                    Decision::Edit { edited_action } => format!("edit({})", edited_action.name),
                    other => other.decision_type().as_str().to_owned(),
                })
                .collect();
            let mut s = format!("decisions {}", list.join(", "));
            if let Some(text) = user_edit_content {
                s.push_str(&format!("; user_edit_content {text}"));
            }
            s
        }
        Reply::Answers { answers } => {
            let list: Vec<String> = answers.0.iter().map(|(q, a)| format!("{q}={a}")).collect();
            format!("answers {}", list.join("; "))
        }
    }
}

fn summarize_history(message: &HistoryMessage) -> String {
    let blocks: Vec<String> = message
        .content
        .iter()
        .map(|b| match b {
            HistoryBlock::ApprovalRequest { is_resolved, action_requests, submitted_answers, .. } => format!(
                "request resolved={is_resolved} [{}] answers {}",
                action_requests.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", "),
                submitted_answers.as_ref().map_or(0, |a| a.0.len())
            ),
            HistoryBlock::Text { text, is_final } => format!("text {text:?}{}", if *is_final { " final" } else { "" }),
            HistoryBlock::Other => "other".into(),
        })
        .collect();
    format!("{}: {}", message.role, blocks.join(", "))
}

fn summarize_questions(questions: &[Question]) -> String {
    questions
        .iter()
        .map(|q| {
            format!(
                "{} [{}] {}: {}; free text {:?}",
                q.text,
                q.header.as_deref().unwrap_or("-"),
                if q.multi_select { "multi" } else { "single" },
                q.options.iter().map(|o| o.label.as_str()).collect::<Vec<_>>().join(" | "),
                q.free_text
            )
        })
        .collect::<Vec<_>>()
        .join(" / ")
}

fn questions(args: Value) -> String {
    summarize_questions(&questions_from_args(&args).unwrap_or_else(|e| panic!("{args}: {e}")))
}

/// Parses one fixture the way the table says and summarizes the result.
fn parse_fixture(path: &str, how: As) -> String {
    fn typed<T: serde::de::DeserializeOwned>(path: &str, how: As, value: Value) -> T {
        serde_json::from_value(value).unwrap_or_else(|e| panic!("{path} as {how:?}: {e}"))
    }
    let value = fixture(path);
    match how {
        As::Event => summarize_event(&typed(path, how, value)),
        As::Command => match typed::<Command>(path, how, value) {
            Command::Approval { session_id, approval_key, reply } => {
                format!("approval {session_id} {approval_key}: {}", summarize_reply(&reply))
            }
            other => format!("{other:?}"),
        },
        As::History => summarize_history(&typed(path, how, value)),
        As::HistoryList => typed::<Vec<HistoryMessage>>(path, how, value).iter().map(summarize_history).collect::<Vec<_>>().join(" | "),
        As::QuestionArgs => questions(value),
        As::Question => questions(json!({ "questions": [value] })),
        As::QuestionOption => questions(json!({"questions":[{"question":"Q?","options":[value]}]})),
        As::QuestionOptions => questions(json!({"questions":[{"question":"Q?","options":value}]})),
        As::Reply => summarize_reply(&typed(path, how, value)),
    }
}

/// Every fixture file has a row in the table, and every row names an existing file:
/// a new seed example cannot slip in untested.
#[test]
fn every_fixture_file_is_in_the_table() {
    let mut on_disk = Vec::new();
    for seed in ["seed000", "seed001", "seed002"] {
        for entry in std::fs::read_dir(fixtures_dir().join(seed)).expect("fixture dir") {
            let name = entry.unwrap().file_name().into_string().unwrap();
            on_disk.push(format!("{seed}/{name}"));
        }
    }
    on_disk.sort();
    let mut in_table: Vec<String> = FIXTURES.iter().map(|(p, _, _)| p.to_string()).collect();
    in_table.sort();
    assert_eq!(on_disk, in_table, "fixture files and the FIXTURES table differ");
}

/// File names say what a fixture is: `_stream_` files are events, `_command_` files
/// are commands, `_history_` files are history.
#[test]
fn fixture_names_agree_with_their_parse() {
    for (path, how, _) in FIXTURES {
        if path.contains("_stream_") {
            assert_eq!(*how, As::Event, "{path}");
        }
        if path.contains("_command_") {
            assert_eq!(*how, As::Command, "{path}");
        }
        if path.contains("_history_") {
            assert!(matches!(how, As::History | As::HistoryList), "{path}");
        }
    }
}

/// Every fixture parses into its type, and into exactly the content it shows.
#[test]
fn every_fixture_parses_into_its_type() {
    let mut wrong = Vec::new();
    for (path, how, expected) in FIXTURES {
        let got = parse_fixture(path, *how);
        if got != *expected {
            wrong.push(format!("{path}\n  expected: {expected}\n  got:      {got}"));
        }
    }
    assert!(wrong.is_empty(), "fixtures parsed differently:\n{}", wrong.join("\n"));
}

/// The history message of seed 000 marks its request resolved, with the submitted
/// answers in question order (camelCase fields).
#[test]
fn history_message_carries_the_submitted_answers() {
    let message: HistoryMessage = serde_json::from_value(fixture("seed000/09_history_resolved_question_message.json")).unwrap();
    let [HistoryBlock::ApprovalRequest { approval_key, is_resolved, action_requests, submitted_answers, submitted_decisions, .. }] = message.content.as_slice()
    else {
        panic!("{message:?}")
    };
    assert_eq!(approval_key, &None);
    assert!(is_resolved);
    assert_eq!(action_requests[0].name, "ask_user_question");
    assert_eq!(submitted_decisions, &None);
    assert_eq!(
        submitted_answers.as_ref().unwrap().0,
        vec![
            ("Thảo muốn tập trung vào mục tiêu nào?".to_owned(), "Cổ tức bền vững (Recommended)".to_owned()),
            ("Thời gian nắm giữ dự kiến?".to_owned(), "Trên 3 năm".to_owned()),
        ]
    );
}

// ------------------------------------------------------------ round trip

/// Approve for one action is exactly seed 002's approve command.
#[test]
fn approve_command_has_the_seed_shape() {
    let command = approval(decisions(vec![Decision::Approve]));
    assert_eq!(to_json(&command), fixture("seed002/03_command_approve.json"));
}

/// A reject without a message has no `message` key: exactly seed 002's reject command.
#[test]
fn reject_command_has_the_seed_shape() {
    let command = approval(decisions(vec![Decision::Reject { message: None }]));
    assert_eq!(to_json(&command), fixture("seed002/04_command_reject.json"));
}

/// An edit carries the tool name and the edited args: exactly seed 002's edit command.
#[test]
fn edit_command_has_the_seed_shape() {
    let args = json!({"symbol":"VNM","quantity":50,"side":"buy","price":82000});
    let edited_action = EditedAction { name: "execute_trade".into(), args: args.as_object().unwrap().clone() };
    let command = approval(decisions(vec![Decision::Edit { edited_action }]));
    assert_eq!(to_json(&command), fixture("seed002/05_command_edit.json"));
}

/// `user_edit_content` is a top-level field beside `decisions` (seed 002).
#[test]
fn user_edit_content_is_top_level() {
    let command = approval(Reply::Decisions { decisions: vec![Decision::Approve], user_edit_content: Some("OK nhưng chỉ mua 50 cổ thôi".into()) });
    assert_eq!(to_json(&command), fixture("seed002/06_command_approve_with_user_edit_content.json"));
}

/// Answers to questions go under `answers`, never `decisions` (seed 000), keys in
/// question order.
#[test]
fn answers_command_has_the_seed_shape() {
    let command =
        approval(answers(&[("Thảo muốn tập trung vào mục tiêu nào?", "Cổ tức bền vững (Recommended)"), ("Thời gian nắm giữ dự kiến?", "Trên 3 năm")]));
    let expected = fixture("seed000/06_command_answers.json");
    let got = to_json(&command);
    assert_eq!(got, expected);
    assert_eq!(keys(&got["answers"]), keys(&expected["answers"]));
    assert_eq!(keys(&got), ["type", "session_id", "approval_key", "answers"]);
}

/// Two actions: the decisions list is in action order, one per action (seed 002).
#[test]
fn two_decisions_have_the_seed_shape() {
    let reply = decisions(vec![Decision::Approve, Decision::Reject { message: None }]);
    assert_eq!(to_json(&reply), fixture("seed002/07_decisions_two_actions.json"));
}

/// A multi-select answer is one string of labels; a skipped one is "[No preference]".
#[test]
fn multi_select_and_skipped_answers_have_the_seed_shape() {
    assert_eq!(to_json(&answers(&[("Nhóm ngành quan tâm?", "Ngân hàng, Thép (Steel)")])), fixture("seed000/07_answers_multi_select.json"));
    assert_eq!(to_json(&answers(&[("Câu hỏi bị bỏ qua?", "[No preference]")])), fixture("seed000/08_answers_skipped.json"));
}

/// A reject with a reason and a respond carry `message` (PROTOCOL.md §2).
#[test]
fn reject_with_message_and_respond_shapes() {
    assert_eq!(to_json(&Decision::Reject { message: Some("why".into()) }), json!({"type":"reject","message":"why"}));
    assert_eq!(to_json(&Decision::Respond { message: "text".into() }), json!({"type":"respond","message":"text"}));
}

/// `Command::message` is exactly PROTOCOL.md §2's message command.
#[test]
fn message_command_has_the_protocol_shape() {
    let user = UserInfo { platform: "telegram".into(), id: "123456".into(), name: "Thảo".into() };
    let command = Command::message("S", "hãy hỏi 2 lần", Some(user));
    assert_eq!(
        to_json(&command),
        json!({"type":"message","session_id":"S","content":[{"type":"text","text":"hãy hỏi 2 lần"}],
               "user":{"platform":"telegram","id":"123456","name":"Thảo"}})
    );
}

/// Without a user, the message command has no `user` key at all (not `null`).
#[test]
fn message_command_without_user_omits_the_key() {
    assert_eq!(to_json(&Command::message("S", "hi", None)), json!({"type":"message","session_id":"S","content":[{"type":"text","text":"hi"}]}));
}

/// `Command::Cancel` is exactly PROTOCOL.md §2's cancel command.
#[test]
fn cancel_command_has_the_protocol_shape() {
    assert_eq!(serde_json::to_string(&Command::Cancel { session_id: "S".into() }).unwrap(), r#"{"type":"cancel","session_id":"S"}"#);
}

/// Answers serialize their keys in question order, not sorted (preserve_order), and
/// parse back in the same order.
#[test]
fn answers_keep_question_order() {
    let reply = answers(&[("Zebra?", "z"), ("Apple?", "a"), ("Mango?", "m")]);
    let text = serde_json::to_string(&reply).unwrap();
    assert_eq!(text, r#"{"answers":{"Zebra?":"z","Apple?":"a","Mango?":"m"}}"#);
    let back: Reply = serde_json::from_str(&text).unwrap();
    assert_eq!(back, reply);
}

/// A backend that sends a non-string answer value is read, not refused: the value
/// becomes its JSON text.
#[test]
fn non_string_answer_values_become_json_text() {
    let parsed: Answers = serde_json::from_value(json!({"Q1": 3, "Q2": ["a","b"], "Q3": "x"})).unwrap();
    assert_eq!(parsed.0, vec![("Q1".into(), "3".into()), ("Q2".into(), r#"["a","b"]"#.into()), ("Q3".into(), "x".into())]);
}

// ------------------------------------------------- approval_request shapes

fn trade_request(timeout_secs: u64) -> Request {
    Request {
        approval_key: "abc-123_1".into(),
        kind: RequestKind::Approval {
            actions: vec![Action {
                name: "execute_trade".into(),
                args: json!({"symbol":"VNM","quantity":100,"side":"buy","price":82000}),
                description: None,
                tool_use_id: Some("toolu_01XyzAbc".into()),
                allowed: vec![DecisionType::Approve, DecisionType::Edit, DecisionType::Reject],
                labels: Vec::new(),
            }],
        },
        timeout_secs,
        context: None,
    }
}

/// Shape A (seed 002, everything in the start block) becomes the request it shows:
/// default allowed decisions, the review config's timeout.
#[test]
fn shape_a_fixture_assembles_into_its_request() {
    let request = assemble_request(&[fixture("seed002/01_stream_approval_request_shape_a.json"), fixture("seed002/02_stream_approval_request_stop.json")]);
    assert_eq!(request, trade_request(300));
}

/// Shape B (key in the start block, the rest in a delta) built from seed 002's content
/// merges to the same request as shape A.
#[test]
fn shape_b_of_the_seed_002_content_merges_to_the_same_request() {
    let a = fixture("seed002/01_stream_approval_request_shape_a.json");
    let block = &a["content_block"];
    let shape_b = [
        json!({"type":"content_block_start","index":4,"message_id":"msg-abc",
               "content_block":{"type":"approval_request","approval_key":"abc-123_1"}}),
        json!({"type":"content_block_delta","index":4,
               "delta":{"action_requests":block["actions"],"review_configs":block["review_configs"]}}),
        json!({"type":"content_block_stop","index":4}),
    ];
    let from_a = assemble_request(&[a.clone(), fixture("seed002/02_stream_approval_request_stop.json")]);
    assert_eq!(assemble_request(&shape_b), from_a);
}

/// Seed 000's shape B and a shape A built from the same content merge to the same
/// question request.
#[test]
fn shape_a_of_the_seed_000_content_merges_to_the_same_request() {
    let delta = fixture("seed000/02_stream_approval_request_delta_questions.json");
    let d = &delta["delta"];
    let shape_b =
        assemble_request(&[fixture("seed000/01_stream_approval_request_start.json"), delta.clone(), fixture("seed000/03_stream_approval_request_stop.json")]);
    let shape_a = assemble_request(&[
        json!({"type":"content_block_start","index":3,"content_block":{"type":"approval_request",
               "approval_key":"session-id_1","actions":d["action_requests"],
               "review_configs":d["review_configs"],"timeout_seconds":d["timeout_seconds"]}}),
        json!({"type":"content_block_stop","index":3}),
    ]);
    assert_eq!(shape_a, shape_b);
    assert_eq!(shape_b.timeout_secs, 600);
    let RequestKind::Questions { questions, actions } = &shape_b.kind else { panic!("{shape_b:?}") };
    assert_eq!(actions.len(), 1);
    assert_eq!(questions.len(), 2);
    assert_eq!(
        questions[1].options,
        vec![
            option("Trên 3 năm", Some("Tích lũy dài hạn"), false),
            option("1-3 năm", Some("Theo chu kỳ ngành"), false),
            option("Khác", Some("Nhập giá trị tùy chỉnh"), true),
        ]
    );
}

/// Unknown event types parse to `Unknown` (extra fields and all) and the assembler
/// ignores them.
#[test]
fn unknown_event_types_are_ignored() {
    let event = BackendEvent::parse(r#"{"type":"ping","seq":7,"data":{"x":[1,2]}}"#).expect("not an error");
    assert_eq!(event, BackendEvent::Unknown);
    assert_eq!(assemble(&[json!({"type":"message_delta","delta":{"stop_reason":"end_turn"}})]), vec![]);
}

/// Unknown fields on a known event are ignored too.
#[test]
fn unknown_fields_on_known_events_are_ignored() {
    assert_eq!(BackendEvent::parse(r#"{"type":"message_stop","stop_reason":"end_turn","usage":{"n":1}}"#).unwrap(), BackendEvent::MessageStop);
}

/// An unknown block type parses to `ContentBlock::Unknown`; its deltas and stop produce
/// nothing.
#[test]
fn unknown_block_types_are_ignored() {
    let start = json!({"type":"content_block_start","index":0,
                       "content_block":{"type":"server_tool_use","id":"srv_1","name":"web_search"}});
    let event: BackendEvent = serde_json::from_value(start.clone()).unwrap();
    assert!(matches!(event, BackendEvent::ContentBlockStart { index: 0, content_block: ContentBlock::Unknown, .. }), "{event:?}");
    let out = assemble(&[
        start,
        json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"q\":"}}),
        json!({"type":"content_block_stop","index":0}),
    ]);
    assert_eq!(out, vec![]);
}

/// Unknown events and blocks interleaved with an approval request leave it intact.
#[test]
fn unknown_events_inside_a_request_change_nothing() {
    let out = assemble(&[
        fixture("seed002/01_stream_approval_request_shape_a.json"),
        json!({"type":"ping"}),
        json!({"type":"content_block_start","index":9,"content_block":{"type":"citation","x":1}}),
        json!({"type":"content_block_stop","index":9}),
        fixture("seed002/02_stream_approval_request_stop.json"),
    ]);
    assert_eq!(out, vec![SessionUpdate::Request(trade_request(300))]);
}

/// `multiSelect` (Claude Code) and `multi_select` (Kimi, Agno) both mark a question
/// multi-select, through a whole request.
#[test]
fn both_multi_select_spellings_are_accepted() {
    for (key, value) in [("multiSelect", true), ("multi_select", true), ("multiSelect", false), ("multi_select", false)] {
        let request = assemble_request(&[
            json!({"type":"content_block_start","index":0,"content_block":{"type":"approval_request","approval_key":"k"}}),
            json!({"type":"content_block_delta","index":0,"delta":{"action_requests":[{"name":"AskUserQuestion",
                   "args":{"questions":[{"question":"Sectors?", key: value, "options":[{"label":"A"},{"label":"B"}]}]}}]}}),
            json!({"type":"content_block_stop","index":0}),
        ]);
        let RequestKind::Questions { questions, .. } = &request.kind else { panic!("{request:?}") };
        assert_eq!(questions[0].multi_select, value, "{key}: {value}");
    }
}

/// The seed 003 form `{question, choices, allow_freeform}` as the args of an `ask_user`
/// action is one question with the choices as options, free text offered by default.
#[test]
fn seed_003_ask_user_form_is_one_question() {
    let request = assemble_request(&[
        json!({"type":"content_block_start","index":2,"content_block":{"type":"approval_request","approval_key":"s_1"}}),
        json!({"type":"content_block_delta","index":2,"delta":{"action_requests":[{"name":"ask_user","tool_use_id":"call_9",
               "args":{"question":"Dùng cơ sở dữ liệu nào?","choices":["PostgreSQL","SQLite"]}}]}}),
        json!({"type":"content_block_stop","index":2}),
    ]);
    let RequestKind::Questions { questions, actions } = &request.kind else { panic!("{request:?}") };
    assert_eq!(
        questions,
        &vec![Question {
            text: "Dùng cơ sở dữ liệu nào?".into(),
            header: None,
            multi_select: false,
            options: vec![option("PostgreSQL", None, false), option("SQLite", None, false)],
            free_text: FreeText::Other,
        }]
    );
    assert_eq!(actions[0].name, "ask_user");
    assert_eq!(request.timeout_secs, 998, "the question default, not the approval one");
}

/// `allow_freeform: false` in the seed 003 form turns free text off.
#[test]
fn seed_003_allow_freeform_false_disables_free_text() {
    let qs = questions_from_args(&json!({"question":"Q?","choices":["a","b"],"allow_freeform":false})).unwrap();
    assert_eq!(qs.len(), 1);
    assert_eq!(qs[0].free_text, FreeText::Disabled);
}

/// An `approval_result` fixture sequence reports who-knows-who resolved it, with the
/// decisions it carried.
#[test]
fn approval_result_fixture_resolves_with_its_decisions() {
    let out = assemble(&[
        fixture("seed002/08_stream_approval_result_start.json"),
        fixture("seed002/09_stream_approval_result_delta.json"),
        fixture("seed002/10_stream_approval_result_stop.json"),
    ]);
    assert_eq!(out, vec![SessionUpdate::Resolved { approval_key: "abc-123_1".into(), reply: Some(decisions(vec![Decision::Approve])) }]);
}
