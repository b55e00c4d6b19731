//! Decision policies end to end (issue #10), on Telegram and on Discord: reference
//! agent ↔ bridge ↔ the real teloxide / serenity client ↔ the fakes in tests/support.
//! Each platform runs the three stories the issue names:
//! - a quorum of 2: the first approval is a vote shown on the card, a second click by
//!   the same person and a click by someone not listed are refused, the second
//!   approver's click sends the one command, and a third click is refused;
//! - "Approve for this session": the next identical call is approved at once, shown as
//!   approved by the rule, while a different tool still asks;
//! - escalation: a reminder, the bridge stopped and restarted, the overdue move to a
//!   second chat done after the restart, then the fallback's reject sent to the agent.
//!
//! The agent's commands are asserted exactly; the audit log is read back from the store.

use hitl_bridge::platform::discord::settings::DiscordSettings;
use support::fake_discord;
use support::fake_telegram;
mod support;

use std::time::Duration;

use hitl_bridge::app::App;
use hitl_bridge::interaction::PolicySpec;
use hitl_bridge::store::Store;
use serde_json::{Value, json};
use support::{Chat, approvals, session_id, wait_approvals, wait_until};

fn policy(spec: Value) -> PolicySpec {
    serde_json::from_value(spec).expect("a policy spec")
}

/// The decision the agent got for `{s}_{n}`.
fn approval(s: &str, n: u32, decisions: Value) -> Value {
    json!({"type":"approval","session_id":s,"approval_key":format!("{s}_{n}"),"decisions":decisions})
}

/// Waits a moment more and checks the agent still has exactly `n` decisions: nothing
/// is sent twice, nothing late.
async fn still_exactly(sim: &hitl_bridge::agent_sim::SimHandle, n: usize) -> Vec<Value> {
    tokio::time::sleep(Duration::from_millis(700)).await;
    let got = approvals(sim);
    assert_eq!(got.len(), n, "{got:#?}");
    got
}

/// The `hitl_bridge_policy_actions_total` samples of a running bridge, by action.
async fn policy_actions(app: &App) -> Vec<(String, u64)> {
    let addr = app.http_addr().expect("the HTTP listener is on");
    let text = reqwest::get(format!("http://{addr}/metrics")).await.expect("GET /metrics").text().await.expect("body");
    let mut samples: Vec<(String, u64)> = text
        .lines()
        .filter_map(|l| l.strip_prefix("hitl_bridge_policy_actions_total{action=\""))
        .filter_map(|l| l.split_once("\"} "))
        .map(|(action, n)| (action.to_owned(), n.parse().expect("a count")))
        .collect();
    samples.sort();
    samples
}

async fn audit_reasons(store_url: &str, key: &str) -> Vec<(String, Option<String>)> {
    let store = Store::connect(store_url).await.expect("store");
    let log = store.audit_log(key).await.expect("audit log");
    log.into_iter().map(|e| (e.outcome, e.reason)).collect()
}

mod telegram {
    use super::fake_telegram::{User, button};
    use super::*;

    const OPS: i64 = -100_500;
    const ONCALL: i64 = -100_600;

    fn thao() -> User {
        User::new(1001, "Thao", Some("en"))
    }
    fn lan() -> User {
        User::new(3001, "Lan", Some("en"))
    }
    fn minh() -> User {
        User::new(3002, "Minh", Some("en"))
    }
    fn ha() -> User {
        User::new(3003, "Ha", Some("en"))
    }

    /// A [`support::Harness`] on Telegram with Thảo's chat, the ops and on-call groups.
    struct Rig {
        base: support::Harness,
        chat: i64,
    }

    crate::wraps_harness!(Rig, base);

    impl Rig {
        async fn start(extra: &[(&str, &str)], policies: Vec<PolicySpec>) -> Rig {
            let base = support::Harness::on(Chat::Telegram)
                .agent(600)
                .settings(extra)
                .tweak(move |settings| {
                    settings.access.users = vec![format!("telegram:{}", thao().id)];
                    // Used when `routing.target` says so: the team's ops group.
                    settings.routing.channels = vec![format!("telegram:{OPS}")];
                    settings.policies = policies;
                })
                .build()
                .await;
            let fake = base.telegram();
            let chat = fake.private_chat(&thao());
            fake.group(OPS, "Ops", false);
            fake.group(ONCALL, "On call", false);
            let mut rig = Rig { base, chat };
            rig.boot().await;
            rig
        }

        fn say(&self, text: &str) {
            self.telegram().push_message(self.chat, &thao(), text, None, None);
        }

        /// The `n`-th bot message (from 0) in `chat` whose text contains `needle`.
        async fn nth_message(&self, chat: i64, needle: &str, n: usize) -> Value {
            wait_until(|| async { self.telegram().bot_messages(chat).into_iter().filter(|m| m["text"].as_str().is_some_and(|t| t.contains(needle))).nth(n) })
                .await
        }

        async fn shows(&self, chat: i64, id: i64, needle: &str) -> Value {
            wait_until(|| async { self.telegram().message(chat, id).filter(|m| m["text"].as_str().is_some_and(|t| t.contains(needle))) }).await
        }

        /// Clicks the button labelled `label` on message `id` of `chat` as `who`; the
        /// toast the bridge answered with.
        async fn click(&self, chat: i64, id: i64, label: &str, who: &User) -> String {
            let message = self.telegram().message(chat, id).expect("message exists");
            let query = self.telegram().push_click(chat, who, id, &button(&message, label));
            let answer = wait_until(|| async { self.telegram().answer_to(&query) }).await;
            answer["text"].as_str().unwrap_or_default().to_owned()
        }

        fn store_url(&self) -> String {
            self.settings.store.url.clone()
        }

        async fn finish(mut self) {
            self.stop_bridge().await;
            let refused: Vec<_> = self.telegram().errors().into_iter().filter(|(_, e)| !e.starts_with("Bad Request: message is not modified")).collect();
            assert!(refused.is_empty(), "Telegram would have refused: {refused:?}");
            self.base.shutdown().await;
        }
    }

    fn id_of(m: &Value) -> i64 {
        m["message_id"].as_i64().expect("message id")
    }

    /// Whether the message still has buttons (an ended request's keyboard is emptied).
    fn has_buttons(m: &Value) -> bool {
        m["reply_markup"]["inline_keyboard"].as_array().is_some_and(|rows| !rows.is_empty())
    }

    /// run_migration needs 2 of Lan, Minh and Ha; the request also goes to the ops group.
    #[tokio::test]
    async fn quorum_of_two_then_a_third_click_is_refused() {
        let migrations = policy(json!({"name":"migrations","tools":["run_migration"],
            "approvers":["telegram:3001","telegram:3002","telegram:3003"],"quorum":2}));
        let rig = Rig::start(&[("routing.target", "channel")], vec![migrations]).await;
        rig.say("migration");
        let card = rig.nth_message(OPS, "run_migration", 0).await;
        let id = id_of(&card);

        rig.click(OPS, id, "Approve", &lan()).await;
        rig.shows(OPS, id, "1 of 2 approvals: Lan ✔").await;
        assert!(approvals(rig.sim()).is_empty(), "one vote sends nothing");
        assert!(rig.click(OPS, id, "Approve", &lan()).await.contains("already voted"), "one person votes once");
        assert!(rig.click(OPS, id, "Approve", &thao()).await.contains("not allowed"), "only the listed approvers vote");
        assert!(approvals(rig.sim()).is_empty());

        // Hà clicks the same button as it was before Minh decided (the card may
        // already have lost its buttons by then).
        let stale = button(&rig.telegram().message(OPS, id).expect("the card"), "Approve");
        rig.click(OPS, id, "Approve", &minh()).await;
        let s = session_id(rig.sim());
        assert_eq!(wait_approvals(rig.sim(), 1).await, vec![approval(&s, 1, json!([{"type":"approve"}]))]);
        let query = rig.telegram().push_click(OPS, &ha(), id, &stale);
        let third = wait_until(|| async { rig.telegram().answer_to(&query) }).await["text"].as_str().unwrap_or_default().to_owned();
        assert!(third.starts_with("Already decided by Minh"), "{third}");
        still_exactly(rig.sim(), 1).await;

        let done = rig.shows(OPS, id, "Lan, Minh").await;
        assert!(!has_buttons(&done), "the buttons are gone: {done}");
        let private = rig.nth_message(rig.chat, "run_migration", 0).await;
        rig.shows(rig.chat, id_of(&private), "Lan, Minh").await;
        let audit = audit_reasons(&rig.store_url(), &format!("{s}_1")).await;
        assert!(audit.iter().any(|(_, r)| r.as_deref().is_some_and(|r| r.contains("Lan") && r.contains("Minh"))), "{audit:?}");
        rig.finish().await;
    }

    /// "Approve for this session" on a trade: the same trade again is approved without
    /// asking; run_migration, also under the policy, still asks.
    #[tokio::test]
    async fn a_session_rule_approves_the_next_identical_call_only() {
        let reads = policy(json!({"name":"trades","tools":["execute_trade","run_migration"],"remember":["session"]}));
        let rig = Rig::start(&[], vec![reads]).await;
        rig.say("trade");
        let card = rig.nth_message(rig.chat, "execute_trade", 0).await;
        let labels: Vec<String> = card["reply_markup"]["inline_keyboard"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|row| row.as_array().cloned().unwrap_or_default())
            .filter_map(|b| b["text"].as_str().map(str::to_owned))
            .collect();
        assert!(labels.iter().any(|l| l.contains("Approve once")), "{labels:?}");
        assert!(labels.iter().any(|l| l.contains("Approve for this session")), "{labels:?}");
        assert!(!labels.iter().any(|l| l.contains("Always approve")), "only the offered scope: {labels:?}");
        rig.click(rig.chat, id_of(&card), "Approve for this session", &thao()).await;
        let s = session_id(rig.sim());
        assert_eq!(wait_approvals(rig.sim(), 1).await, vec![approval(&s, 1, json!([{"type":"approve"}]))]);
        rig.nth_message(rig.chat, "Đã đặt lệnh", 0).await;

        rig.say("trade");
        let got = wait_approvals(rig.sim(), 2).await;
        assert_eq!(got[1], approval(&s, 2, json!([{"type":"approve"}])), "approved by the rule, without a click");
        let second = rig.nth_message(rig.chat, "execute_trade", 1).await;
        let second = rig.shows(rig.chat, id_of(&second), "rule set by Thao").await;
        assert!(!has_buttons(&second), "nothing to click: {second}");
        rig.nth_message(rig.chat, "Đã đặt lệnh", 1).await;

        rig.say("migration");
        let other = rig.nth_message(rig.chat, "run_migration", 0).await;
        assert!(has_buttons(&other), "a different tool still asks");
        still_exactly(rig.sim(), 2).await;
        let audit = audit_reasons(&rig.store_url(), &format!("{s}_2")).await;
        assert!(audit.iter().any(|(_, r)| r.as_deref().is_some_and(|r| r.starts_with("approved by rule") && r.contains("set by Thao"))), "{audit:?}");
        let counted = policy_actions(rig.app.as_ref().expect("running")).await;
        assert!(counted.contains(&("rule_approve".to_owned(), 1)), "{counted:?}");
        let rules = Store::connect(&rig.store_url()).await.expect("store").active_rules().await.expect("rules");
        assert_eq!(rules.iter().map(|r| (r.tool.as_str(), r.scope.as_str())).collect::<Vec<_>>(), [("execute_trade", "session")]);
        rig.finish().await;
    }

    /// Remind Lan after 2 s, show in the on-call group after 4 s, reject after 7 s; the
    /// bridge is down from just after the reminder until past the second step.
    #[tokio::test]
    async fn escalation_reminds_moves_and_falls_back_across_a_restart() {
        let migrations = policy(json!({"name":"migrations","tools":["run_migration"],"approvers":["telegram:3001"],
            "escalation":[{"after":2,"remind":"telegram:3001"},{"after":4,"show_in":"telegram:-100600"},{"after":7,"fallback":"reject"}]}));
        let mut rig = Rig::start(&[("timeouts.grace_secs", "0")], vec![migrations]).await;
        rig.say("migration");
        let card = rig.nth_message(rig.chat, "run_migration", 0).await;
        let shown_at = std::time::Instant::now();
        let reminder = rig.nth_message(rig.chat, "tg://user?id=3001", 0).await;
        assert!(reminder["text"].as_str().unwrap_or_default().contains("run_migration"), "{reminder}");
        let sent = rig.telegram().calls("sendMessage").into_iter().find(|c| c["text"].as_str().is_some_and(|t| t.contains("tg://user?id=3001"))).expect("sent");
        assert_eq!(sent["reply_parameters"]["message_id"], id_of(&card), "a reply to the request's card");
        assert!(rig.telegram().bot_messages(ONCALL).is_empty(), "not moved yet");

        rig.stop_bridge().await;
        tokio::time::sleep(Duration::from_secs(5).saturating_sub(shown_at.elapsed())).await;
        rig.boot().await;
        let moved = rig.nth_message(ONCALL, "run_migration", 0).await;
        assert!(has_buttons(&moved), "shown with its buttons in the second chat");

        let s = session_id(rig.sim());
        let got = wait_approvals(rig.sim(), 1).await;
        assert_eq!(got, vec![approval(&s, 1, json!([{"type":"reject","message":"no human decision after 7 s: rejected by policy migrations"}]))]);
        for (chat, id) in [(rig.chat, id_of(&card)), (ONCALL, id_of(&moved))] {
            let ended = rig.shows(chat, id, "Rejected by policy: no decision within 7 s").await;
            assert!(!has_buttons(&ended), "{ended}");
        }
        still_exactly(rig.sim(), 1).await;
        let reminders =
            rig.telegram().bot_messages(rig.chat).into_iter().filter(|m| m["text"].as_str().is_some_and(|t| t.contains("tg://user?id=3001"))).count();
        assert_eq!(reminders, 1, "the reminder is sent once, restart or not");
        // Counted by the replica that did it: the reminder by the bridge before the
        // restart, the move and the fallback by this one.
        let counted = policy_actions(rig.app.as_ref().expect("running")).await;
        let mut expected: Vec<(String, u64)> =
            [("remind", 0), ("show_in", 1), ("rule_approve", 0), ("fallback_approve", 0), ("fallback_reject", 1), ("fallback_leave", 0)]
                .iter()
                .map(|(a, n)| (a.to_string(), *n))
                .collect();
        expected.sort();
        assert_eq!(counted, expected);
        let audit = audit_reasons(&rig.store_url(), &format!("{s}_1")).await;
        let escalated = audit.iter().filter(|(outcome, _)| outcome == "escalated").count();
        assert_eq!(escalated, 2, "{audit:?}");
        assert!(audit.iter().any(|(_, r)| r.as_deref().is_some_and(|r| r.contains("fallback reject"))), "{audit:?}");
        rig.finish().await;
    }
}

mod discord {
    use super::fake_discord::*;
    use super::*;

    const THAO: &str = "500000000000000001";
    const LAN: &str = "500000000000000002";
    const MINH: &str = "500000000000000003";
    const HA: &str = "500000000000000004";
    const DBA: &str = "600000000000000123";
    const ONCALL: &str = "800000000000000002";

    /// A [`support::Harness`] on Discord, in the suite's channel.
    struct Rig {
        base: support::Harness,
    }

    crate::wraps_harness!(Rig, base);

    impl Rig {
        async fn start(extra: &[(&str, &str)], policies: Vec<PolicySpec>) -> Rig {
            let base = support::Harness::on(Chat::Discord)
                .agent(600)
                .settings(extra)
                .tweak(move |settings| {
                    settings.platforms.get_mut::<DiscordSettings>().channels = vec![CHANNEL_ID.into()];
                    settings.access.users = vec![format!("discord:{THAO}")];
                    settings.policies = policies;
                })
                .start()
                .await;
            Rig { base }
        }

        fn say(&self, text: &str) {
            self.discord().dispatch("MESSAGE_CREATE", guild_message(self.discord(), CHANNEL_ID, &user(THAO, "Thao"), text, false));
        }

        /// The `n`-th card (a message with an embed) posted in `channel` whose embed
        /// mentions `needle`, with its message id.
        async fn card(&self, channel: &str, needle: &str, n: usize) -> (Value, String) {
            wait_until(|| async {
                self.discord()
                    .requests()
                    .into_iter()
                    .filter(|r| r.method == "POST" && r.path.ends_with(&format!("/channels/{channel}/messages")) && r.status == 200)
                    .filter(|r| r.body["embeds"].as_array().is_some_and(|e| !e.is_empty()) && r.body.to_string().contains(needle))
                    .nth(n)
                    .map(|r| (r.body.clone(), r.response.as_ref().and_then(|m| m["id"].as_str()).expect("message id").to_owned()))
            })
            .await
        }

        /// Plain messages (no embed) posted in `channel`.
        fn texts(&self, channel: &str) -> Vec<Value> {
            self.discord()
                .requests()
                .into_iter()
                .filter(|r| r.method == "POST" && r.path.ends_with(&format!("/channels/{channel}/messages")) && r.status == 200)
                .filter(|r| r.body["embeds"].as_array().is_none_or(|e| e.is_empty()))
                .map(|r| r.body)
                .collect()
        }

        /// The last edit of message `id` that satisfies `pred`.
        async fn edit(&self, id: &str, pred: impl Fn(&Value) -> bool) -> Value {
            wait_until(|| async {
                self.discord()
                    .requests()
                    .into_iter()
                    .rev()
                    .find(|r| r.method == "PATCH" && r.path.ends_with(&format!("/messages/{id}")) && pred(&r.body))
                    .map(|r| r.body)
            })
            .await
        }

        /// Clicks `label` on a card as `who` with `roles`; the ephemeral text the
        /// bridge answered with, if it answered with one (a refusal or a note).
        async fn click(&self, channel: &str, card: &Value, id: &str, label: &str, who: (&str, &str), roles: &[&str]) -> Option<String> {
            let before = self.answers().len();
            self.discord().dispatch("INTERACTION_CREATE", click(self.discord(), &button(card, label), id, channel, &user(who.0, who.1), roles));
            wait_until(|| async { (self.answers().len() > before).then_some(()) }).await;
            // A refusal may come as the first answer (type 4) or as a follow-up.
            tokio::time::sleep(Duration::from_millis(300)).await;
            let answers = self.answers();
            answers[before..].iter().find_map(|a| a.as_str().map(str::to_owned))
        }

        /// Runs the slash command `/name` (with its `revoke` option when given) as Thao
        /// and returns the reply it edits in.
        async fn slash(&self, name: &str, revoke: Option<&str>) -> String {
            let replies =
                || self.discord().requests().into_iter().filter(|r| r.method == "PATCH" && r.path.ends_with("/messages/@original")).collect::<Vec<_>>();
            let before = replies().len();
            let mut invoked = command(self.discord(), name, CHANNEL_ID, &user(THAO, "Thao"));
            if let Some(id) = revoke {
                invoked["data"]["options"] = json!([{"name": "revoke", "type": 3, "value": id}]);
            }
            self.discord().dispatch("INTERACTION_CREATE", invoked);
            let reply = wait_until(|| async { replies().get(before).cloned() }).await;
            reply.body["content"].as_str().unwrap_or_default().to_owned()
        }

        /// Every answer to a click, in order: the ephemeral text, or `Null` for a silent ack.
        fn answers(&self) -> Vec<Value> {
            self.discord()
                .requests()
                .into_iter()
                .filter_map(|r| {
                    if r.path.ends_with("/callback") {
                        Some(r.body["data"]["content"].clone())
                    } else if r.method == "POST" && r.path.starts_with("/api/v10/webhooks/") {
                        Some(r.body["content"].clone())
                    } else {
                        None
                    }
                })
                .collect()
        }

        async fn finish(self) {
            self.base.shutdown().await;
        }
    }

    /// The custom_id of the button whose label contains `label`.
    fn button(card: &Value, label: &str) -> String {
        card["components"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|row| row["components"].as_array().cloned().unwrap_or_default())
            .find(|c| c["label"].as_str().is_some_and(|l| l.contains(label)))
            .and_then(|c| c["custom_id"].as_str().map(str::to_owned))
            .unwrap_or_else(|| panic!("no button {label:?} in {card}"))
    }

    fn labels(card: &Value) -> Vec<String> {
        card["components"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|row| row["components"].as_array().cloned().unwrap_or_default())
            .filter_map(|c| c["label"].as_str().map(str::to_owned))
            .collect()
    }

    /// "run_migration needs 2 of the DBA role": a third DBA's click is refused.
    #[tokio::test]
    async fn quorum_of_two_dbas_then_a_third_click_is_refused() {
        let migrations = policy(json!({"name":"migrations","tools":["run_migration"],"approver_roles":[DBA],"quorum":2}));
        let rig = Rig::start(&[], vec![migrations]).await;
        rig.say("migration");
        let (card, id) = rig.card(CHANNEL_ID, "run_migration", 0).await;

        rig.click(CHANNEL_ID, &card, &id, "Approve", (LAN, "Lan"), &[DBA]).await;
        rig.edit(&id, |b| b.to_string().contains("1 of 2 approvals: Lan ✔")).await;
        assert!(approvals(rig.sim()).is_empty(), "one vote sends nothing");
        let again = rig.click(CHANNEL_ID, &card, &id, "Approve", (LAN, "Lan"), &[DBA]).await;
        assert!(again.as_deref().is_some_and(|t| t.contains("already voted")), "{again:?}");
        let no_role = rig.click(CHANNEL_ID, &card, &id, "Approve", (THAO, "Thao"), &[]).await;
        assert!(no_role.as_deref().is_some_and(|t| t.contains("not allowed")), "{no_role:?}");
        assert!(approvals(rig.sim()).is_empty());

        rig.click(CHANNEL_ID, &card, &id, "Approve", (MINH, "Minh"), &[DBA]).await;
        let s = session_id(rig.sim());
        assert_eq!(wait_approvals(rig.sim(), 1).await, vec![approval(&s, 1, json!([{"type":"approve"}]))]);
        let third = rig.click(CHANNEL_ID, &card, &id, "Approve", (HA, "Ha"), &[DBA]).await;
        assert!(third.as_deref().is_some_and(|t| t.starts_with("Already decided by Minh")), "{third:?}");
        still_exactly(rig.sim(), 1).await;
        let done = rig.edit(&id, |b| b["components"] == json!([])).await;
        assert!(done.to_string().contains("Lan, Minh"), "{done}");
        rig.finish().await;
    }

    #[tokio::test]
    async fn a_session_rule_approves_the_next_identical_call_only() {
        let trades = policy(json!({"name":"trades","tools":["execute_trade","run_migration"],"remember":["session","always"]}));
        let rig = Rig::start(&[], vec![trades]).await;
        rig.say("trade");
        let (card, id) = rig.card(CHANNEL_ID, "execute_trade", 0).await;
        let offered = labels(&card);
        for label in ["Approve once", "Approve for this session", "Always approve"] {
            assert!(offered.iter().any(|l| l.contains(label)), "{label} in {offered:?}");
        }
        rig.click(CHANNEL_ID, &card, &id, "Approve for this session", (THAO, "Thao"), &[]).await;
        let s = session_id(rig.sim());
        assert_eq!(wait_approvals(rig.sim(), 1).await, vec![approval(&s, 1, json!([{"type":"approve"}]))]);

        rig.say("trade");
        let got = wait_approvals(rig.sim(), 2).await;
        assert_eq!(got[1], approval(&s, 2, json!([{"type":"approve"}])), "approved by the rule, without a click");
        let (second, second_id) = rig.card(CHANNEL_ID, "execute_trade", 1).await;
        let shown = if labels(&second).is_empty() { second } else { rig.edit(&second_id, |b| b["components"] == json!([])).await };
        assert!(shown.to_string().contains("Approved by rule set by Thao"), "{shown}");

        // `/rules` lists the rule; revoked by the person who set it, the same call asks again.
        let rule = Store::connect(&rig.settings.store.url).await.expect("store").active_rules().await.expect("rules")[0].id.clone();
        let listed = rig.slash("rules", None).await;
        assert!(listed.contains(&format!("• {rule} · execute_trade ")) && listed.contains("this session · Thao"), "{listed}");
        assert_eq!(rig.slash("rules", Some(&rule)).await, format!("Rule {rule} revoked: execute_trade will be asked again."));
        rig.say("trade");
        let (third, third_id) = rig.card(CHANNEL_ID, "execute_trade", 2).await;
        assert!(labels(&third).iter().any(|l| l.contains("Approve once")), "asked again: {third}");
        still_exactly(rig.sim(), 2).await;
        rig.click(CHANNEL_ID, &third, &third_id, "Approve once", (THAO, "Thao"), &[]).await;
        assert_eq!(wait_approvals(rig.sim(), 3).await[2], approval(&s, 3, json!([{"type":"approve"}])));

        rig.say("migration");
        let (other, _) = rig.card(CHANNEL_ID, "run_migration", 0).await;
        assert!(!labels(&other).is_empty(), "a different tool still asks");
        still_exactly(rig.sim(), 3).await;
        rig.finish().await;
    }

    #[tokio::test]
    async fn escalation_reminds_the_role_moves_and_falls_back_across_a_restart() {
        let migrations = policy(json!({"name":"migrations","tools":["run_migration"],"approver_roles":[DBA],
            "escalation":[{"after":2,"remind":format!("role:{DBA}")},{"after":4,"show_in":format!("discord:{ONCALL}")},{"after":7,"fallback":"reject"}]}));
        let mut rig = Rig::start(&[("timeouts.grace_secs", "0")], vec![migrations]).await;
        rig.say("migration");
        let (_, id) = rig.card(CHANNEL_ID, "run_migration", 0).await;
        let shown_at = std::time::Instant::now();
        let reminder =
            wait_until(|| async { rig.texts(CHANNEL_ID).into_iter().find(|b| b["content"].as_str().is_some_and(|c| c.contains(&format!("<@&{DBA}>")))) }).await;
        assert_eq!(reminder["allowed_mentions"]["roles"], json!([DBA]), "the role is pinged, nobody else: {reminder}");
        assert_eq!(reminder["message_reference"]["message_id"], json!(id), "a reply to the request's card");

        rig.stop_bridge().await;
        tokio::time::sleep(Duration::from_secs(5).saturating_sub(shown_at.elapsed())).await;
        rig.boot().await;
        let (moved, moved_id) = rig.card(ONCALL, "run_migration", 0).await;
        assert!(!labels(&moved).is_empty(), "shown with its buttons in the second channel");

        let s = session_id(rig.sim());
        let got = wait_approvals(rig.sim(), 1).await;
        assert_eq!(got, vec![approval(&s, 1, json!([{"type":"reject","message":"no human decision after 7 s: rejected by policy migrations"}]))]);
        for message in [&id, &moved_id] {
            let ended = rig.edit(message, |b| b["components"] == json!([])).await;
            assert!(ended.to_string().contains("policy"), "{ended}");
        }
        still_exactly(rig.sim(), 1).await;
        let reminders = rig.texts(CHANNEL_ID).into_iter().filter(|b| b["content"].as_str().is_some_and(|c| c.contains(&format!("<@&{DBA}>")))).count();
        assert_eq!(reminders, 1, "reminded once");
        rig.finish().await;
    }
}
