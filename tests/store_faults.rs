//! When storing fails: a full disk under the SQLite store. The bridge runs on the
//! real teloxide client against the fake Bot API, its store on a small filesystem
//! (a tmpfs mounted for the test) that the test fills to the brim and frees again.

use support::fake_telegram;
mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fake_telegram::{User, button};
use serde_json::{Value, json};
use support::{Chat, Harness, approvals, session_id, wait_until};

fn thao() -> User {
    User::new(1001, "Thảo", Some("en"))
}

/// A tmpfs of `size` mounted on a fresh directory, unmounted when dropped.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> SmallDisk {
        let dir = tempfile::tempdir().expect("temp dir");
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .expect("run mount");
        assert!(status.success(), "cannot mount a tmpfs (this test needs root): {status}");
        SmallDisk { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn ballast(&self) -> PathBuf {
        self.path().join("ballast")
    }

    /// Writes a file until the filesystem has no byte left.
    fn fill(&self) {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(self.ballast()).expect("ballast");
        let chunk = vec![0u8; 4096];
        loop {
            match file.write(&chunk) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(28) => break,
                Err(e) => panic!("filling the disk: {e}"),
            }
        }
        // The last bytes, one at a time.
        while file.write(&[0u8]).is_ok_and(|n| n == 1) {}
        let _ = file.sync_all();
    }

    fn free(&self) {
        std::fs::remove_file(self.ballast()).expect("remove ballast");
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("-l").arg(self.dir.path()).status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root: mounts a small filesystem"]
async fn a_full_disk_then_freed_loses_no_click_and_wedges_nothing() {
    let disk = SmallDisk::mount("16m");
    let url = format!("sqlite://{}", disk.path().join("bridge.db").display());
    let mut h = Harness::on(Chat::Telegram)
        .agent(120)
        .store(&url)
        .tweak(|s| s.access.users = vec![format!("telegram:{}", thao().id)])
        .build()
        .await;
    h.telegram().private_chat(&thao());
    h.boot().await;
    let chat = thao().id;
    h.telegram().push_message(chat, &thao(), "trade", None, None);
    let card = wait_until(|| async { h.telegram().bot_messages(chat).into_iter().find(|m| m["text"].as_str().is_some_and(|t| t.contains("execute_trade"))) }).await;
    let card_id = card["message_id"].as_i64().unwrap();
    let approve = button(&card, "Approve");

    disk.fill();
    let pressed = h.telegram().push_click(chat, &thao(), card_id, &approve);
    tokio::time::sleep(Duration::from_secs(5)).await;
    eprintln!("answer during the failure: {:?}", h.telegram().answer_to(&pressed));
    eprintln!("approvals during the failure: {:?}", approvals(h.sim()));
    disk.free();
    let freed = Instant::now();
    tokio::time::sleep(Duration::from_secs(8)).await;
    eprintln!("answer after: {:?}", h.telegram().answer_to(&pressed));
    eprintln!("approvals after: {:?}", approvals(h.sim()));
    let again = h.telegram().push_click(chat, &thao(), card_id, &approve);
    tokio::time::sleep(Duration::from_secs(5)).await;
    eprintln!("second answer: {:?} after {:?}", h.telegram().answer_to(&again), freed.elapsed());
    let s = session_id(h.sim());
    assert_eq!(approvals(h.sim()), vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),"decisions":[{"type":"approve"}]})]);
    let _: Option<Value> = None;
    h.shutdown().await;
}

mod store_level {
    use super::SmallDisk;
    use hitl_bridge::interaction::{Interaction, RequestBuilder, TimeoutDefaults};
    use hitl_bridge::protocol::{ActionRequest, Command};
    use hitl_bridge::store::{AuditEntry, Store};
    use serde_json::json;

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

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "needs root: mounts a small filesystem"]
    async fn writes_after_a_full_disk_is_freed_are_committed() {
        let disk = SmallDisk::mount("8m");
        let url = format!("sqlite://{}", disk.path().join("bridge.db").display());
        let store = Store::connect(&url).await.unwrap();
        for n in 0..10 {
            assert!(store.insert_interaction(&interaction(n)).await.unwrap());
        }
        disk.fill();
        let (i0, audit0) = cancelled(0);
        let failed = store.settle(&i0, Some(&Command::Cancel { session_id: "s1".into() }), &audit0).await;
        eprintln!("settle on a full disk: {failed:?}");
        disk.free();
        for n in 0..10 {
            let (i, audit) = cancelled(n);
            let a = store.settle(&i, None, &audit).await;
            let b = store.settle(&i, None, &audit).await;
            eprintln!("{n}: {a:?} / {b:?}");
        }
        for n in 10..20 {
            eprintln!("insert {n}: {:?}", store.insert_interaction(&interaction(n)).await);
        }
        store.close().await;
        drop(store);
        let store = Store::connect(&url).await.unwrap();
        for n in 0..20 {
            eprintln!("reopened {n}: {:?}", store.interaction(&format!("i{n:011}")).await.map(|i| i.map(|i| i.status.name())));
        }
    }
}
