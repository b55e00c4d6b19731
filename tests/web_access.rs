//! Who may answer in the web inbox is asked at the moment a person reads or decides,
//! from the same source a click in chat uses (docs/web.md "Who sees what"): a Slack
//! user group's members as Slack lists them, refreshed every
//! `slack.group_refresh_secs`; a Teams team's members as the Connector API lists
//! them; a Discord member's roles as Discord gives them; the
//! request's own `approver_roles`. A sign-in link and a session hold who the person
//! is, never their groups. And a request anyone in its chat may answer is shown in the
//! browser only to `access.users` and `access.admins`: anyone else with a `/web`
//! session sees nothing and decides nothing.

mod support;

use reqwest::StatusCode;
use serde_json::{Value, json};
use support::fake_discord::{self, CHANNEL_ID, GUILD_ID};
use support::fake_slack::{OPS, Person};
use support::fake_teams;
use support::slack_chat;
use support::web_inbox::{Browser, PUBLIC_URL, title};
use support::{Chat, Harness, wait_until};

use hitl_bridge::interaction::Actor;

const SECRET: &str = "ci-secret";

fn trade(key: &str, target: Value) -> Value {
    json!({
        "approval_key": key, "targets": [target], "timeout_seconds": 600,
        "actions": [{"name": "execute_trade", "args": {"symbol": "VNM", "quantity": 100}}]
    })
}

/// A bridge on `chat` with the inbox on and the inbound API open; `tweak` says who
/// approves.
async fn bridge(chat: Chat, pairs: &[(&str, &str)], tweak: impl FnOnce(&mut hitl_bridge::config::Settings) + 'static) -> Harness {
    Harness::on(chat)
        .no_agent()
        .set("web.enabled", "true")
        .set("web.public_url", PUBLIC_URL)
        .settings(pairs)
        .tweak(|s| s.http.api_tokens = vec![format!("ci:{SECRET}")])
        .tweak(tweak)
        .start()
        .await
}

/// Pushes `body`; the interaction id.
async fn push(rig: &Harness, body: &Value) -> String {
    let key = body["approval_key"].as_str().expect("key").to_owned();
    rig.api(SECRET).push(body).await;
    let store = hitl_bridge::store::Store::connect(&rig.settings.store.url).await.expect("store");
    let id = wait_until(|| async { store.interactions_with_key(&key).await.expect("read").into_iter().next().map(|i| i.id) }).await;
    store.close().await;
    id
}

async fn status(rig: &Harness, key: &str) -> Value {
    rig.api(SECRET).send(reqwest::Method::GET, &format!("/v1/requests/{key}"), None).await.1
}

/// Approves action 0 of request `id` from the browser: the answer's status.
async fn approve(browser: &Browser, id: &str) -> StatusCode {
    browser.post(&format!("/inbox/requests/{id}/decide"), &[("action", "0"), ("decision", "approve")]).await.0
}

/// Ana is in the on-call group `S0SRE` (`access.approver_roles`) and signs in with the
/// link `/hitl web` gives her in her DM (the command's person comes with her groups;
/// the link keeps none): she sees and may answer the request. Taken
/// out of the group in Slack, her open browser no longer sees it once the group's
/// members are asked again (`slack.group_refresh_secs`), and a decision posted by URL
/// is refused, audited, and changes nothing.
#[tokio::test]
async fn a_member_removed_from_a_slack_group_cannot_decide_in_an_open_browser_after_the_refresh() {
    let rig = bridge(Chat::Slack, &[("slack.group_refresh_secs", "1")], |s| s.access.approver_roles = vec!["S0SRE".into()]).await;
    rig.slack().usergroup("S0SRE", &["U0ANA"]);
    let id = push(&rig, &trade("sre-1", json!({"platform": "slack", "channel_id": OPS}))).await;
    let answer = slack_chat::hitl(rig.slack(), &Person::new("U0ANA", "ana"), "D0ANA", "web").await;
    let text = answer["text"].as_str().expect("the answer");
    let link = text.lines().find(|l| l.starts_with(PUBLIC_URL)).unwrap_or_else(|| panic!("a sign-in link in {text}"));
    let browser = Browser::from_link(&rig, link).await;

    let (_, page) = browser.get("/inbox").await;
    assert_eq!(title(&page), "(1) Inbox", "{page}");
    let (status_code, page) = browser.get(&format!("/inbox/requests/{id}")).await;
    assert_eq!(status_code, StatusCode::OK);
    assert!(page.contains(">Approve</button>"), "{page}");

    rig.slack().usergroup("S0SRE", &[]);
    let page = wait_until(|| async {
        let (code, page) = browser.get(&format!("/inbox/requests/{id}")).await;
        (code == StatusCode::NOT_FOUND).then_some(page)
    })
    .await;
    assert!(page.contains("No such request is waiting for you.") && !page.contains("execute_trade"), "{page}");
    let (_, list) = browser.get("/inbox").await;
    assert_eq!(title(&list), "(0) Inbox");
    assert_eq!(approve(&browser, &id).await, StatusCode::NOT_FOUND);
    assert_eq!(status(&rig, "sre-1").await["status"], "pending");
    let store = hitl_bridge::store::Store::connect(&rig.settings.store.url).await.expect("store");
    let refused = wait_until(|| async { store.audit_log("sre-1").await.unwrap().into_iter().find(|e| e.outcome == "refused") }).await;
    let who = refused.actor.expect("who");
    assert_eq!((who.platform.as_str(), who.user_id.as_str(), who.channel.as_deref()), ("slack", "U0ANA", Some("web")));
    store.close().await;
    rig.shutdown().await;
}

/// A group only the request names (`approver_roles` of the push, not configured):
/// its members see the request in the browser and decide it; the agent gets the
/// approval, decided by Ana.
#[tokio::test]
async fn a_slack_group_named_by_the_request_decides_in_the_browser() {
    let rig = bridge(Chat::Slack, &[], |s| s.access.approvers = vec!["slack:U0OTHER".into()]).await;
    rig.slack().usergroup("S0DBA", &["U0ANA"]);
    let mut body = trade("dba-1", json!({"platform": "slack", "channel_id": OPS}));
    body["approver_roles"] = json!(["S0DBA"]);
    let id = push(&rig, &body).await;
    let browser = Browser::sign_in(&rig, &Actor::new("slack", "U0ANA", "ana")).await;
    let (_, page) = browser.get("/inbox").await;
    assert_eq!(title(&page), "(1) Inbox", "{page}");
    assert_eq!(approve(&browser, &id).await, StatusCode::SEE_OTHER);
    let state = status(&rig, "dba-1").await;
    assert_eq!(state["status"], "resolved");
    assert_eq!(state["decided_by"], json!({"platform": "slack", "id": "U0ANA", "name": "ana"}));
    rig.shutdown().await;
}

/// A Teams team in `access.approver_roles`: its member Ana, signed in, sees the
/// request and decides it (her membership read from the Connector API when she reads
/// and decides); Mallory, signed in too but not in the team, sees nothing and her
/// decision by URL is refused.
#[tokio::test]
async fn a_teams_team_member_decides_in_the_browser() {
    const TEAM: &str = "19:team0a1b2c@thread.tacv2";
    const ANA: &str = "6b1e3f0a-2c4d-4e5f-8a9b-0c1d2e3f4a5b";
    let rig = bridge(Chat::Teams, &[], |s| s.access.approver_roles = vec![TEAM.into()]).await;
    rig.teams().members(TEAM, &[ANA]);
    let id = push(&rig, &trade("team-1", json!({"platform": "teams", "conversation_id": fake_teams::OPS}))).await;
    let mallory = Browser::sign_in(&rig, &Actor::new("teams", "99999999-8888-4777-8666-555555555555", "Mallory")).await;
    let (_, page) = mallory.get("/inbox").await;
    assert_eq!(title(&page), "(0) Inbox", "{page}");
    assert_eq!(approve(&mallory, &id).await, StatusCode::NOT_FOUND);
    let ana = Browser::sign_in(&rig, &Actor::new("teams", ANA, "Ana")).await;
    let (_, page) = ana.get("/inbox").await;
    assert_eq!(title(&page), "(1) Inbox", "{page}");
    assert_eq!(approve(&ana, &id).await, StatusCode::SEE_OTHER);
    let state = status(&rig, "team-1").await;
    assert_eq!(state["status"], "resolved");
    assert_eq!(state["decided_by"], json!({"platform": "teams", "id": ANA, "name": "Ana"}));
    rig.shutdown().await;
}

/// Thảo holds the approver role `900` in the guild (`discord.guild_id`) and signs in
/// from a DM, which carries no roles: her roles are looked up when she decides, and
/// she decides. Minh, in the guild without the role, sees nothing.
#[tokio::test]
async fn a_discord_role_approver_decides_in_the_browser() {
    const THAO: &str = "500000000000000001";
    const MINH: &str = "500000000000000002";
    let rig = bridge(Chat::Discord, &[], |s| {
        s.access.approver_roles = vec!["900".into()];
        s.platforms.get_mut::<hitl_bridge::platform::discord::settings::DiscordSettings>().guild_id = Some(GUILD_ID.into());
    })
    .await;
    rig.discord().add_member(&fake_discord::user(THAO, "Thảo"), &["900"]);
    rig.discord().add_member(&fake_discord::user(MINH, "Minh"), &["901"]);
    let id = push(&rig, &trade("role-1", json!({"platform": "discord", "channel_id": CHANNEL_ID}))).await;

    let minh = Browser::sign_in(&rig, &Actor::new("discord", MINH, "Minh")).await;
    let (_, page) = minh.get("/inbox").await;
    assert_eq!(title(&page), "(0) Inbox", "{page}");
    assert_eq!(minh.get(&format!("/inbox/requests/{id}")).await.0, StatusCode::NOT_FOUND);

    let thao = Browser::sign_in(&rig, &Actor::new("discord", THAO, "Thảo")).await;
    let (_, page) = thao.get("/inbox").await;
    assert_eq!(title(&page), "(1) Inbox", "{page}");
    assert_eq!(approve(&thao, &id).await, StatusCode::SEE_OTHER);
    let state = status(&rig, "role-1").await;
    assert_eq!(state["status"], "resolved");
    assert_eq!(state["decided_by"], json!({"platform": "discord", "id": THAO, "name": "Thảo"}));
    rig.shutdown().await;
}

/// No approvers anywhere: anyone in the Telegram group may answer the request in chat.
/// In the browser only `access.users` (Ana) sees it; Mallory, who got a session with
/// `/web` like any chat user, sees an empty inbox, no page, and her decision posted by
/// URL is refused and changes nothing.
#[tokio::test]
async fn a_stranger_with_a_web_session_sees_nothing_and_decides_nothing() {
    const GROUP: i64 = -100_777;
    let rig = bridge(Chat::Telegram, &[], |s| s.access.users = vec!["telegram:3003".into()]).await;
    rig.telegram().group(GROUP, "ops", false);
    let id = push(&rig, &trade("open-1", json!({"platform": "telegram", "chat_id": GROUP.to_string()}))).await;

    let mallory = Browser::sign_in(&rig, &Actor::new("telegram", "6666", "Mallory")).await;
    let (_, page) = mallory.get("/inbox").await;
    assert_eq!(title(&page), "(0) Inbox", "{page}");
    assert!(!page.contains(&id) && !page.contains("execute_trade"), "{page}");
    let (code, page) = mallory.get(&format!("/inbox/requests/{id}")).await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    assert!(!page.contains("execute_trade"), "{page}");
    assert_eq!(approve(&mallory, &id).await, StatusCode::NOT_FOUND);
    assert_eq!(status(&rig, "open-1").await["status"], "pending");

    let ana = Browser::sign_in(&rig, &Actor::new("telegram", "3003", "Ana")).await;
    let (_, page) = ana.get("/inbox").await;
    assert_eq!(title(&page), "(1) Inbox", "{page}");
    assert_eq!(approve(&ana, &id).await, StatusCode::SEE_OTHER);
    assert_eq!(status(&rig, "open-1").await["status"], "resolved");
    rig.shutdown().await;
}
