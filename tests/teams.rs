//! Microsoft Teams end to end: a real bridge with `teams.enabled` gets its token from
//! the fake's token endpoint, checks every activity's JWT against the fake's OpenID
//! metadata and keys, stores it, and answers through the fake Connector API
//! (`support::fake_teams`, which cites Microsoft's documentation for each rule).
//! Requests are pushed over the HTTP API and decided by clicking the card's
//! `Action.Execute` buttons as Teams' `adaptiveCard/action` invoke; the tests assert
//! the exact reply the agent gets, the invoke's answer, every copy's update, and
//! that what is refused changes nothing.

mod support;

use hitl_bridge::config::Settings;
use hitl_bridge::platform::teams::settings::TeamsSettings;
use serde_json::{Value, json};
use support::fake_teams::{self, OPS, Person, card_text, executes};
use support::harness::HttpApi;
use support::{Chat, Harness, wait_until};

const SECRET: &str = "teams-api-secret";
const ANA: &str = "6b1e3f0a-2c4d-4e5f-8a9b-0c1d2e3f4a5b";
const BOB: &str = "0d9c8b7a-6f5e-4d3c-2b1a-0f9e8d7c6b5a";
const MALLORY: &str = "99999999-8888-4777-8666-555555555555";

fn ana() -> Person {
    Person::new(ANA, "Ana")
}

fn bob() -> Person {
    Person::new(BOB, "Bob")
}

fn mallory() -> Person {
    Person::new(MALLORY, "Mallory")
}

async fn start() -> Harness {
    Harness::on(Chat::Teams)
        .no_agent()
        .set("timeouts.grace_secs", "0")
        .tweak(|s: &mut Settings| {
            s.http.api_tokens = vec![format!("ci:{SECRET}")];
            s.platforms.get_mut::<TeamsSettings>().channels = vec![OPS.into()];
        })
        .start()
        .await
}

fn api(rig: &Harness) -> HttpApi {
    rig.api(SECRET)
}

/// The bridge's messaging endpoint.
fn endpoint(rig: &Harness) -> String {
    format!("http://{}/teams/messages", rig.settings.platforms.get::<TeamsSettings>().messages_listen)
}

/// Pushes an approval to the ops channel with `approvers`; the card's id and card.
async fn push(rig: &Harness, key: &str, approvers: &[&str], timeout: u64, actions: Value) -> (String, Value) {
    let before = rig.teams().calls().len();
    api(rig)
        .push(&json!({
            "approval_key": key, "targets": [{"platform": "teams", "conversation_id": OPS}],
            "approvers": approvers.iter().map(|a| format!("teams:{a}")).collect::<Vec<_>>(),
            "text": "Nightly rebalance <at>Everyone</at>", "timeout_seconds": timeout, "actions": actions,
        }))
        .await;
    let call = rig.teams().wait_call(|c| c.method == "POST" && c.conversation == OPS && c.created.is_some() && fake_teams::card_of(&c.body).is_some()).await;
    assert!(rig.teams().calls().len() > before);
    (call.created.unwrap(), fake_teams::card_of(&call.body).unwrap())
}

fn trade() -> Value {
    json!([{"name": "execute_trade", "args": {"symbol": "VNM", "quantity": 100}}])
}

/// Waits until the card `id` shows `needle` (an update through the Connector API).
async fn updated(rig: &Harness, id: &str, needle: &str) -> Value {
    wait_until(|| async {
        let card = rig.teams().card_now(OPS, id);
        card_text(&card).contains(needle).then_some(card)
    })
    .await
}

/// The invoke answered with a notice only the clicker sees.
fn notice(answer: &(u16, Value)) -> String {
    assert_eq!(answer.0, 200, "{answer:?}");
    assert_eq!(answer.1["type"], "application/vnd.microsoft.activity.message", "{answer:?}");
    answer.1["value"].as_str().unwrap().to_owned()
}

/// The invoke answered with a card.
fn answered_card(answer: &(u16, Value)) -> Value {
    assert_eq!(
        (answer.0, answer.1["statusCode"].clone(), answer.1["type"].clone()),
        (200, json!(200), json!("application/vnd.microsoft.card.adaptive")),
        "{answer:?}"
    );
    answer.1["value"].clone()
}

async fn stop(mut rig: Harness) {
    rig.stop_bridge().await;
    assert_eq!(rig.teams().pace_violations(), 0, "the bridge kept within Teams' windows");
    rig.shutdown().await;
}

/// The card: Adaptive Card 1.5, the agent's text inert, the arguments monospace, one
/// Approve (positive), Edit, Reject and Comment per action, each signed.
#[tokio::test]
async fn the_card_shows_the_request_and_its_buttons() {
    let rig = start().await;
    let (_, card) = push(&rig, "card-1", &[ANA], 300, trade()).await;
    assert_eq!((card["type"].clone(), card["version"].clone()), (json!("AdaptiveCard"), json!("1.5")));
    let text = card_text(&card);
    assert!(text.contains("Nightly rebalance <\u{200D}at>Everyone<\u{200D}/at>"), "agent text cannot mention: {text}");
    assert!(text.contains("execute_trade") && text.contains("\"symbol\": \"VNM\""), "{text}");
    assert!(text.contains("Agent: \nci"), "who asked: {text}");
    let titles: Vec<String> = executes(&card).iter().map(|a| a["title"].as_str().unwrap().to_owned()).collect();
    assert_eq!(titles, ["✅ Approve", "✏️ Edit", "❌ Reject", "💬 Comment"]);
    for action in executes(&card) {
        assert_eq!(action["verb"], "hitl");
        assert!(action["data"]["hitl"].as_str().is_some_and(|t| t.len() > 20), "{action}");
    }
    assert_eq!(fake_teams::nth_execute(&card, "✅ Approve", 0).unwrap()["style"], "positive");
    stop(rig).await;
}

/// Approve: the agent gets exactly one approve, the clicker sees the outcome in the
/// invoke's answer, every copy is updated without buttons, and a second click is
/// told and sends nothing.
#[tokio::test]
async fn approve_updates_every_copy_and_a_second_click_is_told() {
    let rig = start().await;
    let (id, card) = push(&rig, "ap-1", &[ANA], 300, trade()).await;
    let answer = rig.teams().click(&endpoint(&rig), &ana(), OPS, &id, &card, "✅ Approve", 0, json!({})).await;
    let shown = answered_card(&answer);
    assert!(card_text(&shown).contains("Approved by Ana at"), "{}", card_text(&shown));
    assert!(executes(&shown).is_empty(), "no buttons once decided");
    assert_eq!(api(&rig).decided("ap-1").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    let copy = updated(&rig, &id, "Approved by Ana at").await;
    assert!(executes(&copy).is_empty());
    let again = rig.teams().click(&endpoint(&rig), &ana(), OPS, &id, &card, "✅ Approve", 0, json!({})).await;
    assert!(notice(&again).starts_with("Already decided by Ana at"), "{again:?}");
    assert_eq!(api(&rig).state("ap-1").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    stop(rig).await;
}

/// Edit with invalid JSON: the card comes back to the clicker with the error under
/// the input and nothing is sent; then valid JSON edits.
#[tokio::test]
async fn an_edit_with_invalid_json_shows_the_error_then_a_valid_one_edits() {
    let rig = start().await;
    let (id, card) = push(&rig, "ed-1", &[ANA], 300, trade()).await;
    let answer = rig.teams().click(&endpoint(&rig), &ana(), OPS, &id, &card, "✏️ Edit", 0, json!({"args.0": "{\"symbol\": \"VNM\", "})).await;
    let shown = answered_card(&answer);
    let error = executes(&shown).len();
    assert_eq!(error, 4, "the card keeps its buttons");
    let text = serde_json::to_string(&shown).unwrap();
    assert!(text.contains("\"color\":\"Attention\""), "the error is shown on the card: {text}");
    assert_eq!(api(&rig).state("ed-1").await["status"], "pending");
    let answer = rig.teams().click(&endpoint(&rig), &ana(), OPS, &id, &card, "✏️ Edit", 0, json!({"args.0": "{\"symbol\": \"VNM\", \"quantity\": 50}"})).await;
    answered_card(&answer);
    assert_eq!(
        api(&rig).decided("ed-1").await["reply"],
        json!({"decisions": [{"type": "edit", "edited_action": {"name": "execute_trade", "args": {"symbol": "VNM", "quantity": 50}}}]})
    );
    stop(rig).await;
}

/// Reject carries the reason typed on the card.
#[tokio::test]
async fn reject_carries_the_reason() {
    let rig = start().await;
    let (id, card) = push(&rig, "rj-1", &[ANA], 300, trade()).await;
    let answer = rig.teams().click(&endpoint(&rig), &ana(), OPS, &id, &card, "❌ Reject", 0, json!({"reason.0": " market is closed "})).await;
    assert!(card_text(&answered_card(&answer)).contains("Rejected by Ana"), "{answer:?}");
    assert_eq!(api(&rig).decided("rj-1").await["reply"], json!({"decisions": [{"type": "reject", "message": "market is closed"}]}));
    stop(rig).await;
}

/// Someone who may not answer: a notice only they see, an audit row, nothing sent and
/// the card untouched.
#[tokio::test]
async fn a_strangers_click_is_refused_audited_and_changes_nothing() {
    let rig = start().await;
    let (id, card) = push(&rig, "st-1", &[ANA], 300, trade()).await;
    let answer = rig.teams().click(&endpoint(&rig), &mallory(), OPS, &id, &card, "✅ Approve", 0, json!({})).await;
    assert_eq!(notice(&answer), "You are not allowed to answer this request.");
    let store = hitl_bridge::store::Store::connect(&rig.settings.store.url).await.unwrap();
    let refused = wait_until(|| async { store.refused_attempts(0).await.ok().filter(|r| !r.is_empty()) }).await;
    assert_eq!(json!(refused[0].actor)["user_id"], MALLORY);
    store.close().await;
    assert_eq!(api(&rig).state("st-1").await["status"], "pending");
    assert!(rig.teams().calls().iter().all(|c| c.method != "PUT"), "the card was not touched");
    stop(rig).await;
}

/// Two approvers at once: one decision, the other told.
#[tokio::test]
async fn two_people_clicking_at_once_make_one_decision() {
    let rig = start().await;
    let (id, card) = push(&rig, "two-1", &[ANA, BOB], 300, trade()).await;
    let (url, ana, bob) = (endpoint(&rig), ana(), bob());
    let (a, b) = tokio::join!(
        rig.teams().click(&url, &ana, OPS, &id, &card, "✅ Approve", 0, json!({})),
        rig.teams().click(&url, &bob, OPS, &id, &card, "❌ Reject", 0, json!({"reason.0": ""}))
    );
    let reply = api(&rig).decided("two-1").await["reply"].clone();
    let cards = [&a, &b].iter().filter(|x| x.1["type"] == "application/vnd.microsoft.card.adaptive").count();
    let notices = [&a, &b].iter().filter(|x| x.1["type"] == "application/vnd.microsoft.activity.message").count();
    assert_eq!((cards, notices), (1, 1), "{a:?} {b:?}");
    assert!(reply == json!({"decisions": [{"type": "approve"}]}) || reply == json!({"decisions": [{"type": "reject"}]}), "{reply}");
    stop(rig).await;
}

/// Nobody answers: the card is updated to the expiry, and a late click is told.
#[tokio::test]
async fn expiry_updates_the_card_and_a_late_click_is_told() {
    let rig = start().await;
    let (id, card) = push(&rig, "late-1", &[ANA], 1, trade()).await;
    let expired = updated(&rig, &id, "Expired at").await;
    assert!(executes(&expired).is_empty());
    let late = rig.teams().click(&endpoint(&rig), &ana(), OPS, &id, &card, "✅ Approve", 0, json!({})).await;
    assert_eq!(notice(&late), "This request has expired.");
    assert_eq!(api(&rig).state("late-1").await["status"], "expired");
    stop(rig).await;
}

/// A forged, expired, wrong-audience, wrong-service or missing token is 401 and
/// changes nothing; five minutes of clock skew are allowed.
#[tokio::test]
async fn requests_without_microsofts_token_are_refused() {
    let rig = start().await;
    let url = endpoint(&rig);
    let fake = rig.teams();
    let (id, card) = push(&rig, "jwt-1", &[ANA], 300, trade()).await;
    let approve = fake_teams::nth_execute(&card, "✅ Approve", 0).unwrap();
    let click = fake.activity_from(
        &ana(),
        OPS,
        "channel",
        json!({"type": "invoke", "name": "adaptiveCard/action", "replyToId": id, "value": {"action": {"type": "Action.Execute", "verb": "hitl", "data": approve["data"]}}}),
    );
    let service = fake.service_url();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let good = fake.token_for(&service, |_| {});
    let (head, rest) = good.split_once('.').unwrap();
    let (_, signature) = rest.split_once('.').unwrap();
    let forged_claims = json!({"iss": "https://api.botframework.com", "aud": fake_teams::APP_ID, "exp": now + 3600, "serviceUrl": service});
    use base64::Engine;
    let forged = format!("{head}.{}.{signature}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(forged_claims.to_string()));
    let refused = [
        ("forged", Some(forged)),
        ("expired", Some(fake.token_for(&service, |c| c["exp"] = json!(now - 400)))),
        ("wrong audience", Some(fake.token_for(&service, |c| c["aud"] = json!("00000000-0000-0000-0000-000000000000")))),
        ("wrong issuer", Some(fake.token_for(&service, |c| c["iss"] = json!("https://sts.windows.net/x/")))),
        ("another serviceUrl", Some(fake.token_for("https://attacker.example/", |_| {}))),
        ("missing", None),
    ];
    for (what, token) in refused {
        let (status, _) = fake.post_with(&url, &click, token.as_deref()).await;
        assert_eq!(status, 401, "{what}");
    }
    assert_eq!(api(&rig).state("jwt-1").await["status"], "pending", "nothing changed");
    let (status, body) = fake.post_with(&url, &json!("not an activity"), Some(&good)).await;
    assert_eq!(status, 400, "{body}");
    let skewed = fake.token_for(&service, |c| c["exp"] = json!(now - 120));
    let (status, body) = fake.post_with(&url, &click, Some(&skewed)).await;
    assert_eq!((status, body["type"].clone()), (200, json!("application/vnd.microsoft.card.adaptive")), "within five minutes of skew");
    assert_eq!(api(&rig).decided("jwt-1").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    // A token that verified is remembered, but only as far as its signature goes: it
    // still binds to each activity's serviceUrl, and a changed byte is checked anew.
    let (status, _) = fake.post_with(&url, &click, Some(&good)).await;
    assert_eq!(status, 200, "the good token verifies (a redelivery)");
    let mut elsewhere = click.clone();
    elsewhere["serviceUrl"] = json!("https://attacker.example/");
    let (status, _) = fake.post_with(&url, &elsewhere, Some(&good)).await;
    assert_eq!(status, 401, "a remembered token names one serviceUrl");
    // A character well inside the signature (the last one holds padding bits).
    let at = good.len() - 10;
    let swapped = if &good[at..=at] == "A" { "B" } else { "A" };
    let tampered = format!("{}{swapped}{}", &good[..at], &good[at + 1..]);
    let (status, _) = fake.post_with(&url, &click, Some(&tampered)).await;
    assert_eq!(status, 401, "a changed signature is not the remembered token");
    assert_eq!(fake.key_fetches(), 1, "the keys are fetched once and cached");
    stop(rig).await;
}

/// An activity delivered again (same id) is answered 200 and handled once.
#[tokio::test]
async fn a_replayed_click_is_handled_once() {
    let rig = start().await;
    let (id, card) = push(&rig, "re-1", &[ANA], 300, json!([{"name": "a", "args": {}}, {"name": "b", "args": {}}])).await;
    let approve = fake_teams::nth_execute(&card, "✅ Approve", 0).unwrap();
    let click = rig.teams().activity_from(
        &ana(),
        OPS,
        "channel",
        json!({"type": "invoke", "name": "adaptiveCard/action", "replyToId": id, "value": {"action": {"type": "Action.Execute", "verb": "hitl", "data": approve["data"]}}}),
    );
    let first = rig.teams().post(&endpoint(&rig), &click).await;
    assert!(card_text(&answered_card(&first)).contains("→ ✅ Approve"), "{first:?}");
    let again = rig.teams().post(&endpoint(&rig), &click).await;
    assert_eq!(again.0, 200, "a redelivery is acknowledged");
    let updates = || rig.teams().calls().iter().filter(|c| c.method == "PUT" && c.status < 300).count();
    wait_until(|| async { (updates() == 1).then_some(()) }).await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(updates(), 1, "handled once: one draft update");
    stop(rig).await;
}

/// A storm of 429s delays the card, never loses it: each `Retry-After` is waited out.
#[tokio::test]
async fn a_429_storm_is_waited_out() {
    let rig = start().await;
    rig.teams().storm(3);
    let started = std::time::Instant::now();
    let (_, card) = push(&rig, "storm-1", &[ANA], 300, trade()).await;
    assert!(started.elapsed() >= std::time::Duration::from_secs(3), "three Retry-After: 1 waited out");
    assert!(!executes(&card).is_empty());
    let refused = rig.teams().calls().iter().filter(|c| c.status == 429).count();
    assert_eq!(refused, 3);
    stop(rig).await;
}

/// A wrong app password stops the start with the setting Microsoft refused.
#[tokio::test]
async fn a_refused_password_is_named_at_start() {
    let rig = Harness::on(Chat::Teams).no_agent().set("teams.app_password", "wrong").build().await;
    let error = hitl_bridge::app::App::start(&rig.settings, None as support::harness::NoConsole).await.err().map(|e| format!("{e:#}")).unwrap();
    assert!(error.contains("teams.app_password") && error.contains("AADSTS7000215"), "{error}");
    rig.shutdown().await;
}

/// `check-config` names a missing or malformed key.
#[test]
fn bad_settings_are_named() {
    let problem = |pairs: &[(&str, &str)]| Settings::from_pairs(pairs).err().map(|e| format!("{e:#}")).unwrap_or_default();
    assert!(problem(&[("teams.enabled", "true")]).contains("teams.app_id"));
    assert!(problem(&[("teams.enabled", "true"), ("teams.app_id", "my-bot")]).contains("teams.app_id"));
    assert!(problem(&[("teams.enabled", "true"), ("teams.app_id", fake_teams::APP_ID)]).contains("teams.app_password"));
    assert!(problem(&[("teams.channels", "[\"#ops\"]")]).contains("teams.channels") || problem(&[("teams.tenant_id", "contoso")]).contains("teams.tenant_id"));
    assert!(problem(&[("teams.tenant_id", "contoso")]).contains("teams.tenant_id"));
    assert!(Settings::from_pairs(&[("teams.enabled", "true"), ("teams.app_id", fake_teams::APP_ID), ("teams.app_password", "x")]).is_ok());
}

// --- Talking to the agent ------------------------------------------------------------

/// A bridge with the reference agent; OPS is a channel where every message reaches it,
/// and Ana may talk.
async fn start_chat() -> Harness {
    Harness::on(Chat::Teams)
        .tweak(|s: &mut Settings| {
            s.platforms.get_mut::<TeamsSettings>().channels = vec![OPS.into()];
            s.access.users = vec![format!("teams:{ANA}")];
        })
        .start()
        .await
}

/// The texts of the `message` commands the agent received (their text blocks).
fn heard(rig: &Harness) -> Vec<String> {
    let text = |c: &Value| c["content"].as_array().map(|blocks| blocks.iter().filter_map(|b| b["text"].as_str()).collect::<String>());
    rig.sim().commands().into_iter().filter(|c| c["type"] == "message").filter_map(|c| text(&c)).collect()
}

/// A top-level channel message starts a turn in its own thread: the agent's text is
/// a reply in that thread, streamed into one message updated at most about once a
/// second, ending as the whole text.
#[tokio::test]
async fn a_channel_message_is_a_turn_in_its_thread_and_the_text_streams() {
    let rig = start_chat().await;
    let fake = rig.teams();
    let message = fake.activity_from(&ana(), OPS, "channel", json!({"text": "slow stream"}));
    let thread = message["id"].as_str().unwrap().to_owned();
    assert_eq!(fake.post(&endpoint(&rig), &message).await.0, 200);
    let whole = "Đang viết dần: một, hai, ba, bốn, năm. Xong.";
    let first = fake.wait_call(|c| c.method == "POST" && c.activity.as_deref() == Some(thread.as_str()) && c.body["text"].is_string()).await;
    assert_eq!((first.body["replyToId"].clone(), first.body["textFormat"].clone()), (json!(thread), json!("plain")), "a reply in the thread");
    let id = first.created.clone().unwrap();
    wait_until(|| async { (fake.activity(OPS, &id).unwrap()["text"] == whole).then_some(()) }).await;
    let calls: Vec<_> = fake
        .calls()
        .into_iter()
        .filter(|c| c.status < 300 && (c.created.as_deref() == Some(id.as_str()) || c.activity.as_deref() == Some(id.as_str())))
        .collect();
    assert!(calls.len() >= 2, "sent once, then updated: {calls:?}");
    for pair in calls.windows(2) {
        assert!(pair[1].at - pair[0].at >= std::time::Duration::from_millis(900), "at most about one call a second on one message");
    }
    assert_eq!(heard(&rig), ["slow stream"]);
    stop(rig).await;
}

/// `id` answers the person's Entra object id, never the per-bot `29:` id.
#[tokio::test]
async fn id_answers_the_entra_object_id() {
    let rig = start_chat().await;
    let fake = rig.teams();
    let message = fake.activity_from(&ana(), "a:dm-ana", "personal", json!({"text": "id"}));
    assert_eq!(fake.post(&endpoint(&rig), &message).await.0, 200);
    let answer = fake.wait_text(&format!("a:dm-{ANA}"), "teams:").await;
    assert!(answer.contains(&format!("teams:{ANA}")) && !answer.contains("29:"), "{answer}");
    assert!(heard(&rig).is_empty(), "a command is not a message for the agent");
    stop(rig).await;
}

/// Elsewhere only an @mention of the bot reaches the agent, without the tag.
#[tokio::test]
async fn a_mention_in_a_group_chat_reaches_the_agent_without_the_tag() {
    let rig = start_chat().await;
    let fake = rig.teams();
    let group = "19:dev0a1b@thread.v2";
    let plain = fake.activity_from(&ana(), group, "groupChat", json!({"text": "lunch?"}));
    let mention = fake.activity_from(
        &ana(),
        group,
        "groupChat",
        json!({"text": "<at>HITL</at> hello there", "entities": [{"type": "mention", "text": "<at>HITL</at>", "mentioned": {"id": format!("28:{}", fake_teams::APP_ID), "name": "HITL"}}]}),
    );
    assert_eq!(fake.post(&endpoint(&rig), &plain).await.0, 200);
    assert_eq!(fake.post(&endpoint(&rig), &mention).await.0, 200);
    wait_until(|| async { (!heard(&rig).is_empty()).then_some(()) }).await;
    assert_eq!(heard(&rig), ["hello there"]);
    stop(rig).await;
}

/// A message delivered again (same id) reaches the agent once.
#[tokio::test]
async fn a_replayed_message_reaches_the_agent_once() {
    let rig = start_chat().await;
    let fake = rig.teams();
    let message = fake.activity_from(&ana(), OPS, "channel", json!({"text": "hello"}));
    assert_eq!(fake.post(&endpoint(&rig), &message).await.0, 200);
    assert_eq!(fake.post(&endpoint(&rig), &message).await.0, 200);
    wait_until(|| async { (!heard(&rig).is_empty()).then_some(()) }).await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(heard(&rig), ["hello"]);
    stop(rig).await;
}

// --- A team's members as an approver group --------------------------------------------

/// A team (its General channel's id) and a channel, as approver groups.
const TEAM: &str = "19:team0a1b2c@thread.tacv2";
const DBA: &str = "19:dba9f8e7@thread.tacv2";

/// A bridge whose `access.approver_roles` is TEAM, whose 600 members (Bob the last, on
/// the second page) Teams lists; DBA's one member is Ana.
async fn start_groups() -> Harness {
    let rig = Harness::on(Chat::Teams)
        .no_agent()
        .set("timeouts.grace_secs", "0")
        .tweak(|s: &mut Settings| {
            s.http.api_tokens = vec![format!("ci:{SECRET}")];
            s.access.approver_roles = vec![TEAM.into()];
        })
        .start()
        .await;
    let others: Vec<String> = (0..599).map(|i| format!("{i:08x}-0000-4000-8000-000000000000")).collect();
    let mut team: Vec<&str> = others.iter().map(String::as_str).collect();
    team.push(BOB);
    rig.teams().members(TEAM, &team);
    rig.teams().members(DBA, &[ANA]);
    rig
}

/// Pushes an approval to the ops channel with `extra` fields; the card's id and card.
async fn push_with(rig: &Harness, key: &str, extra: Value) -> (String, Value) {
    let before = rig.teams().calls().len();
    let mut body =
        json!({"approval_key": key, "targets": [{"platform": "teams", "conversation_id": OPS}], "text": "Deploy", "timeout_seconds": 300, "actions": trade()});
    for (k, v) in extra.as_object().into_iter().flatten() {
        body[k] = v.clone();
    }
    api(rig).push(&body).await;
    let call = wait_until(|| async {
        rig.teams()
            .calls()
            .into_iter()
            .skip(before)
            .find(|c| c.method == "POST" && c.conversation == OPS && c.created.is_some() && fake_teams::card_of(&c.body).is_some())
    })
    .await;
    (call.created.unwrap(), fake_teams::card_of(&call.body).unwrap())
}

/// The member lists the bridge asked Teams for, as (conversation, query).
fn member_reads(rig: &Harness) -> Vec<(String, Value)> {
    rig.teams().calls().into_iter().filter(|c| c.method == "GET").map(|c| (c.conversation, c.body)).collect()
}

/// A team's member decides (found on the list's second page); someone outside it is
/// refused with a notice only they see and an audit row; the list is read once, page
/// by page, and remembered for the next click.
#[tokio::test]
async fn a_member_of_an_approver_team_decides_and_a_non_member_is_refused() {
    let rig = start_groups().await;
    let (id, card) = push_with(&rig, "grp-1", json!({})).await;
    let refused = rig.teams().click(&endpoint(&rig), &mallory(), OPS, &id, &card, "✅ Approve", 0, json!({})).await;
    assert_eq!(notice(&refused), "You are not allowed to answer this request.");
    let store = hitl_bridge::store::Store::connect(&rig.settings.store.url).await.unwrap();
    let audited = wait_until(|| async { store.refused_attempts(0).await.ok().filter(|r| !r.is_empty()) }).await;
    assert_eq!(json!(audited[0].actor), json!({"platform": "teams", "user_id": MALLORY, "name": "Mallory"}));
    store.close().await;
    assert_eq!(api(&rig).state("grp-1").await["status"], "pending");
    let answer = rig.teams().click(&endpoint(&rig), &bob(), OPS, &id, &card, "✅ Approve", 0, json!({})).await;
    assert!(card_text(&answered_card(&answer)).contains("Approved by Bob"), "{answer:?}");
    assert_eq!(api(&rig).decided("grp-1").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    assert_eq!(
        member_reads(&rig),
        [(TEAM.to_owned(), json!({"pageSize": "500"})), (TEAM.to_owned(), json!({"pageSize": "500", "continuationToken": "500"}))],
        "one read of the team, two pages"
    );
    stop(rig).await;
}

/// A channel the request names itself (`approver_roles` in the push) decides it: its
/// member may, a member of the configured team may too, nobody else.
#[tokio::test]
async fn a_channel_the_request_names_decides_it() {
    let rig = start_groups().await;
    let (id, card) = push_with(&rig, "grp-2", json!({"approver_roles": [DBA]})).await;
    let refused = rig.teams().click(&endpoint(&rig), &mallory(), OPS, &id, &card, "✅ Approve", 0, json!({})).await;
    assert_eq!(notice(&refused), "You are not allowed to answer this request.");
    let answer = rig.teams().click(&endpoint(&rig), &ana(), OPS, &id, &card, "❌ Reject", 0, json!({"reason.0": "not today"})).await;
    assert!(card_text(&answered_card(&answer)).contains("Rejected by Ana"), "{answer:?}");
    assert_eq!(api(&rig).decided("grp-2").await["reply"], json!({"decisions": [{"type": "reject", "message": "not today"}]}));
    assert!(member_reads(&rig).iter().any(|(c, _)| c == DBA), "the request's channel was read");
    stop(rig).await;
}

// --- Teams' rate limits ---------------------------------------------------------------

/// Requests in the burst.
const BURST: usize = 200;

/// A burst of 200 requests into one channel is shown whole, each card once, in the
/// order pushed, within Teams' windows (the fake counts any operation past 7 in 1 s,
/// 8 in 2 s or 60 in 30 s as a violation), through a 429 storm on the way; a card
/// from the middle of the burst still decides its own request. At Teams' pace (60 in
/// 30 s) this takes about 100 s.
#[tokio::test]
async fn a_burst_of_200_into_one_channel_arrives_whole_in_order() {
    let rig = start().await;
    rig.teams().storm(2);
    for i in 0..BURST {
        api(&rig)
            .push(&json!({
                "approval_key": format!("burst-{i}"), "targets": [{"platform": "teams", "conversation_id": OPS}],
                "approvers": [format!("teams:{ANA}")], "text": format!("Burst request {i}"), "timeout_seconds": 3600,
                "actions": [{"name": "deploy", "args": {"n": i}}],
            }))
            .await;
    }
    let cards = || -> Vec<(String, Value)> {
        rig.teams()
            .calls()
            .into_iter()
            .filter(|c| c.method == "POST" && c.conversation == OPS && c.status < 300)
            .filter_map(|c| Some((c.created?, fake_teams::card_of(&c.body)?)))
            .collect()
    };
    let shown = wait_until_within(std::time::Duration::from_secs(240), || async { (cards().len() >= BURST).then(cards) }).await;
    let order: Vec<String> =
        shown.iter().map(|(_, card)| card_text(card).lines().find(|l| l.starts_with("Burst request")).unwrap_or_default().to_owned()).collect();
    let expected: Vec<String> = (0..BURST).map(|i| format!("Burst request {i}")).collect();
    assert_eq!(order, expected, "every card once, in the order pushed");
    assert_eq!(rig.teams().calls().iter().filter(|c| c.status == 429).count(), 2, "the storm only: no 429 of the fake's windows");
    let (id, card) = &shown[137];
    let answer = rig.teams().click(&endpoint(&rig), &ana(), OPS, id, card, "✅ Approve", 0, json!({})).await;
    answered_card(&answer);
    assert_eq!(api(&rig).decided("burst-137").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    assert_eq!(api(&rig).state("burst-136").await["status"], "pending");
    stop(rig).await;
}

/// Polls `probe` until it gives a value, for up to `within`.
async fn wait_until_within<T, F, Fut>(within: std::time::Duration, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = std::time::Instant::now() + within;
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(std::time::Instant::now() < deadline, "not within {within:?}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

// --- Targets in policies, routing and MCP ---------------------------------------------

/// A `[[policies]]` entry written with Teams addresses: it matches requests shown in
/// `teams:OPS`, needs Ana and Bob both (a quorum of 2), and after a second shows the
/// request in Bob's 1:1 chat (`teams:user:BOB`). Ana's approval is a vote on the card;
/// a stranger is refused; Bob's approval in his own chat decides, and both copies show
/// the outcome.
#[tokio::test]
async fn a_policy_written_with_teams_addresses_holds_on_teams() {
    let rule: hitl_bridge::interaction::PolicySpec = serde_json::from_value(json!({
        "name": "two-of-us", "tools": ["*"], "targets": [format!("teams:{OPS}")], "approvers": [format!("teams:{ANA}"), format!("teams:{BOB}")], "quorum": 2,
        "escalation": [{"after": 1, "show_in": format!("teams:user:{BOB}")}],
    }))
    .unwrap();
    let rig = Harness::on(Chat::Teams)
        .no_agent()
        .set("timeouts.grace_secs", "0")
        .tweak(move |s: &mut Settings| {
            s.http.api_tokens = vec![format!("ci:{SECRET}")];
            s.policies = vec![rule];
        })
        .start()
        .await;
    let (id, card) = push_with(&rig, "pol-1", json!({})).await;
    let vote = rig.teams().click(&endpoint(&rig), &ana(), OPS, &id, &card, "✅ Approve", 0, json!({})).await;
    assert!(!executes(&answered_card(&vote)).is_empty(), "one vote of two: the card keeps its buttons");
    assert_eq!(api(&rig).state("pol-1").await["status"], "pending");
    let refused = rig.teams().click(&endpoint(&rig), &mallory(), OPS, &id, &card, "✅ Approve", 0, json!({})).await;
    assert_eq!(notice(&refused), "You are not allowed to answer this request.");
    let bobs_chat = format!("a:dm-{BOB}");
    let (copy, shown) = rig.teams().wait_card(&bobs_chat).await;
    let create = rig.teams().calls().into_iter().find(|c| c.conversation.is_empty() && c.method == "POST").expect("a 1:1 chat created");
    assert_eq!(create.body["members"], json!([{"id": BOB, "aadObjectId": BOB}]));
    let answer = rig.teams().click(&endpoint(&rig), &bob(), &bobs_chat, &copy, &shown, "✅ Approve", 0, json!({})).await;
    assert!(card_text(&answered_card(&answer)).contains("Approved by"), "{answer:?}");
    assert_eq!(api(&rig).decided("pol-1").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    updated(&rig, &id, "Approved by").await;
    stop(rig).await;
}

/// Teams addresses are taken where chats and people are written: `routing.channels`,
/// `mcp.default_targets`, `access.*`, a policy's `targets`, `approvers`,
/// `approver_roles` and `show_in`; an MCP tool's chat becomes the HTTP API's Teams
/// target; what is not a Teams address is refused by name.
#[test]
fn teams_addresses_are_taken_in_routing_policies_and_mcp() {
    let channel = format!("teams:{OPS}");
    let dm = format!("teams:user:{ANA}");
    let dir = tempfile::tempdir().unwrap();
    let load = |routing: &str| {
        let path = dir.path().join("bridge.toml");
        let toml = format!(
            r#"
[routing]
target = "both"
channels = ["{routing}"]
[mcp]
default_targets = ["{dm}"]
[access]
approvers = ["teams:{BOB}"]
approver_roles = ["19:team0a1b2c@thread.tacv2"]
[[policies]]
tools = ["deploy*"]
targets = ["{channel}"]
approvers = ["teams:{ANA}", "teams:{BOB}"]
approver_roles = ["19:dba9f8e7@thread.tacv2"]
escalation = [{{ after = "5m", show_in = "{dm}" }}]
"#
        );
        std::fs::write(&path, toml).unwrap();
        Settings::load(Some(&path)).map_err(|e| format!("{e:#}"))
    };
    let settings = load(&channel).unwrap();
    assert_eq!(settings.routing.channels, std::slice::from_ref(&channel));
    assert_eq!(settings.mcp.default_targets, std::slice::from_ref(&dm));
    assert_eq!(settings.policies().len(), 1);
    for bad in ["teams:ops", "teams:user:29:1abc", "teams:19:x/abc"] {
        assert!(load(bad).unwrap_err().contains("routing.channels"), "{bad}");
    }
    let networks = hitl_bridge::platform::registry::networks();
    let target = |text: &str| hitl_bridge::mcp::tools::target(&networks, text);
    assert_eq!(target(&channel), Some(json!({"platform": "teams", "conversation_id": OPS})));
    assert_eq!(target(&format!("{channel}/1700000000123")), Some(json!({"platform": "teams", "conversation_id": OPS, "message_id": "1700000000123"})));
    assert_eq!(target(&dm), Some(json!({"platform": "teams", "user_id": ANA})));
    for bad in ["teams:ops", "teams:user:29:1abc", "teams:19:x/abc"] {
        assert_eq!(target(bad), None, "{bad}");
    }
}

// --- Questions ------------------------------------------------------------------------

/// Three questions on one card: a choice set per question (expanded for a few
/// options, multi-select where asked), an Other input, Skip, one Submit. Ana picks EU
/// and US, types APAC as Other, picks Tonight, leaves the third, and submits once:
/// the agent gets byte for byte what Telegram gives for the same request
/// (tests/http_api.rs, `questions_answered_on_telegram_with_selected_options`), and
/// the card shows the answers without inputs.
#[tokio::test]
async fn questions_are_answered_on_one_card_as_on_telegram() {
    let rig = start().await;
    api(&rig)
        .push(&json!({"approval_key": "q-1", "targets": [{"platform": "teams", "conversation_id": OPS}], "approvers": [format!("teams:{ANA}")],
        "questions": [
            {"question": "Which regions?", "header": "Regions", "multiSelect": true,
             "options": [{"label": "EU"}, {"label": "US"}, {"label": "Other region", "input": true}]},
            {"question": "Window?", "header": "Window", "multi_select": false,
             "options": [{"label": "Tonight (Recommended)"}, {"label": "Weekend"}]},
            {"question": "Notify whom?", "options": [{"label": "Nobody"}]}
        ]}))
        .await;
    let (id, card) = rig.teams().wait_card(OPS).await;
    let sets: Vec<Value> = fake_teams::inputs(&card).into_iter().filter(|i| i["type"] == "Input.ChoiceSet").collect();
    let shape: Vec<(Value, Value, Value)> = sets.iter().map(|s| (s["id"].clone(), s["style"].clone(), s["isMultiSelect"].clone())).collect();
    assert_eq!(
        shape,
        [
            (json!("answer.0"), json!("expanded"), json!(true)),
            (json!("answer.1"), json!("expanded"), json!(false)),
            (json!("answer.2"), json!("expanded"), json!(false))
        ]
    );
    assert_eq!(sets[0]["choices"], json!([{"title": "EU", "value": "0"}, {"title": "US", "value": "1"}, {"title": "Other region", "value": "2"}]));
    assert!(fake_teams::inputs(&card).iter().any(|i| i["id"] == "other.0" && i["type"] == "Input.Text"), "Other is a text input");
    let titles: Vec<String> = executes(&card).iter().map(|a| a["title"].as_str().unwrap().to_owned()).collect();
    assert_eq!(titles.iter().filter(|t| t.contains("Skip")).count(), 3, "Skip per question: {titles:?}");
    assert_eq!(titles.iter().filter(|t| t.contains("Submit")).count(), 1, "one Submit: {titles:?}");
    let answer =
        rig.teams().click(&endpoint(&rig), &ana(), OPS, &id, &card, "📨 Submit", 0, json!({"answer.0": "0,1", "other.0": "APAC", "answer.1": "0"})).await;
    let shown = answered_card(&answer);
    assert!(fake_teams::inputs(&shown).is_empty() && executes(&shown).is_empty(), "answered: no inputs, no buttons");
    let state = api(&rig).decided("q-1").await;
    assert_eq!(
        state["reply"],
        json!({
            "answers": {"Which regions?": "EU, US, APAC", "Window?": "Tonight (Recommended)", "Notify whom?": "[No preference]"},
            "selected_options": [["EU", "US", "APAC"], ["Tonight (Recommended)"], []]
        })
    );
    assert_eq!(
        serde_json::to_string(&state["reply"]["answers"]).unwrap(),
        r#"{"Which regions?":"EU, US, APAC","Window?":"Tonight (Recommended)","Notify whom?":"[No preference]"}"#
    );
    stop(rig).await;
}

/// Many options are a compact drop-down.
#[tokio::test]
async fn many_options_are_a_drop_down() {
    let rig = start().await;
    let options: Vec<Value> = ["a", "b", "c", "d", "e", "f"].iter().map(|l| json!({"label": l})).collect();
    api(&rig)
        .push(&json!({"approval_key": "q-2", "targets": [{"platform": "teams", "conversation_id": OPS}], "approvers": [format!("teams:{ANA}")],
            "questions": [{"question": "Which?", "options": options}]}))
        .await;
    let (_, card) = rig.teams().wait_card(OPS).await;
    let set = fake_teams::inputs(&card).into_iter().find(|i| i["type"] == "Input.ChoiceSet").unwrap();
    assert_eq!((set["style"].clone(), set["choices"].as_array().unwrap().len()), (json!("compact"), 6));
    stop(rig).await;
}

/// Arguments far over what a Teams message holds are cut, with a visible note, and
/// the card is within 28 KB (the fake refuses a larger activity); a decision still
/// works on it.
#[tokio::test]
async fn huge_arguments_are_cut_with_a_note_within_teams_limit() {
    let rig = start().await;
    let big = "x".repeat(100_000);
    let (id, card) = push(&rig, "big-1", &[ANA], 300, json!([{"name": "write_file", "args": {"path": "/tmp/a", "content": big}}])).await;
    let posted = rig.teams().calls().into_iter().find(|c| c.created.as_deref() == Some(id.as_str())).unwrap();
    assert!(serde_json::to_vec(&posted.body).unwrap().len() <= fake_teams::MESSAGE_BYTES);
    let text = card_text(&card);
    assert!(text.contains("(arguments cut to fit a Teams message)") && text.contains("\"path\": \"/tmp/a\""), "{}", &text[..300.min(text.len())]);
    let answer = rig.teams().click(&endpoint(&rig), &ana(), OPS, &id, &card, "✅ Approve", 0, json!({})).await;
    answered_card(&answer);
    assert_eq!(api(&rig).decided("big-1").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    updated(&rig, &id, "Approved by Ana").await;
    assert!(rig.teams().calls().iter().all(|c| c.status != 413), "nothing Teams would refuse as too big");
    stop(rig).await;
}

/// Microsoft rotates its keys: an activity signed by a key the cached JWKS does not
/// hold is refused until the keys are fetched again, which an unknown `kid` causes at
/// most every 10 s (a stream of forged `kid`s cannot make the bridge hammer
/// Microsoft); then the new key verifies.
#[tokio::test]
async fn an_unknown_key_id_fetches_the_keys_again_at_most_every_10_s() {
    let rig = start().await;
    let fake = rig.teams();
    fake.publish_key_as("an-older-key");
    let hello = || fake.activity_from(&ana(), "a:dm-ana", "personal", json!({"text": "id"}));
    assert_eq!(fake.post(&endpoint(&rig), &hello()).await.0, 401, "signed by a key not published yet");
    assert_eq!(fake.key_fetches(), 1);
    fake.publish_key_as(fake_teams::KEY_ID);
    assert_eq!(fake.post(&endpoint(&rig), &hello()).await.0, 401, "within 10 s the keys are not fetched again");
    assert_eq!(fake.key_fetches(), 1);
    tokio::time::sleep(std::time::Duration::from_millis(10_200)).await;
    assert_eq!(fake.post(&endpoint(&rig), &hello()).await.0, 200, "fetched again: the rotated key verifies");
    assert_eq!(fake.key_fetches(), 2);
    assert_eq!(fake.post(&endpoint(&rig), &hello()).await.0, 200);
    assert_eq!(fake.key_fetches(), 2, "and is cached");
    stop(rig).await;
}

/// Four eyes (`access.self_approval = false`) on a chat turn: Ana asks for a trade in
/// the ops channel; her own click on its card is refused with a notice only she sees
/// and sends nothing; Bob, a configured approver, decides, and the agent gets exactly
/// his approval.
#[tokio::test]
async fn four_eyes_refuse_the_requesters_own_click() {
    let rig = Harness::on(Chat::Teams)
        .tweak(|s: &mut Settings| {
            s.platforms.get_mut::<TeamsSettings>().channels = vec![OPS.into()];
            s.access.users = vec![format!("teams:{ANA}")];
            s.access.approvers = vec![format!("teams:{BOB}")];
            s.access.self_approval = false;
        })
        .start()
        .await;
    let fake = rig.teams();
    let message = fake.activity_from(&ana(), OPS, "channel", json!({"text": "trade"}));
    let thread = message["id"].as_str().unwrap().to_owned();
    assert_eq!(fake.post(&endpoint(&rig), &message).await.0, 200);
    let (id, card) = fake.wait_card(OPS).await;
    let posted = fake.calls().into_iter().find(|c| c.created.as_deref() == Some(id.as_str())).unwrap();
    assert_eq!(posted.activity.as_deref(), Some(thread.as_str()), "the card is in the turn's thread");
    let own = fake.click(&endpoint(&rig), &ana(), OPS, &id, &card, "✅ Approve", 0, json!({})).await;
    assert_eq!(notice(&own), "You started this turn: another approver must decide its tool calls (four eyes).");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(rig.sim().commands().iter().all(|c| c["type"] != "approval"), "nothing sent for Ana's own click");
    let answer = fake.click(&endpoint(&rig), &bob(), OPS, &id, &card, "✅ Approve", 0, json!({})).await;
    assert!(card_text(&answered_card(&answer)).contains("Approved by Bob"), "{answer:?}");
    let approvals = wait_until(|| async {
        let sent: Vec<Value> = rig.sim().commands().into_iter().filter(|c| c["type"] == "approval").collect();
        (!sent.is_empty()).then_some(sent)
    })
    .await;
    assert_eq!(approvals.len(), 1);
    assert_eq!(approvals[0]["decisions"], json!([{"type": "approve"}]));
    stop(rig).await;
}

/// Pairing (`access.pairing`): Mallory, a stranger, writes to the bot and gets a code
/// in her 1:1 chat; Ana, an admin, approves it with `pair CODE` in hers; Mallory is
/// told, and what she writes next reaches the agent as `teams:<her object id>`.
#[tokio::test]
async fn a_pairing_code_approved_by_an_admin_lets_a_stranger_talk() {
    let rig = Harness::on(Chat::Teams)
        .tweak(|s: &mut Settings| {
            s.access.users = vec![format!("teams:{ANA}")];
            s.access.admins = vec![format!("teams:{ANA}")];
            s.access.pairing = true;
        })
        .start()
        .await;
    let fake = rig.teams();
    let (hers, anas) = (format!("a:dm-{MALLORY}"), format!("a:dm-{ANA}"));
    let hello = fake.activity_from(&mallory(), &hers, "personal", json!({"text": "hello"}));
    assert_eq!(fake.post(&endpoint(&rig), &hello).await.0, 200);
    let notice = fake.wait_text(&hers, "pairing code is").await;
    let at = notice.find("code is ").unwrap() + "code is ".len();
    let code = notice[at..at + 8].to_owned();
    assert!(heard(&rig).is_empty(), "a stranger does not reach the agent");
    let pair = fake.activity_from(&ana(), &anas, "personal", json!({"text": format!("pair {code}")}));
    assert_eq!(fake.post(&endpoint(&rig), &pair).await.0, 200);
    fake.wait_text(&anas, &format!("✅ Paired Mallory (teams:{MALLORY}): they may now talk to the agent.")).await;
    fake.wait_text(&hers, "✅ An admin approved your pairing code: you may now talk to the agent.").await;
    let trade = fake.activity_from(&mallory(), &hers, "personal", json!({"text": "status please"}));
    assert_eq!(fake.post(&endpoint(&rig), &trade).await.0, 200);
    wait_until(|| async { (!heard(&rig).is_empty()).then_some(()) }).await;
    assert_eq!(heard(&rig), ["status please"]);
    let sender = rig.sim().commands().into_iter().find(|c| c["type"] == "message").unwrap();
    assert_eq!(sender["user"]["id"], MALLORY, "{sender}");
    stop(rig).await;
}

/// Each channel thread is its own session: two top-level messages are two sessions,
/// and a reply in the first thread (its `replyToId`) continues the first.
#[tokio::test]
async fn each_channel_thread_is_its_own_session() {
    let rig = start_chat().await;
    let fake = rig.teams();
    let first = fake.activity_from(&ana(), OPS, "channel", json!({"text": "one"}));
    let second = fake.activity_from(&ana(), OPS, "channel", json!({"text": "two"}));
    let reply = fake.activity_from(&ana(), OPS, "channel", json!({"text": "one again", "replyToId": first["id"]}));
    for activity in [&first, &second, &reply] {
        assert_eq!(fake.post(&endpoint(&rig), activity).await.0, 200);
    }
    let sessions = wait_until(|| async {
        let messages: Vec<(String, String)> = rig
            .sim()
            .commands()
            .into_iter()
            .filter(|c| c["type"] == "message")
            .map(|c| (c["content"][0]["text"].as_str().unwrap_or_default().to_owned(), c["session_id"].as_str().unwrap_or_default().to_owned()))
            .collect();
        (messages.len() == 3).then_some(messages)
    })
    .await;
    let session = |text: &str| sessions.iter().find(|(t, _)| t == text).map(|(_, s)| s.clone()).unwrap();
    assert_ne!(session("one"), session("two"), "two threads, two sessions");
    assert_eq!(session("one"), session("one again"), "a reply continues its thread's session");
    stop(rig).await;
}

/// Teams is slow to list a team's members: the click still gets its answer within
/// Teams' invoke limit (about 5 s), refused (no member known yet: the safe side), and
/// nothing is decided.
#[tokio::test]
async fn a_slow_member_list_still_answers_the_invoke_in_time() {
    let rig = start_groups().await;
    let (id, card) = push_with(&rig, "slow-1", json!({})).await;
    rig.teams().hold_members(true);
    let started = std::time::Instant::now();
    let answer = rig.teams().click(&endpoint(&rig), &bob(), OPS, &id, &card, "✅ Approve", 0, json!({})).await;
    assert!(started.elapsed() < std::time::Duration::from_millis(4500), "answered in {:?}", started.elapsed());
    assert_eq!(notice(&answer), "You are not allowed to answer this request.");
    assert_eq!(api(&rig).state("slow-1").await["status"], "pending");
    rig.teams().hold_members(false);
    stop(rig).await;
}
