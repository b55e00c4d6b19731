//! The Matrix test harness itself, against a real Synapse (`tests/support/synapse.rs`,
//! installed by `tests/backends/install.sh synapse`): accounts, a room two people
//! share, messages, a reply, a reaction, a redaction, a poll and a vote read back as
//! the server stores them, a restart that keeps rooms and tokens, and the tight
//! message limit a rate-limit test asks for.
//!
//! They are `#[ignore]`d: a plain `cargo test` reports them ignored; `cargo test --
//! --include-ignored` runs them, and fails without the install.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::synapse::{Options, Person, Synapse};

const WAIT: Duration = Duration::from_secs(10);

/// Ann and Ben, with a private room Ann made and Ben joined.
async fn two_people_in_a_room(synapse: &Synapse, encrypted: bool) -> (Person, Person, String) {
    let ann = synapse.register("ann", true).await;
    let ben = synapse.register("ben", false).await;
    let room = ann.create_room(&[&ben.user_id], encrypted).await;
    ben.join(&room).await;
    (ann, ben, room)
}

fn is_event(id: &str) -> impl Fn(&Value) -> bool + '_ {
    move |e: &Value| e["event_id"] == id
}

#[tokio::test]
#[ignore = "needs the synapse backend: bash tests/backends/install.sh synapse, then cargo test -- --include-ignored"]
async fn registered_people_share_a_room_and_read_each_other() {
    let Some(synapse) = Synapse::start().await else { return };
    let (ann, ben, room) = two_people_in_a_room(&synapse, false).await;
    assert_eq!(ann.user_id, "@ann:localhost");
    let me = ben.whoami().await;
    assert_eq!(me["user_id"], "@ben:localhost");
    assert_eq!(me["device_id"], json!(ben.device_id));

    let hello = ann.send_text(&room, "hello Ben").await;
    let seen = ben.wait_for(&room, is_event(&hello), WAIT).await;
    assert_eq!(seen["sender"], "@ann:localhost");
    assert_eq!(seen["content"], json!({"msgtype": "m.text", "body": "hello Ben"}));

    let reply = ben.reply(&room, &hello, "hi Ann").await;
    let reply = ann.wait_for(&room, is_event(&reply), WAIT).await;
    assert_eq!(reply["content"]["m.relates_to"], json!({"m.in_reply_to": {"event_id": hello}}));

    let reaction = ben.react(&room, &hello, "👍").await;
    let reaction = ann.wait_for(&room, is_event(&reaction), WAIT).await;
    assert_eq!(reaction["type"], "m.reaction");
    assert_eq!(reaction["content"]["m.relates_to"], json!({"rel_type": "m.annotation", "event_id": hello, "key": "👍"}));

    // Oldest first: the join before the message before the reply.
    let events = ben.messages(&room).await;
    let at = |id: &str| events.iter().position(|e| e["event_id"] == id).unwrap_or_else(|| panic!("{id} in the room"));
    let joined = events.iter().position(|e| e["type"] == "m.room.member" && e["state_key"] == "@ben:localhost" && e["content"]["membership"] == "join");
    assert!(joined.expect("Ben's join") < at(&hello) && at(&hello) < at(reply["event_id"].as_str().unwrap()));

    // A redacted message keeps its id and loses its content.
    ann.redact(&room, &hello).await;
    let redacted = ben.wait_for(&room, |e| e["event_id"] == hello && e["content"] == json!({}), WAIT).await;
    assert!(redacted["unsigned"]["redacted_because"].is_object(), "{redacted}");
}

#[tokio::test]
#[ignore = "needs the synapse backend: bash tests/backends/install.sh synapse, then cargo test -- --include-ignored"]
async fn a_poll_vote_round_trips() {
    let Some(synapse) = Synapse::start().await else { return };
    let (ann, ben, room) = two_people_in_a_room(&synapse, false).await;
    let poll = ann.start_poll(&room, "Deploy to prod?", &[("approve", "Approve"), ("deny", "Deny")]).await;
    let start = ben.wait_for(&room, is_event(&poll), WAIT).await;
    assert_eq!(start["type"], "org.matrix.msc3381.poll.start");
    assert_eq!(start["content"]["org.matrix.msc3381.poll.start"]["answers"][1]["id"], "deny");

    let vote = ben.vote(&room, &poll, &["approve"]).await;
    let vote = ann.wait_for(&room, is_event(&vote), WAIT).await;
    assert_eq!(vote["type"], "org.matrix.msc3381.poll.response");
    assert_eq!(vote["sender"], "@ben:localhost");
    assert_eq!(vote["content"]["org.matrix.msc3381.poll.response"], json!({"answers": ["approve"]}));
    assert_eq!(vote["content"]["m.relates_to"], json!({"rel_type": "m.reference", "event_id": poll}));
}

#[tokio::test]
#[ignore = "needs the synapse backend: bash tests/backends/install.sh synapse, then cargo test -- --include-ignored"]
async fn a_direct_encrypted_room_says_so_in_its_state() {
    let Some(synapse) = Synapse::start().await else { return };
    let ann = synapse.register("ann", false).await;
    let ben = synapse.register("ben", false).await;
    let room = ann.create_dm(&ben.user_id, true).await;
    ben.join(&room).await;
    let events = ben.messages(&room).await;
    let encryption = events.iter().find(|e| e["type"] == "m.room.encryption").expect("m.room.encryption in the room");
    assert_eq!(encryption["content"], json!({"algorithm": "m.megolm.v1.aes-sha2"}));
    let invite = events.iter().find(|e| e["type"] == "m.room.member" && e["content"]["membership"] == "invite").expect("Ben's invite");
    assert_eq!(invite["content"]["is_direct"], json!(true));

    // Room version 12: a trusted private chat makes its invitees creators too, with
    // unlimited power (no power level of theirs can be set).
    let create = events.iter().find(|e| e["type"] == "m.room.create").expect("m.room.create");
    assert_eq!(create["content"]["room_version"], "12");
    assert_eq!(create["content"]["additional_creators"], json!([ben.user_id]));
}

#[tokio::test]
#[ignore = "needs the synapse backend: bash tests/backends/install.sh synapse, then cargo test -- --include-ignored"]
async fn a_moderator_is_made_by_power_level() {
    let Some(synapse) = Synapse::start().await else { return };
    let (ann, ben, room) = two_people_in_a_room(&synapse, false).await;
    ann.set_power_level(&room, &ben.user_id, 50).await;
    let levels = ben.wait_for(&room, |e| e["type"] == "m.room.power_levels" && e["content"]["users"][&ben.user_id] == 50, WAIT).await;
    assert_eq!(levels["sender"], json!(ann.user_id));
    assert!(levels["content"]["users"].get(&ann.user_id).is_none(), "the creator is not listed: {levels}");
}

#[tokio::test]
#[ignore = "needs the synapse backend: bash tests/backends/install.sh synapse, then cargo test -- --include-ignored"]
async fn a_restart_keeps_the_room_and_the_tokens() {
    let Some(mut synapse) = Synapse::start().await else { return };
    let url = synapse.url();
    let (ann, ben, room) = two_people_in_a_room(&synapse, false).await;
    let before = ann.send_text(&room, "before the restart").await;

    synapse.restart().await;
    assert_eq!(synapse.url(), url, "the same port");
    assert_eq!(ben.whoami().await["user_id"], "@ben:localhost", "the token still works");
    ben.wait_for(&room, is_event(&before), WAIT).await;
    let after = ben.send_text(&room, "after the restart").await;
    ann.wait_for(&room, is_event(&after), WAIT).await;
}

#[tokio::test]
#[ignore = "needs the synapse backend: bash tests/backends/install.sh synapse, then cargo test -- --include-ignored"]
async fn the_tight_message_limit_refuses_with_retry_after_ms() {
    let Some(synapse) = Synapse::start_with(Options { tight_message_limit: true }).await else { return };
    let (ann, _ben, room) = two_people_in_a_room(&synapse, false).await;
    let mut refused = None;
    for n in 0..10 {
        match ann.try_send(&room, "m.room.message", &json!({"msgtype": "m.text", "body": format!("burst {n}")})).await {
            Ok(_) => continue,
            Err(r) => {
                refused = Some((n, r));
                break;
            }
        }
    }
    let (n, refused) = refused.expect("a burst of ten messages is limited");
    assert!(n >= 1, "at least the first message goes through");
    assert_eq!(refused.status, 429);
    assert_eq!(refused.body["errcode"], "M_LIMIT_EXCEEDED", "{}", refused.body);
    let retry = refused.body["retry_after_ms"].as_u64().unwrap_or_else(|| panic!("retry_after_ms in {}", refused.body));
    assert!(retry > 0 && retry <= 2000, "about a second: {retry}");
    // The harness's own sends wait the limit out.
    let late = ann.send_text(&room, "after the wait").await;
    ann.wait_for(&room, is_event(&late), WAIT).await;
}
