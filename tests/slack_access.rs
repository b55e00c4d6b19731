//! Slack user groups (`S…`) as approver groups, end to end on the fake Slack: the
//! members of a group named in `access.approver_roles` or by the request itself are
//! asked of Slack (`usergroups.users.list`) and may decide; anyone else is refused
//! with an ephemeral notice and an audit row and nothing reaches the agent; someone
//! taken out of the group is refused once the members are asked again; and a Slack
//! that cannot say who is in a group (an error, an unknown group) never breaks a
//! click: the last members known still count, and approvers named by id still decide.

mod support;

use std::time::Duration;

use hitl_bridge::config::Settings;
use hitl_bridge::platform::slack::settings::SlackSettings;
use serde_json::{Value, json};
use support::fake_slack::{self, FakeSlack, OPS, Person, has_buttons};
use support::harness::HttpApi;
use support::slack_chat::{assert_refused_only, ephemeral_to, message, next_ts, push_event};
use support::{Chat, Harness, wait_until};

const SECRET: &str = "ci-secret";
/// The on-call group, configured in `access.approver_roles`.
const SRE: &str = "S0SRE";

fn ana() -> Person {
    Person::new("U0ANA", "ana")
}

fn bo() -> Person {
    Person::new("U0BO", "bo")
}

fn mallory() -> Person {
    Person::new("U0MAL", "mallory")
}

/// A bridge with Slack on the fake and the HTTP API on a free port, started: `groups`
/// is `access.approver_roles`, `approvers` `access.approvers`, and the members are
/// asked again every `refresh_secs`. `prepare` sets the fake's groups up before the
/// bridge starts.
async fn start(groups: &[&str], approvers: &[&str], refresh_secs: u64, prepare: impl FnOnce(&FakeSlack)) -> Harness {
    let groups: Vec<String> = groups.iter().map(|g| (*g).to_owned()).collect();
    let approvers: Vec<String> = approvers.iter().map(|a| (*a).to_owned()).collect();
    let mut rig = Harness::on(Chat::Slack)
        .no_agent()
        .set("timeouts.grace_secs", "0")
        .tweak(move |s: &mut Settings| {
            s.http.api_tokens = vec![format!("ci:{SECRET}")];
            s.access.approver_roles = groups;
            s.access.approvers = approvers;
            s.platforms.get_mut::<SlackSettings>().group_refresh_secs = refresh_secs;
        })
        .build()
        .await;
    prepare(rig.slack());
    rig.boot().await;
    rig
}

/// The HTTP API, as the agent pushing requests.
fn api(rig: &Harness) -> HttpApi {
    rig.api(SECRET)
}

/// Pushes an approval of `deploy` to the ops channel (with `extra` fields, such as
/// the request's own approvers); the card's `ts` once Slack has it.
async fn push(rig: &Harness, key: &str, extra: Value) -> String {
    let before = rig.slack().posted().len();
    let mut body = json!({"approval_key": key, "targets": [{"platform": "slack", "channel_id": OPS}], "timeout_seconds": 300,
                          "actions": [{"name": "deploy", "args": {"version": 7}}]});
    for (k, v) in extra.as_object().into_iter().flatten() {
        body[k] = v.clone();
    }
    api(rig).push(&body).await;
    wait_until(|| async { rig.slack().posted().get(before).map(|(_, ts)| ts.clone()) }).await
}

/// The groups the bridge asked Slack about, in order.
fn asked(rig: &Harness) -> Vec<Value> {
    rig.slack().bodies("usergroups.users.list")
}

/// Stops everything; Slack refused nothing but what the test provoked (`allowed`).
async fn stop(mut rig: Harness, allowed: &[&str]) {
    rig.stop_bridge().await;
    assert_refused_only(rig.slack(), allowed);
    rig.shutdown().await;
}

const REFUSED: &str = "You are not allowed to answer this request.";

/// A member of the group in `access.approver_roles` approves: the agent gets exactly
/// one approve decision, and the group was asked about once, by its id. A second
/// request, decided by a member through the Reject modal, needs no second question
/// (the members are remembered), and a non-member's submission of the same modal is
/// refused in the modal.
#[tokio::test]
async fn a_member_of_an_approver_group_approves() {
    let rig = start(&[SRE], &[], 300, |fake| fake.usergroup(SRE, &["U0ANA", "U0BO"])).await;
    let ts = push(&rig, "deploy-1", json!({})).await;
    rig.slack().click(&ana(), OPS, &ts, "Approve");
    assert_eq!(api(&rig).decided("deploy-1").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    assert_eq!(asked(&rig), [json!({"usergroup": SRE})]);

    let ts = push(&rig, "deploy-2", json!({})).await;
    rig.slack().click(&bo(), OPS, &ts, "Reject");
    let view = wait_until(|| async { rig.slack().views().into_iter().next() }).await;
    let forged = rig.slack().submission_envelope(&mallory(), &view, &[("reason", "text", "no")]);
    let forged_id = forged["envelope_id"].as_str().unwrap().to_owned();
    rig.slack().push(forged);
    assert_eq!(rig.slack().wait_ack(&forged_id).await["payload"], json!({"response_action": "errors", "errors": {"reason": REFUSED}}));
    assert_eq!(api(&rig).state("deploy-2").await["status"], "pending");
    rig.slack().push(rig.slack().submission_envelope(&bo(), &view, &[("reason", "text", "not tonight")]));
    assert_eq!(api(&rig).decided("deploy-2").await["reply"], json!({"decisions": [{"type": "reject", "message": "not tonight"}]}));
    assert_eq!(asked(&rig).len(), 1, "the members are remembered until the refresh");
    stop(rig, &[]).await;
}

/// A group the request names itself (`approver_roles` in the push), not the
/// configuration, is asked about too, and its member decides.
#[tokio::test]
async fn a_group_the_request_names_decides_it() {
    let rig = start(&[], &[], 300, |fake| fake.usergroup("S0DBA", &["U0BO"])).await;
    let ts = push(&rig, "migrate-1", json!({"approver_roles": ["S0DBA"]})).await;
    rig.slack().click(&mallory(), OPS, &ts, "Approve");
    assert_eq!(ephemeral_to(rig.slack(), "U0MAL", 0).await["text"], REFUSED);
    rig.slack().click(&bo(), OPS, &ts, "Approve");
    assert_eq!(api(&rig).decided("migrate-1").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    assert_eq!(asked(&rig), [json!({"usergroup": "S0DBA"})]);
    stop(rig, &[]).await;
}

/// Someone outside the group is told, only them, that they may not answer; the
/// refusal is audited with who they are (no groups), and nothing changes: the card
/// keeps its buttons, the request stays pending, no decision is sent.
#[tokio::test]
async fn a_non_members_click_is_refused_audited_and_sends_nothing() {
    let rig = start(&[SRE], &[], 300, |fake| fake.usergroup(SRE, &["U0ANA"])).await;
    let ts = push(&rig, "deploy-3", json!({})).await;
    rig.slack().click(&mallory(), OPS, &ts, "Approve");
    assert_eq!(ephemeral_to(rig.slack(), "U0MAL", 0).await, json!({"channel": OPS, "user": "U0MAL", "text": REFUSED}));
    let store = hitl_bridge::store::Store::connect(&rig.settings.store.url).await.unwrap();
    let refused = wait_until(|| async { store.refused_attempts(0).await.ok().filter(|r| !r.is_empty()) }).await;
    let seen: Vec<(Value, Value)> = refused.iter().map(|e| (json!(e.actor), e.reply.clone().unwrap())).collect();
    assert_eq!(
        seen,
        [(
            json!({"platform": "slack", "user_id": "U0MAL", "name": "mallory", "guild_id": fake_slack::TEAM}),
            json!({"attempted": {"op": "decide", "action": 0, "decision": {"type": "approve"}}, "reason": "you are not allowed to answer this request"})
        )]
    );
    store.close().await;
    assert_eq!(api(&rig).state("deploy-3").await["status"], "pending");
    assert!(has_buttons(&rig.slack().message(OPS, &ts).unwrap()));
    assert!(rig.slack().bodies("chat.update").is_empty(), "the card was not touched");
    stop(rig, &[]).await;
}

/// Ana is taken out of the group in Slack: within the refresh she still counts (the
/// members are remembered), after it the bridge asks again and refuses her.
#[tokio::test]
async fn a_member_taken_out_of_the_group_is_refused_after_the_refresh() {
    let rig = start(&[SRE], &[], 1, |fake| fake.usergroup(SRE, &["U0ANA", "U0BO"])).await;
    let ts = push(&rig, "deploy-4", json!({})).await;
    rig.slack().click(&ana(), OPS, &ts, "Approve");
    assert_eq!(api(&rig).decided("deploy-4").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    rig.slack().usergroup(SRE, &["U0BO"]);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let ts = push(&rig, "deploy-5", json!({})).await;
    rig.slack().click(&ana(), OPS, &ts, "Approve");
    assert_eq!(ephemeral_to(rig.slack(), "U0ANA", 0).await["text"], REFUSED);
    assert_eq!(api(&rig).state("deploy-5").await["status"], "pending");
    assert_eq!(asked(&rig), [json!({"usergroup": SRE}), json!({"usergroup": SRE})], "asked at first need, then once after the refresh");
    rig.slack().click(&bo(), OPS, &ts, "Approve");
    assert_eq!(api(&rig).decided("deploy-5").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    stop(rig, &[]).await;
}

/// Slack fails `usergroups.users.list`: clicks still work. Before any answer nobody
/// counts as in the group (refused, not broken), while Bo, an approver by id,
/// decides; once Slack answers, Ana counts; when it fails again, the members last
/// known still count. A group Slack does not know (`no_such_subteam`) counts nobody
/// and breaks nothing either.
#[tokio::test]
async fn a_failing_group_lookup_never_breaks_a_click() {
    let rig = start(&[SRE, "S0GONE"], &["slack:U0BO"], 1, |fake| {
        fake.usergroup(SRE, &["U0ANA"]);
        fake.fail_usergroups(Some("fatal_error"));
    })
    .await;
    let ts = push(&rig, "deploy-6", json!({})).await;
    rig.slack().click(&ana(), OPS, &ts, "Approve");
    assert_eq!(ephemeral_to(rig.slack(), "U0ANA", 0).await["text"], REFUSED);
    rig.slack().click(&bo(), OPS, &ts, "Approve");
    assert_eq!(api(&rig).decided("deploy-6").await["reply"], json!({"decisions": [{"type": "approve"}]}));

    rig.slack().fail_usergroups(None);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let ts = push(&rig, "deploy-7", json!({})).await;
    rig.slack().click(&ana(), OPS, &ts, "Approve");
    assert_eq!(api(&rig).decided("deploy-7").await["reply"], json!({"decisions": [{"type": "approve"}]}));

    rig.slack().fail_usergroups(Some("fatal_error"));
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let ts = push(&rig, "deploy-8", json!({})).await;
    rig.slack().click(&ana(), OPS, &ts, "Approve");
    assert_eq!(api(&rig).decided("deploy-8").await["reply"], json!({"decisions": [{"type": "approve"}]}), "the members last known still count");

    let errors: Vec<String> = rig.slack().errors().into_iter().filter(|(m, _)| m == "usergroups.users.list").map(|(_, e)| e).collect();
    assert!(errors.contains(&"no_such_subteam".to_owned()), "{errors:?}");
    assert!(errors.iter().filter(|e| *e == "fatal_error").count() >= 2, "{errors:?}");
    stop(rig, &["fatal_error", "no_such_subteam"]).await;
}

/// The members Slack gave are kept in the store. After a restart within the refresh, a
/// member counts at once and Slack is not asked again, even while it fails. After a
/// restart when the members kept are older than the refresh, Slack is asked again at
/// first need; it fails, and the members kept still count (before, every member was
/// refused until Slack answered), while someone outside the group is still refused.
#[tokio::test]
async fn the_members_last_known_outlive_a_restart() {
    let mut rig = start(&[SRE], &[], 300, |fake| fake.usergroup(SRE, &["U0ANA"])).await;
    let approved = json!({"decisions": [{"type": "approve"}]});
    let ts = push(&rig, "deploy-11", json!({})).await;
    rig.slack().click(&ana(), OPS, &ts, "Approve");
    assert_eq!(api(&rig).decided("deploy-11").await["reply"], approved);
    assert_eq!(asked(&rig).len(), 1);

    rig.slack().fail_usergroups(Some("fatal_error"));
    rig.restart().await;
    let ts = push(&rig, "deploy-12", json!({})).await;
    rig.slack().click(&ana(), OPS, &ts, "Approve");
    assert_eq!(api(&rig).decided("deploy-12").await["reply"], approved);
    assert_eq!(asked(&rig).len(), 1, "the members kept are within the refresh: Slack is not asked");

    rig.settings.platforms.get_mut::<SlackSettings>().group_refresh_secs = 1;
    rig.restart().await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let ts = push(&rig, "deploy-13", json!({})).await;
    rig.slack().click(&ana(), OPS, &ts, "Approve");
    assert_eq!(api(&rig).decided("deploy-13").await["reply"], approved, "Slack failed: the members kept still count");
    assert_eq!(asked(&rig), [json!({"usergroup": SRE}), json!({"usergroup": SRE})], "older than the refresh: asked again");
    let ts = push(&rig, "deploy-14", json!({})).await;
    rig.slack().click(&mallory(), OPS, &ts, "Approve");
    assert_eq!(ephemeral_to(rig.slack(), "U0MAL", 0).await["text"], REFUSED);
    assert_eq!(api(&rig).state("deploy-14").await["status"], "pending");
    stop(rig, &["fatal_error"]).await;
}

/// `access.roles` names a user group: its member may talk to the agent in a chat
/// channel (the agent hears them), while someone outside it is refused, only to them,
/// and reaches nothing.
#[tokio::test]
async fn a_member_of_a_group_in_access_roles_may_talk() {
    let mut rig = Harness::on(Chat::Slack)
        .tweak(|s: &mut Settings| {
            s.platforms.get_mut::<SlackSettings>().channels = vec![OPS.into()];
            s.access.roles = vec!["S0DEV".into()];
        })
        .build()
        .await;
    rig.slack().usergroup("S0DEV", &["U0BO"]);
    rig.boot().await;
    let say = |who: &str, text: &str| push_event(rig.slack(), message(who, OPS, "channel", text, &next_ts(), None));
    say("U0MAL", "let me in");
    let refusal = ephemeral_to(rig.slack(), "U0MAL", 0).await;
    assert!(refusal["text"].as_str().is_some_and(|t| t.contains("slack:U0MAL")), "{refusal}");
    say("U0BO", "xin chào");
    let heard = wait_until(|| async {
        let heard: Vec<(Value, Value)> =
            rig.sim().commands().into_iter().filter(|c| c["type"] == "message").map(|c| (c["content"][0]["text"].clone(), c["user"]["id"].clone())).collect();
        (!heard.is_empty()).then_some(heard)
    })
    .await;
    assert_eq!(heard, [(json!("xin chào"), json!("U0BO"))], "the member is heard, the stranger never");
    assert_eq!(asked(&rig), [json!({"usergroup": "S0DEV"})], "asked once, remembered after");
    stop(rig, &[]).await;
}
