//! Turns one session's stream of [`BackendEvent`]s into [`SessionUpdate`]s: text
//! blocks are collected until their stop, approval requests are merged across start
//! and deltas (PROTOCOL.md §4), tool work is folded into group status lines, and
//! thinking is dropped. Pure: no IO, and the time is passed in with each event, so
//! every rule is unit-tested.
//!
//! A text block that is still arriving after [`PROGRESS_INTERVAL_MS`] is reported as
//! [`SessionUpdate::TextProgress`] (everything so far), at most once per interval, so
//! a chat can show it growing; the complete [`SessionUpdate::Text`] at its stop names
//! the same block. A block that starts and stops within the interval is one `Text`,
//! as before: a short answer costs a chat one message, not a message and an edit.
//!
//! Bounded: a text block keeps at most [`MAX_TEXT_BYTES`] (the rest is counted and
//! replaced by a "… [truncated N bytes]" marker) and at most [`MAX_OPEN_BLOCKS`] blocks
//! are open at once, so a runaway agent can neither grow the bridge's memory nor
//! flood a chat.

use std::collections::HashMap;

use super::{SessionUpdate, ToolGroupStatus, ToolRun, ToolState};
use crate::interaction::{RequestBuilder, TimeoutDefaults};
use crate::protocol::{Answers, BackendEvent, ContentBlock, Decision, Delta, Reply};

/// The most a text block keeps, in bytes. Chats split long text into several
/// messages; past this the agent is running away, not talking.
pub const MAX_TEXT_BYTES: usize = 64 * 1024;

/// The most blocks open (started, not stopped) at once. Real turns have a handful;
/// a backend that keeps starting blocks without stopping them gets the extra ones
/// ignored instead of held forever.
pub const MAX_OPEN_BLOCKS: usize = 256;

/// The least time between two progress reports of one text block (and between its
/// start and the first). About the pace a chat may edit one message at.
pub const PROGRESS_INTERVAL_MS: i64 = 1_000;

/// When a text block started and last reported progress, and the id it streams under.
#[derive(Debug)]
struct Streaming {
    /// When the block started, or last reported progress.
    last_ms: i64,
    /// Set at the first progress report.
    block: Option<u64>,
}

/// A block between its start and stop.
#[derive(Debug)]
enum OpenBlock {
    Text { text: CappedText, is_final: bool, streaming: Streaming },
    Request(RequestBuilder),
    Result { approval_key: String, decisions: Option<Vec<Decision>>, answers: Option<Answers> },
    Timeout { approval_key: String },
    Ignored,
}

#[derive(Debug, Default)]
pub struct Assembler {
    defaults: TimeoutDefaults,
    open: HashMap<u64, OpenBlock>,
    group: Option<ToolGroupStatus>,
    groups_seen: u64,
    /// The id of the last text block that reported progress.
    last_stream: u64,
}

impl Assembler {
    pub fn new(defaults: TimeoutDefaults) -> Self {
        Self { defaults, ..Self::default() }
    }

    /// Feeds one event that arrived at `now_ms`; returns what is now complete, and the
    /// progress of a text block that is due to report it.
    pub fn push(&mut self, event: BackendEvent, now_ms: i64) -> Vec<SessionUpdate> {
        match event {
            BackendEvent::ContentBlockStart { index, content_block, .. } => self.start(index, content_block, now_ms),
            BackendEvent::ContentBlockDelta { index, delta } => self.delta(index, delta, now_ms).into_iter().collect(),
            BackendEvent::ContentBlockStop { index } => self.stop(index),
            BackendEvent::GroupStart { summary } => {
                let mut out = self.close_group();
                self.groups_seen += 1;
                let group = ToolGroupStatus { group: self.groups_seen, summary, tools: Vec::new(), finished: false };
                out.push(SessionUpdate::ToolGroup(group.clone()));
                self.group = Some(group);
                out
            }
            BackendEvent::GroupEnd { summary } => {
                if let (Some(group), Some(summary)) = (self.group.as_mut(), summary) {
                    group.summary = Some(summary);
                }
                self.close_group()
            }
            BackendEvent::MessageStop => self.end_turn(SessionUpdate::TurnEnded),
            BackendEvent::Error { message } => self.end_turn(SessionUpdate::TurnFailed { message }),
            BackendEvent::Unknown => {
                tracing::debug!("ignoring unknown event type");
                Vec::new()
            }
        }
    }

    fn start(&mut self, index: u64, block: ContentBlock, now_ms: i64) -> Vec<SessionUpdate> {
        let mut out = Vec::new();
        if self.open.len() >= MAX_OPEN_BLOCKS && !self.open.contains_key(&index) {
            tracing::warn!(index, open = self.open.len(), "too many unfinished blocks; ignoring a new one");
            return out;
        }
        let open = match block {
            ContentBlock::Text { text, is_final } => {
                let mut kept = CappedText::default();
                kept.push(&text);
                OpenBlock::Text { text: kept, is_final, streaming: Streaming { last_ms: now_ms, block: None } }
            }
            ContentBlock::ApprovalRequest { approval_key, mut actions, action_requests, review_configs, timeout_seconds } => {
                actions.extend(action_requests);
                OpenBlock::Request(RequestBuilder::start(&approval_key, actions, review_configs, timeout_seconds))
            }
            ContentBlock::ApprovalResult { approval_key } => OpenBlock::Result { approval_key, decisions: None, answers: None },
            ContentBlock::ApprovalTimeout { approval_key } => OpenBlock::Timeout { approval_key },
            ContentBlock::ToolUse { id, name, .. } => {
                out.extend(self.tool_update(|g| g.tools.push(ToolRun { id, name, state: ToolState::Running })));
                OpenBlock::Ignored
            }
            ContentBlock::ToolResult { tool_use_id, status } => {
                let failed = status.as_deref().is_some_and(|s| s != "success");
                out.extend(self.tool_update(|g| {
                    if let Some(tool) = g.tools.iter_mut().find(|t| t.id == tool_use_id) {
                        tool.state = if failed { ToolState::Failed } else { ToolState::Done };
                    }
                }));
                OpenBlock::Ignored
            }
            ContentBlock::Thinking { .. } | ContentBlock::Unknown => OpenBlock::Ignored,
        };
        self.open.insert(index, open);
        out
    }

    /// Applies `change` to the open group, or to an implicit one-tool group when the
    /// backend streams tools outside any group.
    fn tool_update(&mut self, change: impl FnOnce(&mut ToolGroupStatus)) -> Option<SessionUpdate> {
        let group = self.group.get_or_insert_with(|| {
            self.groups_seen += 1;
            ToolGroupStatus { group: self.groups_seen, summary: None, tools: Vec::new(), finished: false }
        });
        change(group);
        Some(SessionUpdate::ToolGroup(group.clone()))
    }

    fn delta(&mut self, index: u64, delta: Delta, now_ms: i64) -> Option<SessionUpdate> {
        match self.open.get_mut(&index) {
            Some(OpenBlock::Text { text, streaming, .. }) => {
                text.push(delta.text.as_deref().unwrap_or(""));
                if now_ms - streaming.last_ms < PROGRESS_INTERVAL_MS || text.is_empty() {
                    return None;
                }
                streaming.last_ms = now_ms;
                let block = *streaming.block.get_or_insert_with(|| {
                    // Ids grow with the clock, so a session task started again (a new
                    // assembler) never reuses one a chat may still be editing.
                    self.last_stream = u64::try_from(now_ms).unwrap_or(0).max(self.last_stream + 1);
                    self.last_stream
                });
                return Some(SessionUpdate::TextProgress { block, text_so_far: text.so_far() });
            }
            Some(OpenBlock::Request(builder)) => builder.apply_delta(delta),
            Some(OpenBlock::Result { decisions, answers, .. }) => {
                if delta.decisions.is_some() {
                    *decisions = delta.decisions;
                }
                if delta.answers.is_some() {
                    *answers = delta.answers;
                }
            }
            Some(OpenBlock::Timeout { .. } | OpenBlock::Ignored) => {}
            None => tracing::debug!(index, "delta for a block that was never started"),
        }
        None
    }

    fn stop(&mut self, index: u64) -> Vec<SessionUpdate> {
        let Some(block) = self.open.remove(&index) else {
            tracing::debug!(index, "stop for a block that was never started");
            return Vec::new();
        };
        let update = match block {
            OpenBlock::Text { mut text, is_final, streaming } if !text.is_empty() => {
                SessionUpdate::Text { text: text.take(), is_final, block: streaming.block }
            }
            OpenBlock::Text { .. } | OpenBlock::Ignored => return Vec::new(),
            OpenBlock::Request(builder) => {
                let approval_key = builder.approval_key().to_owned();
                match builder.finish(self.defaults) {
                    Ok(request) => SessionUpdate::Request(request),
                    Err(e) => SessionUpdate::InvalidRequest { approval_key, reason: e.to_string() },
                }
            }
            OpenBlock::Result { approval_key, decisions, answers } => {
                let reply = match (decisions, answers) {
                    (Some(decisions), _) => Some(Reply::Decisions { decisions, user_edit_content: None }),
                    (None, Some(answers)) => Some(Reply::Answers { answers }),
                    (None, None) => None,
                };
                SessionUpdate::Resolved { approval_key, reply }
            }
            OpenBlock::Timeout { approval_key } => SessionUpdate::TimedOut { approval_key },
        };
        vec![update]
    }

    fn close_group(&mut self) -> Vec<SessionUpdate> {
        match self.group.take() {
            Some(mut group) => {
                group.finished = true;
                vec![SessionUpdate::ToolGroup(group)]
            }
            None => Vec::new(),
        }
    }

    /// The turn is over: an open group is closed and half-received blocks dropped.
    fn end_turn(&mut self, last: SessionUpdate) -> Vec<SessionUpdate> {
        if !self.open.is_empty() {
            tracing::warn!(blocks = self.open.len(), "turn ended with unfinished blocks; dropping them");
            self.open.clear();
        }
        let mut out = self.close_group();
        out.push(last);
        out
    }
}

/// Text arriving in pieces, kept up to [`MAX_TEXT_BYTES`] (cut on a character
/// boundary). What did not fit is counted and reported by a "… [truncated N bytes]"
/// marker. Every connector that collects streamed text uses it, so a runaway stream
/// never grows the bridge's memory.
#[derive(Debug, Default)]
pub struct CappedText {
    text: String,
    /// Bytes beyond [`MAX_TEXT_BYTES`] that were not kept.
    dropped: usize,
}

impl CappedText {
    pub fn push(&mut self, more: &str) {
        // Once something was dropped nothing more is kept, so the text never has a gap.
        let room = if self.dropped > 0 { 0 } else { MAX_TEXT_BYTES.saturating_sub(self.text.len()) };
        if more.len() > room {
            let mut cut = room.min(more.len());
            while !more.is_char_boundary(cut) {
                cut -= 1;
            }
            self.text.push_str(&more[..cut]);
            self.dropped += more.len() - cut;
        } else {
            self.text.push_str(more);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty() && self.dropped == 0
    }

    /// The text kept so far, without the marker (the complete text adds it).
    pub fn so_far(&self) -> String {
        self.text.clone()
    }

    /// The text so far, with the marker when something was dropped; starts over.
    pub fn take(&mut self) -> String {
        let mut text = std::mem::take(&mut self.text);
        let dropped = std::mem::take(&mut self.dropped);
        if dropped > 0 {
            tracing::warn!(dropped, "a text exceeded {MAX_TEXT_BYTES} bytes; truncated");
            text.push_str(&format!("… [truncated {dropped} bytes]"));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::RequestKind;
    use serde_json::json;

    fn feed(a: &mut Assembler, events: &[serde_json::Value]) -> Vec<SessionUpdate> {
        events.iter().flat_map(|e| a.push(serde_json::from_value(e.clone()).unwrap(), 0)).collect()
    }

    /// Feeds `(ms, event)` pairs, each arriving at its time.
    fn feed_timed(a: &mut Assembler, events: &[(i64, serde_json::Value)]) -> Vec<SessionUpdate> {
        events.iter().flat_map(|(ms, e)| a.push(serde_json::from_value(e.clone()).unwrap(), *ms)).collect()
    }

    fn text_delta(index: u64, text: &str) -> serde_json::Value {
        json!({"type":"content_block_delta","index":index,"delta":{"type":"text_delta","text":text}})
    }

    fn progress(block: u64, text: &str) -> SessionUpdate {
        SessionUpdate::TextProgress { block, text_so_far: text.into() }
    }

    #[test]
    fn a_long_text_reports_its_progress_at_most_once_a_second_and_its_end_names_the_block() {
        let mut a = Assembler::default();
        let start = 1_767_225_600_000;
        let out = feed_timed(
            &mut a,
            &[
                (start, json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":"Một"}})),
                (start + 400, text_delta(0, ", hai")),
                // A second after the start: the first report, with everything so far.
                (start + 1_000, text_delta(0, ", ba")),
                (start + 1_500, text_delta(0, ", bốn")),
                (start + 1_999, text_delta(0, ", năm")),
                // A second after the first report: the next.
                (start + 2_000, text_delta(0, ", sáu")),
                (start + 2_600, text_delta(0, ", bảy.")),
                (start + 2_700, json!({"type":"content_block_stop","index":0})),
            ],
        );
        let block = u64::try_from(start + 1_000).unwrap();
        assert_eq!(
            out,
            vec![
                progress(block, "Một, hai, ba"),
                progress(block, "Một, hai, ba, bốn, năm, sáu"),
                SessionUpdate::Text { text: "Một, hai, ba, bốn, năm, sáu, bảy.".into(), is_final: false, block: Some(block) },
            ]
        );
    }

    #[test]
    fn a_text_done_within_a_second_is_one_text_without_a_block() {
        let mut a = Assembler::default();
        let out = feed_timed(
            &mut a,
            &[
                (5_000, json!({"type":"content_block_start","index":0,"content_block":{"type":"text"}})),
                (5_300, text_delta(0, "Xin ")),
                (5_999, text_delta(0, "chào")),
                (9_000, json!({"type":"content_block_stop","index":0})),
            ],
        );
        assert_eq!(out, vec![SessionUpdate::Text { text: "Xin chào".into(), is_final: false, block: None }]);
    }

    #[test]
    fn every_streamed_block_gets_its_own_id_even_in_the_same_millisecond() {
        let mut a = Assembler::default();
        let out = feed_timed(
            &mut a,
            &[
                (0, json!({"type":"content_block_start","index":0,"content_block":{"type":"text"}})),
                (0, json!({"type":"content_block_start","index":1,"content_block":{"type":"text"}})),
                (1_000, text_delta(0, "a")),
                (1_000, text_delta(1, "b")),
                (1_100, json!({"type":"content_block_stop","index":1})),
                (1_200, json!({"type":"content_block_stop","index":0})),
            ],
        );
        assert_eq!(
            out,
            vec![
                progress(1_000, "a"),
                progress(1_001, "b"),
                SessionUpdate::Text { text: "b".into(), is_final: false, block: Some(1_001) },
                SessionUpdate::Text { text: "a".into(), is_final: false, block: Some(1_000) },
            ]
        );
        // A later block reporting at the same clock reading (or an earlier one, the
        // clock stepped back) never reuses an id.
        let later = feed_timed(&mut a, &[(0, json!({"type":"content_block_start","index":2,"content_block":{"type":"text"}})), (1_000, text_delta(2, "c"))]);
        assert_eq!(later, vec![progress(1_002, "c")]);
    }

    #[test]
    fn a_delta_without_text_reports_nothing() {
        let mut a = Assembler::default();
        let out = feed_timed(
            &mut a,
            &[
                (0, json!({"type":"content_block_start","index":0,"content_block":{"type":"text"}})),
                (2_000, json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta"}})),
            ],
        );
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn text_is_emitted_whole_at_its_stop() {
        let mut a = Assembler::default();
        let out = feed(
            &mut a,
            &[
                json!({"type":"content_block_start","index":0,"content_block":{"type":"text","is_final":true}}),
                json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Xin "}}),
                json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"chào"}}),
            ],
        );
        assert!(out.is_empty());
        let out = feed(&mut a, &[json!({"type":"content_block_stop","index":0})]);
        assert_eq!(out, vec![SessionUpdate::Text { text: "Xin chào".into(), is_final: true, block: None }]);
    }

    #[test]
    fn a_runaway_text_block_is_capped_with_a_marker() {
        let mut a = Assembler::default();
        let chunk = "ă".repeat(10_000); // 20 000 bytes, two per character
        let mut events = vec![json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":"Start "}})];
        for _ in 0..10 {
            events.push(json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":chunk}}));
        }
        events.push(json!({"type":"content_block_stop","index":0}));
        let out = feed(&mut a, &events);
        let [SessionUpdate::Text { text, .. }] = out.as_slice() else { panic!("{out:?}") };
        let total = "Start ".len() + 10 * chunk.len();
        // 65 536 - 6 = 65 530 bytes of "ă" fit: 32 765 characters, none split.
        let kept = "Start ".len() + 65_530;
        let expected = format!("Start {}… [truncated {} bytes]", "ă".repeat(32_765), total - kept);
        assert_eq!(text, &expected);
        assert!(text.len() < MAX_TEXT_BYTES + 64);

        // The next block starts from nothing again, and a short one is untouched.
        let out = feed(
            &mut a,
            &[
                json!({"type":"content_block_start","index":1,"content_block":{"type":"text"}}),
                json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"ok"}}),
                json!({"type":"content_block_stop","index":1}),
            ],
        );
        assert_eq!(out, vec![SessionUpdate::Text { text: "ok".into(), is_final: false, block: None }]);
    }

    #[test]
    fn a_huge_start_text_is_capped_on_a_character_boundary() {
        let mut a = Assembler::default();
        // Two bytes of "xy" put the cap in the middle of a 3-byte character.
        let text = format!("xy{}", "漢".repeat(30_000));
        let out = feed(
            &mut a,
            &[json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":text}}), json!({"type":"content_block_stop","index":0})],
        );
        let [SessionUpdate::Text { text: got, .. }] = out.as_slice() else { panic!("{out:?}") };
        // 65 534 bytes remain after "xy": 21 844 whole characters (65 532 bytes) fit.
        assert_eq!(got, &format!("xy{}… [truncated {} bytes]", "漢".repeat(21_844), 3 * (30_000 - 21_844)));
    }

    #[test]
    fn blocks_left_open_are_bounded() {
        let mut a = Assembler::default();
        for index in 0..(MAX_OPEN_BLOCKS as u64 + 10) {
            feed(&mut a, &[json!({"type":"content_block_start","index":index,"content_block":{"type":"text","text":"t"}})]);
        }
        assert_eq!(a.open.len(), MAX_OPEN_BLOCKS);
        // An open one still completes; one past the bound was never kept.
        let first = feed(&mut a, &[json!({"type":"content_block_stop","index":0})]);
        assert_eq!(first, vec![SessionUpdate::Text { text: "t".into(), is_final: false, block: None }]);
        let ignored = feed(&mut a, &[json!({"type":"content_block_stop","index":MAX_OPEN_BLOCKS as u64 + 5})]);
        assert!(ignored.is_empty());
    }

    #[test]
    fn thinking_is_not_shown() {
        let mut a = Assembler::default();
        let out = feed(
            &mut a,
            &[
                json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking"}}),
                json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}),
                json!({"type":"content_block_stop","index":0}),
            ],
        );
        assert!(out.is_empty());
    }

    #[test]
    fn a_tool_group_is_one_evolving_status() {
        let mut a = Assembler::default();
        let out = feed(
            &mut a,
            &[
                json!({"type":"group_start","summary":"Chuẩn bị"}),
                json!({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"tc-1","name":"write_todos"}}),
                json!({"type":"content_block_stop","index":1}),
                json!({"type":"content_block_start","index":2,"content_block":{"type":"tool_result","tool_use_id":"tc-1","status":"success"}}),
                json!({"type":"content_block_stop","index":2}),
                json!({"type":"group_end","summary":"Chuẩn bị xong"}),
            ],
        );
        let groups: Vec<_> = out
            .iter()
            .map(|u| match u {
                SessionUpdate::ToolGroup(g) => g.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert!(groups.iter().all(|g| g.group == 1));
        let last = groups.last().unwrap();
        assert!(last.finished);
        assert_eq!(last.line(), "⚙ Chuẩn bị xong: write_todos ✓");
    }

    #[test]
    fn seed_000_request_completes_at_stop() {
        let mut a = Assembler::default();
        let start: serde_json::Value = serde_json::from_str(include_str!("../../tests/fixtures/seed000/01_stream_approval_request_start.json")).unwrap();
        let delta: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/fixtures/seed000/02_stream_approval_request_delta_questions.json")).unwrap();
        assert!(feed(&mut a, &[start, delta]).is_empty());
        let out = feed(&mut a, &[json!({"type":"content_block_stop","index":3})]);
        let [SessionUpdate::Request(r)] = out.as_slice() else { panic!("{out:?}") };
        assert_eq!(r.approval_key, "session-id_1");
        assert!(matches!(&r.kind, RequestKind::Questions { questions, .. } if questions.len() == 2));
    }

    #[test]
    fn approval_result_and_timeout() {
        let mut a = Assembler::default();
        let mut events: Vec<serde_json::Value> = ["08_stream_approval_result_start", "09_stream_approval_result_delta", "10_stream_approval_result_stop"]
            .iter()
            .map(|f| serde_json::from_str(&std::fs::read_to_string(format!("tests/fixtures/seed002/{f}.json")).unwrap()).unwrap())
            .collect();
        let out = feed(&mut a, &events);
        assert_eq!(
            out,
            vec![SessionUpdate::Resolved {
                approval_key: "abc-123_1".into(),
                reply: Some(Reply::Decisions { decisions: vec![Decision::Approve], user_edit_content: None }),
            }]
        );
        events = ["11_stream_approval_timeout_start", "12_stream_approval_timeout_stop"]
            .iter()
            .map(|f| serde_json::from_str(&std::fs::read_to_string(format!("tests/fixtures/seed002/{f}.json")).unwrap()).unwrap())
            .collect();
        assert_eq!(feed(&mut a, &events), vec![SessionUpdate::TimedOut { approval_key: "abc-123_1".into() }]);
    }

    #[test]
    fn a_request_without_actions_is_reported_not_dropped() {
        let mut a = Assembler::default();
        let out = feed(
            &mut a,
            &[
                json!({"type":"content_block_start","index":0,"content_block":{"type":"approval_request","approval_key":"k"}}),
                json!({"type":"content_block_stop","index":0}),
            ],
        );
        assert!(matches!(out.as_slice(), [SessionUpdate::InvalidRequest { approval_key, .. }] if approval_key == "k"));
    }

    #[test]
    fn message_stop_closes_an_open_group_and_ends_the_turn() {
        let mut a = Assembler::default();
        let out = feed(&mut a, &[json!({"type":"group_start"}), json!({"type":"message_stop"})]);
        assert!(matches!(out.last(), Some(SessionUpdate::TurnEnded)));
        assert!(matches!(&out[out.len() - 2], SessionUpdate::ToolGroup(g) if g.finished));
    }
}
