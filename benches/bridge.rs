//! Figures for the hot paths, printed rather than asserted (timing belongs here, not in
//! tests): the pure core, a durable decision in SQLite, and a click's trip to the agent.
//!
//! `cargo bench --bench bridge`

#[path = "common/seed.rs"]
mod seed;

use std::time::{Duration, Instant};

use hitl_bridge::interaction::{AccessPolicy, Actor, Interaction, UserAction};
use hitl_bridge::store::{AuditEntry, Store};
use seed::seed_interaction;

fn answer(i: &mut Interaction) -> hitl_bridge::interaction::Applied {
    let who = Actor::new("console", "u", "U");
    let policy = AccessPolicy::default();
    i.apply(&who, UserAction::Select { question: 0, options: vec![0] }, &policy, 1).expect("select");
    i.apply(&who, UserAction::OtherText { question: 1, text: "Ngắn hạn".into() }, &policy, 1).expect("text");
    i.apply(&who, UserAction::Submit, &policy, 1).expect("submit")
}

fn percentiles(mut samples: Vec<Duration>) -> String {
    samples.sort();
    let at = |p: f64| samples[((samples.len() as f64 - 1.0) * p) as usize];
    format!("p50 {:?}, p95 {:?}, max {:?}", at(0.5), at(0.95), at(1.0))
}

fn core() {
    let n = 20_000;
    let start = Instant::now();
    for k in 0..n {
        let mut i = seed_interaction(k.to_string());
        let reply = answer(&mut i);
        let json = serde_json::to_string(&match reply {
            hitl_bridge::interaction::Applied::Resolved(r) => r,
            _ => unreachable!(),
        })
        .expect("encode");
        std::hint::black_box(json);
    }
    let elapsed = start.elapsed();
    println!("core: parse + merge + answer + encode the seed 000 request: {:.0} /s ({:?} each)", n as f64 / elapsed.as_secs_f64(), elapsed / n);
}

async fn store() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::connect(&format!("sqlite://{}/bench.db", dir.path().display())).await.expect("store");
    let mut samples = Vec::new();
    for k in 0..500 {
        let mut i = seed_interaction(format!("{k:012}"));
        store.insert_interaction(&i).await.expect("insert");
        let start = Instant::now();
        let _ = answer(&mut i);
        let audit = AuditEntry::for_settled(&i, 1);
        assert!(store.settle(&i, None, &audit).await.expect("settle").won());
        samples.push(start.elapsed());
    }
    println!("store (SQLite, WAL): a decision made durable (settle + audit in one transaction): {}", percentiles(samples));
}

#[tokio::main]
async fn main() {
    core();
    store().await;
}
