//! Where a process's CPU goes during one phase of a benchmark: Linux `perf` samples the
//! process while the phase runs (`LOAD_PROFILE=1`, perf installed and allowed to read
//! the process), and the samples are summed by module: the bridge's own layers, the
//! crates under them, the allocator and the kernel. A flat profile (each sample counts
//! for the function it landed in), so a module's share is the time spent in its own
//! code, not in what it calls.

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The modules a sample is counted under, first match wins: (name, the text a symbol
/// or its library starts with or contains).
const MODULES: &[(&str, &[&str])] = &[
    ("engine", &["hitl_bridge::engine"]),
    ("store (bridge)", &["hitl_bridge::store"]),
    ("platform (bridge)", &["hitl_bridge::platform"]),
    ("backend link (bridge)", &["hitl_bridge::backend"]),
    ("core (bridge)", &["hitl_bridge::interaction", "hitl_bridge::protocol", "hitl_bridge::texts"]),
    ("bridge, other", &["hitl_bridge::"]),
    ("SQLite", &["sqlite3", "libsqlite3"]),
    ("sqlx", &["sqlx"]),
    ("Bot API client (teloxide)", &["teloxide"]),
    ("HTTP (reqwest, hyper, axum)", &["reqwest", "hyper", "h2::", "http::", "axum", "tower"]),
    ("WebSocket (tungstenite)", &["tungstenite"]),
    ("JSON (serde_json)", &["serde_json", "serde::"]),
    ("logging (tracing)", &["tracing"]),
    ("allocation", &["malloc", "free", "realloc", "calloc", "alloc::", "__rust_alloc", "__rust_dealloc", "_int_"]),
    ("async runtime (tokio, futures)", &["tokio", "futures", "parking_lot", "crossbeam", "flume"]),
    ("kernel (system calls, network)", &["[k]"]),
];

/// `perf record` attached to one process, while a phase runs.
pub struct Profile {
    perf: std::process::Child,
    file: PathBuf,
}

impl Profile {
    /// Starts sampling `pid` when `LOAD_PROFILE` is set; `None` (with a line saying why)
    /// otherwise or when perf cannot run.
    pub fn start(pid: u32, phase: &str) -> Option<Profile> {
        let mode = std::env::var("LOAD_PROFILE").ok()?;
        let file = std::env::temp_dir().join(format!("hitl-bridge-{phase}-{pid}.perf"));
        // `switches`: where the threads stop running (each context switch, with the
        // stack it left from); `calls`: CPU samples with their stacks (who called the
        // allocator, say). Both for `perf report` by hand; the file is kept.
        let sampling: &[&str] = match mode.as_str() {
            "switches" => &["-e", "sched:sched_switch", "--call-graph", "dwarf,16384"],
            "calls" => &["-F", "999", "--call-graph", "dwarf,16384"],
            _ => &["-F", "4999"],
        };
        let perf = Command::new("perf")
            .args(["record", "-q"])
            .args(sampling)
            .args(["-p", &pid.to_string(), "-o"])
            .arg(&file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        match perf {
            Ok(perf) => {
                // perf needs a moment to attach before the phase starts.
                std::thread::sleep(std::time::Duration::from_millis(300));
                Some(Profile { perf, file })
            }
            Err(e) => {
                println!("  (no profile: cannot run perf: {e})");
                None
            }
        }
    }

    /// Stops sampling and prints the share of each module, largest first.
    pub fn finish(mut self, what: &str) {
        // perf writes its file when interrupted, as on Ctrl-C.
        let _ = Command::new("kill").args(["-INT", &self.perf.id().to_string()]).status();
        let _ = self.perf.wait();
        if let Ok(mode @ ("switches" | "calls")) = std::env::var("LOAD_PROFILE").as_deref() {
            return println!("  ({mode} of {what} recorded in {}: perf report -i it)", self.file.display());
        }
        let report =
            Command::new("perf").args(["report", "--stdio", "--no-children", "--sort", "dso,sym", "-i"]).arg(&self.file).stderr(Stdio::null()).output();
        let _ = std::fs::remove_file(&self.file);
        let text = match report {
            Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).into_owned(),
            _ => return println!("  (no profile: perf report failed)"),
        };
        let (shares, samples) = by_module(&text);
        let line: Vec<String> = shares.iter().filter(|(_, share)| *share >= 0.5).map(|(name, share)| format!("{name} {share:.1} %")).collect();
        println!("  where the CPU of {what} went (perf, {samples}, by module, own code only): {}", line.join(", "));
        println!("    the functions that took most: {}", top_functions(&text, 12).join("; "));
    }
}

/// The `n` functions with the most samples, as `share % name`.
fn top_functions(report: &str, n: usize) -> Vec<String> {
    report
        .lines()
        .filter_map(|line| {
            let (percent, rest) = line.trim().split_once('%')?;
            let percent: f64 = percent.trim().parse().ok()?;
            // `dso  [.] symbol`: the symbol after the marker, cut to stay readable.
            let symbol = rest.split_once("] ").map_or(rest, |(_, symbol)| symbol).trim();
            Some(format!("{percent:.1} % {}", symbol.chars().take(90).collect::<String>()))
        })
        .take(n)
        .collect()
}

/// Each module's share of the samples in a `perf report --sort dso,sym` text, in
/// percent, largest first, and the report's sample count line.
fn by_module(report: &str) -> (Vec<(&'static str, f64)>, String) {
    let mut shares: Vec<(&'static str, f64)> = MODULES.iter().map(|(name, _)| (*name, 0.0)).collect();
    let mut other = 0.0;
    let mut samples = String::from("samples unknown");
    for line in report.lines() {
        if let Some(count) = line.strip_prefix("# Samples: ") {
            samples = format!("{} samples", count.split_whitespace().next().unwrap_or("?"));
        }
        let line = line.trim();
        let Some((percent, rest)) = line.split_once('%') else { continue };
        let Ok(percent) = percent.trim().parse::<f64>() else { continue };
        match MODULES.iter().position(|(_, marks)| marks.iter().any(|mark| rest.contains(mark))) {
            Some(at) => shares[at].1 += percent,
            None => other += percent,
        }
    }
    shares.push(("other (libc, unresolved)", other));
    shares.sort_by(|a, b| b.1.total_cmp(&a.1));
    (shares, samples)
}
