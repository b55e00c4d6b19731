//! The `hitl-bridge` binary's configuration commands, run as a user would.

use std::process::Command;

fn hitl_bridge() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hitl-bridge"));
    // Run where config/default.toml is, with no stray overrides from the environment.
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("HITL_BRIDGE__")) {
        cmd.env_remove(key);
    }
    cmd
}

/// The effective config is printed with secrets redacted and env overrides applied.
#[test]
fn check_config_prints_effective_config_without_secrets() {
    let out = hitl_bridge()
        .args(["check-config"])
        .env("HITL_BRIDGE__BACKEND__TOKEN", "very-secret-token")
        .env("HITL_BRIDGE__STORE__URL", "postgres://bridge@db:5432/hitl")
        .env("HITL_BRIDGE__ACCESS__APPROVERS", "telegram:42,discord:7")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(printed["backend"]["token"], "[redacted]");
    assert_eq!(printed["store"]["url"], "postgres://bridge@db:5432/hitl");
    assert_eq!(printed["access"]["approvers"], serde_json::json!(["telegram:42", "discord:7"]));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("very-secret-token"));
}

/// A bad value fails with a non-zero exit and a message naming the key.
#[test]
fn check_config_names_the_bad_key() {
    for (key, value, named) in [
        ("HITL_BRIDGE__TIMEOUTS__ON_EXPIRY", "explode", "on_expiry"),
        ("HITL_BRIDGE__BACKEND__URL", "http://agent/ws", "backend.url"),
        ("HITL_BRIDGE__TIMEOUTS__GRACE_SECS", "soon", "grace_secs"),
        ("HITL_BRIDGE__TELEGRAM__ENABLED", "true", "telegram.token"),
    ] {
        let out = hitl_bridge().args(["check-config"]).env(key, value).output().unwrap();
        assert!(!out.status.success(), "{key}={value} was accepted");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(named), "{key}={value}: {stderr}");
    }
}

/// A missing config file is an error naming it.
#[test]
fn missing_config_file_is_named() {
    let out = hitl_bridge().args(["check-config", "--config", "nope/absent.toml"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("absent.toml"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The binary carries its defaults: from an empty directory, with environment
/// variables or a file holding only the changed keys, check-config works and says
/// where each changed value came from (on stderr; stdout stays JSON).
#[test]
fn runs_from_any_directory_and_names_where_each_change_came_from() {
    let empty = tempfile::tempdir().unwrap();
    let out = hitl_bridge()
        .current_dir(empty.path())
        .args(["check-config"])
        .env("HITL_BRIDGE__TELEGRAM__ENABLED", "true")
        .env("HITL_BRIDGE__TELEGRAM__TOKEN", "123:secret-part")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(printed["telegram"]["enabled"], true);
    assert!(printed["backend"]["url"].as_str().is_some_and(|u| u.starts_with("ws://")), "the defaults are there: {printed}");
    assert!(stderr.contains("telegram.token  (env HITL_BRIDGE__TELEGRAM__TOKEN)"), "{stderr}");
    assert!(!stderr.contains("secret-part") && !String::from_utf8_lossy(&out.stdout).contains("secret-part"));

    let small = empty.path().join("small.toml");
    std::fs::write(&small, "[timeouts]\napproval_secs = 42\n").unwrap();
    let out = hitl_bridge().current_dir(empty.path()).args(["check-config", "--config", "small.toml"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(printed["timeouts"]["approval_secs"], 42);
    assert!(stderr.contains("timeouts.approval_secs  (file small.toml)"), "{stderr}");
}

/// An error is printed once, on one line, with no backtrace; every subcommand that
/// takes --config explains it.
#[test]
fn an_error_is_printed_once_and_config_is_explained() {
    let out = hitl_bridge().args(["check-config"]).env("HITL_BRIDGE__BACKEND__URL", "http://agent/ws").env("RUST_BACKTRACE", "1").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr.trim(), "error: configuration key `backend.url`: must start with ws:// or wss:// (set by HITL_BRIDGE__BACKEND__URL)", "{stderr}");
    for command in [&["run"][..], &["check-config"], &["pair"], &["pending"], &["cancel"], &["rules"], &["audit", "export"]] {
        let out = hitl_bridge().args(command).arg("--help").output().unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(help.contains("--config <FILE>") && help.contains("on top of the built-in defaults"), "{command:?}: {help}");
    }
}

/// An admin command on a store that does not exist says so (and where the demo's is)
/// instead of creating an empty one and reporting nothing pending.
#[test]
fn an_admin_command_does_not_create_a_missing_store() {
    let empty = tempfile::tempdir().unwrap();
    let out = hitl_bridge().current_dir(empty.path()).args(["pending"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("no store at data/hitl-bridge.db") && stderr.contains("sqlite://data/demo.db"), "{stderr}");
    assert!(!empty.path().join("data").exists(), "nothing was created");
}

/// `audit export | head -1`: the reader goes away after one line; export ends quietly
/// with exit 0, not "Broken pipe".
#[test]
fn a_closed_pipe_ends_audit_export_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("bridge.db");
    let url = format!("sqlite://{}", db.display());
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let store = hitl_bridge::store::Store::connect(&url).await.unwrap();
        let chat = hitl_bridge::store::ChatKey::new("telegram", "-100", None);
        for n in 0..2000 {
            let stranger = hitl_bridge::interaction::Actor::new("telegram", &n.to_string(), "Stranger");
            let entry = hitl_bridge::store::AuditEntry::for_refused_talk(&stranger, &chat, "talk", "hello", None, 1_700_000_000_000 + n);
            store.append_audit(&entry).await.unwrap();
        }
        store.close().await;
    });
    let mut child = hitl_bridge()
        .args(["audit", "export"])
        .env("HITL_BRIDGE__STORE__URL", &url)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::BufRead;
        let mut first = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
        assert!(first.starts_with('{'), "{first}");
        // The reader is dropped here: the pipe closes with output still to write.
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}: {}", out.status, String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The real binary: a request pushed over HTTP to the console is pending across a
/// SIGTERM (a normal stop, exit 0) and a new start; answered after the restart, the
/// agent reads the decision with GET.
#[test]
fn pushed_request_survives_sigterm_and_restart() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    use std::sync::mpsc;
    use std::time::Duration;

    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let base = format!("http://127.0.0.1:{port}");
    let start = || {
        let mut child = hitl_bridge()
            .args(["run"])
            .env("HITL_BRIDGE__STORE__URL", format!("sqlite://{}", dir.path().join("bridge.db").display()))
            .env("HITL_BRIDGE__CONSOLE__ENABLED", "true")
            .env("HITL_BRIDGE__CONSOLE__USER_NAME", "Ops")
            .env("HITL_BRIDGE__HTTP__LISTEN", format!("127.0.0.1:{port}"))
            .env("HITL_BRIDGE__HTTP__API_TOKENS", "ci:s3cret")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn");
        let (tx, lines) = mpsc::channel::<String>();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        (child, lines)
    };
    let expect = |lines: &mpsc::Receiver<String>, needle: &str| loop {
        match lines.recv_timeout(Duration::from_secs(20)) {
            Ok(line) if line.contains(needle) => return line,
            Ok(_) => {}
            Err(e) => panic!("the console never printed {needle:?}: {e}"),
        }
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let http = reqwest::Client::new();
    let call = |method: reqwest::Method, path: &str, body: Option<serde_json::Value>| {
        let mut request = http.request(method, format!("{base}{path}")).bearer_auth("s3cret");
        if let Some(body) = body {
            request = request.json(&body);
        }
        rt.block_on(async { request.send().await?.json::<serde_json::Value>().await })
    };
    let wait_healthy = || {
        for _ in 0..200 {
            if rt.block_on(http.get(format!("{base}/healthz")).send()).is_ok_and(|r| r.status().is_success()) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the bridge never answered /healthz");
    };

    let (mut first, lines) = start();
    wait_healthy();
    let created = call(
        reqwest::Method::POST,
        "/v1/requests",
        Some(serde_json::json!({
            "approval_key": "deploy-42_1", "targets": [{"platform": "console"}], "text": "Nightly deploy of api v2.3 is ready.",
            "actions": [{"name": "deploy", "args": {"version": "2.3"}}]
        })),
    )
    .unwrap();
    assert_eq!(created["status"], "pending", "{created}");
    expect(&lines, "Nightly deploy of api v2.3 is ready.");
    expect(&lines, "deploy? [a]pprove");

    let kill = Command::new("kill").args(["-TERM", &first.id().to_string()]).status().unwrap();
    assert!(kill.success());
    let status = first.wait().unwrap();
    assert!(status.success(), "SIGTERM is a normal stop: {status}");

    let (mut second, lines) = start();
    wait_healthy();
    expect(&lines, "deploy? [a]pprove");
    assert_eq!(call(reqwest::Method::GET, "/v1/requests/deploy-42_1", None).unwrap()["status"], "pending");
    writeln!(second.stdin.as_mut().unwrap(), "a").unwrap();
    let state = call(reqwest::Method::GET, "/v1/requests/deploy-42_1?wait=10", None).unwrap();
    assert_eq!(state["status"], "resolved", "{state}");
    assert_eq!(state["reply"], serde_json::json!({"decisions": [{"type": "approve"}]}));
    assert_eq!(state["decided_by"], serde_json::json!({"platform": "console", "id": "console", "name": "Ops"}));
    drop(second.stdin.take());
    let status = second.wait().unwrap();
    assert!(status.success(), "the end of the console's input stops it cleanly: {status}");
}

/// `hitl-bridge pair`: an unknown code fails with a clear message and a non-zero exit;
/// a code a stranger was given pairs them and says who; `--list` shows them and
/// `--revoke` un-pairs them.
#[test]
fn pair_approves_lists_and_revokes() {
    use hitl_bridge::interaction::Actor;
    use hitl_bridge::store::{ChatKey, Store};
    let dir = tempfile::tempdir().unwrap();
    let store_url = format!("sqlite://{}", dir.path().join("bridge.db").display());
    let config = dir.path().join("bridge.toml");
    std::fs::write(&config, format!("[backend]\nurl = \"ws://127.0.0.1:1/ws/{{session_id}}\"\n\n[store]\nurl = \"{store_url}\"\n")).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let code = runtime.block_on(async {
        let store = Store::connect(&store_url).await.unwrap();
        let mallory = Actor::new("telegram", "2002", "Mallory");
        let chat = ChatKey::new("telegram", "2002", None);
        let now = hitl_bridge::clock::now_ms();
        let code = store.pairing_code(&mallory, &chat, "en", now, 3_600_000, || "ABCD2345".into()).await.unwrap();
        store.close().await;
        code.code
    });
    let pair = |args: &[&str]| hitl_bridge().arg("pair").args(args).arg("--config").arg(&config).output().unwrap();

    let out = pair(&["WXYZ2345"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no pairing code WXYZ2345 is waiting"), "{}", String::from_utf8_lossy(&out.stderr));

    let out = pair(&[&code.to_lowercase()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "paired Mallory (telegram:2002); they may now talk to the agent\n");

    let out = pair(&["--list"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("telegram:2002\tMallory\tpaired by cli at "), "{}", String::from_utf8_lossy(&out.stdout));

    assert!(pair(&["--revoke", "telegram:2002"]).status.success());
    let out = pair(&["--revoke", "telegram:2002"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("telegram:2002 is not paired"));
    assert_eq!(String::from_utf8_lossy(&pair(&["--list"]).stdout), "nobody is paired\n");
}

/// `check-config` names a bad Mattermost key: a missing token, a token that is not
/// Mattermost's, a missing public URL, a channel given by name.
#[test]
fn check_config_names_a_bad_mattermost_key() {
    let enabled = [("HITL_BRIDGE__MATTERMOST__ENABLED", "true"), ("HITL_BRIDGE__MATTERMOST__URL", "https://chat.example.com")];
    let token = ("HITL_BRIDGE__MATTERMOST__BOT_TOKEN", "xi4ec1tsxpgztr8ejmxy1rbnew");
    let public = ("HITL_BRIDGE__MATTERMOST__PUBLIC_URL", "https://bridge.example.com");
    for (extra, named) in [
        (vec![], "mattermost.bot_token"),
        (vec![("HITL_BRIDGE__MATTERMOST__BOT_TOKEN", "xoxb-not-mattermost")], "mattermost.bot_token"),
        (vec![token], "mattermost.public_url"),
        (vec![token, public, ("HITL_BRIDGE__MATTERMOST__CHANNELS", "town-square")], "mattermost.channels"),
    ] {
        let out = hitl_bridge().args(["check-config"]).envs(enabled.iter().chain(&extra).copied()).output().unwrap();
        assert!(!out.status.success(), "{extra:?} was accepted");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(named), "{extra:?}: {stderr}");
    }
    let out = hitl_bridge().args(["check-config"]).envs(enabled.iter().chain(&[token, public]).copied()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `hitl-bridge mattermost setup` prints the bot account, the slash command's URL and
/// the untrusted-connections entry for the address given; a bad address is refused.
#[test]
fn mattermost_setup_prints_what_an_admin_creates() {
    let out = hitl_bridge().args(["mattermost", "setup", "--public-url", "http://10.0.0.5:3002"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed = String::from_utf8_lossy(&out.stdout);
    for line in ["Add Bot Account", "request URL:  http://10.0.0.5:3002/mattermost/command", "\"AllowedUntrustedInternalConnections\": \"10.0.0.5\""] {
        assert!(printed.contains(line), "{line} in {printed}");
    }
    let out = hitl_bridge().args(["mattermost", "setup", "--public-url", "bridge:3002"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--public-url"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The runtime has one worker thread unless `TOKIO_WORKER_THREADS` says how many (a
/// bridge's tasks only wait; a second worker costs wake-ups, docs/performance.md),
/// counted by name in the running bridge's threads. The runtime's blocking threads
/// (the console's reader of stdin) bear the same name, so the counts are compared:
/// three workers are two threads more than the default. A value that is not a count
/// above zero is a clear error before anything starts.
#[test]
#[cfg(target_os = "linux")]
fn the_runtime_has_one_worker_unless_told_how_many() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    let mut counts = Vec::new();
    for told in [None, Some("3")] {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut bridge = hitl_bridge();
        bridge.env_remove("TOKIO_WORKER_THREADS");
        if let Some(told) = told {
            bridge.env("TOKIO_WORKER_THREADS", told);
        }
        let mut child = bridge
            .args(["run"])
            .env("HITL_BRIDGE__STORE__URL", format!("sqlite://{}", dir.path().join("bridge.db").display()))
            .env("HITL_BRIDGE__CONSOLE__ENABLED", "true")
            .env("HITL_BRIDGE__HTTP__LISTEN", format!("127.0.0.1:{port}"))
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn");
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "the bridge never listened");
            std::thread::sleep(Duration::from_millis(50));
        }
        let named_worker = |task: &std::fs::DirEntry| std::fs::read_to_string(task.path().join("comm")).is_ok_and(|name| name.trim() == "tokio-rt-worker");
        let count = || std::fs::read_dir(format!("/proc/{}/task", child.id())).unwrap().filter_map(Result::ok).filter(named_worker).count();
        // Counted once the start is over: the same count twice, half a second apart.
        let mut counted = count();
        loop {
            std::thread::sleep(Duration::from_millis(500));
            let again = count();
            if again == counted {
                break;
            }
            counted = again;
        }
        child.kill().unwrap();
        child.wait().unwrap();
        counts.push(counted);
    }
    assert_eq!(counts[1], counts[0] + 2, "threads named as the runtime's, by default and with three workers: {counts:?}");
    for bad in ["0", "two", "-1"] {
        let out = hitl_bridge().args(["check-config"]).env("TOKIO_WORKER_THREADS", bad).output().unwrap();
        assert!(!out.status.success(), "TOKIO_WORKER_THREADS={bad} was accepted");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("TOKIO_WORKER_THREADS") && stderr.contains("above 0"), "{bad}: {stderr}");
    }
}
