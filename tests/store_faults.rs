//! When storing fails: a full disk under the SQLite store. The bridge runs on the real
//! platform clients against their fakes, its store on a small filesystem (a tmpfs the
//! test mounts, so these tests need root, as CI has) that the test fills to the brim and
//! then frees. What is checked is what people, the agent and the store see: a click
//! pressed during the failure is either delivered once or its presser was told it was
//! not saved and a second press works; nothing is shown as decided that was not
//! stored; and the store needs no restart to work again.

use support::fake_discord;
use support::fake_telegram;
mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use hitl_bridge::platform::discord::settings::DiscordSettings;
use serde_json::{Value, json};
use support::discord_chat::{button as discord_button, has_embed};
use support::{Chat, Harness, approvals, session_id, wait_approvals, wait_until};

/// A tmpfs of a few MiB mounted on a fresh directory, unmounted when dropped.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount() -> SmallDisk {
        let dir = tempfile::tempdir().expect("temp dir");
        let status = std::process::Command::new("mount").args(["-t", "tmpfs", "-o", "size=16m", "tmpfs"]).arg(dir.path()).status().expect("run mount");
        assert!(status.success(), "cannot mount a tmpfs: these tests need root ({status})");
        SmallDisk { dir }
    }

    fn store_url(&self) -> String {
        format!("sqlite://{}", self.path().join("bridge.db").display())
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn ballast(&self) -> PathBuf {
        self.path().join("ballast")
    }

    /// Writes a file until the filesystem has not one byte left.
    fn fill(&self) {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(self.ballast()).expect("ballast");
        let chunk = vec![0u8; 64 * 1024];
        while file.write(&chunk).is_ok_and(|n| n > 0) {}
        while file.write(&[0u8]).is_ok_and(|n| n == 1) {}
    }

    fn free(&self) {
        std::fs::remove_file(self.ballast()).expect("remove the ballast");
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("-l").arg(self.dir.path()).status();
    }
}

/// The bridge's `/metrics` page.
async fn metrics_page(h: &Harness) -> String {
    let url = format!("http://{}/metrics", h.app().http_addr().expect("the HTTP listener is on"));
    reqwest::get(url).await.expect("scrape").text().await.expect("body")
}

/// The value of the first sample of `family` whose labels contain `label`.
fn sample(page: &str, family: &str, label: &str) -> Option<f64> {
    page.lines().filter(|l| l.starts_with(family) && l.contains(label)).find_map(|l| l.rsplit_once(' ').and_then(|(_, v)| v.parse().ok()))
}

mod telegram {
    use super::*;
    use fake_telegram::{User, button};

    fn thao() -> User {
        User::new(1001, "Thảo", Some("en"))
    }

    const NOT_YET: &str = "Not saved yet: the bridge's storage is failing. It is handled as soon as the storage is back; no need to send it again.";

    /// Telegram: the disk fills while a card waits. Approve is pressed: the inbox cannot
    /// keep the click, so its spinner ends with "not saved yet" (once, though Telegram
    /// delivers it again and again) and nothing reaches the agent; a message sent
    /// meanwhile gets the same notice. Once the space is freed, the bridge (never
    /// restarted) stores both: the agent gets the approval once and the message, the
    /// card shows the decision, and a second press is told it was already decided.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "needs root: mounts a small filesystem"]
    async fn a_click_on_a_full_disk_is_delivered_once_when_space_returns() {
        let disk = SmallDisk::mount();
        let mut h =
            Harness::on(Chat::Telegram).agent(120).store(&disk.store_url()).tweak(|s| s.access.users = vec![format!("telegram:{}", thao().id)]).build().await;
        h.telegram().private_chat(&thao());
        h.boot().await;
        let chat = thao().id;
        let with = |needle: &'static str| {
            let fake = h.telegram();
            move || async move { fake.bot_messages(chat).into_iter().find(|m| m["text"].as_str().is_some_and(|t| t.contains(needle))) }
        };
        h.telegram().push_message(chat, &thao(), "trade", None, None);
        let card = wait_until(with("execute_trade")).await;
        let card_id = card["message_id"].as_i64().unwrap();
        let approve = button(&card, "Approve");

        disk.fill();
        let pressed = h.telegram().push_click(chat, &thao(), card_id, &approve);
        let answer = wait_until(|| async { h.telegram().answer_to(&pressed) }).await;
        assert_eq!(answer, json!({"callback_query_id": pressed, "text": NOT_YET, "show_alert": true}));
        h.telegram().push_message(chat, &thao(), "still there?", None, None);
        let notice = wait_until(with("Not saved yet")).await;
        assert_eq!(notice["text"], format!("⚠️ {NOT_YET}"));
        // Telegram delivers both again every few seconds; nobody is told twice, and
        // nothing reaches the agent or changes the card.
        tokio::time::sleep(Duration::from_secs(4)).await;
        assert_eq!(h.telegram().calls("answerCallbackQuery").len(), 1);
        assert_eq!(h.telegram().bot_messages(chat).iter().filter(|m| m["text"].as_str().is_some_and(|t| t.contains("Not saved yet"))).count(), 1);
        assert!(approvals(h.sim()).is_empty());
        assert!(h.telegram().message(chat, card_id).unwrap()["reply_markup"].is_object(), "the card keeps its buttons");
        let page = metrics_page(&h).await;
        assert!(sample(&page, "hitl_bridge_store_errors_total", "operation=").is_some_and(|n| n >= 1.0), "{page}");

        disk.free();
        let s = session_id(h.sim());
        let got = wait_approvals(h.sim(), 1).await;
        assert_eq!(got, vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),"decisions":[{"type":"approve"}]})]);
        wait_until(with("Tôi đã nhận: still there?")).await;
        wait_until(|| async { h.telegram().message(chat, card_id).filter(|m| m["text"].as_str().is_some_and(|t| t.contains("Approved by Thảo"))) }).await;
        let again = h.telegram().push_click(chat, &thao(), card_id, &approve);
        let answer = wait_until(|| async { h.telegram().answer_to(&again) }).await;
        assert!(answer["text"].as_str().is_some_and(|t| t.starts_with("Already decided by Thảo")), "{answer}");
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(approvals(h.sim()).len(), 1, "delivered once");
        h.shutdown().await;
    }
}

mod discord {
    use super::*;
    use fake_discord::{CHANNEL_ID, click, guild_message, user};

    const THAO: &str = "500000000000000001";

    /// Discord: a click reaches the engine at once (no inbox in between), so on a full
    /// disk its settle is what fails. The presser is told it was not saved, the card
    /// keeps its buttons and the agent gets nothing; once the space is freed, pressing
    /// again decides it, and the agent gets that one decision.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "needs root: mounts a small filesystem"]
    async fn a_click_that_cannot_be_saved_says_so_and_a_second_press_works() {
        let disk = SmallDisk::mount();
        let h = Harness::on(Chat::Discord)
            .agent(120)
            .store(&disk.store_url())
            .tweak(|s| {
                s.platforms.get_mut::<DiscordSettings>().channels = vec![CHANNEL_ID.into()];
                s.access.users = vec![format!("discord:{THAO}")];
            })
            .start()
            .await;
        let thao = user(THAO, "Thảo");
        h.discord().dispatch("MESSAGE_CREATE", guild_message(h.discord(), CHANNEL_ID, &thao, "trade", false));
        let card = h.discord().wait_request(0, |r| r.method == "POST" && r.path.ends_with("/messages") && has_embed(&r.body)).await;
        let card_id = card.response.as_ref().and_then(|m| m["id"].as_str()).expect("message id").to_owned();
        let approve = discord_button(&card.body, "Approve");
        let followups = || h.discord().requests().into_iter().filter(|r| r.method == "POST" && r.path.starts_with("/api/v10/webhooks/")).collect::<Vec<_>>();

        disk.fill();
        h.discord().dispatch("INTERACTION_CREATE", click(h.discord(), &approve, &card_id, CHANNEL_ID, &thao, &[]));
        let told = wait_until(|| async { followups().into_iter().next() }).await;
        assert_eq!(told.body["content"], "Not saved: the bridge's storage is failing. Try again in a moment.");
        assert_eq!(told.body["flags"], 64, "only the presser sees it");
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(approvals(h.sim()).is_empty());
        let edited_away = |r: &support::fake_discord::Recorded| r.method == "PATCH" && r.path.ends_with(&card_id) && r.body["components"] == json!([]);
        assert!(!h.discord().requests().iter().any(edited_away), "nothing is shown as decided");

        disk.free();
        h.discord().dispatch("INTERACTION_CREATE", click(h.discord(), &approve, &card_id, CHANNEL_ID, &thao, &[]));
        let s = session_id(h.sim());
        let got = wait_approvals(h.sim(), 1).await;
        assert_eq!(got, vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),"decisions":[{"type":"approve"}]})]);
        wait_until(|| async { h.discord().requests().iter().any(edited_away).then_some(()) }).await;
        assert_eq!(followups().len(), 1, "the second press needed no notice");
        let _: Option<Value> = None;
        h.shutdown().await;
    }
}

mod store {
    use super::*;
    use hitl_bridge::interaction::{Interaction, RequestBuilder, TimeoutDefaults};
    use hitl_bridge::protocol::{ActionRequest, Command};
    use hitl_bridge::store::{AuditEntry, Settled, Store};

    fn interaction(n: usize) -> Interaction {
        let action = ActionRequest { name: "execute_trade".into(), args: json!({"n": n}), description: None, tool_use_id: None };
        let request = RequestBuilder::start(&format!("trade_{n}"), vec![action], vec![], Some(600)).finish(TimeoutDefaults::default()).unwrap();
        Interaction::new(format!("i{n:011}"), "s1".into(), request, None, 0)
    }

    fn cancelled(n: usize) -> (Interaction, AuditEntry) {
        let mut i = interaction(n);
        assert!(i.cancel(5, "test"));
        let audit = AuditEntry::for_settled(&i, 5);
        (i, audit)
    }

    /// The store itself: writes refused on a full disk fail as an outage; once space
    /// is freed, every write path (a settle that wins, one that loses its race and so
    /// rolls back, a new request) works on the same store, nothing is left holding the
    /// lock, and all of it is on disk when the store is opened again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "needs root: mounts a small filesystem"]
    async fn writes_after_a_full_disk_is_freed_are_all_committed() {
        let disk = SmallDisk::mount();
        let store = Store::connect(&disk.store_url()).await.unwrap();
        for n in 0..10 {
            assert!(store.insert_interaction(&interaction(n)).await.unwrap());
        }
        disk.fill();
        let (i0, audit0) = cancelled(0);
        for _ in 0..3 {
            let refused = store.settle(&i0, Some(&Command::Cancel { session_id: "s1".into() }), &audit0).await.unwrap_err();
            assert!(refused.is_outage(), "{refused}");
        }
        disk.free();
        for n in 0..10 {
            let (i, audit) = cancelled(n);
            assert!(matches!(store.settle(&i, None, &audit).await.unwrap(), Settled::Won { .. }), "settle {n}");
            assert_eq!(store.settle(&i, None, &audit).await.unwrap(), Settled::Lost, "settle {n} again");
        }
        for n in 10..20 {
            assert!(store.insert_interaction(&interaction(n)).await.unwrap());
        }
        store.close().await;
        let reopened = Store::connect(&disk.store_url()).await.unwrap();
        for n in 0..20 {
            let status = reopened.interaction(&format!("i{n:011}")).await.unwrap().expect("stored").status.name();
            assert_eq!(status, if n < 10 { "cancelled" } else { "pending" }, "interaction {n}");
        }
        assert_eq!(reopened.audit_log("trade_0").await.unwrap().len(), 1, "the refused settle left no audit row");
    }
}

/// PostgreSQL going away under a burst of clicks: restarted, or replaced by a promoted
/// standby at the same address. Each runs its own server ([`PrivatePostgres`]): the
/// machine's shared one serves other tests meanwhile.
mod postgres {
    use super::*;
    use fake_telegram::{User, button};
    use std::sync::{Arc, Mutex};
    use std::time::Instant;
    use support::private_postgres::PrivatePostgres;

    /// `/readyz` as a probe sees it: each answer's status and how long it took.
    #[derive(Default)]
    struct Probe {
        answers: Mutex<Vec<(Instant, u16, Duration)>>,
    }

    impl Probe {
        /// Asks `/readyz` every 100 ms until the returned handle is aborted.
        fn watch(url: String) -> (Arc<Probe>, tokio::task::JoinHandle<()>) {
            let probe = Arc::new(Probe::default());
            let seen = probe.clone();
            let task = tokio::spawn(async move {
                let client = reqwest::Client::builder().timeout(Duration::from_secs(5)).build().unwrap();
                loop {
                    let asked = Instant::now();
                    let status = client.get(&url).send().await.map_or(0, |r| r.status().as_u16());
                    seen.answers.lock().unwrap().push((asked, status, asked.elapsed()));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            });
            (probe, task)
        }

        /// The slowest answer, whether any said 503, and when the first 200 came after
        /// `back` (how long after it).
        fn summary(&self, back: Instant) -> (Duration, bool, Option<Duration>) {
            let answers = self.answers.lock().unwrap();
            let slowest = answers.iter().map(|(_, _, took)| *took).max().unwrap_or_default();
            let said_503 = answers.iter().any(|(_, status, _)| *status == 503);
            let ready_again = answers.iter().find(|(at, status, _)| *at >= back && *status == 200).map(|(at, _, _)| at.duration_since(back));
            (slowest, said_503, ready_again)
        }
    }

    /// People in `n` private chats, each with an execute_trade card; returns each
    /// person with their card's id and Approve button.
    async fn cards(h: &Harness, n: i64) -> Vec<(User, i64, String)> {
        let mut cards = Vec::new();
        for k in 0..n {
            let person = User::new(3000 + k, &format!("P{k}"), Some("en"));
            h.telegram().private_chat(&person);
            h.telegram().push_message(person.id, &person, "trade", None, None);
            let card = wait_until(|| async {
                h.telegram().bot_messages(person.id).into_iter().find(|m| m["text"].as_str().is_some_and(|t| t.contains("execute_trade")))
            })
            .await;
            let id = card["message_id"].as_i64().unwrap();
            cards.push((person, id, button(&card, "Approve")));
        }
        cards
    }

    /// Presses every card's Approve until each press was saved: a press told "Not
    /// saved" (its settle met the outage) is pressed again, as its presser would.
    async fn press_until_saved(h: &Harness, cards: &[(User, i64, String)], first: Vec<String>) -> usize {
        let mut pressed_again = 0;
        for ((person, id, approve), mut query) in cards.iter().zip(first) {
            loop {
                let answer = wait_until(|| async { h.telegram().answer_to(&query) }).await;
                let text = answer["text"].as_str().unwrap_or_default();
                if !text.starts_with("Not saved:") {
                    break;
                }
                pressed_again += 1;
                tokio::time::sleep(Duration::from_millis(300)).await;
                query = h.telegram().push_click(person.id, person, *id, approve);
            }
        }
        pressed_again
    }

    /// Each of `sessions` got exactly one approval, once.
    async fn one_approval_each(h: &Harness, n: usize) {
        wait_approvals(h.sim(), n).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        let got = approvals(h.sim());
        assert_eq!(got.len(), n, "no decision lost or doubled: {got:?}");
        let mut keys: Vec<&str> = got.iter().map(|a| a["approval_key"].as_str().unwrap()).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), n, "one decision per request: {got:?}");
        assert!(got.iter().all(|a| a["decisions"] == json!([{"type":"approve"}])), "{got:?}");
    }

    /// Whether a session of the bridge is LISTENing for the outbox's announcements.
    async fn listening(url: &str) -> bool {
        let Ok(store) = sqlx::PgPool::connect(url).await else { return false };
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE query ILIKE 'LISTEN%'").fetch_one(&store).await.unwrap_or(0);
        store.close().await;
        n > 0
    }

    async fn bridge_on(pg: &PrivatePostgres, people: i64) -> Harness {
        let users: Vec<String> = (0..people).map(|k| format!("telegram:{}", 3000 + k)).collect();
        Harness::on(Chat::Telegram).agent(120).store(&pg.url()).tweak(move |s| s.access.users = users).start().await
    }

    /// PostgreSQL restarts (`pg_ctl restart -m fast`: every session is ended with an
    /// error) 30 ms into a burst of eight clicks. No decision is lost or doubled: each
    /// click is delivered once, or its presser was told it was not saved and pressed
    /// again. `/readyz` answers every probe within a second, says 503 during the
    /// outage and 200 again within 2 s of the database's return, and the outbox's
    /// LISTEN is back. `/healthz` stays 200 throughout.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "needs root and PostgreSQL's server binaries: runs a PostgreSQL of its own"]
    async fn a_restart_mid_burst_loses_and_doubles_no_decision() {
        let pg = PrivatePostgres::start();
        let h = bridge_on(&pg, 8).await;
        assert!(wait_until(|| async { listening(&pg.url()).await.then_some(true) }).await);
        let cards = cards(&h, 8).await;
        let (probe, watching) = Probe::watch(format!("http://{}/readyz", h.app().http_addr().unwrap()));

        let first: Vec<String> = cards.iter().map(|(person, id, approve)| h.telegram().push_click(person.id, person, *id, approve)).collect();
        tokio::time::sleep(Duration::from_millis(30)).await;
        pg.stop("fast");
        tokio::time::sleep(Duration::from_millis(700)).await;
        // Liveness is not readiness: the process serves, so /healthz stays 200.
        let healthz = reqwest::get(format!("http://{}/healthz", h.app().http_addr().unwrap())).await.unwrap();
        assert_eq!(healthz.status(), 200, "/healthz while the database is down");
        tokio::time::sleep(Duration::from_millis(800)).await;
        pg.start_again();
        let back = Instant::now();

        let pressed_again = press_until_saved(&h, &cards, first).await;
        one_approval_each(&h, cards.len()).await;
        tokio::time::sleep(Duration::from_secs(2).saturating_sub(back.elapsed())).await;
        watching.abort();
        let (slowest, said_503, ready_again) = probe.summary(back);
        eprintln!("restart: pressed again {pressed_again}, slowest /readyz {slowest:?}, ready again after {ready_again:?}");
        assert!(slowest < Duration::from_secs(1), "every /readyz answered within 1 s (slowest {slowest:?})");
        assert!(said_503, "/readyz said 503 while the database was down");
        assert!(ready_again.is_some_and(|after| after <= Duration::from_secs(2)), "ready again within 2 s: {ready_again:?}");
        assert!(wait_until(|| async { listening(&pg.url()).await.then_some(true) }).await, "LISTEN re-established");
        h.shutdown().await;
    }

    /// The primary dies (`immediate`) and a standby, promoted, takes its address. The
    /// bridge, never restarted, carries on with the new primary: every click of the
    /// burst is decided once, readiness is back within 2 s of the new primary, and
    /// LISTEN is re-established on it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "needs root and PostgreSQL's server binaries: runs a PostgreSQL of its own"]
    async fn a_failover_to_a_new_primary_at_the_same_address_loses_nothing() {
        let mut pg = PrivatePostgres::start();
        pg.add_standby();
        let h = bridge_on(&pg, 6).await;
        let cards = cards(&h, 6).await;
        let (probe, watching) = Probe::watch(format!("http://{}/readyz", h.app().http_addr().unwrap()));

        let first: Vec<String> = cards.iter().map(|(person, id, approve)| h.telegram().push_click(person.id, person, *id, approve)).collect();
        tokio::time::sleep(Duration::from_millis(30)).await;
        pg.fail_over();
        let back = Instant::now();

        let pressed_again = press_until_saved(&h, &cards, first).await;
        one_approval_each(&h, cards.len()).await;
        tokio::time::sleep(Duration::from_secs(2).saturating_sub(back.elapsed())).await;
        watching.abort();
        let (slowest, _, ready_again) = probe.summary(back);
        eprintln!("failover: pressed again {pressed_again}, slowest /readyz {slowest:?}, ready again after {ready_again:?}");
        assert!(slowest < Duration::from_secs(1), "every /readyz answered within 1 s (slowest {slowest:?})");
        assert!(ready_again.is_some_and(|after| after <= Duration::from_secs(2)), "ready again within 2 s: {ready_again:?}");
        assert!(wait_until(|| async { listening(&pg.url()).await.then_some(true) }).await, "LISTEN re-established on the new primary");
        h.shutdown().await;
    }
}
