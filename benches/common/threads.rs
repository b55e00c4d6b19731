//! Where a process's CPU and its context switches go during one phase, by thread: read
//! from `/proc/<pid>/task/*/{stat,schedstat,status}` before and after (CPU from
//! `schedstat`, in nanoseconds: `stat`'s clock ticks, 10 ms each, round a thread's
//! share of a burst down to nothing), grouped by thread name
//! (numbers dropped, so every Tokio worker counts as one group). A decision's CPU is
//! mostly threads waking each other (docs/performance.md, stop 40), so the switches a
//! decision costs, and on which threads, say more about a change than its CPU alone.
//! No `perf` needed: Linux always keeps these counters.

use std::collections::BTreeMap;

/// Per thread group: CPU in nanoseconds and context switches (voluntary: the thread
/// waited; involuntary: it was preempted).
#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    nanos: u64,
    voluntary: u64,
    involuntary: u64,
}

/// The counters of every thread of one process at one moment, by thread group.
pub struct Threads {
    pid: u32,
    at_start: BTreeMap<String, Counters>,
}

impl Threads {
    /// Reads `pid`'s threads now, the start of a phase.
    pub fn start(pid: u32) -> Self {
        Self { pid, at_start: read(pid) }
    }

    /// Prints, per thread group and per `per` (decisions), what the phase cost: CPU
    /// (ms) and context switches. A thread that ended during the phase is not counted
    /// (the process's own figure, from `/proc/<pid>/stat`, counts it).
    pub fn finish(self, per: usize, what: &str) {
        let now = read(self.pid);
        let per = per.max(1) as f64;
        let mut total = Counters::default();
        let mut lines = Vec::new();
        for (group, after) in &now {
            let before = self.at_start.get(group).copied().unwrap_or_default();
            let spent = Counters {
                nanos: after.nanos.saturating_sub(before.nanos),
                voluntary: after.voluntary.saturating_sub(before.voluntary),
                involuntary: after.involuntary.saturating_sub(before.involuntary),
            };
            total.nanos += spent.nanos;
            total.voluntary += spent.voluntary;
            total.involuntary += spent.involuntary;
            if spent.nanos + spent.voluntary + spent.involuntary > 0 {
                lines.push((group.clone(), spent));
            }
        }
        lines.sort_by_key(|(_, c)| std::cmp::Reverse(c.voluntary + c.involuntary));
        // CPU in ms, then switches: in all, waits, preempted; each per `per`.
        let figures =
            |c: &Counters| (c.nanos as f64 / 1e6 / per, (c.voluntary + c.involuntary) as f64 / per, c.voluntary as f64 / per, c.involuntary as f64 / per);
        let (cpu, switches, waits, preempted) = figures(&total);
        println!("    by thread, per {what}: {cpu:.2} ms CPU, {switches:.1} context switches ({waits:.1} waits, {preempted:.1} preempted)");
        for (group, spent) in lines {
            let (cpu, switches, waits, preempted) = figures(&spent);
            println!("      {group:<24} {cpu:>6.2} ms CPU {switches:>6.1} switches ({waits:.1} waits, {preempted:.1} preempted)");
        }
    }
}

/// Every thread of `pid`, summed by group.
fn read(pid: u32) -> BTreeMap<String, Counters> {
    let mut groups: BTreeMap<String, Counters> = BTreeMap::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return groups };
    for task in tasks.flatten() {
        let dir = task.path();
        let (Ok(name), Ok(schedstat), Ok(status)) =
            (std::fs::read_to_string(dir.join("comm")), std::fs::read_to_string(dir.join("schedstat")), std::fs::read_to_string(dir.join("status")))
        else {
            continue;
        };
        let counter = |key: &str| status.lines().find_map(|l| l.strip_prefix(key)).and_then(|v| v.trim().parse::<u64>().ok()).unwrap_or(0);
        let entry = groups.entry(group_of(name.trim())).or_default();
        // schedstat: time on a CPU (ns), time waiting to run (ns), time slices.
        entry.nanos += schedstat.split_whitespace().next().and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
        entry.voluntary += counter("voluntary_ctxt_switches:");
        entry.involuntary += counter("nonvoluntary_ctxt_switches:");
    }
    groups
}

/// A thread's group: its name without the numbers that tell its siblings apart.
fn group_of(name: &str) -> String {
    let trimmed = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '-' || c == '_');
    if trimmed.is_empty() { name.to_owned() } else { trimmed.to_owned() }
}
