//! The agent's last words after a reconnect (PROTOCOL.md §7): which of the agent's texts
//! in the turn in progress no chat has been shown, read from the backend's history, and
//! which texts arriving live after that are the backend sending again what it said while
//! no connection was open (the reference agent does; the protocol does not promise it),
//! so the person sees each text once either way.
//!
//! Pure: [`TurnTexts`] counts the texts of the session's open turn relayed to the engine
//! (live or from history), starting from what the store says the chats have shown; the
//! session task ([`super::session`]) does the reading, relaying and recording.
//!
//! A turn in the history is what follows its last user message: the agent's text blocks
//! there, in order, are the turn's texts, and the first `n` of them are the ones the
//! chats have shown when the store counts `n`. Empty texts are never shown, so they are
//! not counted.

use std::collections::VecDeque;

use super::SessionUpdate;
use super::assembler::CappedText;
use crate::protocol::{HistoryBlock, HistoryMessage};

/// One of the turn's texts, as the chats would be shown it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnText {
    pub text: String,
    pub is_final: bool,
}

impl TurnText {
    pub fn into_update(self) -> SessionUpdate {
        SessionUpdate::Text { text: self.text, is_final: self.is_final, block: None }
    }
}

/// The agent's non-empty texts after the last user message, each cut as a streamed text
/// would be (so it compares equal to the same text arriving live).
pub fn turn_texts(messages: &[HistoryMessage]) -> Vec<TurnText> {
    let turn_starts = messages.iter().rposition(|m| m.role == "user").map_or(0, |user| user + 1);
    messages[turn_starts..]
        .iter()
        .filter(|m| m.role == "assistant")
        .flat_map(|m| &m.content)
        .filter_map(|block| match block {
            HistoryBlock::Text { text, is_final } if !text.is_empty() => {
                let mut capped = CappedText::default();
                capped.push(text);
                Some(TurnText { text: capped.take(), is_final: *is_final })
            }
            _ => None,
        })
        .collect()
}

/// What the session task knows of its open turn's texts.
#[derive(Debug, Default)]
pub struct TurnTexts {
    /// The open turn the count belongs to (when it opened), if the store has one.
    turn: Option<i64>,
    /// The turn's texts relayed to the engine so far, live or from history.
    relayed: u64,
    /// Texts just relayed from history, in order, that the backend may send again live.
    echoes: VecDeque<String>,
}

impl TurnTexts {
    /// The store has the turn opened at `opened_at_ms`, whose chats have shown `shown`
    /// texts: a turn other than the one counted starts from `shown`; the same turn keeps
    /// the higher count (texts relayed here may not be shown, hence recorded, yet).
    pub fn track(&mut self, opened_at_ms: i64, shown: u64) {
        if self.turn == Some(opened_at_ms) {
            self.relayed = self.relayed.max(shown);
        } else {
            *self = TurnTexts { turn: Some(opened_at_ms), relayed: shown, echoes: VecDeque::new() };
        }
    }

    /// The history's texts of the turn beyond those relayed, now counted as relayed, and
    /// expected to arrive again live (see [`TurnTexts::live`]). Nothing without a turn.
    pub fn beyond(&mut self, messages: &[HistoryMessage]) -> Vec<TurnText> {
        if self.turn.is_none() {
            return Vec::new();
        }
        let skip = usize::try_from(self.relayed).unwrap_or(usize::MAX);
        let new: Vec<TurnText> = turn_texts(messages).into_iter().skip(skip).collect();
        self.relayed += new.len() as u64;
        self.echoes = new.iter().map(|t| t.text.clone()).collect();
        new
    }

    /// A text the backend sent live. False when it repeats one just relayed from history:
    /// a backend sending again what it said while no connection was open sends it in
    /// order, before anything new, so a match drops every expected text up to it and the
    /// first text matching none ends the repeats. True otherwise: relay it (counted).
    pub fn live(&mut self, text: &str) -> bool {
        if let Some(at) = self.echoes.iter().position(|echo| echo == text) {
            self.echoes.drain(..=at);
            return false;
        }
        self.echoes.clear();
        self.relayed += 1;
        true
    }

    /// Whether texts relayed from history may still arrive again live: a text still
    /// streaming may be one of them, so its progress is not shown (its complete text
    /// is, unless it is a repeat).
    pub fn awaits_echoes(&self) -> bool {
        !self.echoes.is_empty()
    }

    /// What to record once the chats have shown what was relayed so far; `None` while
    /// the store has no open turn.
    pub fn shown(&self) -> Option<SessionUpdate> {
        self.turn.map(|opened_at_ms| SessionUpdate::TurnShown { opened_at_ms, texts: self.relayed, ended: false })
    }

    /// The turn is over: what to record once the chats have shown its last words
    /// (`None` when the store had no turn), and nothing is counted any more.
    pub fn end(&mut self) -> Option<SessionUpdate> {
        let ended = self.turn.take().map(|opened_at_ms| SessionUpdate::TurnShown { opened_at_ms, texts: self.relayed, ended: true });
        *self = TurnTexts::default();
        ended
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn history(value: serde_json::Value) -> Vec<HistoryMessage> {
        serde_json::from_value(value).expect("history")
    }

    fn texts(list: &[TurnText]) -> Vec<&str> {
        list.iter().map(|t| t.text.as_str()).collect()
    }

    /// Two turns; the second's texts are around a resolved request, with an empty one.
    fn two_turns() -> Vec<HistoryMessage> {
        history(json!([
            {"role":"user","content":[{"type":"text","text":"first"}]},
            {"role":"assistant","content":[{"type":"text","text":"old answer","is_final":true}]},
            {"role":"user","content":[{"type":"text","text":"trade"}]},
            {"role":"assistant","content":[{"type":"thinking","thinking":"…"}]},
            {"role":"assistant","content":[{"type":"text","text":"Tôi sẽ đặt lệnh."}]},
            {"role":"assistant","content":[{"type":"approval_request","approval_key":"s_1","isResolved":true,"actionRequests":[]}]},
            {"role":"assistant","content":[{"type":"text","text":""}]},
            {"role":"tool","content":[]},
            {"role":"assistant","content":[{"type":"text","text":"Đã đặt lệnh.","is_final":true}]}
        ]))
    }

    #[test]
    fn the_turn_is_what_follows_the_last_user_message() {
        let all = turn_texts(&two_turns());
        assert_eq!(all, vec![TurnText { text: "Tôi sẽ đặt lệnh.".into(), is_final: false }, TurnText { text: "Đã đặt lệnh.".into(), is_final: true }]);
        // Seed 000's two rounds: one turn, whose only text is the final summary.
        let seed: Vec<HistoryMessage> = serde_json::from_str(include_str!("../../tests/fixtures/seed000/10_history_two_rounds.json")).unwrap();
        assert_eq!(texts(&turn_texts(&seed)), ["Cảm ơn! Tổng kết..."]);
        assert!(turn_texts(&[]).is_empty());
    }

    #[test]
    fn only_the_texts_beyond_those_shown_are_relayed_and_only_once() {
        let mut turn = TurnTexts::default();
        assert!(turn.beyond(&two_turns()).is_empty(), "no open turn: nothing to relay");
        turn.track(7, 1);
        let relayed = turn.beyond(&two_turns());
        assert_eq!(texts(&relayed), ["Đã đặt lệnh."]);
        assert_eq!(turn.shown(), Some(SessionUpdate::TurnShown { opened_at_ms: 7, texts: 2, ended: false }));
        assert!(turn.beyond(&two_turns()).is_empty(), "a second read relays nothing again");

        let mut nothing_shown = TurnTexts::default();
        nothing_shown.track(7, 0);
        assert_eq!(texts(&nothing_shown.beyond(&two_turns())), ["Tôi sẽ đặt lệnh.", "Đã đặt lệnh."]);
        let mut all_shown = TurnTexts::default();
        all_shown.track(7, 2);
        assert!(all_shown.beyond(&two_turns()).is_empty());
        let mut more_shown_than_held = TurnTexts::default();
        more_shown_than_held.track(7, 5);
        assert!(more_shown_than_held.beyond(&two_turns()).is_empty());
    }

    #[test]
    fn a_reconnect_in_the_same_turn_counts_what_was_relayed_even_if_not_recorded_yet() {
        let mut turn = TurnTexts::default();
        turn.track(7, 0);
        assert!(turn.live("Tôi sẽ đặt lệnh."));
        // The store has not recorded it (the chat is still sending it): not again.
        turn.track(7, 0);
        assert_eq!(texts(&turn.beyond(&two_turns())), ["Đã đặt lệnh."]);
        // A new turn starts from what the store says.
        turn.track(9, 0);
        assert_eq!(turn.shown(), Some(SessionUpdate::TurnShown { opened_at_ms: 9, texts: 0, ended: false }));
    }

    #[test]
    fn what_the_backend_sends_again_live_is_not_shown_twice() {
        let messages = history(json!([
            {"role":"user","content":[{"type":"text","text":"go"}]},
            {"role":"assistant","content":[{"type":"text","text":"one"}]},
            {"role":"assistant","content":[{"type":"text","text":"two"}]},
            {"role":"assistant","content":[{"type":"text","text":"three"}]}
        ]));
        let mut turn = TurnTexts::default();
        turn.track(1, 0);
        assert_eq!(texts(&turn.beyond(&messages)), ["one", "two", "three"]);
        assert!(turn.awaits_echoes(), "a text streaming now may be a repeat: its progress is not shown");
        // The backend lost "one" on the dead connection and sends the rest again.
        assert!(!turn.live("two"));
        assert!(!turn.live("three"));
        // Then something new, even if it says the same again: shown.
        assert!(turn.live("four"));
        assert!(!turn.awaits_echoes());
        assert!(turn.live("two"));
        assert_eq!(turn.shown(), Some(SessionUpdate::TurnShown { opened_at_ms: 1, texts: 5, ended: false }));

        // A backend that does not send again: its first new text ends the repeats.
        let mut turn = TurnTexts::default();
        turn.track(1, 0);
        turn.beyond(&messages);
        assert!(turn.live("new"));
        assert!(turn.live("three"), "after a new text, an equal one is the agent speaking again");
    }

    #[test]
    fn the_end_names_the_turn_and_counts_nothing_after() {
        let mut turn = TurnTexts::default();
        assert_eq!(turn.end(), None);
        assert!(turn.live("no turn"));
        assert_eq!(turn.shown(), None, "without a turn in the store there is nothing to record");
        turn.track(3, 1);
        assert!(turn.live("x"));
        assert_eq!(turn.end(), Some(SessionUpdate::TurnShown { opened_at_ms: 3, texts: 2, ended: true }));
        assert_eq!(turn.shown(), None);
    }

    #[test]
    fn a_text_too_long_for_the_stream_compares_as_it_would_arrive() {
        let long = "x".repeat(super::super::assembler::MAX_TEXT_BYTES + 10);
        let messages = history(json!([{"role":"assistant","content":[{"type":"text","text":long}]}]));
        let [only] = turn_texts(&messages).try_into().expect("one text");
        assert!(only.text.ends_with("… [truncated 10 bytes]"), "{}", &only.text[only.text.len() - 40..]);
    }
}
