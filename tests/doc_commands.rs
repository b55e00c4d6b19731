//! Every command the guides give works as written. The shell blocks marked
//! ```` ```sh run ```` in README.md, docs/telegram.md, docs/discord.md,
//! docs/slack.md, docs/web.md, docs/http-api.md, docs/mcp.md and
//! clients/python/README.md are run by `bash`, as written, from an empty directory,
//! against the fake Telegram, Discord and Slack of `tests/support/` and the real
//! `hitl-bridge` binary, with what a newcomer would have
//! and the test does not (a token from BotFather, a release build, the address of the
//! real Bot API) swapped in through one table, [`table`]. What a block shows of its
//! output is asserted: a `# …` line of its own in a block is what the command above it
//! prints (`…` stands for anything, a line starting `#  ` continues the one before),
//! and a ```` ```text output ```` block is what the `sh run` block before it prints.
//! Long-running commands are driven as a person would: the test writes in the chat,
//! types in the terminal, presses Ctrl-C (SIGINT) where a comment says so.
//!
//! [`every_marked_block_is_run_and_every_other_is_accounted_for`] ties the documents
//! to the tests: a marked block no test runs, a test whose block is gone, or a new
//! unmarked shell block without a reason fails it; so changing a documented command
//! without its doc, or the reverse, fails CI.
//!
//! The commands use the documented ports (8787 for the reference agent, 8790 for the
//! bridge's HTTP listener), so the tests of this file run one at a time.

mod support;

use std::io::{BufRead, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::fake_discord::{self, FakeDiscord};
use support::fake_slack::{self, FakeSlack, Person};
use support::fake_telegram::{self, FakeTelegram, User};
use support::slack_chat::{self, SlackChat};
use support::telegram_chat::{TelegramChat, text_of};
use support::{WAIT, wait_until};

/// The documents whose shell blocks are checked.
const DOCUMENTS: &[&str] =
    &["README.md", "docs/telegram.md", "docs/discord.md", "docs/slack.md", "docs/web.md", "docs/http-api.md", "docs/mcp.md", "clients/python/README.md"];

/// Every marked block, by document and first line, and the test that runs it.
const RUN: &[(&str, &str, &str)] = &[
    ("README.md", "cargo run --release -- demo     # reference agent + bridge + this terminal, data in ./data", "readme_demo_in_the_terminal"),
    ("README.md", "cargo build --release && export PATH=\"$PWD/target/release:$PATH\"", "readme_demo_with_your_own_telegram_bot"),
    ("README.md", "hitl-bridge agent-sim --listen 127.0.0.1:8787 &             # or your own agent", "readme_telegram_for_real"),
    ("docs/telegram.md", "hitl-bridge agent-sim --listen 127.0.0.1:8787 &      # or your own agent", "telegram_md_for_real"),
    ("docs/discord.md", "hitl-bridge agent-sim --listen 127.0.0.1:8787 &      # or your own agent", "discord_md_for_real"),
    ("docs/http-api.md", "export HITL_BRIDGE__HTTP__API_TOKENS='ci:a-long-random-secret,cron:another-secret'", "http_api_md_turn_it_on"),
    ("docs/http-api.md", "curl -s http://127.0.0.1:8790/v1/requests -H 'Authorization: Bearer demo-token' \\", "http_api_md_try_it_with_the_demo"),
    (
        "docs/http-api.md",
        "curl -s 'http://127.0.0.1:8790/v1/requests/deploy-42_1?wait=60' -H 'Authorization: Bearer demo-token'",
        "http_api_md_try_it_with_the_demo",
    ),
    ("clients/python/README.md", "cargo run --release -- demo        # or: hitl-bridge demo", "http_api_md_try_it_with_the_demo"),
    ("docs/mcp.md", "export HITL_BRIDGE__HTTP__API_TOKENS='claude:S3CRET'", "mcp_md_over_http"),
    ("docs/discord.md", "HITL_BRIDGE__DISCORD__TOKEN='…' HITL_BRIDGE__DISCORD__CHANNELS='123456789012345678' hitl-bridge demo --discord", "discord_md_demo"),
    ("docs/slack.md", "hitl-bridge slack manifest > slack-manifest.json", "slack_md_manifest"),
    ("docs/slack.md", "hitl-bridge agent-sim --listen 127.0.0.1:8787 &      # or your own agent", "slack_md_for_real"),
    ("docs/web.md", "export HITL_BRIDGE__WEB__ENABLED=true     # or [web] enabled = true in your --config file", "web_md_sign_in"),
];

/// The shell blocks left unmarked, by document and first line, and why.
const NOT_RUN: &[(&str, &str, &str)] = &[
    (
        "README.md",
        "cargo test --locked             # every test that needs nothing installed; the rest report \"ignored\"",
        "the test suite itself: CI runs it",
    ),
    ("README.md", "# LangGraph Server on :2024 serving graph \"agent\"", "needs the real backends installed (tests/backend_*.rs run each)"),
    (
        "README.md",
        "hitl-bridge run --config config/default.toml   # the bridge",
        "a reference list with placeholders; tests/cli.rs, tests/admin_cli.rs, tests/web.rs and slack_md_manifest here run each command",
    ),
    ("docs/mcp.md", "claude mcp add --transport http hitl http://127.0.0.1:8790/mcp --header \"Authorization: Bearer S3CRET\"", "needs the Claude Code CLI"),
    (
        "docs/mcp.md",
        "claude -p \"…\" --permission-prompt-tool mcp__hitl__approval_prompt",
        "needs the Claude Code CLI and a model (tests/backend_claude_code.rs)",
    ),
    ("clients/python/README.md", "pip install ./clients/python", "installs from PyPI; clients/python/run-tests.sh does it in CI"),
    (
        "docs/slack.md",
        "export HITL_BRIDGE__HTTP__API_TOKENS='ci:a-long-random-secret'",
        "continues the terminal of the block above; its push is docs/http-api.md's (http_api_md_try_it_with_the_demo), and tests/slack.rs pushes to the fake Slack",
    ),
    (
        "clients/python/README.md",
        "clients/python/run-tests.sh          # from any directory; extra arguments go to pytest",
        "CI runs this very command (.ci/run)",
    ),
    (
        "clients/python/README.md",
        "pip install ./clients/python langgraph langchain-core",
        "needs LangGraph from PyPI (clients/python/tests/test_example.py covers the example)",
    ),
];

/// A Discord bot token for the fake (any is accepted).
const DISCORD_TOKEN: &str = "fake-bot-token";

/// What the documents name that the test has in another form: the one table of
/// replacements. `Text` is replaced in a block before it runs; `Env` is given to every
/// block (what points the bridge at the fakes: a newcomer's bridge talks to the real
/// APIs, so the guides never set it).
enum Placeholder {
    Text { written: &'static str, run: String },
    Env { name: &'static str, value: String },
}

fn table(telegram: Option<&FakeTelegram>, discord: Option<&FakeDiscord>) -> Vec<Placeholder> {
    table_with_slack(telegram, discord, None)
}

/// [`table`], with the fake Slack's tokens and address when `slack` is given.
fn table_with_slack(telegram: Option<&FakeTelegram>, discord: Option<&FakeDiscord>, slack: Option<&FakeSlack>) -> Vec<Placeholder> {
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_hitl-bridge")).parent().expect("the binary's directory").display().to_string();
    let mut table = vec![
        // The release build of a checkout is the binary this test was built with.
        Placeholder::Text { written: "cargo build --release && export PATH=\"$PWD/target/release:$PATH\"", run: format!("export PATH=\"{bin_dir}:$PATH\"") },
        Placeholder::Text { written: "cargo run --release -- ", run: "hitl-bridge ".into() },
        // The token BotFather gave you, and the Discord bot's.
        Placeholder::Text { written: "123456789:AAE…", run: fake_telegram::TOKEN.into() },
        Placeholder::Text { written: "HITL_BRIDGE__DISCORD__TOKEN='…'", run: format!("HITL_BRIDGE__DISCORD__TOKEN='{DISCORD_TOKEN}'") },
        // `hitl-bridge` on the PATH, as after `cargo install` or the line above.
        Placeholder::Env { name: "PATH", value: format!("{bin_dir}:{}", std::env::var("PATH").unwrap_or_default()) },
    ];
    if let Some(fake) = telegram {
        table.push(Placeholder::Env { name: "HITL_BRIDGE__TELEGRAM__API_URL", value: fake.url.clone() });
    }
    if let Some(fake) = discord {
        table.push(Placeholder::Env { name: "HITL_BRIDGE__DISCORD__API_URL", value: fake.api_url() });
    }
    if let Some(fake) = slack {
        // The Bot User OAuth Token and the app-level token Slack gave you.
        table.push(Placeholder::Text { written: "'xoxb-…'", run: format!("'{}'", fake_slack::BOT_TOKEN) });
        table.push(Placeholder::Text { written: "'xapp-…'", run: format!("'{}'", fake_slack::APP_TOKEN) });
        table.push(Placeholder::Env { name: "HITL_BRIDGE__SLACK__API_URL", value: fake.api_url() });
    }
    table
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One fenced block of a document.
#[derive(Debug, Clone)]
struct Block {
    doc: &'static str,
    info: String,
    lines: Vec<String>,
}

impl Block {
    fn first_line(&self) -> &str {
        self.lines.first().map(String::as_str).unwrap_or("")
    }

    fn is_shell(&self) -> bool {
        self.info.split_whitespace().next() == Some("sh")
    }

    fn is_run(&self) -> bool {
        self.is_shell() && self.info.split_whitespace().nth(1) == Some("run")
    }

    /// What the block says it prints: its `# …` lines of their own, a `#  ` line
    /// continuing the one before; empty when it shows nothing.
    fn expected_output(&self) -> String {
        let mut out: Vec<String> = Vec::new();
        for line in &self.lines {
            let Some(comment) = line.trim_start().strip_prefix('#') else { continue };
            if comment.starts_with("  ")
                && let Some(last) = out.last_mut()
            {
                last.push_str(comment.trim_start());
                continue;
            }
            out.push(comment.strip_prefix(' ').unwrap_or(comment).to_owned());
        }
        out.join("\n")
    }
}

/// The fenced blocks of `doc` (indented ones too), in order.
fn blocks(doc: &'static str) -> Vec<Block> {
    let text = std::fs::read_to_string(root().join(doc)).unwrap_or_else(|e| panic!("{doc}: {e}"));
    let mut out = Vec::new();
    let mut open: Option<(usize, Block)> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if let Some(rest) = trimmed.strip_prefix("```") {
            match open.take() {
                Some((_, block)) => out.push(block),
                None => open = Some((indent, Block { doc, info: rest.trim().to_owned(), lines: Vec::new() })),
            }
            continue;
        }
        if let Some((indent, block)) = open.as_mut() {
            block.lines.push(line.get(*indent..).unwrap_or(line.trim_start()).to_owned());
        }
    }
    out
}

/// The marked block of `doc` that starts with `first_line`.
fn run_block(doc: &'static str, first_line: &str) -> Block {
    blocks(doc)
        .into_iter()
        .find(|b| b.is_run() && b.first_line() == first_line)
        .unwrap_or_else(|| panic!("{doc} has no `sh run` block starting {first_line:?}: the guide changed; change this test with it"))
}

/// The ```` ```text output ```` block that follows `block` in its document.
fn output_block(block: &Block) -> Block {
    let all = blocks(block.doc);
    let at = all.iter().position(|b| b.is_run() && b.lines == block.lines).expect("the block is in its document");
    all[at + 1..].iter().take_while(|b| !b.is_run()).find(|b| b.info == "text output").cloned().expect("a ```text output block after it")
}

/// `block` as it runs here: the table's text replacements made, and `probe` (what the
/// test adds to look at the result) after it.
fn script(block: &Block, table: &[Placeholder], probe: &str) -> String {
    let mut text = block.lines.join("\n");
    for placeholder in table {
        if let Placeholder::Text { written, run } = placeholder {
            text = text.replace(written, run);
        }
    }
    format!("set -e\n{text}\n{probe}\n")
}

/// `…` stands for anything (several lines too); the rest must match exactly, ends
/// included. Trailing whitespace is ignored.
fn shows(pattern: &str, actual: &str) -> bool {
    let actual = actual.trim_end();
    let pieces: Vec<&str> = pattern.trim_end().split('…').collect();
    let (first, rest) = pieces.split_first().expect("split gives one piece at least");
    let Some(mut left) = actual.strip_prefix(first) else { return false };
    let Some((last, middle)) = rest.split_last() else { return left.is_empty() };
    for piece in middle {
        match left.find(piece) {
            Some(at) => left = &left[at + piece.len()..],
            None => return false,
        }
    }
    left.ends_with(last)
}

/// The ports the guides' commands use; one test at a time holds them.
static PORTS: Mutex<()> = Mutex::new(());

/// The guides' ports, held until dropped; across a test's awaits too (each test has
/// a runtime of its own, so nothing else waits on this thread meanwhile).
struct PortsHeld(#[allow(dead_code)] MutexGuard<'static, ()>);

fn hold_the_ports() -> PortsHeld {
    let guard = PORTS.lock().unwrap_or_else(|p| p.into_inner());
    let deadline = Instant::now() + Duration::from_secs(10);
    for port in [8787, 8790] {
        while std::net::TcpListener::bind(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "127.0.0.1:{port} is taken by another program; the guides' commands use it as written");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    PortsHeld(guard)
}

type Lines = Arc<Mutex<Vec<String>>>;

fn collect(stream: impl std::io::Read + Send + 'static, into: Lines) {
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stream).lines().map_while(Result::ok) {
            into.lock().unwrap_or_else(|p| p.into_inner()).push(line);
        }
    });
}

/// A block running in `bash`, in a process group of its own (so everything it started,
/// `&` included, ends with it), with the terminal's input and output in the test's
/// hands.
struct Shell {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines,
    stderr: Lines,
    dir: tempfile::TempDir,
}

impl Shell {
    fn start(script: &str, table: &[Placeholder]) -> Shell {
        let dir = tempfile::tempdir().expect("an empty directory");
        let mut command = Command::new("bash");
        command.arg("-c").arg(script).current_dir(dir.path()).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
        for (name, _) in std::env::vars().filter(|(k, _)| k.starts_with("HITL_BRIDGE") || k == "RUST_LOG") {
            command.env_remove(name);
        }
        for placeholder in table {
            if let Placeholder::Env { name, value } = placeholder {
                command.env(name, value);
            }
        }
        let mut child = command.spawn().expect("bash");
        let (stdout, stderr) = (Lines::default(), Lines::default());
        collect(child.stdout.take().expect("stdout"), stdout.clone());
        collect(child.stderr.take().expect("stderr"), stderr.clone());
        let stdin = child.stdin.take();
        Shell { child, stdin, stdout, stderr, dir }
    }

    /// The directory it runs in.
    fn dir(&self) -> &Path {
        self.dir.path()
    }

    fn stdout(&self) -> Vec<String> {
        self.stdout.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn stderr(&self) -> Vec<String> {
        self.stderr.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Waits for a line of the terminal containing `needle`; returns it and its index.
    fn expect(&self, needle: &str) -> (usize, String) {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some((n, line)) = self.stdout().into_iter().enumerate().find(|(_, l)| l.contains(needle)) {
                return (n, line);
            }
            assert!(
                Instant::now() < deadline,
                "the terminal never showed {needle:?}; it shows:\n{}\nand logged:\n{}",
                self.stdout().join("\n"),
                self.stderr().join("\n")
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn type_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("the terminal is open");
        writeln!(stdin, "{line}").and_then(|()| stdin.flush()).expect("type");
    }

    /// Ctrl-D.
    fn close_input(&mut self) {
        self.stdin.take();
    }

    /// Ctrl-C for the command in the foreground: `hitl-bridge ARGS` started by this
    /// shell (or the shell itself, once it became that command).
    fn interrupt(&self, args: &[&str]) {
        let shell = self.child.id() as i32;
        let deadline = Instant::now() + WAIT;
        let pid = loop {
            if let Some((pid, _, _)) = processes().into_iter().find(|(pid, parent, argv)| {
                (*parent == shell || *pid == shell) && argv.first().is_some_and(|a| a.ends_with("hitl-bridge")) && argv[1..] == *args
            }) {
                break pid;
            }
            assert!(Instant::now() < deadline, "`hitl-bridge {}` never started", args.join(" "));
            std::thread::sleep(Duration::from_millis(50));
        };
        // SAFETY: a signal to a process this test started.
        unsafe { libc::kill(pid, libc::SIGINT) };
    }

    fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(Instant::now() < deadline, "the shell did not end; it shows:\n{}\nand logged:\n{}", self.stdout().join("\n"), self.stderr().join("\n"));
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until what the block printed shows `expected` (its output comes through a
    /// pipe, a moment after the command ends).
    fn expect_output(&self, expected: &str, block: &Block) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !shows(expected, &self.stdout().join("\n")) {
            assert!(
                Instant::now() < deadline,
                "{}: {:?} prints\n{}\nwhere the guide shows\n{expected}\n(log: {})",
                block.doc,
                block.first_line(),
                self.stdout().join("\n"),
                self.stderr().join("\n")
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        // SAFETY: the process group this test started.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

/// Every process: (pid, parent pid, argv).
fn processes() -> Vec<(i32, i32, Vec<String>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
        let Some(parent) = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)).and_then(|p| p.parse().ok()) else { continue };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let argv = cmdline.split(|b| *b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
        out.push((pid, parent, argv));
    }
    out
}

/// `01:02:03 UTC` and 32-hex request keys made the same in a transcript and in the
/// guide's: they differ on every run.
fn normalized(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let rest: String = chars[i..].iter().take(12).collect();
        let is_clock = rest.len() >= 12
            && rest.chars().enumerate().all(|(n, c)| match n {
                2 | 5 => c == ':',
                8 => c == ' ',
                9..=11 => true,
                _ => c.is_ascii_digit(),
            })
            && rest.ends_with("UTC");
        if is_clock {
            out.push_str("HH:MM:SS UTC");
            i += 12;
            continue;
        }
        let hex = chars[i..].iter().take_while(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()).count();
        if hex >= 32 {
            out.push_str("KEY");
            i += hex;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

#[test]
fn every_marked_block_is_run_and_every_other_is_accounted_for() {
    let mut problems = Vec::new();
    let mut seen_run = Vec::new();
    for doc in DOCUMENTS {
        for block in blocks(doc).into_iter().filter(Block::is_shell) {
            let first = block.first_line().to_owned();
            if block.is_run() {
                if !RUN.iter().any(|(d, f, _)| d == doc && *f == first) {
                    problems.push(format!("{doc}: the `sh run` block {first:?} is run by no test: add it to RUN and to a test"));
                }
                seen_run.push((*doc, first));
            } else if !NOT_RUN.iter().any(|(d, f, _)| d == doc && *f == first) {
                problems.push(format!("{doc}: the shell block {first:?} is neither marked `sh run` nor in NOT_RUN with the reason"));
            }
        }
    }
    for (doc, first, test) in RUN {
        if !seen_run.iter().any(|(d, f)| d == doc && f == first) {
            problems.push(format!("{test} runs {doc}'s block {first:?}, which is gone or no longer marked `sh run`"));
        }
    }
    for (doc, first, _) in NOT_RUN {
        if !blocks(doc).iter().any(|b| b.is_shell() && !b.is_run() && b.first_line() == *first) {
            problems.push(format!("NOT_RUN names {doc}'s block {first:?}, which is gone"));
        }
    }
    // Every replacement of the table is still needed by some block.
    let scripts: Vec<String> = RUN.iter().map(|(doc, first, _)| run_block(doc, first).lines.join("\n")).collect();
    for placeholder in table(None, None) {
        if let Placeholder::Text { written, .. } = placeholder
            && !scripts.iter().any(|s| s.contains(written))
        {
            problems.push(format!("the table replaces {written:?}, which no marked block says any more"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The checker's own rules: wildcards, continuations, normalization.
#[test]
fn output_patterns_read_as_the_guides_mean_them() {
    assert!(shows("{\"a\":\"…\"}", "{\"a\":\"x\"}\n"));
    assert!(!shows("{\"a\":\"…\"}", "{\"a\":\"x\"} trailing"));
    assert!(shows("401\n…\"name\":\"x\"…", "401\ndata: \n\ndata: {\"name\":\"x\",\"v\":1}"));
    assert!(!shows("401", "200"));
    let block = Block { doc: "x", info: "sh run".into(), lines: vec!["curl x".into(), "# {\"a\":1,".into(), "#  \"b\":2}".into(), "#".into()] };
    assert_eq!(block.expected_output(), "{\"a\":1,\"b\":2}\n");
    assert_eq!(normalized("✔ cee9db121535403899822b8c39850de5_1 decided by console at 14:00:12 UTC: x"), "✔ KEY_1 decided by console at HH:MM:SS UTC: x");
}

/// README's quick start: the demo in the terminal prints the banner (every scenario of
/// the README's table) and, typed into, exactly the README's transcript.
#[test]
fn readme_demo_in_the_terminal() {
    let _ports = hold_the_ports();
    let (doc, first, _) = RUN[0];
    let block = run_block(doc, first);
    let table = table(None, None);
    let mut shell = Shell::start(&script(&block, &table, ""), &table);
    let (banner_end, _) = shell.expect("reads it.");
    let banner = shell.stdout()[..=banner_end].join("\n");
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README");
    let keywords: Vec<String> = readme
        .lines()
        .skip_while(|l| !l.starts_with("| you type |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.split('`').nth(1).map(str::to_owned))
        .collect();
    assert_eq!(keywords.len(), 8, "the README's scenario table");
    for keyword in &keywords {
        assert!(banner.contains(&format!("\"{keyword}\"")), "the banner does not name {keyword:?}:\n{banner}");
    }
    assert!(banner.contains("hitl-bridge pending` reads it"), "a command that runs as started: {banner}");

    let mut transcript: Vec<String> = Vec::new();
    let mut shown = banner_end + 1;
    for (typed, then) in [
        ("trade", "execute_trade? ["),
        (r#"e {"symbol":"VNM","quantity":50,"side":"buy","price":82000}"#, "agent: Đã đặt lệnh"),
        ("multi", "s to skip >"),
        ("1,4", "type your answer >"),
        ("Năng lượng", "agent: Bạn chọn"),
    ] {
        transcript.push(typed.to_owned());
        shell.type_line(typed);
        let deadline = Instant::now() + WAIT;
        while !shell.stdout()[shown..].iter().any(|l| l.contains(then)) {
            assert!(Instant::now() < deadline, "after {typed:?} the terminal never showed {then:?}:\n{}", shell.stdout().join("\n"));
            std::thread::sleep(Duration::from_millis(50));
        }
        let now = shell.stdout();
        transcript.extend(now[shown..].iter().cloned());
        shown = now.len();
    }
    let expected: Vec<String> = output_block(&block).lines.iter().map(|l| normalized(l)).collect();
    let actual: Vec<String> = transcript.iter().map(|l| normalized(l)).collect();
    assert_eq!(actual, expected, "the README's transcript is not what the console prints");
    // "data in ./data".
    assert!(shell.dir().join("data/demo.db").is_file(), "the demo's store is in ./data");
    // `/quit` (or Ctrl-D) exits.
    shell.close_input();
    assert!(shell.wait_exit().success(), "{}", shell.stderr().join("\n"));
}

/// README's "try it with your own bot": the demo with the fake Telegram; the terminal
/// lets the person in, who then gets the approval and the agent's answer.
#[tokio::test(flavor = "multi_thread")]
async fn readme_demo_with_your_own_telegram_bot() {
    let _ports = hold_the_ports();
    let fake = FakeTelegram::start().await;
    let person = TelegramChat { fake: &fake, chat: fake.private_chat(&User::new(123456789, "Lan", Some("en"))), user: User::new(123456789, "Lan", Some("en")) };
    let (doc, first, _) = RUN[1];
    let table = table(Some(&fake), None);
    let mut shell = Shell::start(&script(&run_block(doc, first), &table, ""), &table);
    shell.expect("your Telegram bot as the chat");
    person.say("trade");
    let code = person.message_with("pairing code").await;
    assert!(!text_of(&code).contains("  "), "{}", text_of(&code));
    // As the README says the terminal asks.
    assert_eq!(shell.expect("wants to talk").1, "Lan (telegram:123456789) wants to talk: approve? [y/N]");
    shell.type_line("y");
    shell.expect("approved: Lan may talk to the agent now");
    person.say("trade");
    let card = person.message_with("execute_trade").await;
    person.click(card["message_id"].as_i64().expect("id"), "Approve").await;
    person.message_with("Đã đặt lệnh: buy 100 VNM @ 82000").await;
    assert!(!shell.stderr().iter().any(|l| l.contains("access.admins is empty")), "the demo approves codes itself: {:?}", shell.stderr());
    fake.shutdown();
}

/// The "for real" path on Telegram: start, `/id` answers the id (and the start-up
/// warning says to ask it), Ctrl-C, restart with it in `access.users`, "trade" is
/// answered and approved.
async fn telegram_for_real(doc: &'static str, first: &str) {
    let _ports = hold_the_ports();
    let fake = FakeTelegram::start().await;
    let me = User::new(123456789, "Lan", Some("en"));
    let person = TelegramChat { fake: &fake, chat: fake.private_chat(&me), user: me };
    let table = table(Some(&fake), None);
    let shell = Shell::start(&script(&run_block(doc, first), &table, ""), &table);
    person.say("/id");
    let ids = person.message_with("🆔").await;
    assert!(text_of(&ids).contains("telegram:123456789"), "{}", text_of(&ids));
    assert!(
        shell.stderr().iter().any(|l| l.contains("nobody may talk") && l.contains("Send the bot /id")),
        "the start-up warning points to /id: {:?}",
        shell.stderr()
    );
    shell.interrupt(&["run"]);
    // The second `hitl-bridge run` identifies itself before the next message is sent,
    // so the first one cannot take it.
    wait_until(|| async { (fake.calls("getMe").len() >= 2).then_some(()) }).await;
    person.say("trade");
    let card = person.message_with("execute_trade").await;
    person.click(card["message_id"].as_i64().expect("id"), "Approve").await;
    person.message_with("Đã đặt lệnh: buy 100 VNM @ 82000").await;
    fake.shutdown();
}

#[tokio::test(flavor = "multi_thread")]
async fn readme_telegram_for_real() {
    let (doc, first, _) = RUN[2];
    telegram_for_real(doc, first).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn telegram_md_for_real() {
    let (doc, first, _) = RUN[3];
    telegram_for_real(doc, first).await;
}

/// docs/discord.md's path: one channel id in `HITL_BRIDGE__DISCORD__CHANNELS`, `/id`
/// in the channel, Ctrl-C, restart with the id, "trade" approved in the channel.
#[tokio::test(flavor = "multi_thread")]
async fn discord_md_for_real() {
    let _ports = hold_the_ports();
    let fake = FakeDiscord::start().await;
    let (doc, first, _) = RUN[4];
    let table = table(None, Some(&fake));
    let shell = Shell::start(&script(&run_block(doc, first), &table, ""), &table);
    const CHANNEL: &str = "123456789012345678";
    let me = fake_discord::user("80351110224678912", "Lan");
    fake.wait_identified(1).await;
    fake.dispatch("INTERACTION_CREATE", fake_discord::command(&fake, "id", CHANNEL, &me));
    let answer = wait_until(|| async {
        fake.requests()
            .into_iter()
            .filter(|r| r.method == "PATCH" && r.path.ends_with("/messages/@original"))
            .find_map(|r| r.body["content"].as_str().map(str::to_owned))
    })
    .await;
    assert!(answer.contains("discord:80351110224678912") && answer.contains(&format!("discord:{CHANNEL}")), "{answer}");
    shell.interrupt(&["run"]);
    fake.wait_identified(2).await;
    let skip = fake.requests().len();
    fake.dispatch("MESSAGE_CREATE", fake_discord::guild_message(&fake, CHANNEL, &me, "trade", false));
    let card = fake
        .wait_request(skip, |r| {
            r.method == "POST" && r.path.ends_with(&format!("/channels/{CHANNEL}/messages")) && r.body.to_string().contains("execute_trade")
        })
        .await;
    let message_id = card.response.as_ref().and_then(|m| m["id"].as_str()).expect("the card's id").to_owned();
    let approve = support::discord_chat::button(&card.body, "Approve");
    fake.dispatch("INTERACTION_CREATE", fake_discord::click(&fake, &approve, &message_id, CHANNEL, &me, &[]));
    support::discord_chat::wait_text(&fake, "Đã đặt lệnh: buy 100 VNM @ 82000").await;
    fake.shutdown().await;
}

/// docs/discord.md's demo: one channel id from the environment; a stranger's message
/// gets a pairing code, the terminal asks as the guide says, `y` lets them in, and
/// their "trade" is approved in the channel. The demo does not warn that nobody may
/// approve pairing codes: its terminal does.
#[tokio::test(flavor = "multi_thread")]
async fn discord_md_demo() {
    let _ports = hold_the_ports();
    let fake = FakeDiscord::start().await;
    let (doc, first, _) = RUN[10];
    let table = table(None, Some(&fake));
    let mut shell = Shell::start(&script(&run_block(doc, first), &table, ""), &table);
    const CHANNEL: &str = "123456789012345678";
    let me = fake_discord::user("80351110224678912", "Lan");
    shell.expect("your Discord bot as the chat");
    fake.wait_identified(1).await;
    fake.dispatch("MESSAGE_CREATE", fake_discord::guild_message(&fake, CHANNEL, &me, "trade", false));
    assert_eq!(shell.expect("wants to talk").1, "Lan (discord:80351110224678912) wants to talk: approve? [y/N]");
    shell.type_line("y");
    shell.expect("approved: Lan may talk to the agent now");
    let skip = fake.requests().len();
    fake.dispatch("MESSAGE_CREATE", fake_discord::guild_message(&fake, CHANNEL, &me, "trade", false));
    let card = fake
        .wait_request(skip, |r| {
            r.method == "POST" && r.path.ends_with(&format!("/channels/{CHANNEL}/messages")) && r.body.to_string().contains("execute_trade")
        })
        .await;
    let message_id = card.response.as_ref().and_then(|m| m["id"].as_str()).expect("the card's id").to_owned();
    let approve = support::discord_chat::button(&card.body, "Approve");
    fake.dispatch("INTERACTION_CREATE", fake_discord::click(&fake, &approve, &message_id, CHANNEL, &me, &[]));
    support::discord_chat::wait_text(&fake, "Đã đặt lệnh: buy 100 VNM @ 82000").await;
    assert!(!shell.stderr().iter().any(|l| l.contains("access.admins is empty")), "the demo approves codes itself: {:?}", shell.stderr());
    fake.shutdown().await;
}

/// docs/slack.md's first command writes the manifest Slack takes: Socket Mode, and
/// `/hitl` with every command in its hint.
#[test]
fn slack_md_manifest() {
    let (doc, first, _) = RUN[11];
    let table = table(None, None);
    let mut shell = Shell::start(&script(&run_block(doc, first), &table, ""), &table);
    assert!(shell.wait_exit().success(), "{}", shell.stderr().join("\n"));
    let written = std::fs::read_to_string(shell.dir().join("slack-manifest.json")).expect("slack-manifest.json");
    let manifest: Value = serde_json::from_str(&written).expect("the manifest is JSON");
    assert_eq!(manifest["settings"]["socket_mode_enabled"], Value::Bool(true));
    assert_eq!(manifest["features"]["slash_commands"][0]["usage_hint"], "new | cancel | pending | rules [revoke ID] | id | pair CODE | web");
}

/// docs/slack.md's path: the agent and the bridge with the two tokens; `/hitl id` in
/// the channel answers both ids (nobody may talk yet); Ctrl-C; started again with the
/// channel and the person, "trade" in the channel is answered with a card in its
/// thread, approved there.
#[tokio::test(flavor = "multi_thread")]
async fn slack_md_for_real() {
    let _ports = hold_the_ports();
    let fake = FakeSlack::start().await;
    const CHANNEL: &str = "C0123ABCDEF";
    fake.channel(CHANNEL, true);
    let (doc, first, _) = RUN[12];
    let table = table_with_slack(None, None, Some(&fake));
    let shell = Shell::start(&script(&run_block(doc, first), &table, ""), &table);
    fake.wait_connections(1).await;
    let lan = Person::new("U0123ABCDEF", "lan");
    let ids = slack_chat::hitl(&fake, &lan, CHANNEL, "id").await;
    let answer = ids.to_string();
    assert!(answer.contains("slack:U0123ABCDEF") && answer.contains("slack:C0123ABCDEF"), "{answer}");
    shell.interrupt(&["run"]);
    fake.wait_connections(2).await;
    let chat = SlackChat { fake: &fake, channel: CHANNEL, person: lan };
    chat.say("trade");
    let card = chat.card().await;
    chat.click(&card, "Approve").await;
    slack_chat::wait_text(&fake, "Đã đặt lệnh: buy 100 VNM @ 82000").await;
    fake.shutdown();
}

/// docs/web.md's sign-in: the bridge with the inbox on, `web login` prints a link
/// under the bridge's address, and the link's form signs in once.
#[tokio::test(flavor = "multi_thread")]
async fn web_md_sign_in() {
    needs_curl();
    let _ports = hold_the_ports();
    let (doc, first, _) = RUN[13];
    let block = run_block(doc, first);
    let table = table(None, None);
    let shell = Shell::start(&script(&block, &table, ""), &table);
    shell.expect_output(&block.expected_output(), &block);
    let link = shell.stdout().into_iter().find(|l| l.contains("/inbox/sign-in/")).expect("the link");
    let token = link.rsplit('/').next().expect("a token").to_owned();
    assert_eq!(token.len(), 64, "{link}");
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    let sign_in = || http.post("http://127.0.0.1:8790/inbox/sign-in").form(&[("token", &token)]).send();
    let signed_in = sign_in().await.expect("sign in");
    assert_eq!(signed_in.status().as_u16(), 303);
    let cookie = support::web_inbox::session_cookie(signed_in.headers()).expect("a session");
    let inbox = http.get("http://127.0.0.1:8790/inbox").header("cookie", cookie).send().await.expect("the inbox");
    assert_eq!(inbox.status().as_u16(), 200);
    assert!(inbox.text().await.expect("page").contains("Ana (telegram:123456789)"));
    assert_eq!(sign_in().await.expect("again").status().as_u16(), 410, "a link works once");
}

/// docs/http-api.md's token variable: `check-config` reads both tokens from it.
#[test]
fn http_api_md_turn_it_on() {
    let (doc, first, _) = RUN[5];
    let table = table(None, None);
    let mut shell = Shell::start(&script(&run_block(doc, first), &table, "hitl-bridge check-config"), &table);
    assert!(shell.wait_exit().success(), "{}", shell.stderr().join("\n"));
    std::thread::sleep(Duration::from_millis(200));
    let printed: Value = serde_json::from_str(&shell.stdout().join("\n")).expect("check-config prints JSON");
    assert_eq!(printed["http"]["api_tokens"], serde_json::json!(["ci:[redacted]", "cron:[redacted]"]));
    assert!(shell.stderr().iter().any(|l| l.contains("http.api_tokens[1]  (env HITL_BRIDGE__HTTP__API_TOKENS)")), "{:?}", shell.stderr());
}

/// `curl`, which the HTTP guides use, is installed.
fn needs_curl() {
    let found = Command::new("curl").arg("--version").output().is_ok_and(|o| o.status.success());
    assert!(found, "the guides' commands need curl: install it (apt-get install curl)");
}

/// docs/http-api.md's "try it with the demo": the demo started as clients/python's
/// README starts it (terminal 1), the push and the read in terminal 2, with `a` typed in
/// the demo between them; each prints what the guide shows.
#[test]
fn http_api_md_try_it_with_the_demo() {
    needs_curl();
    let _ports = hold_the_ports();
    let table = table(None, None);
    let (doc, first, _) = RUN[8];
    let mut demo = Shell::start(&script(&run_block(doc, first), &table, ""), &table);
    demo.expect("hitl-bridge demo: a reference agent at");
    demo.expect("reads it.");
    // A person reads the banner before switching terminals; the test waits for the
    // listener the banner announces.
    let deadline = Instant::now() + WAIT;
    while std::net::TcpStream::connect("127.0.0.1:8790").is_err() {
        assert!(Instant::now() < deadline, "the demo never listened on 127.0.0.1:8790: {}", demo.stderr().join("\n"));
        std::thread::sleep(Duration::from_millis(50));
    }
    for (n, (doc, first, _)) in RUN[6..8].iter().enumerate() {
        let block = run_block(doc, first);
        if n == 1 {
            demo.expect("deploy? [a]pprove");
            demo.type_line("a");
        }
        let mut terminal = Shell::start(&script(&block, &table, ""), &table);
        let status = terminal.wait_exit();
        assert!(status.success(), "{:?} ended with {status}: {}", block.first_line(), terminal.stderr().join("\n"));
        terminal.expect_output(&block.expected_output(), &block);
    }
    demo.expect("✔ deploy-42_1 decided by console");
    demo.close_input();
    assert!(demo.wait_exit().success(), "{}", demo.stderr().join("\n"));
}

/// docs/mcp.md: `/mcp` refuses a request without the token and initializes with it.
#[test]
fn mcp_md_over_http() {
    needs_curl();
    let _ports = hold_the_ports();
    let (doc, first, _) = RUN[9];
    let block = run_block(doc, first);
    let table = table(None, None);
    let mut shell = Shell::start(&script(&block, &table, ""), &table);
    assert!(shell.wait_exit().success(), "{}", shell.stderr().join("\n"));
    shell.expect_output(&block.expected_output(), &block);
}

/// docs/telegram.md: "Each retry in those 30 s is logged once". A Bot API that does
/// not answer gets one warning per getMe retry, naming where it was tried, and no
/// second line from the request's own quick retry.
#[test]
fn an_unreachable_bot_api_is_logged_once_per_retry() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr");
    let mut table = table(None, None);
    table.push(Placeholder::Env { name: "HITL_BRIDGE__TELEGRAM__API_URL", value: format!("http://{closed}") });
    let shell = Shell::start("HITL_BRIDGE__TELEGRAM__ENABLED=true HITL_BRIDGE__TELEGRAM__TOKEN=1:x HITL_BRIDGE__HTTP__ENABLED=false hitl-bridge run", &table);
    let deadline = Instant::now() + WAIT;
    while shell.stderr().iter().filter(|l| l.contains("telegram getMe failed; retrying")).count() < 3 {
        assert!(Instant::now() < deadline, "{}", shell.stderr().join("\n"));
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = shell.stderr();
    assert!(log.iter().filter(|l| l.contains("getMe failed")).all(|l| l.contains(&format!("http://{closed} (telegram.api_url)"))), "{log:?}");
    assert!(!log.iter().any(|l| l.contains("telegram request failed")), "a retry logged twice: {log:?}");
}

/// docs/configuration.md's example of a misspelled variable is what the binary says,
/// and a variable with one underscore too few is warned about once at start, with the
/// variable meant.
#[test]
fn configuration_md_names_the_variable_and_the_nearest_key() {
    let doc = std::fs::read_to_string(root().join("docs/configuration.md")).expect("configuration.md");
    let example =
        doc.lines().map(str::trim).find(|l| l.starts_with("error: configuration: HITL_BRIDGE__TELEGRAM__TOKN")).expect("the example in configuration.md");
    let table = table(None, None);
    let mut shell = Shell::start("HITL_BRIDGE__TELEGRAM__TOKN=x hitl-bridge check-config", &table);
    assert!(!shell.wait_exit().success());
    let deadline = Instant::now() + Duration::from_secs(5);
    while shell.stderr().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(shell.stderr(), [example]);

    let shell = Shell::start("HITL_BRIDGE_TELEGRAM__TOKEN=x HITL_BRIDGE__HTTP__ENABLED=false hitl-bridge run", &table);
    let deadline = Instant::now() + WAIT;
    while !shell.stderr().iter().any(|l| l.contains("starting: config")) || !shell.stderr().iter().any(|l| l.contains("is not read")) {
        assert!(Instant::now() < deadline, "{}", shell.stderr().join("\n"));
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    let warnings: Vec<String> = shell.stderr().into_iter().filter(|l| l.contains("HITL_BRIDGE_TELEGRAM__TOKEN")).collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].ends_with("the environment variable HITL_BRIDGE_TELEGRAM__TOKEN is not read: did you mean HITL_BRIDGE__TELEGRAM__TOKEN?"),
        "{warnings:?}"
    );
}
