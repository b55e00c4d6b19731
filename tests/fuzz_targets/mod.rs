//! Property ("fuzz") targets for the parsers that read untrusted input: the backend's
//! stream frames (`BackendEvent::parse` feeding the `Assembler`) and the button
//! tokens people send back (`TokenSigner::verify`, then Telegram's and Discord's
//! action-code parsers). Shared by the quick run in `cargo test --test fuzz` (a few
//! hundred cases each) and the time-bounded run in `cargo bench --bench fuzz`.
//!
//! Each target takes a proptest [`Config`] and returns how many cases it ran, or the
//! minimal failing input. A panic anywhere counts as a failure (proptest catches it).

#![allow(dead_code)]

use hitl_bridge::backend::SessionUpdate;
use hitl_bridge::backend::assembler::{Assembler, MAX_TEXT_BYTES};
use hitl_bridge::interaction::TimeoutDefaults;
use hitl_bridge::platform::discord::codes::Code as DiscordCode;
use hitl_bridge::platform::kit::codes::Decide;
use hitl_bridge::platform::kit::token::{MAX_TOKEN_BYTES, TokenSigner};
use hitl_bridge::platform::telegram::codes::Code as TelegramCode;
use hitl_bridge::protocol::BackendEvent;
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Value, json};

/// A named target: runs `config.cases` cases.
pub struct Target {
    pub name: &'static str,
    pub run: fn(Config) -> Result<u32, String>,
}

pub const TARGETS: &[Target] = &[
    Target { name: "event parser: arbitrary text", run: event_arbitrary_text },
    Target { name: "event parser: arbitrary bytes", run: event_arbitrary_bytes },
    Target { name: "event parser + assembler: mutated valid streams", run: event_mutated_streams },
    Target { name: "event parser: deep nesting", run: event_deep_nesting },
    Target { name: "token parser: arbitrary text", run: token_arbitrary_text },
    Target { name: "token parser: mutated valid tokens", run: token_mutations },
    Target { name: "action codes: arbitrary text and round trips", run: action_codes },
];

fn run<S: Strategy>(config: Config, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>) -> Result<u32, String>
where
    S::Value: std::fmt::Debug,
{
    let cases = config.cases;
    let mut runner = TestRunner::new(config);
    runner.run(&strategy, test).map(|()| cases).map_err(|e| e.to_string())
}

// ---------------------------------------------------------------------------------
// The event parser and the assembler
// ---------------------------------------------------------------------------------

/// Feeds frames through the parser and one assembler, checking what comes out. Never
/// panics on its own: a panic means the bridge would have panicked.
fn feed(frames: &[String]) -> Result<(), TestCaseError> {
    let mut assembler = Assembler::new(TimeoutDefaults::default());
    for (n, frame) in frames.iter().enumerate() {
        let Ok(event) = BackendEvent::parse(frame) else { continue };
        // Frames 600 ms apart, so a text block's progress reports are exercised too.
        for update in assembler.push(event, n as i64 * 600) {
            match &update {
                // The cap plus its marker ("… [truncated N bytes]").
                SessionUpdate::Text { text, .. } => prop_assert!(text.len() <= MAX_TEXT_BYTES + 48, "a text block of {} bytes", text.len()),
                SessionUpdate::TextProgress { text_so_far, .. } => {
                    prop_assert!(text_so_far.len() <= MAX_TEXT_BYTES, "a text in progress of {} bytes", text_so_far.len())
                }
                _ => {}
            }
        }
    }
    Ok(())
}

fn event_arbitrary_text(config: Config) -> Result<u32, String> {
    run(config, vec(any::<String>(), 1..4), |frames| feed(&frames))
}

fn event_arbitrary_bytes(config: Config) -> Result<u32, String> {
    // What a text frame carries once decoded, invalid UTF-8 replaced.
    run(config, vec(vec(any::<u8>(), 0..256), 1..4), |frames| feed(&frames.iter().map(|b| String::from_utf8_lossy(b).into_owned()).collect::<Vec<_>>()))
}

/// Valid frames of every kind the protocol has: the seeds' and hand-written ones.
fn valid_events() -> Vec<Value> {
    let fixture = |s: &str| serde_json::from_str::<Value>(s).expect("fixture");
    vec![
        fixture(include_str!("../fixtures/seed000/01_stream_approval_request_start.json")),
        fixture(include_str!("../fixtures/seed000/02_stream_approval_request_delta_questions.json")),
        fixture(include_str!("../fixtures/seed000/03_stream_approval_request_stop.json")),
        fixture(include_str!("../fixtures/seed002/01_stream_approval_request_shape_a.json")),
        fixture(include_str!("../fixtures/seed002/02_stream_approval_request_stop.json")),
        fixture(include_str!("../fixtures/seed002/08_stream_approval_result_start.json")),
        fixture(include_str!("../fixtures/seed002/09_stream_approval_result_delta.json")),
        fixture(include_str!("../fixtures/seed002/10_stream_approval_result_stop.json")),
        fixture(include_str!("../fixtures/seed002/11_stream_approval_timeout_start.json")),
        fixture(include_str!("../fixtures/seed002/12_stream_approval_timeout_stop.json")),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":"Xin ","is_final":true}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"chào"}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"content_block_start","index":1,"content_block":{"type":"thinking","thinking":"hmm"}}),
        json!({"type":"group_start","summary":"Chuẩn bị"}),
        json!({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"tc-1","name":"write_todos","input":{}}}),
        json!({"type":"content_block_start","index":3,"content_block":{"type":"tool_result","tool_use_id":"tc-1","status":"error"}}),
        json!({"type":"group_end","summary":"xong"}),
        json!({"type":"content_block_start","index":6,"content_block":{"type":"approval_request","approval_key":"k_2",
            "questions":[{"question":"Nhóm ngành?","header":"Ngành","multiSelect":true,"options":[{"label":"Ngân hàng"},{"label":"Khác","input":true}]}]}}),
        json!({"type":"content_block_delta","index":6,"delta":{"action_requests":[{"name":"ask_user_question","args":{"question":"Chọn?","choices":["a","b"],"allow_freeform":true}}]}}),
        json!({"type":"content_block_delta","index":5,"delta":{"answers":{"Nhóm ngành?":"Ngân hàng"}}}),
        json!({"type":"message_stop"}),
        json!({"type":"error","message":"backend failed"}),
    ]
}

/// Keys the protocol uses, so mutations hit fields the parser looks at.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec![
            "type", "index", "content_block", "delta", "text", "is_final", "approval_key", "actions", "action_requests",
            "review_configs", "timeout_seconds", "allowed_decisions", "name", "args", "questions", "question", "options",
            "label", "multiSelect", "multi_select", "input", "choices", "allow_freeform", "decisions", "answers",
            "tool_use_id", "status", "summary", "message", "id", "edited_action",
        ])
        .prop_map(str::to_owned),
        1 => "[a-z_]{1,12}",
    ]
}

/// Any JSON value, a few levels deep, with the protocol's type names among the strings.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        prop::sample::select(vec![
            "text",
            "text_delta",
            "approval_request",
            "approval_result",
            "approval_timeout",
            "tool_use",
            "tool_result",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "approve",
            "edit",
            "reject",
            "respond",
            "",
        ])
        .prop_map(|s| Value::String(s.to_owned())),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![vec(inner.clone(), 0..6).prop_map(Value::Array), btree_map(key(), inner, 0..6).prop_map(|m| Value::Object(m.into_iter().collect())),]
    })
}

/// One change to a valid frame. `node` picks an object or array inside it (modulo
/// how many there are), so changes land at every depth.
#[derive(Debug, Clone)]
enum Mutation {
    Set {
        node: usize,
        key: String,
        value: Value,
    },
    Remove {
        node: usize,
        nth: usize,
    },
    /// Replaces an array's element or an object's value with another value.
    Replace {
        node: usize,
        nth: usize,
        value: Value,
    },
    /// Moves the block to another index, so blocks interleave, collide or dangle.
    Index(u64),
    /// Repeats a string value until it is long (a runaway text delta).
    Grow {
        node: usize,
        times: usize,
    },
    /// Wraps a value in many arrays.
    Nest {
        node: usize,
        depth: usize,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<usize>(), key(), json_value()).prop_map(|(node, key, value)| Mutation::Set { node, key, value }),
        3 => (any::<usize>(), any::<usize>()).prop_map(|(node, nth)| Mutation::Remove { node, nth }),
        3 => (any::<usize>(), any::<usize>(), json_value()).prop_map(|(node, nth, value)| Mutation::Replace { node, nth, value }),
        2 => prop_oneof![0..8u64, any::<u64>()].prop_map(Mutation::Index),
        1 => (any::<usize>(), 1..20_000usize).prop_map(|(node, times)| Mutation::Grow { node, times }),
        1 => (any::<usize>(), 1..300usize).prop_map(|(node, depth)| Mutation::Nest { node, depth }),
    ]
}

/// Every object and array in `value`, as paths of keys/indexes, parents first.
fn containers(value: &Value, path: &mut Vec<PathStep>, out: &mut Vec<Vec<PathStep>>) {
    match value {
        Value::Object(map) => {
            out.push(path.clone());
            for (k, v) in map {
                path.push(PathStep::Key(k.clone()));
                containers(v, path, out);
                path.pop();
            }
        }
        Value::Array(items) => {
            out.push(path.clone());
            for (i, v) in items.iter().enumerate() {
                path.push(PathStep::At(i));
                containers(v, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

#[derive(Debug, Clone)]
enum PathStep {
    Key(String),
    At(usize),
}

fn at<'a>(value: &'a mut Value, path: &[PathStep]) -> Option<&'a mut Value> {
    path.iter().try_fold(value, |v, step| match step {
        PathStep::Key(k) => v.get_mut(k.as_str()),
        PathStep::At(i) => v.get_mut(*i),
    })
}

fn apply(mut event: Value, m: &Mutation) -> Value {
    let mut nodes = Vec::new();
    containers(&event, &mut Vec::new(), &mut nodes);
    let pick = |n: usize| nodes.get(n % nodes.len().max(1)).cloned().unwrap_or_default();
    match m {
        Mutation::Set { node, key, value } => {
            if let Some(Value::Object(map)) = at(&mut event, &pick(*node)) {
                map.insert(key.clone(), value.clone());
            }
        }
        Mutation::Remove { node, nth } => match at(&mut event, &pick(*node)) {
            Some(Value::Object(map)) if !map.is_empty() => {
                let k = map.keys().nth(nth % map.len()).cloned().unwrap_or_default();
                map.remove(&k);
            }
            Some(Value::Array(items)) if !items.is_empty() => {
                items.remove(nth % items.len());
            }
            _ => {}
        },
        Mutation::Replace { node, nth, value } => match at(&mut event, &pick(*node)) {
            Some(Value::Object(map)) if !map.is_empty() => {
                let len = map.len();
                if let Some(v) = map.values_mut().nth(nth % len) {
                    *v = value.clone();
                }
            }
            Some(Value::Array(items)) if !items.is_empty() => {
                let len = items.len();
                items[nth % len] = value.clone();
            }
            _ => {}
        },
        Mutation::Index(index) => {
            if let Some(map) = event.as_object_mut() {
                map.insert("index".into(), json!(index));
            }
        }
        Mutation::Grow { node, times } => {
            if let Some(Value::Object(map)) = at(&mut event, &pick(*node)) {
                for v in map.values_mut() {
                    if let Value::String(s) = v {
                        // At most ~200 KB: past the 64 KiB cap, short of the 1 MiB frame limit.
                        let times = (*times).min(200_000 / s.len().max(1));
                        *s = s.repeat(times);
                    }
                }
            }
        }
        Mutation::Nest { node, depth } => {
            if let Some(Value::Object(map)) = at(&mut event, &pick(*node))
                && let Some(v) = map.values_mut().next()
            {
                let mut wrapped = v.take();
                for _ in 0..*depth {
                    wrapped = Value::Array(vec![wrapped]);
                }
                *v = wrapped;
            }
        }
    }
    event
}

fn event_mutated_streams(config: Config) -> Result<u32, String> {
    let events = valid_events();
    let count = events.len();
    let stream = vec((0..count, vec(mutation(), 0..4)), 1..40);
    run(config, stream, move |frames| {
        let frames: Vec<String> = frames.iter().map(|(i, mutations)| mutations.iter().fold(events[*i].clone(), apply).to_string()).collect();
        feed(&frames)
    })
}

fn event_deep_nesting(config: Config) -> Result<u32, String> {
    // 10,000 levels of arrays or objects, inside a valid frame or alone: serde_json's
    // recursion limit must turn them into errors, not a stack overflow.
    let strategy = (1..10_001usize, any::<bool>(), any::<bool>());
    run(config, strategy, |(depth, objects, wrapped)| {
        let (open, close) = if objects { (r#"{"a":"#, "}") } else { ("[", "]") };
        let nested = format!("{}1{}", open.repeat(depth), close.repeat(depth));
        let frame = if wrapped { format!(r#"{{"type":"content_block_delta","index":0,"delta":{{"decisions":{nested}}}}}"#) } else { nested };
        feed(&[frame])
    })
}

// ---------------------------------------------------------------------------------
// Button tokens and action codes
// ---------------------------------------------------------------------------------

fn signer() -> TokenSigner {
    TokenSigner::new(b"fuzz-secret")
}

fn token_arbitrary_text(config: Config) -> Result<u32, String> {
    let s = signer();
    let strategy = prop_oneof![any::<String>(), "1:[a-z0-9]{12}:[a-zA-Z0-9.]{1,8}:[A-Za-z0-9_-]{12}", "[0-9:]{0,6}[^:]{0,70}",];
    run(config, strategy, move |text| {
        // Random text is never a valid token (a 72-bit tag is not guessed).
        prop_assert!(s.verify(&text).is_err(), "{text:?} verified");
        // Nor do the action-code parsers panic on what a forged token might carry.
        let _ = TelegramCode::parse(&text);
        let _ = DiscordCode::parse(&text);
        Ok(())
    })
}

/// A change to a valid token's text.
#[derive(Debug, Clone)]
enum TokenEdit {
    Replace { at: usize, with: char },
    Insert { at: usize, with: char },
    Delete { at: usize },
    Truncate { len: usize },
    SwapParts { a: usize, b: usize },
    Append(String),
}

fn token_edit() -> impl Strategy<Value = TokenEdit> {
    let ch = prop_oneof![3 => prop::sample::select(":0123456789abcAZ_-.+=/".chars().collect::<Vec<_>>()), 1 => any::<char>()];
    prop_oneof![
        (any::<usize>(), ch.clone()).prop_map(|(at, with)| TokenEdit::Replace { at, with }),
        (any::<usize>(), ch).prop_map(|(at, with)| TokenEdit::Insert { at, with }),
        any::<usize>().prop_map(|at| TokenEdit::Delete { at }),
        any::<usize>().prop_map(|len| TokenEdit::Truncate { len }),
        (0..4usize, 0..4usize).prop_map(|(a, b)| TokenEdit::SwapParts { a, b }),
        "[:a-zA-Z0-9]{1,8}".prop_map(TokenEdit::Append),
    ]
}

fn edit(token: &str, e: &TokenEdit) -> String {
    let mut chars: Vec<char> = token.chars().collect();
    let n = chars.len().max(1);
    match e {
        TokenEdit::Replace { at, with } if !chars.is_empty() => chars[at % n] = *with,
        TokenEdit::Insert { at, with } => chars.insert(at % (chars.len() + 1), *with),
        TokenEdit::Delete { at } if !chars.is_empty() => {
            chars.remove(at % n);
        }
        TokenEdit::Replace { .. } | TokenEdit::Delete { .. } => {}
        TokenEdit::Truncate { len } => chars.truncate(len % n),
        TokenEdit::SwapParts { a, b } => {
            let mut parts: Vec<&str> = token.split(':').collect();
            let len = parts.len();
            parts.swap(a % len, b % len);
            return parts.join(":");
        }
        TokenEdit::Append(tail) => chars.extend(tail.chars()),
    }
    chars.into_iter().collect()
}

/// Every code either platform signs, indexes up to 4 digits.
fn any_code() -> impl Strategy<Value = String> {
    let i = 0..10_000usize;
    prop_oneof![
        (0..14u8, i.clone(), i.clone()).prop_map(|(kind, a, b)| {
            use TelegramCode as T;
            match kind {
                0 => T::Decide(Decide::Approve(a)),
                1 => T::Decide(Decide::Reject(a)),
                2 => T::Edit { action: a },
                3 => T::Comment { action: a },
                4 => T::Decide(Decide::ApproveAll),
                5 => T::Decide(Decide::RejectAll),
                6 => T::Decide(Decide::Submit),
                7 => T::Option { question: a, option: b },
                8 => T::Other { question: a },
                9 => T::Skip { question: a },
                10 => T::Done { question: a },
                _ => T::Goto { step: a },
            }
            .encode()
        }),
        (0..14u8, i).prop_map(|(kind, a)| {
            use DiscordCode as D;
            [
                D::Decide(Decide::Approve(a)),
                D::Decide(Decide::Reject(a)),
                D::Edit(a),
                D::Respond(a),
                D::Decide(Decide::ApproveAll),
                D::Decide(Decide::RejectAll),
                D::Decide(Decide::Submit),
                D::Select(a),
                D::Other(a),
                D::Skip,
                D::Page(a),
                D::EditModal(a),
                D::RespondModal(a),
                D::OtherModal(a),
            ][kind as usize % 14]
                .encode()
        }),
    ]
}

fn token_mutations(config: Config) -> Result<u32, String> {
    let s = signer();
    let other = TokenSigner::new(b"another-secret");
    let strategy = ("[a-z0-9]{12}", any_code(), vec(token_edit(), 1..4));
    run(config, strategy, move |(id, code, edits)| {
        let token = s.sign(&id, &code).map_err(|e| TestCaseError::fail(format!("cannot sign {code:?}: {e}")))?;
        prop_assert!(token.len() <= MAX_TOKEN_BYTES, "{token:?} is over Telegram's limit");
        let verified = s.verify(&token).map_err(|e| TestCaseError::fail(format!("own token refused: {e}")))?;
        prop_assert_eq!((&verified.interaction_id, &verified.code), (&id, &code));
        prop_assert!(other.verify(&token).is_err(), "verified under another secret");
        let forged = edits.iter().fold(token.clone(), |t, e| edit(&t, e));
        if forged != token {
            prop_assert!(s.verify(&forged).is_err(), "{forged:?} (from {token:?}) verified");
        }
        Ok(())
    })
}

fn action_codes(config: Config) -> Result<u32, String> {
    // A valid code with a sign, space or zero slipped in front of its first digit:
    // what `usize::from_str` would happily take.
    let signed = (any_code(), prop::sample::select(vec!["+", "-", " ", "0", "+0"])).prop_map(|(code, extra)| match code.find(|c: char| c.is_ascii_digit()) {
        Some(at) => format!("{}{extra}{}", &code[..at], &code[at..]),
        None => format!("{code}{extra}"),
    });
    let strategy = prop_oneof![any_code(), signed, any::<String>(), "[a-zA-Z]{1,3}[.]?[-+0-9]{0,6}([.][0-9]{0,5})?"];
    run(config, strategy, |text| {
        // What parses re-encodes to something that parses to the same code, and
        // indexes stay small enough for any token.
        if let Some(code) = TelegramCode::parse(&text) {
            prop_assert_eq!(TelegramCode::parse(&code.encode()), Some(code));
            prop_assert!(!text.contains(['+', '-', ' ']), "{text:?} parsed as {code:?}");
        }
        if let Some(code) = DiscordCode::parse(&text) {
            prop_assert_eq!(DiscordCode::parse(&code.encode()), Some(code));
            prop_assert!(!text.contains(['+', '-', ' ']), "{text:?} parsed as {code:?}");
        }
        Ok(())
    })
}
