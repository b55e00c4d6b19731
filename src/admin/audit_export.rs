//! `hitl-bridge audit export [--since RFC3339] [--format jsonl|csv]`: the audit log in
//! time order, one record per entry: who (platform, user id, name) or which agent,
//! what (approval key, session, kind, tool names), when, the original and the edited
//! args, the decision or answers sent, the latency, and refused attempts with what
//! was tried and why, policy events (escalation steps performed, remembered rules
//! revoked), and under a policy which rule, fallback or voters settled a request.
//!
//! Records are built and encoded by pure functions; [`run`] pages through the store
//! and writes them. Entries written before kinds and tool names were kept take them
//! from their interaction while it is still stored (`tools` is null after that).

use std::io::Write;

use serde::Serialize;
use serde_json::Value;

use super::{AdminError, rfc3339_ms};
use crate::interaction::Interaction;
use crate::store::{AuditEntry, Store, kind_and_tools};

/// Rows read from the store at a time.
const PAGE: i64 = 500;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One JSON object per line (the default).
    Jsonl,
    /// A header line, then one row per entry; JSON values as compact JSON text.
    Csv,
}

/// `--format`: `jsonl` or `csv`.
pub fn parse_format(s: &str) -> Result<Format, String> {
    match s {
        "jsonl" => Ok(Format::Jsonl),
        "csv" => Ok(Format::Csv),
        other => Err(format!("{other:?} is not an export format (use jsonl or csv)")),
    }
}

/// `--since`: an RFC 3339 time, as unix ms.
pub fn parse_since(s: &str) -> Result<i64, String> {
    chrono::DateTime::parse_from_rfc3339(s.trim())
        .map(|t| t.timestamp_millis())
        .map_err(|e| format!("{s:?} is not an RFC 3339 time such as 2025-06-01T00:00:00Z ({e})"))
}

/// Who acted: a person on a platform, or `cli` for an operator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Who {
    pub platform: String,
    pub user_id: String,
    pub name: String,
    /// Where they acted when not in their platform's chat (`web`): left out of JSONL
    /// when absent, an empty `who_channel` cell in CSV.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
}

/// One exported audit entry. Field order is the JSON key order and the CSV column
/// order ([`CSV_HEADER`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Record {
    /// When it was settled or attempted, RFC 3339 UTC with milliseconds.
    pub at: String,
    /// `resolved`, `resolved_elsewhere`, `expired`, `expired_by_backend`, `cancelled`,
    /// `refused`, `escalated` (a reminder or an extra chat; `reason` says which) or
    /// `rule_revoked` (kind `rule`; `interaction_id` is the rule's id).
    pub outcome: String,
    /// `None` for a refused message that concerned no request.
    pub approval_key: Option<String>,
    pub session_id: Option<String>,
    pub interaction_id: Option<String>,
    /// `approval` or `question`; `rule` for a rule revoked (or a refused attempt to).
    pub kind: Option<String>,
    /// The requested actions' names; `None` when no longer known.
    pub tools: Option<Vec<String>>,
    /// The person who decided, cancelled or was refused; `None` when the agent, a
    /// timeout or another client ended it.
    pub who: Option<Who>,
    /// The HTTP API agent that pushed the request.
    pub agent: Option<String>,
    /// What was sent to (or received from) the agent: `{"decisions": […]}` or
    /// `{"answers": {…}}`.
    pub decision: Option<Value>,
    /// For `refused`: what was tried (an action on the request, or a message), with
    /// `attempts` when the entry counts a stranger's several attempts in one refusal
    /// window.
    pub attempted: Option<Value>,
    /// Each action's args as the agent asked.
    pub original_args: Value,
    /// Each action's edited args (`null` where not edited); `None` without edits.
    pub edited_args: Option<Value>,
    /// From the request's creation to this entry.
    pub latency_ms: i64,
    /// Why it was cancelled or refused; the rule, fallback or voters that settled it
    /// under a policy; the escalation step; the rule revoked.
    pub reason: Option<String>,
}

/// The CSV columns, in order.
pub const CSV_HEADER: [&str; 18] = [
    "at",
    "outcome",
    "approval_key",
    "session_id",
    "interaction_id",
    "kind",
    "tools",
    "who_platform",
    "who_user_id",
    "who_name",
    "who_channel",
    "agent",
    "decision",
    "attempted",
    "original_args",
    "edited_args",
    "latency_ms",
    "reason",
];

/// The record for `entry`; `interaction` (when still stored) fills in the kind and
/// tools of an entry written before they were kept.
pub fn record(entry: &AuditEntry, interaction: Option<&Interaction>) -> Record {
    let (kind, tools) = match (&entry.tools, interaction) {
        (None, Some(i)) => {
            let (kind, tools) = kind_and_tools(i);
            (Some(kind.to_owned()), Some(tools))
        }
        _ => (entry.kind.clone(), entry.tools.clone()),
    };
    let refused = entry.outcome == "refused";
    // A refused attempt's stored reply is `{"attempted": …, "reason": …, …}`: what was
    // tried, not something sent to the agent.
    let (decision, attempted) = match (&entry.reply, refused) {
        (Some(Value::Object(tried)), true) => {
            let mut tried = tried.clone();
            tried.remove("reason");
            // A stranger's refusal window: one entry for all its attempts.
            if entry.attempts != 1 {
                tried.insert("attempts".to_owned(), Value::from(entry.attempts));
            }
            (None, Some(Value::Object(tried)))
        }
        (reply, true) => (None, reply.clone()),
        (reply, false) => (reply.clone(), None),
    };
    let stored_reason = || entry.reply.as_ref().filter(|_| refused).and_then(|r| r.get("reason")).and_then(Value::as_str).map(str::to_owned);
    let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    Record {
        at: rfc3339_ms(entry.at_ms),
        outcome: entry.outcome.clone(),
        approval_key: non_empty(&entry.approval_key),
        session_id: non_empty(&entry.session_id),
        interaction_id: non_empty(&entry.interaction_id),
        kind,
        tools,
        who: entry.actor.as_ref().map(|a| Who { platform: a.platform.clone(), user_id: a.user_id.clone(), name: a.name.clone(), channel: a.channel.clone() }),
        agent: entry.agent.clone(),
        decision,
        attempted,
        original_args: entry.original_args.clone(),
        edited_args: entry.edited_args.clone(),
        latency_ms: entry.latency_ms,
        reason: entry.reason.clone().or_else(stored_reason),
    }
}

/// The JSON Lines form: one compact object, no newline.
pub fn jsonl_line(record: &Record) -> Result<String, AdminError> {
    Ok(serde_json::to_string(record)?)
}

/// The CSV cells of `record`, in [`CSV_HEADER`] order: absent values empty, tool names
/// joined with `;`, JSON values as compact JSON (the CSV writer quotes them).
pub fn csv_fields(record: &Record) -> Result<[String; 18], AdminError> {
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    let json = |v: Option<&Value>| v.map(serde_json::to_string).transpose().map(Option::unwrap_or_default);
    let who = record.who.as_ref();
    Ok([
        record.at.clone(),
        record.outcome.clone(),
        text(&record.approval_key),
        text(&record.session_id),
        text(&record.interaction_id),
        text(&record.kind),
        record.tools.as_ref().map(|t| t.join(";")).unwrap_or_default(),
        who.map(|w| w.platform.clone()).unwrap_or_default(),
        who.map(|w| w.user_id.clone()).unwrap_or_default(),
        who.map(|w| w.name.clone()).unwrap_or_default(),
        who.and_then(|w| w.channel.clone()).unwrap_or_default(),
        text(&record.agent),
        json(record.decision.as_ref())?,
        json(record.attempted.as_ref())?,
        json(Some(&record.original_args))?,
        json(record.edited_args.as_ref())?,
        record.latency_ms.to_string(),
        text(&record.reason),
    ])
}

/// Where records go, in their format.
enum Sink<'a> {
    Jsonl(&'a mut dyn Write),
    Csv(Box<csv::Writer<&'a mut dyn Write>>),
}

impl<'a> Sink<'a> {
    fn new(format: Format, out: &'a mut dyn Write) -> Result<Self, AdminError> {
        Ok(match format {
            Format::Jsonl => Sink::Jsonl(out),
            Format::Csv => {
                let mut csv = csv::WriterBuilder::new().terminator(csv::Terminator::Any(b'\n')).from_writer(out);
                csv.write_record(CSV_HEADER)?;
                Sink::Csv(Box::new(csv))
            }
        })
    }

    fn write(&mut self, record: &Record) -> Result<(), AdminError> {
        match self {
            Sink::Jsonl(out) => writeln!(out, "{}", jsonl_line(record)?)?,
            Sink::Csv(csv) => csv.write_record(csv_fields(record)?)?,
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), AdminError> {
        match self {
            Sink::Jsonl(out) => out.flush()?,
            Sink::Csv(csv) => csv.flush()?,
        }
        Ok(())
    }
}

/// Writes the entries at or after `since_ms` to `out` in `format`, oldest first;
/// returns how many. A reader that goes away (`| head`) ends the export quietly.
pub async fn run(store: &Store, since_ms: i64, format: Format, out: &mut dyn Write) -> Result<usize, AdminError> {
    let mut written = 0;
    let result = async {
        let mut sink = Sink::new(format, out)?;
        let mut after = None;
        loop {
            let page = store.audit_page(since_ms, after, PAGE).await?;
            for row in &page.rows {
                // Only entries from before tool names were kept need their interaction.
                let interaction = match (&row.entry.tools, row.entry.interaction_id.as_str()) {
                    (None, id) if !id.is_empty() => store.interaction(id).await.unwrap_or_else(|error| {
                        tracing::warn!(%error, interaction = id, "cannot read the interaction of an old audit entry");
                        None
                    }),
                    _ => None,
                };
                sink.write(&record(&row.entry, interaction.as_ref()))?;
                written += 1;
            }
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        sink.flush()
    }
    .await;
    match result {
        Err(e) if is_broken_pipe(&e) => Ok(written),
        Err(e) => Err(e),
        Ok(()) => Ok(written),
    }
}

fn is_broken_pipe(e: &AdminError) -> bool {
    let io = match e {
        AdminError::Write(io) => Some(io),
        AdminError::Csv(csv) => match csv.kind() {
            csv::ErrorKind::Io(io) => Some(io),
            _ => None,
        },
        _ => None,
    };
    io.is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::{Actor, RequestBuilder, TimeoutDefaults, UserAction};
    use crate::protocol::{ActionRequest, Decision};
    use serde_json::json;

    const T0: i64 = 1_748_766_600_000;

    fn trade() -> Interaction {
        let actions = vec![ActionRequest {
            name: "execute_trade".into(),
            args: json!({"symbol": "VNM", "note": "say \"hi\", then go"}),
            description: None,
            tool_use_id: None,
        }];
        let request = RequestBuilder::start("S_1", actions, vec![], Some(60)).finish(TimeoutDefaults::default()).expect("request");
        Interaction::new("id1".into(), "S".into(), request, Some(thao()), T0)
    }

    fn thao() -> Actor {
        Actor::new("telegram", "42", "Thảo")
    }

    fn edited() -> AuditEntry {
        let mut i = trade();
        let edit = UserAction::EditArgs { action: 0, json: r#"{"symbol": "FPT", "note": "a,b"}"#.into() };
        i.apply(&thao(), edit, &Default::default(), T0 + 3_250).expect("edit accepted");
        AuditEntry::for_settled(&i, T0 + 3_250)
    }

    #[test]
    fn an_edit_exports_who_what_when_both_args_and_latency() {
        let line = jsonl_line(&record(&edited(), None)).unwrap();
        assert_eq!(
            line,
            concat!(
                r#"{"at":"2025-06-01T08:30:03.250Z","outcome":"resolved","approval_key":"S_1","session_id":"S","interaction_id":"id1","#,
                r#""kind":"approval","tools":["execute_trade"],"who":{"platform":"telegram","user_id":"42","name":"Thảo"},"agent":null,"#,
                r#""decision":{"decisions":[{"type":"edit","edited_action":{"name":"execute_trade","args":{"symbol":"FPT","note":"a,b"}}}]},"#,
                r#""attempted":null,"original_args":[{"symbol":"VNM","note":"say \"hi\", then go"}],"#,
                r#""edited_args":[{"symbol":"FPT","note":"a,b"}],"latency_ms":3250,"reason":null}"#
            )
        );
    }

    #[test]
    fn csv_quotes_json_cells() {
        let mut out = Vec::new();
        {
            let mut sink = Sink::new(Format::Csv, &mut out).unwrap();
            sink.write(&record(&edited(), None)).unwrap();
            sink.flush().unwrap();
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            concat!(
                "at,outcome,approval_key,session_id,interaction_id,kind,tools,who_platform,who_user_id,who_name,who_channel,agent,",
                "decision,attempted,original_args,edited_args,latency_ms,reason\n",
                "2025-06-01T08:30:03.250Z,resolved,S_1,S,id1,approval,execute_trade,telegram,42,Thảo,,,",
                r#""{""decisions"":[{""type"":""edit"",""edited_action"":{""name"":""execute_trade"",""args"":{""symbol"":""FPT"",""note"":""a,b""}}}]}",,"#,
                r#""[{""symbol"":""VNM"",""note"":""say \""hi\"", then go""}]","[{""symbol"":""FPT"",""note"":""a,b""}]",3250,"#,
                "\n"
            )
        );
    }

    /// A decision made in the web inbox carries its channel in both formats; a chat
    /// click leaves the JSONL key out and the CSV cell empty.
    #[test]
    fn the_channel_of_a_web_decision_is_exported_in_jsonl_and_csv() {
        let mut i = trade();
        let on_web = Actor { channel: Some("web".into()), ..thao() };
        i.apply(&on_web, UserAction::Decide { action: 0, decision: Decision::Approve }, &Default::default(), T0 + 1_000).expect("approved");
        let r = record(&AuditEntry::for_settled(&i, T0 + 1_000), None);
        assert!(jsonl_line(&r).unwrap().contains(r#""who":{"platform":"telegram","user_id":"42","name":"Thảo","channel":"web"}"#));
        let cells = csv_fields(&r).unwrap();
        let column = |name: &str| CSV_HEADER.iter().position(|h| *h == name).expect("a column");
        assert_eq!((cells[column("who_name")].as_str(), cells[column("who_channel")].as_str()), ("Thảo", "web"));
        let by_chat = record(&edited(), None);
        assert!(!jsonl_line(&by_chat).unwrap().contains("channel"));
        assert_eq!(csv_fields(&by_chat).unwrap()[column("who_channel")], "");
    }

    #[test]
    fn a_refused_attempt_exports_what_was_tried_and_why() {
        let mallory = Actor::new("discord", "666", "mallory");
        let tried = UserAction::Decide { action: 0, decision: Decision::Approve };
        let entry = AuditEntry::for_refused(&trade(), &mallory, &tried, "you are not allowed to answer this request", T0 + 500);
        let r = record(&entry, None);
        assert_eq!(r.decision, None);
        assert_eq!(r.attempted, Some(json!({"attempted": {"op": "decide", "action": 0, "decision": {"type": "approve"}}})));
        assert_eq!(r.reason.as_deref(), Some("you are not allowed to answer this request"));
        assert_eq!(r.who.map(|w| w.name), Some("mallory".to_owned()));
        // Written before `reason` was kept: read from the stored reply.
        let old = AuditEntry { reason: None, kind: None, tools: None, ..entry };
        let r = record(&old, Some(&trade()));
        assert_eq!(r.reason.as_deref(), Some("you are not allowed to answer this request"));
        assert_eq!((r.kind.as_deref(), r.tools), (Some("approval"), Some(vec!["execute_trade".to_owned()])));
        assert_eq!(record(&old, None).tools, None);
    }

    #[test]
    fn a_strangers_window_exports_its_attempt_count() {
        let eve = Actor::new("telegram", "99", "Eve");
        let chat = crate::store::ChatKey::new("telegram", "99", None);
        let entry = AuditEntry { attempts: 60, ..AuditEntry::for_refused_talk(&eve, &chat, "message", "hi", None, T0) };
        assert_eq!(
            record(&entry, None).attempted,
            Some(json!({"attempted": "message", "text": "hi", "chat": {"platform": "telegram", "chat_id": "99", "thread_id": null}, "attempts": 60}))
        );
        let once = AuditEntry::for_refused_talk(&eve, &chat, "message", "hi", None, T0);
        assert_eq!(record(&once, None).attempted.unwrap().get("attempts"), None);
    }

    #[test]
    fn since_and_format_are_checked() {
        assert_eq!(parse_since("2025-06-01T08:30:00Z"), Ok(T0));
        assert_eq!(parse_since("2025-06-01T10:30:00+02:00"), Ok(T0));
        let err = parse_since("yesterday").unwrap_err();
        assert!(err.starts_with("\"yesterday\" is not an RFC 3339 time such as 2025-06-01T00:00:00Z"), "{err}");
        assert_eq!(parse_format("csv"), Ok(Format::Csv));
        assert_eq!(parse_format("xml"), Err("\"xml\" is not an export format (use jsonl or csv)".to_owned()));
    }
}
