//! Slack user groups (`S…`) as approver groups, end to end on the fake Slack: the
//! members of a group named in `access.approver_roles` or by the request itself are
//! asked of Slack (`usergroups.users.list`) and may decide; anyone else is refused
//! with an ephemeral notice and an audit row and nothing reaches the agent; someone
//! taken out of the group is refused once the members are asked again; and a Slack
//! that cannot say who is in a group (an error, an unknown group) never breaks a
//! click: the last members known still count, and approvers named by id still decide.

mod support;

use std::time::Duration;

use axum::http::StatusCode;
use hitl_bridge::config::Settings;
use hitl_bridge::platform::slack::settings::SlackSettings;
use serde_json::{Value, json};
use support::fake_slack::{self, FakeSlack, OPS, Person, has_buttons};
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

/// A bridge with Slack on the fake and the HTTP API on a free port. (Copied from
/// tests/slack.rs's rig, with the access settings each test gives.)
struct Rig {
    harness: Harness,
    fake: FakeSlack,
    base: String,
    http: reqwest::Client,
}

impl Rig {
    /// `groups`: `access.approver_roles`; `approvers`: `access.approvers`; the
    /// members are asked again every `refresh_secs`. `prepare` sets the fake's groups
    /// up before the bridge starts.
    async fn start(groups: &[&str], approvers: &[&str], refresh_secs: u64, prepare: impl FnOnce(&FakeSlack)) -> Rig {
        let fake = FakeSlack::start().await;
        prepare(&fake);
        let pairs = [
            ("slack.enabled", "true".to_owned()),
            ("slack.bot_token", fake_slack::BOT_TOKEN.to_owned()),
            ("slack.app_token", fake_slack::APP_TOKEN.to_owned()),
            ("slack.api_url", fake.api_url()),
            ("tokens.secret", "test-secret".to_owned()),
            ("timeouts.grace_secs", "0".to_owned()),
        ];
        let borrowed: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let groups: Vec<String> = groups.iter().map(|g| (*g).to_owned()).collect();
        let approvers: Vec<String> = approvers.iter().map(|a| (*a).to_owned()).collect();
        let mut harness = Harness::on(Chat::Headless)
            .no_agent()
            .settings(&borrowed)
            .tweak(move |s: &mut Settings| {
                s.http.api_tokens = vec![format!("ci:{SECRET}")];
                s.access.approver_roles = groups;
                s.access.approvers = approvers;
                s.platforms.get_mut::<SlackSettings>().group_refresh_secs = refresh_secs;
            })
            .build()
            .await;
        harness.boot().await;
        fake.wait_connections(1).await;
        let base = format!("http://{}", harness.app().http_addr().expect("http listener"));
        Rig { harness, fake, base, http: reqwest::Client::new() }
    }

    async fn send(&self, method: reqwest::Method, path: &str, body: Option<&Value>) -> (StatusCode, Value) {
        let mut request = self.http.request(method, format!("{}{path}", self.base)).bearer_auth(SECRET);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.expect("request");
        let status = StatusCode::from_u16(response.status().as_u16()).expect("status");
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// Pushes an approval of `deploy` to the ops channel (with `extra` fields, such as
    /// the request's own approvers); the card's `ts` once Slack has it.
    async fn push(&self, key: &str, extra: Value) -> String {
        let before = self.fake.posted().len();
        let mut body = json!({"approval_key": key, "targets": [{"platform": "slack", "channel_id": OPS}], "timeout_seconds": 300,
                              "actions": [{"name": "deploy", "args": {"version": 7}}]});
        for (k, v) in extra.as_object().into_iter().flatten() {
            body[k] = v.clone();
        }
        let (status, created) = self.send(reqwest::Method::POST, "/v1/requests", Some(&body)).await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        wait_until(|| async { self.fake.posted().get(before).map(|(_, ts)| ts.clone()) }).await
    }

    async fn state(&self, key: &str) -> Value {
        let (status, body) = self.send(reqwest::Method::GET, &format!("/v1/requests/{key}"), None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }

    async fn decided(&self, key: &str) -> Value {
        wait_until(|| async {
            let (_, body) = self.send(reqwest::Method::GET, &format!("/v1/requests/{key}?wait=5"), None).await;
            (body["status"] != "pending").then_some(body)
        })
        .await
    }

    /// Waits for the `nth` ephemeral notice to `user`; its body.
    async fn ephemeral_to(&self, user: &str, nth: usize) -> Value {
        wait_until(|| async { self.fake.bodies("chat.postEphemeral").into_iter().filter(|b| b["user"] == user).nth(nth) }).await
    }

    /// The groups the bridge asked Slack about, in order.
    fn asked(&self) -> Vec<Value> {
        self.fake.bodies("usergroups.users.list")
    }

    /// Stops everything; Slack refused nothing but what the test provoked (`allowed`).
    async fn stop(mut self, allowed: &[&str]) {
        self.harness.stop_bridge().await;
        let unexpected: Vec<_> = self.fake.errors().into_iter().filter(|(_, e)| e != "ratelimited" && !allowed.contains(&e.as_str())).collect();
        assert!(unexpected.is_empty(), "Slack would have refused: {unexpected:?}");
        self.fake.shutdown();
        self.harness.shutdown().await;
    }
}

const REFUSED: &str = "You are not allowed to answer this request.";

/// A member of the group in `access.approver_roles` approves: the agent gets exactly
/// one approve decision, and the group was asked about once, by its id. A second
/// request, decided by a member through the Reject modal, needs no second question
/// (the members are remembered), and a non-member's submission of the same modal is
/// refused in the modal.
#[tokio::test]
async fn a_member_of_an_approver_group_approves() {
    let rig = Rig::start(&[SRE], &[], 300, |fake| fake.usergroup(SRE, &["U0ANA", "U0BO"])).await;
    let ts = rig.push("deploy-1", json!({})).await;
    rig.fake.click(&ana(), OPS, &ts, "Approve");
    assert_eq!(rig.decided("deploy-1").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    assert_eq!(rig.asked(), [json!({"usergroup": SRE})]);

    let ts = rig.push("deploy-2", json!({})).await;
    rig.fake.click(&bo(), OPS, &ts, "Reject");
    let view = wait_until(|| async { rig.fake.views().into_iter().next() }).await;
    let forged = rig.fake.submission_envelope(&mallory(), &view, &[("reason", "text", "no")]);
    let forged_id = forged["envelope_id"].as_str().unwrap().to_owned();
    rig.fake.push(forged);
    assert_eq!(rig.fake.wait_ack(&forged_id).await["payload"], json!({"response_action": "errors", "errors": {"reason": REFUSED}}));
    assert_eq!(rig.state("deploy-2").await["status"], "pending");
    rig.fake.push(rig.fake.submission_envelope(&bo(), &view, &[("reason", "text", "not tonight")]));
    assert_eq!(rig.decided("deploy-2").await["reply"], json!({"decisions": [{"type": "reject", "message": "not tonight"}]}));
    assert_eq!(rig.asked().len(), 1, "the members are remembered until the refresh");
    rig.stop(&[]).await;
}

/// A group the request names itself (`approver_roles` in the push), not the
/// configuration, is asked about too, and its member decides.
#[tokio::test]
async fn a_group_the_request_names_decides_it() {
    let rig = Rig::start(&[], &[], 300, |fake| fake.usergroup("S0DBA", &["U0BO"])).await;
    let ts = rig.push("migrate-1", json!({"approver_roles": ["S0DBA"]})).await;
    rig.fake.click(&mallory(), OPS, &ts, "Approve");
    assert_eq!(rig.ephemeral_to("U0MAL", 0).await["text"], REFUSED);
    rig.fake.click(&bo(), OPS, &ts, "Approve");
    assert_eq!(rig.decided("migrate-1").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    assert_eq!(rig.asked(), [json!({"usergroup": "S0DBA"})]);
    rig.stop(&[]).await;
}

/// Someone outside the group is told, only them, that they may not answer; the
/// refusal is audited with who they are (no groups), and nothing changes: the card
/// keeps its buttons, the request stays pending, no decision is sent.
#[tokio::test]
async fn a_non_members_click_is_refused_audited_and_sends_nothing() {
    let rig = Rig::start(&[SRE], &[], 300, |fake| fake.usergroup(SRE, &["U0ANA"])).await;
    let ts = rig.push("deploy-3", json!({})).await;
    rig.fake.click(&mallory(), OPS, &ts, "Approve");
    assert_eq!(rig.ephemeral_to("U0MAL", 0).await, json!({"channel": OPS, "user": "U0MAL", "text": REFUSED}));
    let store = hitl_bridge::store::Store::connect(&rig.harness.settings.store.url).await.unwrap();
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
    assert_eq!(rig.state("deploy-3").await["status"], "pending");
    assert!(has_buttons(&rig.fake.message(OPS, &ts).unwrap()));
    assert!(rig.fake.bodies("chat.update").is_empty(), "the card was not touched");
    rig.stop(&[]).await;
}

/// Ana is taken out of the group in Slack: within the refresh she still counts (the
/// members are remembered), after it the bridge asks again and refuses her.
#[tokio::test]
async fn a_member_taken_out_of_the_group_is_refused_after_the_refresh() {
    let rig = Rig::start(&[SRE], &[], 1, |fake| fake.usergroup(SRE, &["U0ANA", "U0BO"])).await;
    let ts = rig.push("deploy-4", json!({})).await;
    rig.fake.click(&ana(), OPS, &ts, "Approve");
    assert_eq!(rig.decided("deploy-4").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    rig.fake.usergroup(SRE, &["U0BO"]);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let ts = rig.push("deploy-5", json!({})).await;
    rig.fake.click(&ana(), OPS, &ts, "Approve");
    assert_eq!(rig.ephemeral_to("U0ANA", 0).await["text"], REFUSED);
    assert_eq!(rig.state("deploy-5").await["status"], "pending");
    assert_eq!(rig.asked(), [json!({"usergroup": SRE}), json!({"usergroup": SRE})], "asked at first need, then once after the refresh");
    rig.fake.click(&bo(), OPS, &ts, "Approve");
    assert_eq!(rig.decided("deploy-5").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    rig.stop(&[]).await;
}

/// Slack fails `usergroups.users.list`: clicks still work. Before any answer nobody
/// counts as in the group (refused, not broken), while Bo, an approver by id,
/// decides; once Slack answers, Ana counts; when it fails again, the members last
/// known still count. A group Slack does not know (`no_such_subteam`) counts nobody
/// and breaks nothing either.
#[tokio::test]
async fn a_failing_group_lookup_never_breaks_a_click() {
    let rig = Rig::start(&[SRE, "S0GONE"], &["slack:U0BO"], 1, |fake| {
        fake.usergroup(SRE, &["U0ANA"]);
        fake.fail_usergroups(Some("fatal_error"));
    })
    .await;
    let ts = rig.push("deploy-6", json!({})).await;
    rig.fake.click(&ana(), OPS, &ts, "Approve");
    assert_eq!(rig.ephemeral_to("U0ANA", 0).await["text"], REFUSED);
    rig.fake.click(&bo(), OPS, &ts, "Approve");
    assert_eq!(rig.decided("deploy-6").await["reply"], json!({"decisions": [{"type": "approve"}]}));

    rig.fake.fail_usergroups(None);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let ts = rig.push("deploy-7", json!({})).await;
    rig.fake.click(&ana(), OPS, &ts, "Approve");
    assert_eq!(rig.decided("deploy-7").await["reply"], json!({"decisions": [{"type": "approve"}]}));

    rig.fake.fail_usergroups(Some("fatal_error"));
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let ts = rig.push("deploy-8", json!({})).await;
    rig.fake.click(&ana(), OPS, &ts, "Approve");
    assert_eq!(rig.decided("deploy-8").await["reply"], json!({"decisions": [{"type": "approve"}]}), "the members last known still count");

    let errors: Vec<String> = rig.fake.errors().into_iter().filter(|(m, _)| m == "usergroups.users.list").map(|(_, e)| e).collect();
    assert!(errors.contains(&"no_such_subteam".to_owned()), "{errors:?}");
    assert!(errors.iter().filter(|e| *e == "fatal_error").count() >= 2, "{errors:?}");
    rig.stop(&["fatal_error", "no_such_subteam"]).await;
}

/// `access.roles` names a user group: its member may talk to the agent in a chat
/// channel (the agent hears them), while someone outside it is refused, only to them,
/// and reaches nothing.
#[tokio::test]
async fn a_member_of_a_group_in_access_roles_may_talk() {
    let fake = FakeSlack::start().await;
    fake.usergroup("S0DEV", &["U0BO"]);
    let pairs = [
        ("slack.enabled", "true".to_owned()),
        ("slack.bot_token", fake_slack::BOT_TOKEN.to_owned()),
        ("slack.app_token", fake_slack::APP_TOKEN.to_owned()),
        ("slack.api_url", fake.api_url()),
        ("tokens.secret", "test-secret".to_owned()),
    ];
    let borrowed: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut harness = Harness::on(Chat::Headless)
        .settings(&borrowed)
        .tweak(|s: &mut Settings| {
            s.platforms.get_mut::<SlackSettings>().channels = vec![OPS.into()];
            s.access.roles = vec!["S0DEV".into()];
        })
        .start()
        .await;
    fake.wait_connections(1).await;
    let say = |n: u32, who: &str, text: &str| {
        let ts = format!("17000001{n:02}.000100");
        fake.push(json!({
            "type": "events_api", "envelope_id": format!("env-ev-{n}"), "accepts_response_payload": false, "retry_attempt": 0, "retry_reason": "",
            "payload": {"token": "legacy", "team_id": fake_slack::TEAM, "api_app_id": "A0APP", "type": "event_callback",
                        "event_id": format!("Ev{n}"), "event_time": 1_700_000_000,
                        "event": {"type": "message", "channel": OPS, "channel_type": "channel", "user": who, "text": text, "ts": ts, "event_ts": ts, "team": fake_slack::TEAM}}
        }));
    };
    say(1, "U0MAL", "let me in");
    let refusal = wait_until(|| async { fake.bodies("chat.postEphemeral").into_iter().next() }).await;
    assert_eq!(refusal["user"], "U0MAL");
    assert!(refusal["text"].as_str().is_some_and(|t| t.contains("slack:U0MAL")), "{refusal}");
    say(2, "U0BO", "xin chào");
    let heard = wait_until(|| async {
        let heard: Vec<(Value, Value)> = harness
            .sim()
            .commands()
            .into_iter()
            .filter(|c| c["type"] == "message")
            .map(|c| (c["content"][0]["text"].clone(), c["user"]["id"].clone()))
            .collect();
        (!heard.is_empty()).then_some(heard)
    })
    .await;
    assert_eq!(heard, [(json!("xin chào"), json!("U0BO"))], "the member is heard, the stranger never");
    assert_eq!(fake.bodies("usergroups.users.list"), [json!({"usergroup": "S0DEV"})], "asked once, remembered after");
    harness.stop_bridge().await;
    assert!(fake.errors().is_empty(), "Slack would have refused: {:?}", fake.errors());
    fake.shutdown();
    harness.shutdown().await;
}
