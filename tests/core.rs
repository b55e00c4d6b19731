//! The interaction state machine (src/interaction): first valid decision wins, a
//! refusal changes nothing, decisions are full length in action order, answers are
//! encoded as PROTOCOL.md §2 says, and merging does not depend on the request's shape.

use hitl_bridge::interaction::decisions::EditError;
use hitl_bridge::interaction::{
    AccessPolicy, Action, Actor, Applied, Decider, Draft, Interaction, NO_PREFERENCE, Refusal, Request, RequestBuilder, RequestKind, Status, TimeoutDefaults,
    UserAction,
};
use hitl_bridge::protocol::{ActionRequest, Answers, Command, Decision, DecisionType, Delta, EditedAction, Reply, ReviewConfig};
use proptest::prelude::*;
use serde_json::{Value, json};

use DecisionType::{Approve, Edit, Reject, Respond};

// ---------------------------------------------------------------- helpers

/// When every interaction in these tests is created.
const T0: i64 = 1_700_000_000_000;
/// A moment well inside every deadline.
const SOON: i64 = T0 + 5_000;

/// The person whose message started the turn.
fn thao() -> Actor {
    Actor::new("telegram", "123456", "Thảo")
}

/// A configured approver.
fn ops() -> Actor {
    Actor::new("telegram", "42", "Ops")
}

/// Someone with no right to answer.
fn stranger() -> Actor {
    Actor::new("telegram", "13", "Stranger")
}

fn policy() -> AccessPolicy {
    AccessPolicy { approver_users: vec![("telegram".into(), "42".into())], approver_roles: vec![], four_eyes: false }
}

fn action(name: &str, allowed: &[DecisionType]) -> Action {
    Action { name: name.into(), args: json!({}), description: None, tool_use_id: None, allowed: allowed.to_vec(), labels: Vec::new() }
}

/// Seed 002's trade, with the default allowed decisions.
fn trade() -> Action {
    Action {
        args: json!({"symbol":"VNM","quantity":100,"side":"buy","price":82000}),
        tool_use_id: Some("toolu_01XyzAbc".into()),
        ..action("execute_trade", &[Approve, Edit, Reject])
    }
}

/// A tool that may only be approved or rejected.
fn report() -> Action {
    action("send_report", &[Approve, Reject])
}

fn approval_request(actions: Vec<Action>, timeout_secs: u64) -> Request {
    Request { approval_key: "abc-123_1".into(), kind: RequestKind::Approval { actions }, timeout_secs, context: None }
}

/// Seed 000's two questions, merged from its fixture delta.
fn seed000_request() -> Request {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/seed000/02_stream_approval_request_delta_questions.json")).unwrap();
    let event: Value = serde_json::from_str(&text).unwrap();
    let delta: Delta = serde_json::from_value(event["delta"].clone()).unwrap();
    let mut builder = RequestBuilder::start("session-id_1", vec![], vec![], None);
    builder.apply_delta(delta);
    builder.finish(TimeoutDefaults::default()).unwrap()
}

fn interaction(request: Request) -> Interaction {
    Interaction::new("i1".into(), "abc-123".into(), request, Some(thao()), T0)
}

fn approvals(actions: Vec<Action>) -> Interaction {
    interaction(approval_request(actions, 300))
}

fn questions() -> Interaction {
    interaction(seed000_request())
}

fn apply(i: &mut Interaction, who: &Actor, action: UserAction) -> Result<Applied, Refusal> {
    i.apply(who, action, &policy(), SOON)
}

/// Applies `action` expecting `refusal`, and checks that nothing changed.
#[track_caller]
fn assert_refused_at(i: &mut Interaction, who: &Actor, action: UserAction, now_ms: i64, refusal: Refusal) {
    let before = i.clone();
    assert_eq!(i.apply(who, action, &policy(), now_ms), Err(refusal));
    assert_eq!(*i, before, "a refusal changed the interaction");
}

#[track_caller]
fn assert_refused(i: &mut Interaction, action: UserAction, refusal: Refusal) {
    assert_refused_at(i, &thao(), action, SOON, refusal);
}

fn decide(action: usize, decision: Decision) -> UserAction {
    UserAction::Decide { action, decision }
}

fn reject() -> Decision {
    Decision::Reject { message: None }
}

fn decided(decisions: Vec<Decision>) -> Applied {
    Applied::Resolved(Reply::Decisions { decisions, user_edit_content: None })
}

fn decision_draft(i: &Interaction) -> &hitl_bridge::interaction::DecisionDraft {
    match &i.draft {
        Draft::Decisions(d) => d,
        other => panic!("{other:?}"),
    }
}

// ------------------------------------------------- first decision wins

/// After a resolve, a second apply by anyone is refused with who decided first and when,
/// and changes nothing.
#[test]
fn first_valid_decision_wins() {
    let mut i = approvals(vec![trade()]);
    assert_eq!(i.apply(&thao(), decide(0, Decision::Approve), &policy(), T0 + 1_000), Ok(decided(vec![Decision::Approve])));
    let first = Refusal::AlreadyDecided { by: "Thảo".into(), at_ms: T0 + 1_000 };
    assert_refused_at(&mut i, &ops(), decide(0, reject()), T0 + 2_000, first.clone());
    assert_refused_at(&mut i, &thao(), decide(0, reject()), T0 + 3_000, first.clone());
    assert_refused_at(&mut i, &ops(), UserAction::DecideAll { decision: Reject }, T0 + 4_000, first.clone());
    assert_refused_at(&mut i, &ops(), UserAction::Submit, T0 + 5_000, first);
    assert_eq!(i.status, Status::Resolved { by: Decider::Person(thao()), at_ms: T0 + 1_000 });
    assert_eq!(i.reply, Some(Reply::Decisions { decisions: vec![Decision::Approve], user_edit_content: None }));
}

/// A request resolved by another client refuses later clicks, naming "another client".
#[test]
fn resolved_elsewhere_refuses_later_clicks() {
    let mut i = approvals(vec![trade()]);
    assert!(i.resolve_elsewhere(None, T0 + 700));
    assert_refused(&mut i, decide(0, Decision::Approve), Refusal::AlreadyDecided { by: "another client".into(), at_ms: T0 + 700 });
}

/// Even after the deadline, a resolved request says who decided rather than "expired".
#[test]
fn already_decided_wins_over_a_passed_deadline() {
    let mut i = approvals(vec![trade()]);
    apply(&mut i, &ops(), decide(0, Decision::Approve)).unwrap();
    let late = i.deadline_ms + 1;
    assert_refused_at(&mut i, &thao(), decide(0, reject()), late, Refusal::AlreadyDecided { by: "Ops".into(), at_ms: SOON });
}

// ---------------------------------------------------- refusals change nothing

/// A stranger is refused, on a pending request.
#[test]
fn stranger_is_not_allowed() {
    let mut i = approvals(vec![trade()]);
    assert_refused_at(&mut i, &stranger(), decide(0, Decision::Approve), SOON, Refusal::NotAllowed);
}

/// Access is checked before status: a stranger learns nothing about resolved, expired,
/// cancelled or past-deadline requests.
#[test]
fn access_is_checked_before_status() {
    let mut resolved = approvals(vec![trade()]);
    apply(&mut resolved, &thao(), decide(0, Decision::Approve)).unwrap();
    assert_refused_at(&mut resolved, &stranger(), decide(0, reject()), SOON, Refusal::NotAllowed);

    let mut expired = approvals(vec![trade()]);
    expired.expire(SOON, true);
    assert_refused_at(&mut expired, &stranger(), decide(0, reject()), SOON, Refusal::NotAllowed);

    let mut cancelled = approvals(vec![trade()]);
    cancelled.cancel(SOON, "turn cancelled");
    assert_refused_at(&mut cancelled, &stranger(), decide(0, reject()), SOON, Refusal::NotAllowed);

    let mut late = approvals(vec![trade()]);
    let after = late.deadline_ms + 1;
    assert_refused_at(&mut late, &stranger(), decide(0, reject()), after, Refusal::NotAllowed);
}

/// Without a requester, only configured approvers may answer.
#[test]
fn without_requester_only_approvers_answer() {
    let mut i = Interaction::new("i1".into(), "abc-123".into(), approval_request(vec![trade()], 300), None, T0);
    assert_refused(&mut i, decide(0, Decision::Approve), Refusal::NotAllowed);
    assert_eq!(apply(&mut i, &ops(), decide(0, Decision::Approve)), Ok(decided(vec![Decision::Approve])));
}

/// Four eyes (`access.self_approval = false`): the requester's Approve, Edit, Comment,
/// Reject all are refused and change nothing; another approver decides; the requester
/// still answers the agent's questions.
#[test]
fn four_eyes_refuses_the_requesters_own_tool_calls() {
    let strict = AccessPolicy { four_eyes: true, ..policy() };
    let mut i = approvals(vec![trade()]);
    for action in [
        decide(0, Decision::Approve),
        UserAction::EditArgs { action: 0, json: r#"{"quantity":1}"#.into() },
        UserAction::Comment { action: 0, text: "ok".into() },
        UserAction::DecideAll { decision: DecisionType::Approve },
    ] {
        let before = i.clone();
        assert_eq!(i.apply(&thao(), action, &strict, SOON), Err(Refusal::SelfApproval));
        assert_eq!(i, before, "a refusal changed the interaction");
    }
    assert_eq!(i.may_act(&thao(), &strict, SOON), Err(Refusal::SelfApproval));
    // A stranger is still told "not allowed", not "four eyes".
    assert_eq!(i.apply(&stranger(), decide(0, Decision::Approve), &strict, SOON), Err(Refusal::NotAllowed));
    assert_eq!(i.apply(&ops(), decide(0, Decision::Approve), &strict, SOON), Ok(decided(vec![Decision::Approve])));

    let mut q = questions();
    assert_eq!(q.apply(&thao(), UserAction::Skip { question: 0 }, &strict, SOON), Ok(Applied::Updated));
    // Without the option the requester decides as before.
    let mut own = approvals(vec![trade()]);
    assert_eq!(apply(&mut own, &thao(), decide(0, Decision::Approve)), Ok(decided(vec![Decision::Approve])));
}

/// `respond` is refused where the review config does not allow it.
#[test]
fn respond_refused_where_not_allowed() {
    let mut i = approvals(vec![trade()]);
    assert_refused(
        &mut i,
        decide(0, Decision::Respond { message: "hi".into() }),
        Refusal::DecisionNotAllowed { action: "execute_trade".into(), decision: Respond },
    );
}

/// `edit` is refused on a tool that allows only approve and reject, by button or by JSON.
#[test]
fn edit_refused_where_not_allowed() {
    let mut i = approvals(vec![report()]);
    let refusal = Refusal::DecisionNotAllowed { action: "send_report".into(), decision: Edit };
    let edited_action = EditedAction { name: "send_report".into(), args: Default::default() };
    assert_refused(&mut i, decide(0, Decision::Edit { edited_action }), refusal.clone());
    assert_refused(&mut i, UserAction::EditArgs { action: 0, json: r#"{"to":"x"}"#.into() }, refusal);
}

/// Edited args that are not JSON are refused with the parse error.
#[test]
fn edit_args_must_be_json() {
    let mut i = approvals(vec![trade()]);
    let before = i.clone();
    let got = apply(&mut i, &thao(), UserAction::EditArgs { action: 0, json: "{quantity: 50".into() });
    assert!(matches!(got, Err(Refusal::InvalidEdit(EditError::InvalidJson(_)))), "{got:?}");
    assert_eq!(i, before);
}

/// Edited args must be a JSON object.
#[test]
fn edit_args_must_be_an_object() {
    let mut i = approvals(vec![trade()]);
    assert_refused(&mut i, UserAction::EditArgs { action: 0, json: "[50]".into() }, Refusal::InvalidEdit(EditError::NotAnObject("an array")));
    assert_refused(&mut i, UserAction::EditArgs { action: 0, json: "50".into() }, Refusal::InvalidEdit(EditError::NotAnObject("a number")));
}

/// An action index past the end is refused, whatever the user action.
#[test]
fn out_of_range_action() {
    let mut i = approvals(vec![trade(), report()]);
    let out = Refusal::OutOfRange("action");
    assert_refused(&mut i, decide(2, Decision::Approve), out.clone());
    assert_refused(&mut i, UserAction::EditArgs { action: 2, json: "{}".into() }, out.clone());
    assert_refused(&mut i, UserAction::Comment { action: 2, text: "hi".into() }, out.clone());
    let mut responds = approvals(vec![action("t", &[Approve, Respond])]);
    assert_refused(&mut responds, UserAction::Comment { action: 1, text: "hi".into() }, out);
}

/// A question or option index past the end is refused.
#[test]
fn out_of_range_question_and_option() {
    let mut i = questions();
    let question = Refusal::OutOfRange("question");
    let option = Refusal::OutOfRange("option");
    assert_refused(&mut i, UserAction::Select { question: 2, options: vec![0] }, question.clone());
    assert_refused(&mut i, UserAction::Toggle { question: 2, option: 0 }, question.clone());
    assert_refused(&mut i, UserAction::OtherText { question: 2, text: "x".into() }, question.clone());
    assert_refused(&mut i, UserAction::Skip { question: 2 }, question);
    assert_refused(&mut i, UserAction::Select { question: 0, options: vec![3] }, option.clone());
    assert_refused(&mut i, UserAction::Toggle { question: 1, option: 3 }, option);
}

/// Submit with undecided actions is refused, listing the missing ones.
#[test]
fn submit_with_missing_decisions_is_incomplete() {
    let mut i = approvals(vec![trade(), report(), action("delete_file", &[Approve, Reject])]);
    assert_eq!(apply(&mut i, &thao(), decide(1, Decision::Approve)), Ok(Applied::Updated));
    assert_refused(&mut i, UserAction::Submit, Refusal::Incomplete { missing: vec![0, 2] });
    assert_eq!(Refusal::Incomplete { missing: vec![0, 2] }.to_string(), "decide every action before submitting (missing: 1, 3)");
}

/// At or after the deadline a pending request refuses actions as expired, and stays
/// pending (the timer expires it, not the click).
#[test]
fn action_after_the_deadline_is_expired() {
    let mut i = approvals(vec![trade()]);
    assert_eq!(i.deadline_ms, T0 + 300_000);
    assert_refused_at(&mut i, &thao(), decide(0, Decision::Approve), T0 + 300_000, Refusal::Expired);
    assert_refused_at(&mut i, &thao(), decide(0, Decision::Approve), T0 + 900_000, Refusal::Expired);
    assert_eq!(i.status, Status::Pending);
    assert_eq!(i.apply(&thao(), decide(0, Decision::Approve), &policy(), T0 + 299_999), Ok(decided(vec![Decision::Approve])));
}

/// Expired and cancelled requests refuse actions with their status.
#[test]
fn expired_and_cancelled_refuse() {
    let mut expired = approvals(vec![trade()]);
    assert!(expired.expire(T0 + 1, false));
    assert_refused(&mut expired, decide(0, Decision::Approve), Refusal::Expired);
    let mut cancelled = questions();
    assert!(cancelled.cancel(T0 + 1, "user cancelled"));
    assert_refused(&mut cancelled, UserAction::Submit, Refusal::Cancelled);
}

/// Decisions on a question, and answers on an approval, are the wrong kind.
#[test]
fn wrong_kind() {
    let mut q = questions();
    let decisions_on_question = Refusal::WrongKind { expected: "answers", got: "decisions" };
    assert_refused(&mut q, decide(0, Decision::Approve), decisions_on_question.clone());
    assert_refused(&mut q, UserAction::DecideAll { decision: Approve }, decisions_on_question.clone());
    assert_refused(&mut q, UserAction::Comment { action: 0, text: "hi".into() }, decisions_on_question);
    let mut a = approvals(vec![trade()]);
    let answers_on_approval = Refusal::WrongKind { expected: "decisions", got: "answers" };
    assert_refused(&mut a, UserAction::Select { question: 0, options: vec![0] }, answers_on_approval.clone());
    assert_refused(&mut a, UserAction::Skip { question: 0 }, answers_on_approval);
}

/// A single-select question given two options is refused.
#[test]
fn single_select_takes_one_option() {
    let mut i = questions();
    assert_refused(&mut i, UserAction::Select { question: 0, options: vec![0, 1] }, Refusal::SingleChoice);
}

/// Empty (after trimming) and over-long texts are refused; 4000 characters is fine.
#[test]
fn empty_and_too_long_text() {
    let mut q = questions();
    assert_refused(&mut q, UserAction::OtherText { question: 1, text: "  \n ".into() }, Refusal::EmptyText);
    assert_refused(&mut q, UserAction::OtherText { question: 1, text: "ả".repeat(4001) }, Refusal::TextTooLong);
    assert_eq!(apply(&mut q, &thao(), UserAction::OtherText { question: 1, text: "ả".repeat(4000) }), Ok(Applied::Updated));
    let mut a = approvals(vec![trade()]);
    assert_refused(&mut a, UserAction::Comment { action: 0, text: "".into() }, Refusal::EmptyText);
    assert_refused(&mut a, UserAction::Comment { action: 0, text: "x".repeat(4001) }, Refusal::TextTooLong);
}

/// A question with `allow_freeform: false` and no input option takes no typed text.
#[test]
fn no_free_text_where_disabled() {
    let mut builder = RequestBuilder::start("k", vec![], vec![], None);
    builder.apply_delta(Delta {
        action_requests: vec![ActionRequest {
            name: "ask_user".into(),
            args: json!({"question":"DB?","choices":["PostgreSQL","SQLite"],"allow_freeform":false}),
            description: None,
            tool_use_id: None,
        }],
        ..Delta::default()
    });
    let mut i = interaction(builder.finish(TimeoutDefaults::default()).unwrap());
    assert_refused(&mut i, UserAction::OtherText { question: 0, text: "MySQL".into() }, Refusal::NoFreeText);
}

// ------------------------------------------------------- decisions

/// Two actions decided in reverse order are sent in action order, full length.
#[test]
fn decisions_are_sent_in_action_order() {
    let mut i = approvals(vec![trade(), report()]);
    assert_eq!(apply(&mut i, &thao(), decide(1, reject())), Ok(Applied::Updated));
    assert_eq!(apply(&mut i, &thao(), decide(0, Decision::Approve)), Ok(Applied::Updated));
    assert_eq!(i.status, Status::Pending, "several actions wait for Submit");
    assert_eq!(apply(&mut i, &thao(), UserAction::Submit), Ok(decided(vec![Decision::Approve, reject()])));
}

/// A later decision for the same action replaces the earlier one.
#[test]
fn a_later_decision_replaces_the_earlier() {
    let mut i = approvals(vec![trade(), report()]);
    apply(&mut i, &thao(), decide(0, reject())).unwrap();
    apply(&mut i, &thao(), decide(0, Decision::Approve)).unwrap();
    apply(&mut i, &thao(), decide(1, Decision::Reject { message: Some("not now".into()) })).unwrap();
    assert_eq!(apply(&mut i, &thao(), UserAction::Submit), Ok(decided(vec![Decision::Approve, Decision::Reject { message: Some("not now".into()) }])));
}

/// Approve all resolves at once with one approve per action.
#[test]
fn decide_all_approve() {
    let mut i = approvals(vec![trade(), report(), action("c", &[Approve])]);
    assert_eq!(apply(&mut i, &ops(), UserAction::DecideAll { decision: Approve }), Ok(decided(vec![Decision::Approve; 3])));
    assert_eq!(i.status, Status::Resolved { by: Decider::Person(ops()), at_ms: SOON });
}

/// Reject all resolves at once with one reject per action, overriding earlier choices.
#[test]
fn decide_all_reject() {
    let mut i = approvals(vec![trade(), report()]);
    apply(&mut i, &thao(), decide(0, Decision::Approve)).unwrap();
    assert_eq!(apply(&mut i, &thao(), UserAction::DecideAll { decision: Reject }), Ok(decided(vec![reject(), reject()])));
}

/// Approve/Reject all is refused when one action does not allow that decision.
#[test]
fn decide_all_refused_if_one_action_does_not_allow_it() {
    let mut i = approvals(vec![trade(), action("must_edit", &[Approve, Edit])]);
    assert_refused(&mut i, UserAction::DecideAll { decision: Reject }, Refusal::DecisionNotAllowed { action: "must_edit".into(), decision: Reject });
}

/// Only approve and reject exist for "all"; edit or respond for all is refused.
#[test]
fn decide_all_only_approve_or_reject() {
    let mut i = approvals(vec![action("a", &[Approve, Edit, Reject, Respond])]);
    for decision in [Edit, Respond] {
        assert_refused(&mut i, UserAction::DecideAll { decision }, Refusal::DecisionNotAllowed { action: "all actions".into(), decision });
    }
}

/// With a single action, a decision submits at once.
#[test]
fn single_action_decision_submits() {
    let mut i = approvals(vec![trade()]);
    assert_eq!(apply(&mut i, &thao(), decide(0, reject())), Ok(decided(vec![reject()])));
}

/// An edit always names the original tool, even if the Decide carries another name.
#[test]
fn edit_keeps_the_original_tool_name() {
    let mut i = approvals(vec![trade()]);
    let args = json!({"symbol":"VNM","quantity":50}).as_object().unwrap().clone();
    let sneaky = Decision::Edit { edited_action: EditedAction { name: "transfer_all_funds".into(), args: args.clone() } };
    let expected = Decision::Edit { edited_action: EditedAction { name: "execute_trade".into(), args } };
    assert_eq!(apply(&mut i, &thao(), decide(0, sneaky)), Ok(decided(vec![expected])));
}

/// Edited args typed as JSON become exactly seed 002's edit command.
#[test]
fn edit_args_produce_the_seed_edit_command() {
    let mut i = approvals(vec![trade()]);
    let Ok(Applied::Resolved(reply)) =
        apply(&mut i, &thao(), UserAction::EditArgs { action: 0, json: r#" {"symbol":"VNM","quantity":50,"side":"buy","price":82000} "#.into() })
    else {
        panic!("not resolved: {i:?}")
    };
    let command = Command::Approval { session_id: i.session_id.clone(), approval_key: i.approval_key().into(), reply };
    let fixture: Value = serde_json::from_str(include_str!("fixtures/seed002/05_command_edit.json")).unwrap();
    assert_eq!(serde_json::to_value(&command).unwrap(), fixture);
}

/// A comment is a `respond` decision where allowed (text trimmed).
#[test]
fn comment_is_respond_where_allowed() {
    let mut i = approvals(vec![action("draft_email", &[Approve, Reject, Respond]), report()]);
    assert_eq!(apply(&mut i, &thao(), UserAction::Comment { action: 0, text: "  viết ngắn hơn ".into() }), Ok(Applied::Updated));
    apply(&mut i, &thao(), decide(1, Decision::Approve)).unwrap();
    assert_eq!(apply(&mut i, &thao(), UserAction::Submit), Ok(decided(vec![Decision::Respond { message: "viết ngắn hơn".into() }, Decision::Approve])));
}

/// A respond comment is a decision: with a single action it submits like any decision.
#[test]
fn respond_comment_on_single_action_submits() {
    let mut i = approvals(vec![action("draft_email", &[Approve, Respond])]);
    assert_eq!(
        apply(&mut i, &thao(), UserAction::Comment { action: 0, text: "shorter".into() }),
        Ok(decided(vec![Decision::Respond { message: "shorter".into() }]))
    );
}

/// Where respond is not allowed, a comment becomes `user_edit_content`, does not submit
/// by itself even with a single action, and rides on the reply: seed 002's command.
#[test]
fn comment_becomes_user_edit_content_where_respond_is_not_allowed() {
    let mut i = approvals(vec![trade()]);
    assert_eq!(apply(&mut i, &thao(), UserAction::Comment { action: 0, text: "OK nhưng chỉ mua 50 cổ thôi".into() }), Ok(Applied::Updated));
    assert_eq!(i.status, Status::Pending);
    assert_eq!(decision_draft(&i).decisions, vec![None]);
    assert_eq!(decision_draft(&i).user_edit_content.as_deref(), Some("OK nhưng chỉ mua 50 cổ thôi"));
    let Ok(Applied::Resolved(reply)) = apply(&mut i, &thao(), decide(0, Decision::Approve)) else { panic!("{i:?}") };
    let command = Command::Approval { session_id: i.session_id.clone(), approval_key: i.approval_key().into(), reply };
    let fixture: Value = serde_json::from_str(include_str!("fixtures/seed002/06_command_approve_with_user_edit_content.json")).unwrap();
    assert_eq!(serde_json::to_value(&command).unwrap(), fixture);
}

// ------------------------------------------------ expire / elsewhere / cancel

/// `expire` works once, from Pending only.
#[test]
fn expire_only_from_pending() {
    let mut i = approvals(vec![trade()]);
    assert!(i.expire(T0 + 10, true));
    let after = i.clone();
    assert!(!i.expire(T0 + 20, false));
    assert!(!i.cancel(T0 + 20, "x"));
    assert!(!i.resolve_elsewhere(None, T0 + 20));
    assert_eq!(i, after);
    assert_eq!(i.status, Status::Expired { at_ms: T0 + 10, by_backend: true });
}

/// `resolve_elsewhere` works once, from Pending only, keeping the reply it was given.
#[test]
fn resolve_elsewhere_only_from_pending() {
    let mut i = approvals(vec![trade()]);
    let reply = Reply::Decisions { decisions: vec![Decision::Approve], user_edit_content: None };
    assert!(i.resolve_elsewhere(Some(reply.clone()), T0 + 10));
    let after = i.clone();
    assert!(!i.resolve_elsewhere(None, T0 + 20));
    assert!(!i.expire(T0 + 20, true));
    assert!(!i.cancel(T0 + 20, "x"));
    assert_eq!(i, after);
    assert_eq!(i.status, Status::Resolved { by: Decider::Elsewhere, at_ms: T0 + 10 });
    assert_eq!(i.reply, Some(reply));
}

/// `cancel` works once, from Pending only.
#[test]
fn cancel_only_from_pending() {
    let mut i = questions();
    assert!(i.cancel(T0 + 10, "turn cancelled"));
    let after = i.clone();
    assert!(!i.cancel(T0 + 20, "again"));
    assert!(!i.expire(T0 + 20, false));
    assert!(!i.resolve_elsewhere(None, T0 + 20));
    assert_eq!(i, after);
    assert_eq!(i.status, Status::Cancelled { at_ms: T0 + 10, reason: "turn cancelled".into() });
}

/// A request a person resolved cannot be expired, cancelled or resolved elsewhere.
#[test]
fn resolved_by_a_person_is_final() {
    let mut i = approvals(vec![trade()]);
    apply(&mut i, &thao(), decide(0, Decision::Approve)).unwrap();
    let after = i.clone();
    assert!(!i.expire(T0 + 20, true));
    assert!(!i.cancel(T0 + 20, "x"));
    assert!(!i.resolve_elsewhere(None, T0 + 20));
    assert_eq!(i, after);
}

/// The bridge's own expiry rejects every action saying why; questions get no reply.
#[test]
fn expiry_reply_rejects_every_action() {
    let i = interaction(approval_request(vec![trade(), report()], 120));
    let why = Decision::Reject { message: Some("timed out after 120 s without a human decision".into()) };
    assert_eq!(i.expiry_reply(), Some(Reply::Decisions { decisions: vec![why.clone(), why], user_edit_content: None }));
    assert_eq!(questions().expiry_reply(), None);
}

// ---------------------------------------------------------- answers

/// Seed 000 end to end: an option on Q1, typed text for the "Khác" input on Q2, Submit:
/// exact answers in question order.
#[test]
fn seed_000_answers_flow() {
    let mut i = questions();
    assert_eq!(apply(&mut i, &thao(), UserAction::Select { question: 0, options: vec![0] }), Ok(Applied::Updated));
    assert_eq!(apply(&mut i, &thao(), UserAction::OtherText { question: 1, text: "Ngắn hạn".into() }), Ok(Applied::Updated));
    let expected = Reply::Answers {
        answers: Answers(vec![
            ("Thảo muốn tập trung vào mục tiêu nào?".into(), "Cổ tức bền vững (Recommended)".into()),
            ("Thời gian nắm giữ dự kiến?".into(), "Ngắn hạn".into()),
        ]),
    };
    assert_eq!(apply(&mut i, &thao(), UserAction::Submit), Ok(Applied::Resolved(expected.clone())));
    assert_eq!(
        serde_json::to_string(&expected).unwrap(),
        r#"{"answers":{"Thảo muốn tập trung vào mục tiêu nào?":"Cổ tức bền vững (Recommended)","Thời gian nắm giữ dự kiến?":"Ngắn hạn"}}"#
    );
    assert_eq!(i.reply, Some(expected));
    assert_eq!(i.status, Status::Resolved { by: Decider::Person(thao()), at_ms: SOON });
}

/// A skipped question and an untouched question are both "[No preference]".
#[test]
fn skipped_and_unanswered_are_no_preference() {
    let mut i = questions();
    apply(&mut i, &thao(), UserAction::Select { question: 0, options: vec![1] }).unwrap();
    apply(&mut i, &thao(), UserAction::Skip { question: 0 }).unwrap();
    let Ok(Applied::Resolved(Reply::Answers { answers })) = apply(&mut i, &thao(), UserAction::Submit) else { panic!("{i:?}") };
    assert_eq!(
        answers.0,
        vec![
            ("Thảo muốn tập trung vào mục tiêu nào?".to_owned(), NO_PREFERENCE.to_owned()),
            ("Thời gian nắm giữ dự kiến?".to_owned(), NO_PREFERENCE.to_owned()),
        ]
    );
    assert_eq!(NO_PREFERENCE, "[No preference]");
}

/// Answering never submits by itself: questions wait for Submit.
#[test]
fn answers_wait_for_submit() {
    let mut i = questions();
    apply(&mut i, &thao(), UserAction::Select { question: 0, options: vec![0] }).unwrap();
    apply(&mut i, &thao(), UserAction::Select { question: 1, options: vec![0] }).unwrap();
    assert_eq!(i.status, Status::Pending);
    assert_eq!(i.reply, None);
}

// ---------------------------------------------------------- properties

fn action_request() -> impl Strategy<Value = ActionRequest> {
    (
        prop::sample::select(vec!["execute_trade", "send_report", "delete_file"]),
        0u32..1000,
        prop::option::of(Just("LangChain says why")),
        prop::option::of("toolu_[a-z]{3}"),
    )
        .prop_map(|(name, quantity, description, tool_use_id)| ActionRequest {
            name: name.into(),
            args: json!({ "quantity": quantity }),
            description: description.map(Into::into),
            tool_use_id,
        })
}

fn review_config() -> impl Strategy<Value = ReviewConfig> {
    let names = prop::sample::subsequence(vec!["approve", "edit", "reject", "respond", "approve_for_session"], 0..=5);
    (prop::option::of(prop::sample::select(vec!["execute_trade", "send_report", "nope"])), prop::option::of(names), prop::option::of(1u64..1000)).prop_map(
        |(action_name, allowed, timeout)| ReviewConfig {
            action_name: action_name.map(Into::into),
            allowed_decisions: allowed.map(|a| a.into_iter().map(String::from).collect()),
            timeout,
            require_approval: Some(true),
        },
    )
}

/// Cuts `items` into `parts + 1` consecutive pieces at the given points.
fn split<T: Clone>(items: &[T], cuts: &[prop::sample::Index], parts: usize) -> Vec<Vec<T>> {
    let mut points: Vec<usize> = cuts[..parts].iter().map(|c| c.index(items.len() + 1)).collect();
    points.sort_unstable();
    let mut pieces = Vec::new();
    let mut from = 0;
    for p in points {
        pieces.push(items[from..p].to_vec());
        from = p;
    }
    pieces.push(items[from..].to_vec());
    pieces
}

fn decision() -> impl Strategy<Value = Decision> {
    prop_oneof![
        Just(Decision::Approve),
        Just(Decision::Reject { message: None }),
        Just(Decision::Reject { message: Some("no".into()) }),
        Just(Decision::Edit { edited_action: EditedAction { name: "other_tool".into(), args: json!({"x":1}).as_object().unwrap().clone() } }),
        Just(Decision::Respond { message: "hi".into() }),
    ]
}

fn decision_type() -> impl Strategy<Value = DecisionType> {
    prop::sample::select(vec![Approve, Edit, Reject, Respond])
}

fn user_action() -> impl Strategy<Value = UserAction> {
    prop_oneof![
        4 => (0usize..5, decision()).prop_map(|(action, decision)| UserAction::Decide { action, decision }),
        1 => (0usize..5, prop::sample::select(vec![r#"{"q":2}"#, "[1]", "{bad"]))
            .prop_map(|(action, json)| UserAction::EditArgs { action, json: json.into() }),
        1 => (0usize..5, prop::sample::select(vec!["ok", "  ", "note"]))
            .prop_map(|(action, text)| UserAction::Comment { action, text: text.into() }),
        1 => decision_type().prop_map(|decision| UserAction::DecideAll { decision }),
        2 => Just(UserAction::Submit),
        1 => (0usize..3, prop::collection::vec(0usize..4, 0..3))
            .prop_map(|(question, options)| UserAction::Select { question, options }),
        1 => (0usize..3, 0usize..4).prop_map(|(question, option)| UserAction::Toggle { question, option }),
        1 => (0usize..3, prop::sample::select(vec!["x", ""]))
            .prop_map(|(question, text)| UserAction::OtherText { question, text: text.into() }),
        1 => (0usize..3).prop_map(|question| UserAction::Skip { question }),
    ]
}

fn actions_with_allowed() -> impl Strategy<Value = Vec<Action>> {
    prop::collection::vec(prop::sample::subsequence(vec![Approve, Edit, Reject, Respond], 0..=4), 1..4)
        .prop_map(|allowed| allowed.iter().enumerate().map(|(i, a)| action(&format!("tool_{i}"), a)).collect())
}

proptest! {
    /// Shape A (all in the start block) and shape B (split between the start block and
    /// 1–3 deltas, under either key) merge to the identical request.
    #[test]
    fn merging_does_not_depend_on_the_split(
        actions in prop::collection::vec(action_request(), 1..6),
        configs in prop::collection::vec(review_config(), 0..4),
        timeout in prop::option::of(1u64..5000),
        parts in 1usize..=3,
        action_cuts in prop::collection::vec(any::<prop::sample::Index>(), 3),
        config_cuts in prop::collection::vec(any::<prop::sample::Index>(), 3),
        timeout_at in 0usize..=3,
        under_actions_key in prop::collection::vec(any::<bool>(), 3),
    ) {
        let defaults = TimeoutDefaults { approval_secs: 300, question_secs: 600 };
        let shape_a = RequestBuilder::start("k_1", actions.clone(), configs.clone(), timeout).finish(defaults);

        let action_pieces = split(&actions, &action_cuts, parts);
        let config_pieces = split(&configs, &config_cuts, parts);
        let timeout_at = timeout_at.min(parts);
        let mut b = RequestBuilder::start(
            "k_1",
            action_pieces[0].clone(),
            config_pieces[0].clone(),
            if timeout_at == 0 { timeout } else { None },
        );
        for d in 1..=parts {
            let mut delta = Delta {
                review_configs: config_pieces[d].clone(),
                timeout_seconds: if timeout_at == d { timeout } else { None },
                ..Delta::default()
            };
            if under_actions_key[d - 1] {
                delta.actions = action_pieces[d].clone();
            } else {
                delta.action_requests = action_pieces[d].clone();
            }
            b.apply_delta(delta);
        }
        let shape_b = b.finish(defaults);
        prop_assert_eq!(&shape_a, &shape_b);
        let request = shape_a.unwrap();
        prop_assert_eq!(request.actions().len(), actions.len());
    }

    /// Whatever the sequence of actions, a resolved approval's reply has exactly one
    /// decision per action, each of a type that action allows, edits naming the action;
    /// and every refusal on the way changed nothing.
    #[test]
    fn resolved_decisions_are_full_length_and_allowed(
        actions in actions_with_allowed(),
        ops in prop::collection::vec(user_action(), 1..20),
    ) {
        let mut i = approvals(actions.clone());
        for op in ops {
            let before = i.clone();
            match i.apply(&thao(), op.clone(), &policy(), SOON) {
                Err(_) => prop_assert_eq!(&i, &before, "refused {:?} but changed", op),
                Ok(Applied::Updated) => prop_assert_eq!(&i.status, &Status::Pending),
                Ok(Applied::Resolved(reply)) => {
                    prop_assert_eq!(Some(&reply), i.reply.as_ref());
                    let Reply::Decisions { decisions, .. } = reply else {
                        return Err(TestCaseError::fail("answers for an approval"));
                    };
                    prop_assert_eq!(decisions.len(), actions.len());
                    for (d, a) in decisions.iter().zip(&actions) {
                        prop_assert!(a.allowed.contains(&d.decision_type()), "{:?} not allowed for {:?}", d, a);
                        if let Decision::Edit { edited_action } = d {
                            prop_assert_eq!(&edited_action.name, &a.name);
                        }
                    }
                    break;
                }
            }
        }
    }

    /// Once resolved, any number of apply calls by anyone leave the interaction as it
    /// was: the requester and approvers hear who decided, strangers are not allowed.
    #[test]
    fn nothing_changes_after_resolution(
        question in any::<bool>(),
        later in prop::collection::vec((0usize..3, user_action(), 0i64..1_000_000), 1..20),
    ) {
        let mut i = if question { questions() } else { approvals(vec![trade(), report()]) };
        let resolve = if question { UserAction::Submit } else { UserAction::DecideAll { decision: Approve } };
        prop_assert!(matches!(apply(&mut i, &thao(), resolve), Ok(Applied::Resolved(_))));
        let resolved = i.clone();
        for (who, op, dt) in later {
            let actor = [thao(), ops(), stranger()][who].clone();
            let expected = if who == 2 {
                Refusal::NotAllowed
            } else {
                Refusal::AlreadyDecided { by: "Thảo".into(), at_ms: SOON }
            };
            prop_assert_eq!(i.apply(&actor, op, &policy(), SOON + dt), Err(expected));
            prop_assert_eq!(&i, &resolved);
        }
    }
}
