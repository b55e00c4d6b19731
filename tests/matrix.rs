//! Matrix end to end, against a real Synapse homeserver (installed from PyPI by
//! `tests/backends/install.sh`, started per test by `support::synapse`): a real bridge
//! logs its bot in with `matrix-sdk`, people are real `matrix-sdk` clients on their own
//! devices (`support::matrix_person`), and each test asserts what crosses a boundary:
//! the card people read (decrypted, in the encrypted rooms), what a reaction, a reply
//! or a vote changes, and the exact reply the agent reads (`GET /v1/requests`).
//!
//! Without Synapse installed these tests skip (and fail under `CI=true`); they are
//! `#[ignore]`d in a plain `cargo test`, as every real-server suite is, and run with
//! `--include-ignored`.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::harness::{Chat, Harness};
use support::matrix_person::{MatrixPerson, bridge_on_matrix};
use support::synapse::{Options, Synapse};

const API_SECRET: &str = "ci-secret";
const APPROVAL: &str = "🔐 Approval needed";
const QUESTION: &str = "❓ The agent asks";

/// A Synapse, the bot's account, Ana and Bo (approvers) and Mallory (a stranger),
/// each logged in on a device of their own.
struct World {
    synapse: Synapse,
    bot: String,
    bot_password: String,
    ana: MatrixPerson,
    bo: MatrixPerson,
    mallory: MatrixPerson,
}

async fn world() -> Option<World> {
    world_on(Synapse::start().await?).await
}

async fn world_on(synapse: Synapse) -> Option<World> {
    let bot = synapse.register("hitl", false).await;
    let mut people = Vec::new();
    for name in ["ana", "bo", "mallory"] {
        let person = synapse.register(name, false).await;
        people.push(MatrixPerson::login(&synapse.url(), &person.user_id, &person.password).await);
    }
    let mallory = people.pop()?;
    let bo = people.pop()?;
    let ana = people.pop()?;
    Some(World { bot: bot.user_id.clone(), bot_password: bot.password.clone(), synapse, ana, bo, mallory })
}

impl World {
    /// A bridge logged in as the bot (with its password, its device kept in the test's
    /// directory), listening in `rooms`, Ana and Bo the approvers.
    async fn bridge(&self, rooms: &[&str], extra: &[(&str, &str)]) -> Harness {
        self.bridge_with(rooms, extra, None).await
    }

    /// [`World::bridge`], with the reference agent as the backend when `agent` gives
    /// its approval timeout.
    async fn bridge_with(&self, rooms: &[&str], extra: &[(&str, &str)], agent: Option<u64>) -> Harness {
        let borrowed: Vec<(&str, &str)> = extra.to_vec();
        let approvers = vec![format!("matrix:{}", self.ana.user_id), format!("matrix:{}", self.bo.user_id)];
        let builder = match agent {
            Some(timeout) => Harness::on(Chat::Headless).agent(timeout),
            None => Harness::on(Chat::Headless).no_agent(),
        };
        let mut rig = builder
            .settings(&borrowed)
            .tweak(move |s| {
                s.http.api_tokens = vec![format!("ci:{API_SECRET}")];
                // Ana and Bo may talk to the agent and answer it; Mallory may not.
                s.access.users = approvers.clone();
                s.access.approvers = approvers;
            })
            .build()
            .await;
        let dir = rig.dir.path().to_owned();
        bridge_on_matrix(&mut rig.settings, &self.synapse.url(), &self.bot, &self.bot_password, rooms, &dir);
        rig.boot().await;
        rig
    }

    /// A room Ana makes, inviting the bot, Bo and Mallory, which the bot joins.
    async fn room(&self, encrypted: bool) -> String {
        let room = self.ana.create_room(&[&self.bot, &self.bo.user_id, &self.mallory.user_id], encrypted).await;
        for person in [&self.bo, &self.mallory] {
            join(person, &room).await;
        }
        room
    }
}

async fn join(person: &MatrixPerson, room: &str) {
    let room_id = <&matrix_sdk::ruma::RoomId>::try_from(room).unwrap();
    for _ in 0..100 {
        if person.client.join_room_by_id(room_id).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{} cannot join {room}", person.user_id);
}

fn trade() -> Value {
    json!({"timeout_seconds": 300, "actions": [{"name": "execute_trade", "args": {"symbol": "VNM", "quantity": 100}}]})
}

async fn push(rig: &Harness, room: &str, key: &str, mut body: Value) {
    body["approval_key"] = json!(key);
    body["targets"] = json!([{"platform": "matrix", "room_id": room}]);
    rig.api(API_SECRET).push(&body).await;
}

/// The reactions the bot put on `event` and has not taken back, by key.
async fn seeded(person: &MatrixPerson, room: &str, bot: &str, event: &str) -> Vec<String> {
    person
        .events(room)
        .await
        .iter()
        .filter(|e| e["sender"] == bot && e["type"] == "m.reaction" && e["content"]["m.relates_to"]["event_id"] == event)
        .filter(|e| e["unsigned"]["redacted_because"].is_null() && !e["content"]["m.relates_to"]["key"].is_null())
        .map(|e| e["content"]["m.relates_to"]["key"].as_str().unwrap().to_owned())
        .collect()
}

/// One tap answers: the card is one message with its arguments, seeded with a
/// reaction per decision; ✅ approves, the card is replaced by the outcome, the seeded
/// reactions are taken back, and a second reaction is told it is too late and sends
/// nothing.
#[tokio::test]
#[ignore = "needs Synapse: bash tests/backends/install.sh synapse"]
async fn one_reaction_approves_in_a_plain_room_and_a_second_sends_nothing() {
    let Some(w) = world().await else { return };
    let room = w.room(false).await;
    let rig = w.bridge(&[&room], &[]).await;
    w.ana.wait_joined(&room, &w.bot).await;
    push(&rig, &room, "trade-1", trade()).await;

    let card = w.ana.card(&room, &w.bot, APPROVAL).await;
    let card_id = card["event_id"].as_str().unwrap().to_owned();
    let html = card["content"]["formatted_body"].as_str().unwrap();
    assert!(html.contains("<b>execute_trade</b>") && html.contains("&quot;symbol&quot;: &quot;VNM&quot;"), "{html}");
    assert_eq!(card["content"]["m.mentions"], json!({}));
    let keys = support::wait_until(|| async {
        let keys = seeded(&w.ana, &room, &w.bot, &card_id).await;
        (keys.len() == 4).then_some(keys)
    })
    .await;
    assert_eq!(keys, ["✅", "❌", "✏️", "💬"]);

    w.ana.react(&room, &card_id, "✅").await;
    let decided = rig.api(API_SECRET).decided("trade-1").await;
    assert_eq!(decided["reply"], json!({"decisions": [{"type": "approve"}]}));
    assert_eq!(decided["decided_by"]["platform"], "matrix");
    assert_eq!(decided["decided_by"]["id"], w.ana.user_id.as_str());
    let body = w.ana.wait_current(&room, &card_id, |b| b.contains("✅ Approved by ana at ")).await;
    assert!(!body.contains("React ✅"), "{body}");
    support::wait_until(|| async { seeded(&w.ana, &room, &w.bot, &card_id).await.is_empty().then_some(()) }).await;

    w.bo.react(&room, &card_id, "❌").await;
    let notice = support::wait_until(|| async { w.bo.notices(&room, &w.bot).await.into_iter().find(|n| n.contains("Already decided by ana")) }).await;
    assert!(notice.starts_with("Already decided by ana at "), "{notice}");
    assert_eq!(rig.api(API_SECRET).state("trade-1").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    rig.shutdown().await;
}

/// In an encrypted room the card is read decrypted, and a reply with words answers:
/// `reject <reason>` sends the reason to the agent.
#[tokio::test]
#[ignore = "needs Synapse: bash tests/backends/install.sh synapse"]
async fn an_encrypted_room_works_like_a_plain_one_and_a_reply_carries_the_reason() {
    let Some(w) = world().await else { return };
    let room = w.room(true).await;
    let rig = w.bridge(&[&room], &[]).await;
    w.ana.wait_joined(&room, &w.bot).await;
    push(&rig, &room, "trade-2", trade()).await;
    let card = w.bo.card(&room, &w.bot, APPROVAL).await;
    let card_id = card["event_id"].as_str().unwrap().to_owned();
    assert!(card["content"]["body"].as_str().unwrap().contains("execute_trade"), "Bo decrypted the card: {card}");

    w.bo.reply(&room, &card_id, None, "reject too risky today").await;
    let decided = rig.api(API_SECRET).decided("trade-2").await;
    assert_eq!(decided["reply"], json!({"decisions": [{"type": "reject", "message": "too risky today"}]}));
    w.ana.wait_current(&room, &card_id, |b| b.contains("Rejected by bo")).await;
    rig.shutdown().await;
}

/// `edit <json>` with invalid JSON is refused in the card's thread and changes
/// nothing; valid JSON sends the edit.
#[tokio::test]
#[ignore = "needs Synapse: bash tests/backends/install.sh synapse"]
async fn an_edit_reply_refuses_invalid_json_then_sends_the_valid_edit() {
    let Some(w) = world().await else { return };
    let room = w.room(false).await;
    let rig = w.bridge(&[&room], &[]).await;
    w.ana.wait_joined(&room, &w.bot).await;
    push(&rig, &room, "trade-3", trade()).await;
    let card_id = w.ana.card(&room, &w.bot, APPROVAL).await["event_id"].as_str().unwrap().to_owned();

    w.ana.reply(&room, &card_id, None, "edit {\"symbol\": \"VNM\", quantity: 5}").await;
    support::wait_until(|| async { w.ana.notices(&room, &w.bot).await.into_iter().find(|n| n.to_lowercase().contains("json")) }).await;
    assert_eq!(rig.api(API_SECRET).state("trade-3").await["status"], "pending");

    w.ana.reply(&room, &card_id, None, "edit {\"symbol\": \"VNM\", \"quantity\": 5}").await;
    let decided = rig.api(API_SECRET).decided("trade-3").await;
    assert_eq!(
        decided["reply"],
        json!({"decisions": [{"type": "edit", "edited_action": {"name": "execute_trade", "args": {"symbol": "VNM", "quantity": 5}}}]})
    );
    rig.shutdown().await;
}

/// A stranger's reaction changes nothing, and only they are told, in a DM.
#[tokio::test]
#[ignore = "needs Synapse: bash tests/backends/install.sh synapse"]
async fn a_strangers_reaction_is_refused_in_a_dm_and_changes_nothing() {
    let Some(w) = world().await else { return };
    let room = w.room(false).await;
    let rig = w.bridge(&[&room], &[]).await;
    w.ana.wait_joined(&room, &w.bot).await;
    push(&rig, &room, "trade-4", trade()).await;
    let card_id = w.mallory.card(&room, &w.bot, APPROVAL).await["event_id"].as_str().unwrap().to_owned();

    w.mallory.react(&room, &card_id, "✅").await;
    // The bot opens a DM with Mallory: she joins it and reads why.
    let dm = support::wait_until(|| async {
        let invited = w.mallory.client.invited_rooms();
        invited.first().map(|r| r.room_id().to_string())
    })
    .await;
    join(&w.mallory, &dm).await;
    let notice = support::wait_until(|| async { w.mallory.notices(&dm, &w.bot).await.into_iter().next() }).await;
    assert!(notice.contains("not allowed"), "{notice}");
    assert!(w.ana.notices(&room, &w.bot).await.is_empty(), "nothing is said in the room");
    assert_eq!(rig.api(API_SECRET).state("trade-4").await["status"], "pending");
    rig.shutdown().await;
}

/// Questions are polls: each vote selects, ✅ on the card sends, and the agent reads
/// the answers byte-exact; the polls are ended.
#[tokio::test]
#[ignore = "needs Synapse: bash tests/backends/install.sh synapse"]
async fn questions_are_polls_answered_by_votes_then_sent() {
    let Some(w) = world().await else { return };
    let room = w.room(true).await;
    let rig = w.bridge(&[&room], &[]).await;
    w.ana.wait_joined(&room, &w.bot).await;
    let questions = json!({"timeout_seconds": 300, "actions": [{"name": "ask_user_question", "args": {"questions": [
        {"question": "Which env?", "options": [{"label": "staging"}, {"label": "prod"}]},
        {"question": "Which checks?", "multiSelect": true, "options": [{"label": "lint"}, {"label": "test"}, {"label": "e2e"}]}
    ]}}]});
    push(&rig, &room, "ask-1", questions).await;
    let card_id = w.ana.card(&room, &w.bot, QUESTION).await["event_id"].as_str().unwrap().to_owned();
    let polls: Vec<Value> = support::wait_until(|| async {
        let polls: Vec<Value> = w.ana.events(&room).await.into_iter().filter(|e| e["type"] == "org.matrix.msc3381.poll.start").collect();
        (polls.len() == 2).then_some(polls)
    })
    .await;
    assert_eq!(polls[1]["content"]["org.matrix.msc3381.poll.start"]["max_selections"], 3);
    let (env, checks) = (polls[0]["event_id"].as_str().unwrap(), polls[1]["event_id"].as_str().unwrap());

    w.ana.vote(&room, env, &["o1"]).await;
    w.ana.vote(&room, checks, &["o0", "o2"]).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    w.ana.react(&room, &card_id, "✅").await;
    let decided = rig.api(API_SECRET).decided("ask-1").await;
    assert_eq!(decided["reply"], json!({"answers": {"Which env?": "prod", "Which checks?": "lint, e2e"}, "selected_options": [["prod"], ["lint", "e2e"]]}));
    support::wait_until(|| async {
        let ended = w.ana.events(&room).await.iter().filter(|e| e["type"] == "org.matrix.msc3381.poll.end").count();
        (ended == 2).then_some(())
    })
    .await;
    rig.shutdown().await;
}

/// Someone sends an encrypted event the bot has no key for: it says so in the room,
/// rather than ignoring it.
#[tokio::test]
#[ignore = "needs Synapse: bash tests/backends/install.sh synapse"]
async fn a_message_the_bot_cannot_decrypt_is_answered_with_a_notice() {
    let Some(w) = world().await else { return };
    let room = w.room(true).await;
    let rig = w.bridge(&[&room], &[]).await;
    w.ana.wait_joined(&room, &w.bot).await;
    // Megolm ciphertext under a session the bot was never given (as a client that
    // withholds its keys sends it), sent raw so no SDK encrypts it again.
    let raw = w.synapse.register("eve", false).await;
    let room_id = <&matrix_sdk::ruma::RoomId>::try_from(room.as_str()).unwrap();
    let eve = <&matrix_sdk::ruma::UserId>::try_from(raw.user_id.as_str()).unwrap();
    w.ana.client.get_room(room_id).unwrap().invite_user_by_id(eve).await.unwrap();
    raw.join(&room).await;
    let garbage = json!({"algorithm": "m.megolm.v1.aes-sha2", "ciphertext": "AwgAEnACgAkLmt6qF84IK++J7UDH2Za1YVchHyprqTqsg", "sender_key": "o5Yq8vFR6bHPhX0mJ1pdTcbW+0gJ+0HbqM4eMwnbF2I", "session_id": "2Zy1Jz0t9bmBfJHFIGOXpRnhZyJB7cUhPCcRl1TrIzU", "device_id": "EVEDEVICE"});
    raw.send(&room, "m.room.encrypted", &garbage).await;
    let notice = support::wait_until(|| async { w.ana.notices(&room, &w.bot).await.into_iter().find(|n| n.starts_with("🔒")) }).await;
    assert!(notice.contains("could not decrypt"), "{notice}");
    rig.shutdown().await;
}

/// Ana and Bo answer at the same moment: one decision reaches the agent, the other
/// person is told who was first.
#[tokio::test]
#[ignore = "needs Synapse: bash tests/backends/install.sh synapse"]
async fn two_people_answering_at_once_make_one_decision() {
    let Some(w) = world().await else { return };
    let room = w.room(false).await;
    let rig = w.bridge(&[&room], &[]).await;
    w.ana.wait_joined(&room, &w.bot).await;
    push(&rig, &room, "trade-5", trade()).await;
    let card_id = w.ana.card(&room, &w.bot, APPROVAL).await["event_id"].as_str().unwrap().to_owned();
    tokio::join!(w.ana.react(&room, &card_id, "✅"), w.bo.react(&room, &card_id, "❌"));
    let decided = rig.api(API_SECRET).decided("trade-5").await;
    let first = decided["decided_by"]["id"].as_str().unwrap().to_owned();
    let notice = support::wait_until(|| async { w.ana.notices(&room, &w.bot).await.into_iter().find(|n| n.starts_with("Already decided by")) }).await;
    let (winner, reply) =
        if first == w.ana.user_id { ("ana", json!({"decisions": [{"type": "approve"}]})) } else { ("bo", json!({"decisions": [{"type": "reject"}]})) };
    assert_eq!(decided["reply"], reply);
    assert!(notice.starts_with(&format!("Already decided by {winner} at ")), "{notice}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(w.ana.notices(&room, &w.bot).await.iter().filter(|n| n.starts_with("Already decided")).count(), 1);
    rig.shutdown().await;
}

/// At the deadline the card says it expired; a reaction after it is told so and
/// sends nothing.
#[tokio::test]
#[ignore = "needs Synapse: bash tests/backends/install.sh synapse"]
async fn a_late_reaction_after_expiry_is_told_and_sends_nothing() {
    let Some(w) = world().await else { return };
    let room = w.room(false).await;
    let rig = w.bridge(&[&room], &[]).await;
    w.ana.wait_joined(&room, &w.bot).await;
    push(&rig, &room, "trade-6", json!({"timeout_seconds": 2, "actions": [{"name": "deploy", "args": {}}]})).await;
    let card_id = w.ana.card(&room, &w.bot, APPROVAL).await["event_id"].as_str().unwrap().to_owned();
    let expired = rig.api(API_SECRET).decided("trade-6").await;
    assert_eq!(expired["status"], "expired");
    let body = w.ana.wait_current(&room, &card_id, |b| !b.contains("React ✅")).await;
    assert!(body.to_lowercase().contains("expired"), "{body}");
    w.bo.react(&room, &card_id, "✅").await;
    let notice = support::wait_until(|| async { w.bo.notices(&room, &w.bot).await.into_iter().find(|n| n.to_lowercase().contains("expired")) }).await;
    assert!(!notice.is_empty());
    assert_eq!(rig.api(API_SECRET).state("trade-6").await["status"], "expired");
    rig.shutdown().await;
}

/// A crash after a sync's events were stored and before its token was kept: the next
/// start syncs them again (here the kept token is rewound to before the reaction, as
/// the crash would leave it), and the inbox knows them: the reaction is not handled a
/// second time (which would say "Already decided" in the thread).
#[tokio::test]
#[ignore = "needs Synapse: bash tests/backends/install.sh synapse"]
async fn events_synced_again_after_a_crash_before_the_token_was_kept_are_handled_once() {
    let Some(w) = world().await else { return };
    let room = w.room(false).await;
    let mut rig = w.bridge(&[&room], &[]).await;
    w.ana.wait_joined(&room, &w.bot).await;
    push(&rig, &room, "trade-7", trade()).await;
    let card_id = w.ana.card(&room, &w.bot, APPROVAL).await["event_id"].as_str().unwrap().to_owned();
    support::wait_until(|| async { (seeded(&w.ana, &room, &w.bot, &card_id).await.len() == 4).then_some(()) }).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let store = hitl_bridge::store::Store::connect(&rig.settings.store.url).await.unwrap();
    let state = store.platform_state("matrix");
    let before = state.get("sync.since", hitl_bridge::clock::now_ms()).await.unwrap().expect("a kept token").value;

    w.ana.react(&room, &card_id, "✅").await;
    assert_eq!(rig.api(API_SECRET).decided("trade-7").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    w.ana.wait_current(&room, &card_id, |b| b.contains("Approved by ana")).await;
    rig.stop_bridge().await;
    state.put("sync.since", &before, hitl_bridge::clock::now_ms(), None).await.unwrap();
    rig.boot().await;
    // The restarted bridge syncs past the reaction again.
    support::wait_until(|| async {
        let now = state.get("sync.since", hitl_bridge::clock::now_ms()).await.ok().flatten()?.value;
        (now != before).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(w.ana.notices(&room, &w.bot).await.is_empty(), "the reaction was handled again: {:?}", w.ana.notices(&room, &w.bot).await);
    assert_eq!(rig.api(API_SECRET).state("trade-7").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    store.close().await;
    rig.shutdown().await;
}

/// Synapse restarts while a request waits: the bridge's sync comes back by itself and
/// the reaction made after the restart answers.
#[tokio::test]
#[ignore = "needs Synapse: bash tests/backends/install.sh synapse"]
async fn synapse_restarted_mid_turn_loses_nothing() {
    let Some(mut w) = world().await else { return };
    let room = w.room(false).await;
    let rig = w.bridge(&[&room], &[]).await;
    w.ana.wait_joined(&room, &w.bot).await;
    push(&rig, &room, "trade-8", trade()).await;
    let card_id = w.ana.card(&room, &w.bot, APPROVAL).await["event_id"].as_str().unwrap().to_owned();
    w.synapse.restart().await;
    w.ana.react(&room, &card_id, "✅").await;
    let decided = rig.api(API_SECRET).decided("trade-8").await;
    assert_eq!(decided["reply"], json!({"decisions": [{"type": "approve"}]}));
    w.ana.wait_current(&room, &card_id, |b| b.contains("Approved by ana")).await;
    rig.shutdown().await;
}

/// Chat: a message in the room starts a turn in its own thread; the agent's card
/// comes in that thread, a reaction answers it, and the agent reads the decision.
/// `!hitl id` answers the person's and the room's ids.
#[tokio::test]
#[ignore = "needs Synapse: bash tests/backends/install.sh synapse"]
async fn a_message_starts_a_turn_in_its_thread_and_the_card_there_is_answered() {
    let Some(w) = world().await else { return };
    let room = w.room(true).await;
    let rig = w.bridge_with(&[&room], &[], Some(300)).await;
    w.ana.wait_joined(&room, &w.bot).await;
    w.ana.say(&room, "!hitl id").await;
    let ids = support::wait_until(|| async { w.ana.notices(&room, &w.bot).await.into_iter().find(|n| n.contains("matrix:@ana:localhost")) }).await;
    assert!(ids.contains(&format!("matrix:{room}")), "{ids}");

    let root = w.ana.say(&room, "trade 100 VNM").await;
    let card = w.ana.card(&room, &w.bot, APPROVAL).await;
    assert_eq!(card["content"]["m.relates_to"]["rel_type"], "m.thread");
    assert_eq!(card["content"]["m.relates_to"]["event_id"], root.as_str());
    let card_id = card["event_id"].as_str().unwrap().to_owned();
    w.bo.react(&room, &card_id, "✅").await;
    let sim = rig.sim();
    let approvals = support::wait_approvals(sim, 1).await;
    assert_eq!(approvals[0]["decisions"], json!([{"type": "approve"}]));
    rig.shutdown().await;
}

/// A token the homeserver refuses stops the start, naming the setting.
#[tokio::test]
#[ignore = "needs Synapse: bash tests/backends/install.sh synapse"]
async fn a_refused_access_token_stops_the_start_and_names_the_setting() {
    let synapse = Synapse::start().await.expect("Synapse");
    let bot = synapse.register("hitl", false).await;
    let mut rig = Harness::on(Chat::Headless).no_agent().build().await;
    let dir = rig.dir.path().to_owned();
    bridge_on_matrix(&mut rig.settings, &synapse.url(), &bot.user_id, &bot.password, &[], &dir);
    let matrix = rig.settings.platforms.get_mut::<hitl_bridge::platform::matrix::settings::MatrixSettings>();
    matrix.password = None;
    matrix.access_token = Some("syt_aGl0bA_notavalidtoken_0000".to_owned().into());
    let error = match hitl_bridge::app::App::start(&rig.settings, None as support::harness::NoConsole).await {
        Ok(_) => panic!("the bridge started with a token the homeserver refuses"),
        Err(e) => e.to_string(),
    };
    assert!(error.contains("the homeserver refused matrix.access_token (whoami: HTTP 401 M_UNKNOWN_TOKEN)"), "{error}");
    rig.shutdown().await;
}

/// `!ROOM_ID@50` in `access.approver_roles`: whoever is joined to the room at power
/// level 50 or more may answer. Bo at 0 is refused (told in a DM); raised to 50, his
/// reaction approves.
#[tokio::test]
#[ignore = "needs Synapse: bash tests/backends/install.sh synapse"]
async fn a_rooms_power_level_is_an_approver_group() {
    let Some(w) = world().await else { return };
    let room = w.room(false).await;
    let group = format!("{room}@50");
    let mut rig = Harness::on(Chat::Headless)
        .no_agent()
        .tweak(move |s| {
            s.http.api_tokens = vec![format!("ci:{API_SECRET}")];
            s.access.approver_roles = vec![group];
        })
        .build()
        .await;
    let dir = rig.dir.path().to_owned();
    bridge_on_matrix(&mut rig.settings, &w.synapse.url(), &w.bot, &w.bot_password, &[&room], &dir);
    rig.boot().await;
    w.ana.wait_joined(&room, &w.bot).await;
    push(&rig, &room, "trade-9", trade()).await;
    let card_id = w.bo.card(&room, &w.bot, APPROVAL).await["event_id"].as_str().unwrap().to_owned();

    w.bo.react(&room, &card_id, "✅").await;
    let dm = support::wait_until(|| async { w.bo.client.invited_rooms().first().map(|r| r.room_id().to_string()) }).await;
    join(&w.bo, &dm).await;
    support::wait_until(|| async { w.bo.notices(&dm, &w.bot).await.into_iter().find(|n| n.contains("not allowed")) }).await;
    assert_eq!(rig.api(API_SECRET).state("trade-9").await["status"], "pending");

    let room_id = <&matrix_sdk::ruma::RoomId>::try_from(room.as_str()).unwrap();
    let bo = <&matrix_sdk::ruma::UserId>::try_from(w.bo.user_id.as_str()).unwrap();
    w.ana.client.get_room(room_id).unwrap().update_power_levels(vec![(bo, 50.into())]).await.unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    w.bo.react(&room, &card_id, "❌").await;
    let decided = rig.api(API_SECRET).decided("trade-9").await;
    assert_eq!(decided["reply"], json!({"decisions": [{"type": "reject"}]}));
    assert_eq!(decided["decided_by"]["id"], w.bo.user_id.as_str());
    rig.shutdown().await;
}

/// The action names of the bot's cards in `room`, in the room's order.
async fn cards_in_order(person: &MatrixPerson, room: &str, bot: &str) -> Vec<String> {
    person
        .all_events(room, 5_000)
        .await
        .iter()
        .filter(|e| e["sender"] == bot && e["type"] == "m.room.message" && e["content"]["m.relates_to"].is_null())
        .filter_map(|e| e["content"]["body"].as_str())
        .filter(|b| b.starts_with(APPROVAL))
        .filter_map(|b| b.lines().find(|l| l.starts_with("step_")).map(str::to_owned))
        .collect()
}

/// Waits (up to three minutes: a burst takes its time) until `n` cards are in
/// `room`: their action names in the room's order.
async fn all_cards(w: &World, room: &str, n: usize) -> Vec<String> {
    for _ in 0..360 {
        let shown = cards_in_order(&w.ana, room, &w.bot).await;
        if shown.len() >= n {
            return shown;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("only {} of {n} cards were shown", cards_in_order(&w.ana, room, &w.bot).await.len());
}

/// Pushes `n` requests into `room` as fast as the API takes them: their action names
/// in order.
async fn burst(rig: &Harness, room: &str, n: usize) -> Vec<String> {
    let names: Vec<String> = (0..n).map(|i| format!("step_{i:03}")).collect();
    for (i, name) in names.iter().enumerate() {
        push(rig, room, &format!("burst-{i}"), json!({"timeout_seconds": 600, "actions": [{"name": name, "args": {}}]})).await;
    }
    names
}

/// A burst of 200 requests into one room: every card is shown, in the order pushed.
#[tokio::test]
#[ignore = "needs Synapse: bash tests/backends/install.sh synapse"]
async fn a_burst_of_200_into_one_room_is_shown_in_order_and_none_is_lost() {
    let Some(w) = world().await else { return };
    let room = w.room(false).await;
    let rig = w.bridge(&[&room], &[]).await;
    w.ana.wait_joined(&room, &w.bot).await;
    let names = burst(&rig, &room, 200).await;
    let shown = all_cards(&w, &room, names.len()).await;
    assert_eq!(shown, names);
    rig.shutdown().await;
}

/// Under a tight limit (one event a second, a burst of two) Synapse answers 429
/// `M_LIMIT_EXCEEDED`: the bridge waits `retry_after_ms` and sends again, so every
/// card and its reactions arrive, in order.
#[tokio::test]
#[ignore = "needs Synapse: bash tests/backends/install.sh synapse"]
async fn m_limit_exceeded_is_waited_out_and_nothing_is_lost() {
    let synapse = Synapse::start_with(Options { tight_message_limit: true }).await.expect("Synapse");
    let Some(w) = world_on(synapse).await else { return };
    let room = w.room(false).await;
    let rig = w.bridge(&[&room], &[]).await;
    w.ana.wait_joined(&room, &w.bot).await;
    let names = burst(&rig, &room, 3).await;
    let shown = all_cards(&w, &room, names.len()).await;
    assert_eq!(shown, names);
    rig.shutdown().await;
}

/// Logged in with its password, the bot bootstraps its cross-signing identity and signs
/// its own device with it: a person sees a device they can verify through that
/// identity (Element: the bot's profile → Verify).
#[tokio::test]
#[ignore = "needs Synapse: bash tests/backends/install.sh synapse"]
async fn the_bots_device_is_signed_by_its_own_cross_signing_identity() {
    let Some(w) = world().await else { return };
    let room = w.room(true).await;
    let rig = w.bridge(&[&room], &[]).await;
    w.ana.wait_joined(&room, &w.bot).await;
    let bot = <&matrix_sdk::ruma::UserId>::try_from(w.bot.as_str()).unwrap();
    let encryption = w.ana.client.encryption();
    support::wait_until(|| async { encryption.request_user_identity(bot).await.ok().flatten() }).await;
    support::wait_until(|| async {
        let devices = encryption.get_user_devices(bot).await.ok()?;
        devices.devices().any(|d| d.is_cross_signed_by_owner()).then_some(())
    })
    .await;
    rig.shutdown().await;
}

/// Two replicas on one store, both logged in as the bot (a device each): only the
/// holder of the sync lease syncs, so a reaction is handled once; when the holder dies
/// (its lease lapsed, as the store then says), the other takes the sync over and
/// answers.
#[tokio::test]
#[ignore = "needs Synapse: bash tests/backends/install.sh synapse"]
async fn with_two_replicas_only_the_lease_holder_syncs_and_the_other_takes_over() {
    let Some(w) = world().await else { return };
    let room = w.room(false).await;
    let mut rig = w.bridge(&[&room], &[("backend.replica_id", "first")]).await;
    w.ana.wait_joined(&room, &w.bot).await;
    let mut second_settings = rig.settings.clone();
    second_settings.backend.replica_id = Some("second".into());
    second_settings.platforms.get_mut::<hitl_bridge::platform::matrix::settings::MatrixSettings>().store_path = rig.dir.path().join("matrix-store-2");
    let second = hitl_bridge::app::App::start(&second_settings, None as support::harness::NoConsole).await.expect("the second replica starts");
    let store = hitl_bridge::store::Store::connect(&rig.settings.store.url).await.unwrap();
    let state = store.platform_state("matrix");
    let holder = || async {
        state.get("sync.lease", hitl_bridge::clock::now_ms()).await.unwrap().map(|s| serde_json::from_str::<Value>(&s.value).unwrap()["owner"].clone())
    };
    assert_eq!(holder().await, Some(json!("first")));

    push(&rig, &room, "trade-10", trade()).await;
    let card_id = w.ana.card(&room, &w.bot, APPROVAL).await["event_id"].as_str().unwrap().to_owned();
    w.ana.react(&room, &card_id, "✅").await;
    assert_eq!(rig.api(API_SECRET).decided("trade-10").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(w.ana.notices(&room, &w.bot).await.is_empty(), "handled twice: {:?}", w.ana.notices(&room, &w.bot).await);
    assert_eq!(holder().await, Some(json!("first")), "the second replica stood by");

    // The first replica dies: its lease lapses (written as the store would then hold it).
    rig.stop_bridge().await;
    state.put("sync.lease", &json!({"owner": "first", "until_ms": 0}).to_string(), hitl_bridge::clock::now_ms(), None).await.unwrap();
    support::wait_until(|| async { (holder().await == Some(json!("second"))).then_some(()) }).await;
    let api = format!("http://{}", second.http_addr().expect("the second replica's listener"));
    let body = json!({"approval_key": "trade-11", "timeout_seconds": 300, "targets": [{"platform": "matrix", "room_id": room}],
        "actions": [{"name": "deploy", "args": {}}]});
    let created = reqwest::Client::new().post(format!("{api}/v1/requests")).bearer_auth(API_SECRET).json(&body).send().await.unwrap();
    assert_eq!(created.status().as_u16(), 201);
    let card = w.ana.wait_for(&room, |e| e["sender"] == w.bot.as_str() && e["content"]["body"].as_str().is_some_and(|b| b.contains("deploy"))).await;
    w.bo.react(&room, card["event_id"].as_str().unwrap(), "✅").await;
    support::wait_until(|| async {
        let state = reqwest::Client::new().get(format!("{api}/v1/requests/trade-11")).bearer_auth(API_SECRET).send().await.ok()?.json::<Value>().await.ok()?;
        (state["status"] != "pending").then_some(())
    })
    .await;
    second.stop().await;
    store.close().await;
    rig.shutdown().await;
}

/// Event ids are global and the homeserver does not check a reply's `m.in_reply_to`:
/// a reply in another room naming a card is no answer, even from an approver.
#[tokio::test]
#[ignore = "needs Synapse: bash tests/backends/install.sh synapse"]
async fn a_reply_from_another_room_naming_a_card_is_no_answer() {
    let Some(w) = world().await else { return };
    let room = w.room(false).await;
    let other = w.bo.create_room(&[&w.bot], false).await;
    let rig = w.bridge(&[&room, &other], &[]).await;
    w.ana.wait_joined(&room, &w.bot).await;
    w.bo.wait_joined(&other, &w.bot).await;
    push(&rig, &room, "trade-12", trade()).await;
    let card_id = w.ana.card(&room, &w.bot, APPROVAL).await["event_id"].as_str().unwrap().to_owned();

    w.bo.reply(&other, &card_id, None, "approve").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(rig.api(API_SECRET).state("trade-12").await["status"], "pending");
    w.bo.reply(&room, &card_id, None, "approve").await;
    assert_eq!(rig.api(API_SECRET).decided("trade-12").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    rig.shutdown().await;
}

/// A DM from someone the bridge lets talk is accepted and is their chat with the
/// agent; a DM invitation from a stranger is declined.
#[tokio::test]
#[ignore = "needs Synapse: bash tests/backends/install.sh synapse"]
async fn a_dm_from_an_allowed_person_is_joined_and_a_strangers_is_declined() {
    let Some(w) = world().await else { return };
    let rig = w.bridge_with(&[], &[], Some(300)).await;
    let bot = <&matrix_sdk::ruma::UserId>::try_from(w.bot.as_str()).unwrap();
    let stranger = w.mallory.client.create_dm(bot).await.unwrap().room_id().to_string();
    let dm = w.ana.client.create_dm(bot).await.unwrap().room_id().to_string();
    w.ana.wait_joined(&dm, &w.bot).await;
    w.ana.say(&dm, "hello there").await;
    let said = support::wait_until(|| async { rig.sim().commands().into_iter().find(|c| c["type"] == "message") }).await;
    assert_eq!(said["content"], json!([{"type": "text", "text": "hello there"}]));
    let reply = w.ana.wait_for(&dm, |e| e["sender"] == w.bot.as_str() && e["type"] == "m.room.message").await;
    assert!(reply["content"]["m.relates_to"].is_null() || reply["content"]["m.relates_to"]["rel_type"] != "m.thread", "a DM is one chat: {reply}");
    // The stranger's invitation was declined: the bot left it.
    let stranger_id = <&matrix_sdk::ruma::RoomId>::try_from(stranger.as_str()).unwrap();
    support::wait_until(|| async {
        let room = w.mallory.client.get_room(stranger_id)?;
        let member = room.get_member(bot).await.ok()??;
        (*member.membership() == matrix_sdk::ruma::events::room::member::MembershipState::Leave).then_some(())
    })
    .await;
    rig.shutdown().await;
}
