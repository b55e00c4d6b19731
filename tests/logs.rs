//! The real binary's log output with `log.format = "json"`: every line on stderr is one
//! JSON object of the documented shape, with no colour codes, and the lines about a
//! request carry its `approval_key` and `session_id`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

#[test]
fn json_logs_are_one_object_per_line_and_carry_the_request_key() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let base = format!("http://127.0.0.1:{port}");
    let mut command = Command::new(env!("CARGO_BIN_EXE_hitl-bridge"));
    command.current_dir(env!("CARGO_MANIFEST_DIR"));
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("HITL_BRIDGE__") || k == "RUST_LOG") {
        command.env_remove(key);
    }
    let mut child = command
        .args(["run"])
        .env("HITL_BRIDGE__STORE__URL", format!("sqlite://{}", dir.path().join("bridge.db").display()))
        .env("HITL_BRIDGE__CONSOLE__ENABLED", "true")
        .env("HITL_BRIDGE__HTTP__LISTEN", format!("127.0.0.1:{port}"))
        .env("HITL_BRIDGE__HTTP__API_TOKENS", "ci:s3cret")
        .env("HITL_BRIDGE__LOG__FORMAT", "json")
        .env("HITL_BRIDGE__LOG__FILTER", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn hitl-bridge");
    let stderr = child.stderr.take().unwrap();
    let logged = std::thread::spawn(move || BufReader::new(stderr).lines().map_while(Result::ok).collect::<Vec<String>>());
    let (tx, console) = std::sync::mpsc::channel::<String>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });

    let rt = tokio::runtime::Runtime::new().unwrap();
    let http = reqwest::Client::new();
    let healthy = (0..200).any(|_| {
        let up = rt.block_on(http.get(format!("{base}/healthz")).send()).is_ok_and(|r| r.status().is_success());
        if !up {
            std::thread::sleep(Duration::from_millis(50));
        }
        up
    });
    assert!(healthy, "the bridge never answered /healthz");
    let body = json!({"approval_key": "deploy-42_1", "targets": [{"platform": "console"}], "actions": [{"name": "deploy", "args": {"version": "2.3"}}]});
    let created = rt.block_on(async { http.post(format!("{base}/v1/requests")).bearer_auth("s3cret").json(&body).send().await?.json::<Value>().await });
    assert_eq!(created.unwrap()["status"], "pending");
    loop {
        let line = console.recv_timeout(Duration::from_secs(20)).expect("the console shows the request");
        if line.contains("deploy? [a]pprove") {
            break;
        }
    }
    writeln!(child.stdin.as_mut().unwrap(), "a").unwrap();
    let state = rt.block_on(async { http.get(format!("{base}/v1/requests/deploy-42_1?wait=10")).bearer_auth("s3cret").send().await?.json::<Value>().await });
    assert_eq!(state.unwrap()["status"], "resolved");
    // A request only telegram:1 may answer: the console's click is refused, and the
    // refusal's line (which names no key itself) carries it from the span.
    let body = json!({"approval_key": "deploy-43_1", "targets": [{"platform": "console"}], "approvers": ["telegram:1"],
        "actions": [{"name": "deploy", "args": {"version": "2.4"}}]});
    let created = rt.block_on(async { http.post(format!("{base}/v1/requests")).bearer_auth("s3cret").json(&body).send().await?.json::<Value>().await });
    assert_eq!(created.unwrap()["status"], "pending");
    let mut seen = Vec::new();
    loop {
        let line = console.recv_timeout(Duration::from_secs(20)).unwrap_or_else(|e| panic!("{e}; the console printed {seen:?}"));
        if line.contains("deploy? [a]pprove") {
            break;
        }
        seen.push(line);
    }
    writeln!(child.stdin.as_mut().unwrap(), "a").unwrap();
    loop {
        let line = console.recv_timeout(Duration::from_secs(20)).unwrap_or_else(|e| panic!("{e}; the console printed {seen:?}"));
        if line.contains("not allowed") {
            break;
        }
        seen.push(line);
    }
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());

    let lines = logged.join().unwrap();
    assert!(lines.len() >= 3, "too few log lines: {lines:?}");
    let parsed: Vec<Value> = lines
        .iter()
        .map(|line| {
            assert!(!line.contains('\u{1b}'), "a colour code in a log line: {line:?}");
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
        })
        .collect();
    for line in &parsed {
        let keys: Vec<&str> = line.as_object().unwrap().keys().map(String::as_str).collect();
        for key in ["timestamp", "level", "target", "message", "fields"] {
            assert!(keys.contains(&key), "{key} missing: {line}");
        }
        assert!(line["fields"].is_object(), "{line}");
    }
    // Every line about the request names it in `fields`, whoever logged it.
    let about_it: Vec<&Value> = parsed.iter().filter(|l| l["fields"]["approval_key"] == "deploy-42_1").collect();
    let messages: Vec<&str> = about_it.iter().filter_map(|l| l["message"].as_str()).collect();
    for expected in ["request pushed", "decided"] {
        assert!(messages.contains(&expected), "no {expected:?} line with the key; lines with it: {messages:?}");
    }
    let decided = about_it.iter().find(|l| l["message"] == "decided").unwrap();
    assert!(decided["fields"]["session_id"].as_str().is_some_and(|s| s.starts_with("api:")), "{decided}");
    assert_eq!(decided["target"], "hitl_bridge::engine");
    assert_eq!(decided["level"], "INFO");
    assert_eq!(decided["span"], "interaction");
    let refused = parsed.iter().find(|l| l["message"] == "action refused").expect("the refusal is logged");
    assert_eq!(refused["fields"]["approval_key"], "deploy-43_1", "{refused}");
    assert!(refused["fields"]["session_id"].as_str().is_some_and(|s| s.starts_with("api:")), "{refused}");
    assert_eq!(refused["span"], "interaction");
}
