//! Decision policies in the pure core (src/interaction/policy, issue #10): which policy
//! applies, who may decide under it, quorum votes, remembered approvals, escalation and
//! fallback. Time is passed in; a "restart" is a JSON round trip of the interaction,
//! which is exactly what the store keeps.

use hitl_bridge::interaction::chat::Networks;
use hitl_bridge::interaction::policy::{
    self, Fallback, FallbackDecision, Known, Matcher, Mention, Policy, PolicyRule, PolicySettlement, PolicySpec, RememberScope, RememberedRule, RequestFacts,
    StepAction,
};
use hitl_bridge::interaction::{AccessPolicy, Action, Actor, Applied, Decider, Draft, Interaction, Refusal, Request, RequestKind, Status, UserAction};
use hitl_bridge::protocol::{Decision, DecisionType, EditedAction, Reply};
use proptest::prelude::*;
use serde_json::{Value, json};

use DecisionType::{Approve, ApproveForSession, Edit, Reject, Respond};

// ---------------------------------------------------------------- helpers

const T0: i64 = 1_700_000_000_000;
const SOON: i64 = T0 + 5_000;
const MIN: i64 = 60_000;
const DBA: &str = "1200000000000000000";

fn person(id: &str, name: &str) -> Actor {
    Actor::new("discord", id, name)
}

fn dba(id: &str, name: &str) -> Actor {
    Actor { groups: vec![DBA.into()], ..person(id, name) }
}

fn lan() -> Actor {
    dba("1", "Lan")
}

fn minh() -> Actor {
    dba("2", "Minh")
}

fn hoa() -> Actor {
    dba("3", "Hoa")
}

/// Started the turn; not a DBA.
fn requester() -> Actor {
    person("9", "Thảo")
}

/// The configured approvers (access.approvers): not DBAs either.
fn configured() -> AccessPolicy {
    AccessPolicy { approver_users: vec![("discord".into(), "42".into())], approver_roles: vec![], four_eyes: false }
}

fn ops() -> Actor {
    person("42", "Ops")
}

fn action(name: &str, args: Value, allowed: &[DecisionType]) -> Action {
    Action { name: name.into(), args, description: None, tool_use_id: None, allowed: allowed.to_vec(), labels: Vec::new() }
}

fn migration() -> Action {
    action("run_migration", json!({"version": 42}), &[Approve, Edit, Reject])
}

fn request(actions: Vec<Action>) -> Request {
    Request { approval_key: "s1_1".into(), kind: RequestKind::Approval { actions }, timeout_secs: 300, context: None }
}

fn spec(value: Value) -> PolicySpec {
    serde_json::from_value(value).expect("a policy spec")
}

fn target_ok(t: &str) -> bool {
    t.starts_with("discord:") || t.starts_with("telegram:")
}

static NETWORKS: std::sync::LazyLock<Networks> = std::sync::LazyLock::new(hitl_bridge::platform::registry::networks);
fn known() -> Known<'static> {
    Known { is_target: &target_ok, networks: &NETWORKS }
}

fn request_policy(value: Value) -> Policy {
    spec(value).to_request_policy(&known()).expect("a valid policy")
}

/// The policy of the issue: 2 of the DBA role, remind after 5 min, escalate to #oncall
/// after 15, reject after 30.
fn dba_policy() -> Policy {
    request_policy(json!({
        "approver_roles": [DBA], "quorum": 2,
        "escalation": [
            {"after": "5m", "remind": format!("role:{DBA}")},
            {"after": "15m", "show_in": "discord:1300"},
            {"after": "30m", "fallback": "reject"}
        ]
    }))
}

fn under(policy: Policy, actions: Vec<Action>) -> Interaction {
    Interaction::new("i1".into(), "s1".into(), request(actions), Some(requester()), T0).with_policy(Some(policy))
}

fn act(i: &mut Interaction, who: &Actor, action: UserAction) -> Result<Applied, Refusal> {
    i.apply(who, action, &configured(), SOON)
}

#[track_caller]
fn refused(i: &mut Interaction, who: &Actor, action: UserAction, refusal: Refusal) {
    let before = i.clone();
    assert_eq!(i.apply(who, action, &configured(), SOON), Err(refusal));
    assert_eq!(*i, before, "a refusal changed the interaction");
}

fn decide(action: usize, decision: Decision) -> UserAction {
    UserAction::Decide { action, decision }
}

fn approve() -> UserAction {
    decide(0, Decision::Approve)
}

fn edit(args: Value) -> UserAction {
    UserAction::EditArgs { action: 0, json: args.to_string() }
}

fn decisions(reply: Vec<Decision>) -> Applied {
    Applied::Resolved(Reply::Decisions { decisions: reply, user_edit_content: None })
}

/// A JSON round trip: what the store keeps and a restarted bridge reads back.
fn restart(i: &Interaction) -> Interaction {
    serde_json::from_str(&serde_json::to_string(i).unwrap()).unwrap()
}

fn voter_names(i: &Interaction) -> Vec<String> {
    i.quorum_progress().unwrap().voters().map(|a| a.name.clone()).collect()
}

// ---------------------------------------------------------------- which policy applies

fn rules() -> Vec<PolicyRule> {
    let entries = [
        json!({"name": "kimi-shell", "tools": ["shell"], "backends": ["kimi"]}),
        json!({"name": "deploys", "tools": ["*"], "sessions": ["deploy-*"]}),
        json!({"name": "migrations", "tools": ["run_migration", "drop_*"], "quorum": 2, "approver_roles": [DBA]}),
        json!({"name": "oncall-chat", "tools": ["restart_?"], "targets": ["discord:1300*"]}),
    ];
    entries.iter().enumerate().map(|(i, e)| spec(e.clone()).to_rule(i, &known(), &["stream", "kimi"]).unwrap()).collect()
}

fn selected(actions: Vec<Action>, backend: &str, session: &str, targets: &[&str], requested: Option<&Policy>) -> Option<String> {
    let rules = rules();
    let request = request(actions);
    let targets: Vec<String> = targets.iter().map(|t| t.to_string()).collect();
    let facts = RequestFacts { request: &request, backend, session_id: session, targets: &targets };
    policy::select(&rules, &facts, requested).map(|p| p.name.clone())
}

fn tool(name: &str) -> Action {
    action(name, json!({}), &[Approve, Reject])
}

#[test]
fn the_first_matching_entry_applies_with_every_filter_it_sets() {
    let chat = ["discord:1100"];
    assert_eq!(selected(vec![tool("run_migration")], "stream", "s1", &chat, None).as_deref(), Some("migrations"));
    assert_eq!(selected(vec![tool("drop_table")], "stream", "s1", &chat, None).as_deref(), Some("migrations"));
    // Not a glob match: a different tool gets no policy.
    assert_eq!(selected(vec![tool("run_migrations")], "stream", "s1", &chat, None), None);
    // Any action of several matching is enough.
    assert_eq!(selected(vec![tool("read"), tool("drop_index")], "stream", "s1", &chat, None).as_deref(), Some("migrations"));
    // File order wins over specificity: the session entry comes first.
    assert_eq!(selected(vec![tool("run_migration")], "stream", "deploy-7", &chat, None).as_deref(), Some("deploys"));
    // Backend filter.
    assert_eq!(selected(vec![tool("shell")], "kimi", "s1", &chat, None).as_deref(), Some("kimi-shell"));
    assert_eq!(selected(vec![tool("shell")], "stream", "s1", &chat, None), None);
    // Target filter: any of the chats it is shown in.
    assert_eq!(selected(vec![tool("restart_a")], "http", "s1", &chat, None), None);
    assert_eq!(selected(vec![tool("restart_a")], "http", "s1", &["discord:1100", "discord:1300"], None).as_deref(), Some("oncall-chat"));
    assert_eq!(selected(vec![tool("restart_ab")], "http", "s1", &["discord:1300"], None), None, "? is one character");
}

#[test]
fn a_requests_own_policy_applies_only_where_no_entry_matches() {
    let own = request_policy(json!({"quorum": 3}));
    assert_eq!(selected(vec![tool("deploy")], "http", "s1", &[], Some(&own)).as_deref(), Some("request"));
    // The operator's entry wins: an agent cannot weaken it.
    assert_eq!(selected(vec![tool("run_migration")], "http", "s1", &[], Some(&own)).as_deref(), Some("migrations"));
}

#[test]
fn questions_take_no_policy() {
    let rules = vec![spec(json!({"tools": ["*"], "quorum": 2})).to_rule(0, &known(), &["stream", "kimi"]).unwrap()];
    let question = Request {
        approval_key: "q".into(),
        kind: RequestKind::Questions { questions: vec![], actions: vec![tool("ask_user")] },
        timeout_secs: 600,
        context: None,
    };
    let facts = RequestFacts { request: &question, backend: "stream", session_id: "s", targets: &[] };
    assert_eq!(policy::select(&rules, &facts, None), None);
    let i = Interaction::new("q".into(), "s".into(), question, None, T0).with_policy(Some(rules[0].policy.clone()));
    assert_eq!(i.policy, None);
}

// ---------------------------------------------------------------- who decides

#[test]
fn a_policys_approvers_replace_the_usual_ones() {
    let mut i = under(dba_policy(), vec![migration()]);
    // The requester and the configured approver are not DBAs.
    refused(&mut i, &requester(), approve(), Refusal::NotAllowed);
    refused(&mut i, &ops(), approve(), Refusal::NotAllowed);
    assert_eq!(act(&mut i, &lan(), approve()), Ok(Applied::Updated));
    // By user id too, on the right platform only.
    let named = request_policy(json!({"approvers": ["telegram:7"]}));
    let mut i = under(named, vec![migration()]);
    refused(&mut i, &Actor::new("discord", "7", "x"), approve(), Refusal::NotAllowed);
    assert_eq!(act(&mut i, &Actor::new("telegram", "7", "x"), approve()), Ok(decisions(vec![Decision::Approve])));
}

#[test]
fn four_eyes_still_applies_under_a_policy() {
    let strict = AccessPolicy { four_eyes: true, ..configured() };
    let policy = request_policy(json!({"approvers": ["discord:9", "discord:42"]}));
    let mut i = under(policy, vec![migration()]);
    assert_eq!(i.apply(&requester(), approve(), &strict, SOON), Err(Refusal::SelfApproval));
    assert_eq!(i.apply(&ops(), approve(), &strict, SOON), Ok(decisions(vec![Decision::Approve])));
}

#[test]
fn a_policy_without_approvers_keeps_the_usual_rules() {
    let mut i = under(request_policy(json!({"remember": ["session"]})), vec![migration()]);
    refused(&mut i, &lan(), approve(), Refusal::NotAllowed);
    assert_eq!(act(&mut i, &requester(), approve()), Ok(decisions(vec![Decision::Approve])));
}

// ---------------------------------------------------------------- quorum

#[test]
fn two_approvals_resolve_a_quorum_of_two_and_a_third_click_is_refused() {
    let mut i = under(dba_policy(), vec![migration()]);
    assert_eq!(act(&mut i, &lan(), approve()), Ok(Applied::Updated));
    assert!(i.status.is_pending());
    assert_eq!(i.reply, None, "nothing is sent before the outcome is final");
    let progress = i.quorum_progress().unwrap();
    assert_eq!((progress.needed, progress.leading()), (2, 1));
    assert!(progress.tallies[0].is_plain_approval());
    assert_eq!(voter_names(&i), ["Lan"]);
    // The draft's slot stays open: a vote is not the outcome.
    let Draft::Decisions(d) = &i.draft else { panic!() };
    assert_eq!(d.decisions, vec![None]);

    assert_eq!(act(&mut i, &minh(), approve()), Ok(decisions(vec![Decision::Approve])));
    assert_eq!(i.status, Status::Resolved { by: Decider::Person(minh()), at_ms: SOON });
    assert_eq!(voter_names(&i), ["Lan", "Minh"]);
    refused(&mut i, &hoa(), approve(), Refusal::AlreadyDecided { by: "Minh".into(), at_ms: SOON });
}

#[test]
fn one_person_votes_once() {
    let mut i = under(dba_policy(), vec![migration()]);
    act(&mut i, &lan(), approve()).unwrap();
    refused(&mut i, &lan(), approve(), Refusal::AlreadyVoted { at_ms: SOON });
    // Not even to change their mind, nor from another client with the same id.
    refused(&mut i, &lan(), decide(0, Decision::Reject { message: None }), Refusal::AlreadyVoted { at_ms: SOON });
    refused(&mut i, &Actor { name: "Lan (phone)".into(), ..lan() }, approve(), Refusal::AlreadyVoted { at_ms: SOON });
    assert_eq!(Refusal::AlreadyVoted { at_ms: SOON }.to_string(), "you have already voted on this request");
}

#[test]
fn a_reject_ends_a_quorum_at_once() {
    let mut i = under(dba_policy(), vec![migration()]);
    act(&mut i, &lan(), approve()).unwrap();
    let no = Decision::Reject { message: Some("not during business hours".into()) };
    assert_eq!(act(&mut i, &minh(), decide(0, no.clone())), Ok(decisions(vec![no])));
    assert_eq!(i.status, Status::Resolved { by: Decider::Person(minh()), at_ms: SOON });
    // Even as the first vote.
    let mut i = under(dba_policy(), vec![migration()]);
    assert_eq!(act(&mut i, &hoa(), UserAction::DecideAll { decision: Reject }), Ok(decisions(vec![Decision::Reject { message: None }])));
}

#[test]
fn a_respond_also_ends_a_quorum() {
    let mut i = under(dba_policy(), vec![action("run_migration", json!({}), &[Approve, Respond])]);
    let answer = Decision::Respond { message: "use the replica first".into() };
    assert_eq!(act(&mut i, &lan(), UserAction::Comment { action: 0, text: "use the replica first".into() }), Ok(decisions(vec![answer])));
}

#[test]
fn edits_need_the_quorum_on_the_same_args() {
    let mut i = under(dba_policy(), vec![migration()]);
    let smaller = json!({"version": 41, "dry_run": false});
    act(&mut i, &lan(), edit(smaller.clone())).unwrap();
    // An approval of the original args is another ballot.
    assert_eq!(act(&mut i, &minh(), approve()), Ok(Applied::Updated));
    // Different edited args: a third ballot.
    assert_eq!(act(&mut i, &hoa(), edit(json!({"version": 41, "dry_run": true}))), Ok(Applied::Updated));
    let progress = i.quorum_progress().unwrap();
    assert_eq!(progress.tallies.len(), 3);
    assert_eq!(progress.leading(), 1);
    // The same args, keys in another order and spacing, complete the first ballot.
    let fourth = dba("4", "Quân");
    let expected = Decision::Edit { edited_action: EditedAction { name: "run_migration".into(), args: smaller.as_object().unwrap().clone() } };
    assert_eq!(
        act(&mut i, &fourth, UserAction::EditArgs { action: 0, json: r#"{ "dry_run" : false, "version" : 41 }"#.into() }),
        Ok(decisions(vec![expected]))
    );
}

#[test]
fn with_several_actions_the_quorum_votes_on_the_whole_set() {
    let mut i = under(dba_policy(), vec![migration(), action("vacuum", json!({}), &[Approve, Reject])]);
    // Deciding one action edits the shared draft; it is not a vote.
    assert_eq!(act(&mut i, &lan(), decide(0, Decision::Approve)), Ok(Applied::Updated));
    assert_eq!(act(&mut i, &lan(), decide(1, Decision::Approve)), Ok(Applied::Updated));
    assert_eq!(i.quorum_progress().unwrap().leading(), 0);
    // Submitting the draft, or Approve all, is a vote for the whole set.
    assert_eq!(act(&mut i, &lan(), UserAction::Submit), Ok(Applied::Updated));
    assert_eq!(act(&mut i, &minh(), UserAction::DecideAll { decision: Approve }), Ok(decisions(vec![Decision::Approve, Decision::Approve])));
}

#[test]
fn in_a_set_one_reject_rejects_every_action() {
    let mut i = under(dba_policy(), vec![migration(), action("vacuum", json!({}), &[Approve, Reject])]);
    act(&mut i, &lan(), decide(0, Decision::Approve)).unwrap();
    act(&mut i, &lan(), decide(1, Decision::Reject { message: Some("later".into()) })).unwrap();
    assert_eq!(
        act(&mut i, &lan(), UserAction::Submit),
        Ok(decisions(vec![Decision::Reject { message: None }, Decision::Reject { message: Some("later".into()) }])),
        "nothing runs without the quorum"
    );
}

#[test]
fn approve_for_session_is_refused_under_a_quorum() {
    let mut i = under(dba_policy(), vec![action("run_migration", json!({}), &[Approve, ApproveForSession, Reject])]);
    refused(
        &mut i,
        &lan(),
        decide(0, Decision::ApproveForSession),
        Refusal::DecisionNotAllowed { action: "run_migration".into(), decision: ApproveForSession },
    );
    assert!(i.remember_offered().is_empty());
}

#[test]
fn votes_survive_a_restart() {
    let mut i = under(dba_policy(), vec![migration()]);
    act(&mut i, &lan(), approve()).unwrap();
    let mut i = restart(&i);
    assert_eq!(voter_names(&i), ["Lan"]);
    refused(&mut i, &lan(), approve(), Refusal::AlreadyVoted { at_ms: SOON });
    assert_eq!(act(&mut i, &minh(), approve()), Ok(decisions(vec![Decision::Approve])));
}

proptest! {
    /// Whatever people click, in any order, an approval (or edit) never resolves with
    /// fewer than N distinct voters behind the decisions sent, and nobody counts twice.
    #[test]
    fn a_quorum_never_resolves_with_fewer_than_n_distinct_approvers(
        needed in 2u32..5,
        clicks in prop::collection::vec((0usize..6, 0usize..4), 1..30),
    ) {
        let policy = request_policy(json!({"approver_roles": [DBA], "quorum": needed}));
        let mut i = under(policy, vec![migration()]);
        for (who, what) in clicks {
            let actor = dba(&who.to_string(), &format!("p{who}"));
            let action = match what {
                0 | 1 => approve(),
                2 => edit(json!({"version": 7})),
                _ => UserAction::DecideAll { decision: Approve },
            };
            let _ = i.apply(&actor, action, &configured(), SOON);
        }
        let Draft::Decisions(d) = &i.draft else { panic!() };
        let mut ids: Vec<&str> = d.votes.iter().map(|v| v.voter.user_id.as_str()).collect();
        ids.sort_unstable();
        let distinct = ids.len();
        ids.dedup();
        prop_assert_eq!(ids.len(), distinct, "someone voted twice");
        if let Some(Reply::Decisions { decisions, .. }) = &i.reply {
            let behind = d.votes.iter().filter(|v| &v.decisions == decisions).count();
            prop_assert!(behind >= needed as usize, "{} < {}", behind, needed);
        } else {
            prop_assert!(i.status.is_pending());
        }
    }
}

// ---------------------------------------------------------------- remembered approvals

fn shell(cmd: &str) -> Action {
    action("shell", json!({"cmd": cmd}), &[Approve, Reject])
}

fn remembering(scopes: &[&str], args: &str) -> Policy {
    request_policy(json!({"remember": scopes, "remember_args": args}))
}

fn in_session(session: &str, policy: &Policy, a: Action) -> Interaction {
    Interaction::new(format!("{session}-{}", a.name), session.into(), request(vec![a]), Some(requester()), T0).with_policy(Some(policy.clone()))
}

#[test]
fn approve_for_this_session_remembers_the_identical_call_in_that_session_only() {
    let policy = remembering(&["session", "always"], "same");
    let mut first = in_session("s1", &policy, shell("ls"));
    assert_eq!(first.remember_offered(), [RememberScope::Session, RememberScope::Always]);
    let resolved = act(&mut first, &requester(), UserAction::Remember { scope: RememberScope::Session });
    assert_eq!(resolved, Ok(decisions(vec![Decision::Approve])), "the bridge remembers; the backend gets a plain approve");
    let rule = first.rule_to_save("stream").expect("a rule to store");
    assert_eq!(
        serde_json::to_value(&rule).unwrap(),
        json!({"id": "s1-shell", "scope": "session", "tool": "shell", "args": {"cmd": "ls"}, "session_id": "s1",
               "backend": "stream", "set_by": {"platform": "discord", "user_id": "9", "name": "Thảo"},
               "set_at_ms": SOON, "policy": "request"})
    );
    let rules = vec![rule];
    let answers = |i: &Interaction, backend: &str| policy::rule_answers(&rules, &i.request, &i.session_id, backend, i.policy.as_ref()).is_some();
    // The next identical call in the session is approved at once.
    let mut next = in_session("s1", &policy, shell("ls"));
    assert!(answers(&next, "stream"));
    let reply = next.resolve_by_rule(&rules[0], T0 + MIN).expect("approved by the rule");
    assert_eq!(reply, Reply::Decisions { decisions: vec![Decision::Approve], user_edit_content: None });
    assert_eq!(next.status, Status::Resolved { by: Decider::Person(requester()), at_ms: T0 + MIN });
    assert_eq!(
        next.settled_by_policy,
        Some(PolicySettlement::Rule { rule_id: "s1-shell".into(), scope: RememberScope::Session, set_by: requester(), set_at_ms: SOON })
    );
    // Not other args, another tool, another session, or another backend.
    assert!(!answers(&in_session("s1", &policy, shell("rm -rf /")), "stream"));
    assert!(!answers(&in_session("s1", &policy, action("deploy", json!({"cmd": "ls"}), &[Approve, Reject])), "stream"));
    assert!(!answers(&in_session("s2", &policy, shell("ls")), "stream"));
    assert!(!answers(&in_session("s1", &policy, shell("ls")), "kimi"));
    // Not a set of several calls, even if one of them is the remembered one.
    let pair = Interaction::new("p".into(), "s1".into(), request(vec![shell("ls"), shell("ls")]), None, T0).with_policy(Some(policy.clone()));
    assert!(!answers(&pair, "stream"));
    // Not once the policy stops offering the scope.
    assert!(!answers(&in_session("s1", &remembering(&["always"], "same"), shell("ls")), "stream"));
    assert!(!answers(&Interaction::new("n".into(), "s1".into(), request(vec![shell("ls")]), None, T0), "stream"));
}

#[test]
fn always_approve_holds_in_every_session_of_the_backend() {
    let policy = remembering(&["always"], "any");
    let mut first = in_session("s1", &policy, shell("ls"));
    act(&mut first, &requester(), UserAction::Remember { scope: RememberScope::Always }).unwrap();
    let rule = first.rule_to_save("kimi").unwrap();
    assert_eq!((rule.scope, rule.session_id.as_deref(), rule.args.as_ref()), (RememberScope::Always, None, None));
    let rules = [rule];
    let answers = |a: Action, session: &str| {
        let i = in_session(session, &policy, a);
        policy::rule_answers(&rules, &i.request, &i.session_id, "kimi", i.policy.as_ref()).map(|r| r.id.clone())
    };
    assert_eq!(answers(shell("cat x"), "s9").as_deref(), Some("s1-shell"), "any args, any session");
    assert_eq!(answers(action("deploy", json!({}), &[Approve, Reject]), "s9"), None);
    assert_eq!(answers(action("shell", json!({}), &[Reject]), "s9"), None, "the action must allow approve");
}

#[test]
fn remember_is_offered_only_where_the_policy_allows_it() {
    let session_only = remembering(&["session"], "same");
    let mut i = in_session("s1", &session_only, shell("ls"));
    refused(&mut i, &requester(), UserAction::Remember { scope: RememberScope::Always }, Refusal::RememberNotOffered { scope: RememberScope::Always });
    assert_eq!(Refusal::RememberNotOffered { scope: RememberScope::Always }.to_string(), "\"always approve\" is not offered for this request");
    // Never for several actions, or where approve is not allowed.
    let pair = Interaction::new("p".into(), "s1".into(), request(vec![shell("a"), shell("b")]), None, T0).with_policy(Some(session_only.clone()));
    assert!(pair.remember_offered().is_empty());
    assert!(in_session("s1", &session_only, action("shell", json!({}), &[Reject])).remember_offered().is_empty());
    // Without a policy nothing new is offered.
    let mut plain = Interaction::new("n".into(), "s1".into(), request(vec![shell("ls")]), Some(requester()), T0);
    assert!(plain.remember_offered().is_empty());
    assert_eq!(
        plain.apply(&requester(), UserAction::Remember { scope: RememberScope::Session }, &configured(), SOON),
        Err(Refusal::RememberNotOffered { scope: RememberScope::Session })
    );
    // A plain approval under a remembering policy stores no rule.
    let mut once = in_session("s1", &session_only, shell("ls"));
    act(&mut once, &requester(), approve()).unwrap();
    assert_eq!(once.rule_to_save("stream"), None);
}

#[test]
fn kimis_approve_for_session_is_used_natively_when_it_means_the_same() {
    let kimi_shell = action("shell", json!({"cmd": "ls"}), &[Approve, ApproveForSession, Reject]);
    // "any": the tool whatever its args, which is what Kimi remembers itself.
    let mut i = in_session("s1", &remembering(&["session"], "any"), kimi_shell.clone());
    assert_eq!(act(&mut i, &requester(), UserAction::Remember { scope: RememberScope::Session }), Ok(decisions(vec![Decision::ApproveForSession])));
    assert_eq!(i.rule_to_save("kimi"), None, "Kimi remembers it; the bridge stores nothing");
    // "same": narrower than Kimi's, so the bridge remembers and sends a plain approve.
    let mut i = in_session("s1", &remembering(&["session"], "same"), kimi_shell.clone());
    assert_eq!(act(&mut i, &requester(), UserAction::Remember { scope: RememberScope::Session }), Ok(decisions(vec![Decision::Approve])));
    assert!(i.rule_to_save("kimi").is_some());
    // "always" is never Kimi's.
    let mut i = in_session("s1", &remembering(&["always"], "any"), kimi_shell);
    assert_eq!(act(&mut i, &requester(), UserAction::Remember { scope: RememberScope::Always }), Ok(decisions(vec![Decision::Approve])));
    assert_eq!(i.rule_to_save("kimi").map(|r| r.scope), Some(RememberScope::Always));
}

#[test]
fn a_rule_only_resolves_a_pending_single_action_approval() {
    let rule = RememberedRule {
        id: "r".into(),
        scope: RememberScope::Always,
        tool: "shell".into(),
        args: None,
        session_id: None,
        backend: "stream".into(),
        set_by: requester(),
        set_at_ms: T0,
        policy: "p".into(),
    };
    let mut pair = Interaction::new("p".into(), "s1".into(), request(vec![shell("a"), shell("b")]), None, T0);
    assert_eq!(pair.resolve_by_rule(&rule, SOON), None);
    let mut done = Interaction::new("d".into(), "s1".into(), request(vec![shell("a")]), None, T0);
    done.cancel(SOON, "gone");
    let before = done.clone();
    assert_eq!(done.resolve_by_rule(&rule, SOON), None);
    assert_eq!(done, before);
}

// ---------------------------------------------------------------- escalation and fallback

fn due(i: &Interaction, now: i64) -> Vec<StepAction> {
    i.due_escalations(now).into_iter().map(|d| d.step.action.clone()).collect()
}

fn remind() -> StepAction {
    StepAction::Remind { mention: Mention::Role { role_id: DBA.into() } }
}

fn oncall() -> StepAction {
    StepAction::ShowIn { target: "discord:1300".into() }
}

#[test]
fn the_fallback_moment_becomes_the_deadline() {
    let i = under(dba_policy(), vec![migration()]);
    assert_eq!(i.deadline_ms, T0 + 30 * MIN, "the request asked 300 s; the policy says 30 min");
    let no_fallback = request_policy(json!({"escalation": [{"after": "1m", "remind": "approvers"}]}));
    assert_eq!(under(no_fallback, vec![migration()]).deadline_ms, T0 + 300_000);
}

#[test]
fn escalation_reminds_moves_to_a_second_target_then_falls_back_to_reject_across_restarts() {
    let mut i = under(dba_policy(), vec![migration()]);
    assert_eq!(i.next_escalation_at(), Some(T0 + 5 * MIN));
    assert!(due(&i, T0 + 5 * MIN - 1).is_empty());
    assert_eq!(due(&i, T0 + 5 * MIN), [remind()]);
    i.mark_escalated(0);
    // Restart: the same stored interaction, later, gives the next step only.
    let mut i = restart(&i);
    assert!(due(&i, T0 + 10 * MIN).is_empty());
    assert_eq!(i.next_escalation_at(), Some(T0 + 15 * MIN));
    assert_eq!(due(&i, T0 + 16 * MIN), [oncall()]);
    i.mark_escalated(1);
    let mut i = restart(&i);
    assert_eq!(i.next_escalation_at(), None, "only the fallback is left, at the deadline");
    assert!(due(&i, T0 + 29 * MIN).is_empty());
    // Someone votes meanwhile; the fallback still ends it.
    act(&mut i, &lan(), approve()).unwrap();
    assert!(!i.apply_fallback(T0 + 30 * MIN - 1), "not before its moment");
    assert!(i.status.is_pending());
    let mut i = restart(&i);
    assert!(i.apply_fallback(T0 + 30 * MIN));
    assert_eq!(i.status, Status::Expired { at_ms: T0 + 30 * MIN, by_backend: false });
    assert_eq!(
        serde_json::to_value(&i.reply).unwrap(),
        json!({"decisions": [{"type": "reject", "message": "no human decision after 1800 s: rejected by policy request"}]})
    );
    assert_eq!(i.settled_by_policy, Some(PolicySettlement::Fallback { decision: FallbackDecision::Reject, after_secs: 1800 }));
    assert!(!i.apply_fallback(T0 + 31 * MIN), "once");
    assert!(i.due_escalations(T0 + 31 * MIN).is_empty());
    refused(&mut i, &minh(), approve(), Refusal::Expired);
}

#[test]
fn after_downtime_overdue_steps_all_come_due_and_a_decision_stops_them() {
    let i = under(dba_policy(), vec![migration()]);
    // Down from minute 1 to minute 20: both steps are due at once, oldest first.
    assert_eq!(due(&i, T0 + 20 * MIN), [remind(), oncall()]);
    let same_again = restart(&i);
    assert_eq!(due(&same_again, T0 + 20 * MIN), [remind(), oncall()], "same inputs, same steps");
    let mut decided = under(request_policy(json!({"escalation": [{"after": "5m", "remind": "approvers"}]})), vec![migration()]);
    act(&mut decided, &requester(), approve()).unwrap();
    assert!(decided.due_escalations(T0 + 6 * MIN).is_empty());
    assert_eq!(decided.next_escalation_at(), None);
}

#[test]
fn fallbacks_approve_or_leave() {
    let approve_after = request_policy(json!({"escalation": [{"after": "10m", "fallback": "approve"}]}));
    let mut i = under(approve_after, vec![migration(), tool("vacuum")]);
    assert_eq!(i.policy_fallback(), Some(Fallback { after_secs: 600, decision: FallbackDecision::Approve }));
    assert!(i.apply_fallback(T0 + 10 * MIN));
    assert_eq!(i.reply, Some(Reply::Decisions { decisions: vec![Decision::Approve, Decision::Approve], user_edit_content: None }));
    let leave = request_policy(json!({"escalation": [{"after": "10m", "fallback": "leave"}]}));
    let mut i = under(leave, vec![migration()]);
    assert!(i.apply_fallback(T0 + 10 * MIN));
    assert_eq!((i.reply.clone(), i.status.name()), (None, "expired"));
    // No fallback: nothing to apply (timeouts.on_expiry decides).
    let mut plain = under(request_policy(json!({})), vec![migration()]);
    assert!(!plain.apply_fallback(T0 + 60 * MIN));
}

#[test]
fn steps_after_the_deadline_never_run() {
    let late = request_policy(json!({"escalation": [{"after": "1m", "remind": "approvers"}, {"after": "10m", "show_in": "discord:1300"}]}));
    let i = under(late, vec![migration()]);
    assert_eq!(i.deadline_ms, T0 + 5 * MIN);
    assert_eq!(due(&i, T0 + 20 * MIN), [StepAction::Remind { mention: Mention::Approvers }]);
}

// ---------------------------------------------------------------- storage

#[test]
fn an_interaction_without_a_policy_is_stored_exactly_as_before() {
    let i = Interaction::new("i1".into(), "s1".into(), request(vec![migration()]), Some(requester()), T0);
    let json = serde_json::to_value(&i).unwrap();
    let keys: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["id", "session_id", "request", "created_at_ms", "deadline_ms", "requester", "origin", "draft", "status", "reply"]);
    assert_eq!(json["draft"], json!({"kind": "decisions", "decisions": [null], "user_edit_content": null}));
}

#[test]
fn rows_stored_before_policies_still_load() {
    // An interaction body as the store kept it before this change.
    let old = json!({
        "id": "i1", "session_id": "s1",
        "request": {"approval_key": "s1_1", "kind": {"kind": "approval", "actions": [
            {"name": "run_migration", "args": {"version": 42}, "description": null, "tool_use_id": null, "allowed": ["approve", "reject"]}]},
            "timeout_secs": 300},
        "created_at_ms": T0, "deadline_ms": T0 + 300_000,
        "requester": {"platform": "discord", "user_id": "9", "name": "Thảo"},
        "origin": {"from": "chat"},
        "draft": {"kind": "decisions", "decisions": [null], "user_edit_content": null},
        "status": {"state": "pending"}, "reply": null
    });
    let mut i: Interaction = serde_json::from_value(old).expect("an old row loads");
    assert_eq!((i.policy.as_ref(), i.escalations_done, i.quorum_progress()), (None, 0, None));
    assert_eq!(act(&mut i, &requester(), approve()), Ok(decisions(vec![Decision::Approve])));
}

#[test]
fn a_stored_policy_round_trips() {
    let mut i = under(dba_policy(), vec![migration()]);
    act(&mut i, &lan(), approve()).unwrap();
    i.mark_escalated(0);
    let json = serde_json::to_value(&i).unwrap();
    assert_eq!(
        json["policy"],
        json!({"name": "request", "approver_roles": [DBA], "quorum": 2, "remember_args": "same",
               "escalation": [{"after_secs": 300, "step": "remind", "mention": {"who": "role", "role_id": DBA}},
                              {"after_secs": 900, "step": "show_in", "target": "discord:1300"}],
               "fallback": {"after_secs": 1800, "decision": "reject"}})
    );
    assert_eq!(json["escalations_done"], json!(1));
    assert_eq!(json["draft"]["votes"][0]["voter"]["name"], json!("Lan"));
    assert_eq!(restart(&i), i);
    // The config form and the stored form describe the same policy.
    let from_config = spec(json!({"tools": ["run_migration"], "approver_roles": [DBA], "quorum": 2, "escalation": [
        {"after": 300, "remind": format!("role:{DBA}")}, {"after": "15m", "show_in": "discord:1300"}, {"after": "30m", "fallback": "reject"}]}))
    .to_rule(0, &known(), &["stream", "kimi"])
    .unwrap();
    assert_eq!(from_config.matcher, Matcher { tools: vec!["run_migration".into()], ..Matcher::default() });
    assert_eq!(Policy { name: "request".into(), ..from_config.policy }, dba_policy());
}

// ---------------------------------------------------------------- stored access facts

/// The facts the store keeps beside each body (`AccessFacts`, read by the web inbox
/// instead of the body) answer who may act exactly as the interaction does: every
/// origin, a policy's approvers with a vote cast, four eyes, questions, before and at
/// the deadline, for every person and configuration; and who has voted.
#[test]
fn stored_access_facts_answer_exactly_as_the_interaction() {
    let chat_turn = Interaction::new("c".into(), "s1".into(), request(vec![migration()]), Some(requester()), T0);
    let question = Request {
        approval_key: "q".into(),
        kind: RequestKind::Questions { questions: vec![], actions: vec![tool("ask_user")] },
        timeout_secs: 600,
        context: None,
    };
    let asked = Interaction::new("q".into(), "s1".into(), question, Some(requester()), T0);
    let mut pushed = Interaction::new("p".into(), "s1".into(), request(vec![migration()]), None, T0);
    pushed.origin = hitl_bridge::interaction::Origin::Pushed { agent: "ci".into(), approvers: None };
    let mut named = pushed.clone();
    named.origin = hitl_bridge::interaction::Origin::Pushed {
        agent: "ci".into(),
        approvers: Some(hitl_bridge::interaction::Approvers { users: vec![("discord".into(), "3".into())], roles: vec!["77".into()] }),
    };
    let mut voted = under(dba_policy(), vec![migration()]);
    act(&mut voted, &lan(), approve()).unwrap();
    let own_approvers = under(request_policy(json!({"approvers": ["discord:9", "discord:2"]})), vec![migration()]);
    let interactions = [chat_turn, asked, pushed, named, voted, own_approvers];
    let strict = |p: AccessPolicy| AccessPolicy { four_eyes: true, ..p };
    let configurations = [configured(), strict(configured()), AccessPolicy::default(), strict(AccessPolicy::default())];
    let people = [lan(), minh(), hoa(), requester(), ops(), person("13", "Stranger"), Actor { groups: vec!["77".into()], ..person("14", "Role") }];
    let mut compared = 0;
    for i in &interactions {
        // Read back as the store reads the column.
        let stored = serde_json::to_string(&i.access_facts()).unwrap();
        let facts: hitl_bridge::interaction::AccessFacts = serde_json::from_str(&stored).unwrap();
        for configured in &configurations {
            for who in &people {
                for now in [T0, i.deadline_ms - 1, i.deadline_ms, i.deadline_ms + MIN] {
                    assert_eq!(
                        facts.may_act_pending(who, configured, i.deadline_ms, now),
                        i.may_act(who, configured, now),
                        "{} by {} under {configured:?} at {now}",
                        i.id,
                        who.name
                    );
                    compared += 1;
                }
                let has_voted = matches!(&i.draft, Draft::Decisions(d) if d.votes.iter().any(|v| v.voter.is_same_person(who)));
                assert_eq!(facts.has_voted(who), has_voted, "{} voted by {}", i.id, who.name);
            }
        }
    }
    assert_eq!(compared, 6 * 4 * 7 * 4);
    // The cases above are not all one answer: the comparison covers each refusal.
    let voted = &interactions[4];
    assert_eq!(voted.access_facts().voters, vec![("discord".to_owned(), "1".to_owned())]);
    assert!(interactions[4].access_facts().has_voted(&lan()) && !interactions[4].access_facts().has_voted(&minh()));
    assert_eq!(interactions[0].may_act(&requester(), &strict(configured()), T0), Err(Refusal::SelfApproval));
    assert_eq!(interactions[0].may_act(&person("13", "S"), &configured(), T0), Err(Refusal::NotAllowed));
    assert_eq!(interactions[2].may_act(&person("13", "S"), &AccessPolicy::default(), T0), Ok(()));
    assert_eq!(interactions[3].may_act(&Actor { groups: vec!["77".into()], ..person("14", "Role") }, &configured(), T0), Ok(()));
    assert_eq!(interactions[5].may_act(&minh(), &configured(), T0 + 300 * 1000), Err(Refusal::Expired));
}
