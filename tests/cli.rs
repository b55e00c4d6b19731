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
