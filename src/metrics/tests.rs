//! Tests of [`super`]: what the metrics module produces for known inputs.

use super::*;
use crate::interaction::{Actor, Decider, Request};

fn interaction(question: bool, created_at_ms: i64) -> Interaction {
    let kind = if question { RequestKind::Questions { questions: Vec::new(), actions: Vec::new() } } else { RequestKind::Approval { actions: Vec::new() } };
    let request = Request { approval_key: "k".into(), kind, timeout_secs: 60, context: None };
    Interaction::new("id".into(), "s".into(), request, None, created_at_ms)
}

/// The sample lines, sorted: series come out of a family in no set order.
fn samples(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().filter(|l| !l.starts_with('#')).map(str::to_owned).collect();
    lines.sort();
    lines
}

fn bucket_lines(kind: &str, observed: &[f64]) -> Vec<String> {
    let sum = observed.iter().fold(0.0, |a, b| a + b);
    let mut lines = vec![
        format!("hitl_bridge_decision_seconds_sum{{kind=\"{kind}\"}} {sum:?}"),
        format!("hitl_bridge_decision_seconds_count{{kind=\"{kind}\"}} {}", observed.len()),
    ];
    for bound in DECISION_BUCKETS {
        let n = observed.iter().filter(|v| **v <= bound).count();
        lines.push(format!("hitl_bridge_decision_seconds_bucket{{le=\"{bound:?}\",kind=\"{kind}\"}} {n}"));
    }
    lines.push(format!("hitl_bridge_decision_seconds_bucket{{le=\"+Inf\",kind=\"{kind}\"}} {}", observed.len()));
    lines
}

/// Every sample line a registry renders, given the values that differ from zero.
fn expected(nonzero: &[(&str, &str)], approvals: &[f64], questions: &[f64], platforms: &[&str]) -> Vec<String> {
    let mut lines = Vec::new();
    for kind in KINDS {
        lines.push(format!("hitl_bridge_interactions_pending{{kind=\"{kind}\"}} 0"));
        for outcome in OUTCOMES {
            lines.push(format!("hitl_bridge_interactions_total{{kind=\"{kind}\",outcome=\"{outcome}\"}} 0"));
        }
    }
    lines.extend(bucket_lines("approval", approvals));
    lines.extend(bucket_lines("question", questions));
    lines.push("hitl_bridge_outbox_depth 0".into());
    lines.push("hitl_bridge_backend_sessions_connected 0".into());
    for platform in platforms {
        for kind in ERROR_KINDS {
            lines.push(format!("hitl_bridge_platform_errors_total{{platform=\"{platform}\",kind=\"{}\"}} 0", kind.as_str()));
        }
        lines.push(format!("hitl_bridge_shows_refused_total{{platform=\"{platform}\"}} 0"));
    }
    for reason in REASONS {
        lines.push(format!("hitl_bridge_refusals_total{{reason=\"{reason}\"}} 0"));
    }
    for action in POLICY_ACTIONS {
        lines.push(format!("hitl_bridge_policy_actions_total{{action=\"{action}\"}} 0"));
    }
    lines.push("hitl_bridge_store_batches_retried_total 0".to_owned());
    for (series, value) in nonzero {
        let line = lines.iter_mut().find(|l| l.rsplit_once(' ').is_some_and(|(s, _)| s == *series));
        let line = line.unwrap_or_else(|| panic!("no series {series}"));
        *line = format!("{series} {value}");
    }
    lines.sort();
    lines
}

#[test]
fn a_fresh_registry_renders_every_family_with_zeroed_series() {
    let text = Metrics::new().render().expect("renders");
    let described: Vec<&str> = text.lines().filter(|l| l.starts_with("# TYPE") || l.starts_with("# UNIT")).collect();
    assert_eq!(
        described,
        [
            "# TYPE hitl_bridge_interactions_pending gauge",
            "# TYPE hitl_bridge_interactions counter",
            "# TYPE hitl_bridge_decision_seconds histogram",
            "# UNIT hitl_bridge_decision_seconds seconds",
            "# TYPE hitl_bridge_outbox_depth gauge",
            "# TYPE hitl_bridge_backend_sessions_connected gauge",
            "# TYPE hitl_bridge_refusals counter",
            "# TYPE hitl_bridge_policy_actions counter",
            "# TYPE hitl_bridge_store_batches_retried counter",
        ],
        "{text}"
    );
    assert!(text.contains("# HELP hitl_bridge_interactions_pending Requests waiting for an answer, by kind; read from the store on each scrape"));
    assert_eq!(samples(&text), expected(&[], &[], &[], &[]));
    assert_eq!(text.lines().last(), Some("# EOF"));
}

#[test]
fn events_render_with_their_labels_and_values() {
    let metrics = Metrics::new();
    metrics.platform_started("telegram");
    let mut resolved = interaction(false, 10_000);
    resolved.status = Status::Resolved { by: Decider::Person(Actor::new("telegram", "1", "Ana")), at_ms: 17_500 };
    metrics.settled(&resolved);
    let mut expired = interaction(true, 0);
    expired.status = Status::Expired { at_ms: 60_000, by_backend: false };
    metrics.settled(&expired);
    metrics.settled(&interaction(true, 0)); // pending: nothing
    metrics.refused(&Refusal::NotAllowed);
    metrics.refused(&Refusal::AlreadyDecided { by: "Ana".into(), at_ms: 1 });
    metrics.refused(&Refusal::NotAllowed);
    metrics.refused_because(REASON_STRANGER);
    metrics.platform_error("telegram", PlatformErrorKind::RateLimited);
    metrics.platform_error("telegram", PlatformErrorKind::RateLimited);
    metrics.show_refused("telegram");
    metrics.set_store_figures(&StoreFigures { pending_approvals: 3, pending_questions: 1, outbox_depth: 2 });
    let first = metrics.session_connected();
    let second = metrics.session_connected();
    drop(first);

    let text = metrics.render().expect("renders");
    let nonzero = [
        ("hitl_bridge_interactions_pending{kind=\"approval\"}", "3"),
        ("hitl_bridge_interactions_pending{kind=\"question\"}", "1"),
        ("hitl_bridge_interactions_total{kind=\"approval\",outcome=\"resolved\"}", "1"),
        ("hitl_bridge_interactions_total{kind=\"question\",outcome=\"expired\"}", "1"),
        ("hitl_bridge_outbox_depth", "2"),
        ("hitl_bridge_backend_sessions_connected", "1"),
        ("hitl_bridge_platform_errors_total{platform=\"telegram\",kind=\"rate_limited\"}", "2"),
        ("hitl_bridge_shows_refused_total{platform=\"telegram\"}", "1"),
        ("hitl_bridge_refusals_total{reason=\"not_allowed\"}", "2"),
        ("hitl_bridge_refusals_total{reason=\"already_decided\"}", "1"),
        ("hitl_bridge_refusals_total{reason=\"stranger\"}", "1"),
    ];
    // 7.5 s: past the 5 s bucket, inside the 10 s one.
    assert_eq!(samples(&text), expected(&nonzero, &[7.5], &[], &["telegram"]));
    assert!(text.contains("hitl_bridge_decision_seconds_bucket{le=\"5.0\",kind=\"approval\"} 0\n"));
    assert!(text.contains("hitl_bridge_decision_seconds_bucket{le=\"10.0\",kind=\"approval\"} 1\n"));
    drop(second);
    let text = metrics.render().expect("renders");
    assert!(text.lines().any(|l| l == "hitl_bridge_backend_sessions_connected 0"), "{text}");
}

#[test]
fn every_refusal_has_a_listed_reason() {
    use crate::interaction::decisions::EditError;
    use crate::protocol::DecisionType;
    let all = [
        Refusal::NotAllowed,
        Refusal::SelfApproval,
        Refusal::AlreadyDecided { by: "x".into(), at_ms: 0 },
        Refusal::Expired,
        Refusal::Cancelled,
        Refusal::DecisionNotAllowed { action: "a".into(), decision: DecisionType::Edit },
        Refusal::InvalidEdit(EditError::NotAnObject("array")),
        Refusal::OutOfRange("option"),
        Refusal::Incomplete { missing: vec![1] },
        Refusal::WrongKind { expected: "answers", got: "decisions" },
        Refusal::NoFreeText,
        Refusal::EmptyText,
        Refusal::TextTooLong,
        Refusal::SingleChoice,
        Refusal::AlreadyVoted { at_ms: 0 },
        Refusal::RememberNotOffered { scope: crate::interaction::RememberScope::Always },
    ];
    let reasons: Vec<&str> = all.iter().map(refusal_reason).collect();
    assert_eq!(reasons, REASONS[..all.len()]);
}

#[test]
fn statuses_map_to_error_kinds() {
    assert_eq!(PlatformErrorKind::from_status(429), Some(PlatformErrorKind::RateLimited));
    assert_eq!(PlatformErrorKind::from_status(502), Some(PlatformErrorKind::Server));
    assert_eq!(PlatformErrorKind::from_status(403), Some(PlatformErrorKind::Client));
    assert_eq!(PlatformErrorKind::from_status(200), None);
    assert_eq!(PlatformErrorKind::from_status(304), None);
}

#[test]
fn two_bridges_in_one_process_keep_their_own_figures() {
    let a = Metrics::new();
    let b = Metrics::new();
    a.refused(&Refusal::Expired);
    assert!(b.render().expect("renders").contains("hitl_bridge_refusals_total{reason=\"expired\"} 0\n"));
    assert!(a.render().expect("renders").contains("hitl_bridge_refusals_total{reason=\"expired\"} 1\n"));
}

/// Store errors are counted by the store as they happen; a scrape brings the family up
/// to those counts, and a second scrape with nothing new adds nothing.
#[test]
fn store_errors_catch_up_to_the_stores_counts() {
    let metrics = Metrics::new();
    metrics.catch_up_store_errors(&[("settle", 2), ("commit a write", 1)]);
    metrics.catch_up_store_errors(&[("settle", 2), ("commit a write", 4)]);
    let text = metrics.render().unwrap();
    let lines = samples(&text);
    assert!(lines.contains(&"hitl_bridge_store_errors_total{operation=\"settle\"} 2".to_owned()), "{text}");
    assert!(lines.contains(&"hitl_bridge_store_errors_total{operation=\"commit a write\"} 4".to_owned()), "{text}");
}

/// The store counts the group commits it retried write by write; a scrape brings the
/// counter up to that count, never down, and a scrape with nothing new adds nothing.
#[test]
fn retried_batches_catch_up_to_the_stores_count() {
    let metrics = Metrics::new();
    assert!(samples(&metrics.render().unwrap()).contains(&"hitl_bridge_store_batches_retried_total 0".to_owned()), "present from the start");
    metrics.catch_up_batches_retried(2);
    metrics.catch_up_batches_retried(2);
    metrics.catch_up_batches_retried(1);
    let text = metrics.render().unwrap();
    assert!(samples(&text).contains(&"hitl_bridge_store_batches_retried_total 2".to_owned()), "{text}");
}
