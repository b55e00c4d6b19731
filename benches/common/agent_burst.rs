//! A burst of decisions with the agent in the loop (issue #50, items 1, 2 and 4), as
//! the issue measured it: the release binary as a child process (its CPU and memory
//! are its own, the fakes' are not), one person per private chat, each with a session
//! whose agent asked one question, and every person pressing Approve at once. The
//! agent answers each decision with a line of text and ends its turn, so a decision's
//! CPU counts all it causes: the click stored and answered to the platform, the card
//! edited to its outcome, the decision sent to the agent, and the agent's words shown.
//! Printed: the bridge's CPU a decision beside its target, where the time went, the
//! platform calls a decision cost, and the peak RSS with that many at once.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::chats::{ChatFake, mentions};
use crate::one_at_a_time::look_for;
use crate::{Agent, Child, Samples, child_env, free_port, ms};

/// How long the bridge's idle CPU is sampled before the burst, to take out of the
/// burst's (the /proc figures count in 10 ms ticks).
const IDLE_SAMPLE: Duration = Duration::from_secs(3);

/// How long after the last reply is shown the CPU is still counted: the cards' edits
/// and the store's last writes finish in it. Its share of the idle CPU is taken out.
const SETTLING: Duration = Duration::from_millis(500);

/// How often the benchmark looks at what the fakes recorded while it waits: each look
/// copies hundreds of calls, and the child shares the two cores.
const LOOK_EVERY: Duration = Duration::from_millis(20);

/// The approval key of the burst's request to the person with id `person`.
fn key_of(person: &str) -> String {
    format!("burst-{person}")
}

/// The agent's words after the decision on `key` (what `load.rs`'s agent sends).
fn words_of(key: &str) -> String {
    format!("ran deploy for {key}")
}

/// `n` people press Approve at once on `fake`, with the bridge on `store_url`
/// (`database` names it in the heading).
pub async fn agent_burst<F: ChatFake>(fake: F, store_url: &str, database: &str, n: usize) {
    println!("\n## {n} decisions at once with the agent replying, on {} and {database} (release binary as a child, {n} private chats)", F::NAME);
    let (agent, agent_url) = Agent::start().await;
    agent.replies.store(true, std::sync::atomic::Ordering::Relaxed);
    let people = F::people(n);
    let ids: Vec<String> = people.iter().map(F::person_id).collect();
    let access: Vec<String> = people.iter().map(F::access).collect();
    // The platform's keys as HITL_BRIDGE__SECTION__KEY, as an operator would set them;
    // the bridge's own pacing off, so the burst measures the bridge, not the limits.
    let mut platform: Vec<(String, String)> = fake.settings(false).into_iter().map(|(k, v)| (k.replace('.', "__").to_uppercase(), v)).collect();
    platform.extend([("BACKEND__URL".to_owned(), agent_url), ("ACCESS__USERS".to_owned(), access.join(","))]);
    let borrowed: Vec<(&str, String)> = platform.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    let port = free_port();
    let child = Child::spawn(&child_env(store_url, port, &borrowed), port);
    child.ready(&reqwest::Client::new()).await;
    look_for(&format!("the bridge connected to the fake {}", F::NAME), LOOK_EVERY, || fake.connected().then_some(())).await;
    for person in &people {
        fake.say_hello(person);
    }
    agent.wait("every session's first message", |s| ids.iter().all(|id| s.sessions.contains_key(id))).await;
    let sessions = agent.state().sessions.clone();

    // Every session's agent asks; the burst starts once every card is shown.
    let calls = fake.call_count() + n;
    for id in &ids {
        agent.request(&sessions[id], 1, &key_of(id));
    }
    // What the fake recorded is copied only once the calls could be there.
    let every_card = || fake.call_count() >= calls && fake.cards().iter().filter(|(p, text, _)| mentions(text, &key_of(p))).count() >= n;
    look_for("every card", LOOK_EVERY, || every_card().then_some(())).await;
    let cards: Vec<F::Card> = people.iter().zip(&ids).map(|(person, id)| fake.approve_button(person, &key_of(id))).collect();

    let idle_from = (child.cpu(), Instant::now());
    tokio::time::sleep(IDLE_SAMPLE).await;
    let idle_rate = child.cpu().saturating_sub(idle_from.0).as_secs_f64() / idle_from.1.elapsed().as_secs_f64();
    // Started before the burst's CPU is read: perf takes a moment to attach.
    let profile = crate::profile::Profile::start(child.pid(), &format!("agents-{}", F::NAME.to_lowercase()));
    let by_thread = crate::threads::Threads::start(child.pid());
    let calls_before = fake.call_count();
    let cpu_before = (child.cpu(), Instant::now());
    let pressed: HashMap<String, Instant> = people
        .iter()
        .zip(&ids)
        .zip(&cards)
        .map(|((person, id), card)| {
            fake.click(person, card);
            (key_of(id), Instant::now())
        })
        .collect();
    agent.wait("every decision", |s| pressed.keys().all(|key| s.approvals.contains_key(key))).await;
    // Each reply is one more call at least; looked for only once they could be there.
    let every_reply =
        || fake.call_count() >= calls_before + 2 * n && fake.texts().iter().filter(|(p, text, _)| text.contains(&words_of(&key_of(p)))).count() >= n;
    look_for("every reply shown", LOOK_EVERY, || every_reply().then_some(())).await;
    let replied = cpu_before.1.elapsed();
    tokio::time::sleep(SETTLING).await;
    let spent = child.cpu().saturating_sub(cpu_before.0).as_secs_f64();
    let elapsed = cpu_before.1.elapsed().as_secs_f64();
    let busy = (spent - idle_rate * elapsed).max(0.0);
    let calls = fake.call_count() - calls_before;
    let (peak, _) = child.memory();

    let approvals = agent.state().approvals.clone();
    // When each person's reply was first shown, by the key its words name.
    let mut shown: HashMap<String, Instant> = HashMap::new();
    for (person, text, at) in fake.texts() {
        let key = key_of(&person);
        if text.contains(&words_of(&key)) {
            shown.entry(key).and_modify(|first| *first = (*first).min(at)).or_insert(at);
        }
    }
    let (mut to_agent, mut to_words) = (Vec::new(), Vec::new());
    for (key, at) in &pressed {
        to_agent.push(approvals[key].saturating_duration_since(*at));
        if let Some(shown) = shown.get(key) {
            to_words.push(shown.saturating_duration_since(*at));
        }
    }
    let per_decision = busy * 1000.0 / n.max(1) as f64;
    println!(
        "  the bridge's CPU a decision (user + system from the first press until {} ms after the last reply shown, less its idle {:.2} % of a core): {per_decision:.2} ms (target ≤ 0.4 ms: {}; stretch ≤ 0.2 ms)",
        ms(SETTLING),
        idle_rate * 100.0,
        if per_decision <= 0.4 { "met" } else { "MISSED" }
    );
    println!("  the last reply shown {:.0} ms after the presses began; {:.1} {} calls a decision", ms(replied), calls as f64 / n.max(1) as f64, F::NAME);
    Samples(to_agent).line("press → decision at the agent");
    Samples(to_words).line("press → the agent's reply shown");
    println!("  peak RSS (VmHWM) with {n} at once: {peak:.1} MiB (target ≤ 40 MiB: {})", if peak <= 40.0 { "met" } else { "MISSED" });
    child.report(by_thread, n, "decision", profile, &format!("the {n} decisions with the agent"));
    fake.shutdown();
}
