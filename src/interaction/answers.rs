//! A question's answer while it is being given, and its encoding on the wire
//! (PROTOCOL.md §2): single label verbatim; multi-select labels joined with ", " in
//! option order; typed text in place of the input option's label (the bridge's own
//! "Other" text goes last); "[No preference]" for a skipped question.

use serde::{Deserialize, Serialize};

use super::question::{FreeText, Question};

pub const NO_PREFERENCE: &str = "[No preference]";

/// The longest free-text answer accepted (Discord's text-input limit).
pub const MAX_TEXT_CHARS: usize = 4000;

/// One question's answer in progress. Stored as it changes, so a restart keeps it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerDraft {
    /// Chosen option indexes, ascending, without duplicates.
    pub selected: Vec<usize>,
    /// Typed free text.
    pub text: Option<String>,
    pub skipped: bool,
}

impl AnswerDraft {
    /// Whether the person did anything with this question yet.
    pub fn is_answered(&self) -> bool {
        self.skipped || !self.selected.is_empty() || self.text.is_some()
    }

    /// Replaces the selection. The caller has checked the indexes.
    pub(crate) fn select(&mut self, question: &Question, mut options: Vec<usize>) {
        options.sort_unstable();
        options.dedup();
        if !question.multi_select {
            // A single-select answer is either an option or typed text, never both,
            // unless the chosen option is the input option the text belongs to.
            let keeps_text = options.first().map(|&i| question.free_text == FreeText::InputOption(i));
            if keeps_text != Some(true) {
                self.text = None;
            }
        }
        self.selected = options;
        self.skipped = false;
    }

    pub(crate) fn toggle(&mut self, question: &Question, option: usize) {
        if !question.multi_select {
            return self.select(question, vec![option]);
        }
        match self.selected.binary_search(&option) {
            Ok(pos) => {
                self.selected.remove(pos);
                if question.free_text == FreeText::InputOption(option) {
                    self.text = None;
                }
            }
            Err(pos) => self.selected.insert(pos, option),
        }
        self.skipped = false;
    }

    pub(crate) fn set_text(&mut self, question: &Question, text: String) {
        if let FreeText::InputOption(i) = question.free_text {
            if question.multi_select {
                if let Err(pos) = self.selected.binary_search(&i) {
                    self.selected.insert(pos, i);
                }
            } else {
                self.selected = vec![i];
            }
        } else if !question.multi_select {
            self.selected.clear();
        }
        self.text = Some(text);
        self.skipped = false;
    }

    pub(crate) fn skip(&mut self) {
        *self = AnswerDraft { skipped: true, ..AnswerDraft::default() };
    }
}

/// The answer string the backend receives for `question`.
pub fn encode(question: &Question, draft: &AnswerDraft) -> String {
    let labels = selected_labels(question, draft);
    if labels.is_empty() { NO_PREFERENCE.to_owned() } else { labels.join(", ") }
}

/// The chosen labels in option order, typed text in place of the input option's label
/// (the bridge's own "Other" text last); empty when skipped or unanswered. This is
/// Agno's `selected_options` (seed 004), and [`encode`] joins it.
pub fn selected_labels(question: &Question, draft: &AnswerDraft) -> Vec<String> {
    if draft.skipped || !draft.is_answered() {
        return Vec::new();
    }
    let typed = draft.text.as_deref();
    let mut parts: Vec<&str> = draft
        .selected
        .iter()
        .filter_map(|&i| question.options.get(i).map(|o| (i, o)))
        .map(|(i, option)| match typed {
            Some(text) if question.free_text == FreeText::InputOption(i) => text,
            _ => option.label.as_str(),
        })
        .collect();
    if question.free_text == FreeText::Other {
        parts.extend(typed);
    }
    if !question.multi_select {
        parts.truncate(1);
    }
    parts.into_iter().map(str::to_owned).collect()
}

/// An answer string back to the labels it chose, for backends that want a list (Agno's
/// `selected_options`, an ACP form's multi-select). The answer is the
/// chosen labels in option order joined with ", ", then any typed text (PROTOCOL.md
/// §2); labels may themselves contain ", ", so the split is a search for the labels
/// (exact, case-sensitive) that spell the answer, preferring the reading that leaves
/// the least typed text. Typed text goes last, verbatim, as one more entry;
/// `[No preference]` (skipped) is the empty list.
pub fn decode_labels(labels: &[String], answer: &str) -> Vec<String> {
    if answer == NO_PREFERENCE && !labels.iter().any(|l| l == NO_PREFERENCE) {
        return Vec::new();
    }
    let mut best: Option<(usize, Vec<usize>)> = None;
    let mut path = Vec::new();
    search(labels, answer, 0, 0, &mut path, &mut best);
    let (rest_at, chosen) = best.unwrap_or((0, Vec::new()));
    let mut selected: Vec<String> = chosen.iter().map(|&i| labels[i].clone()).collect();
    let typed = &answer[rest_at..];
    if !typed.is_empty() {
        selected.push(typed.to_owned());
    }
    selected
}

/// Depth-first over "label i, then a later label" readings of `answer[at..]`;
/// `best` keeps the reading whose typed remainder starts latest.
fn search(labels: &[String], answer: &str, at: usize, from: usize, path: &mut Vec<usize>, best: &mut Option<(usize, Vec<usize>)>) {
    // Stopping here leaves answer[at..] as typed text.
    let remainder = answer.len() - at;
    if best.as_ref().is_none_or(|(best_at, _)| remainder < answer.len() - best_at) {
        *best = Some((at, path.clone()));
    }
    if remainder == 0 {
        return;
    }
    for (i, label) in labels.iter().enumerate().skip(from) {
        if label.is_empty() || !answer[at..].starts_with(label.as_str()) {
            continue;
        }
        let end = at + label.len();
        let next = if end == answer.len() {
            end
        } else if answer[end..].starts_with(", ") {
            end + 2
        } else {
            continue;
        };
        path.push(i);
        search(labels, answer, next, i + 1, path, best);
        path.pop();
        if best.as_ref().is_some_and(|(best_at, _)| *best_at == answer.len()) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::question::questions_from_args;
    use proptest::prelude::*;
    use serde_json::json;

    fn question(multi: bool, with_input: bool) -> Question {
        let mut options = vec![json!({"label":"Ngân hàng"}), json!({"label":"Thép (Steel)"}), json!({"label":"Bất động sản (Recommended)"})];
        if with_input {
            options.push(json!({"label":"Khác","input":true}));
        }
        questions_from_args(&json!({"questions":[{"question":"Nhóm ngành?","multiSelect":multi,"options":options}]})).unwrap().remove(0)
    }

    fn draft_with(q: &Question, steps: impl FnOnce(&mut AnswerDraft, &Question)) -> String {
        let mut d = AnswerDraft::default();
        steps(&mut d, q);
        encode(q, &d)
    }

    #[test]
    fn labels_are_matched_exactly_and_typed_text_goes_last() {
        let labels: Vec<String> = ["A", "A, B", "C", "Museums, galleries"].iter().map(|s| s.to_string()).collect();
        assert_eq!(decode_labels(&labels, "A, B, C"), vec!["A, B", "C"], "the reading that leaves no typed text wins");
        assert_eq!(decode_labels(&labels, "Museums, galleries"), vec!["Museums, galleries"]);
        assert_eq!(decode_labels(&labels, "A, my own idea"), vec!["A", "my own idea"]);
        assert_eq!(decode_labels(&labels, "something else"), vec!["something else"]);
        assert_eq!(decode_labels(&labels, "a"), vec!["a"], "case matters: typed text, not label A");
        assert_eq!(decode_labels(&labels, NO_PREFERENCE), Vec::<String>::new());
        assert_eq!(decode_labels(&labels, ""), Vec::<String>::new());
    }

    #[test]
    fn single_select_label_is_verbatim() {
        let q = question(false, true);
        assert_eq!(draft_with(&q, |d, q| d.select(q, vec![2])), "Bất động sản (Recommended)");
    }

    #[test]
    fn multi_select_joins_in_option_order_not_click_order() {
        let q = question(true, false);
        let answer = draft_with(&q, |d, q| {
            d.toggle(q, 1);
            d.toggle(q, 0);
        });
        assert_eq!(answer, "Ngân hàng, Thép (Steel)");
    }

    #[test]
    fn typed_text_replaces_the_input_option_label() {
        let q = question(true, true);
        let answer = draft_with(&q, |d, q| {
            d.toggle(q, 0);
            d.set_text(q, "Công nghệ".into());
        });
        assert_eq!(answer, "Ngân hàng, Công nghệ");
        let q = question(false, true);
        assert_eq!(draft_with(&q, |d, q| d.set_text(q, "Công nghệ".into())), "Công nghệ");
    }

    #[test]
    fn bridge_other_text_goes_last() {
        let q = question(true, false);
        let answer = draft_with(&q, |d, q| {
            d.set_text(q, "Năng lượng".into());
            d.toggle(q, 2);
        });
        assert_eq!(answer, "Bất động sản (Recommended), Năng lượng");
    }

    #[test]
    fn single_select_option_after_text_drops_the_text() {
        let q = question(false, false);
        let answer = draft_with(&q, |d, q| {
            d.set_text(q, "x".into());
            d.select(q, vec![0]);
        });
        assert_eq!(answer, "Ngân hàng");
    }

    #[test]
    fn skipped_and_unanswered_mean_no_preference() {
        let q = question(true, true);
        assert_eq!(draft_with(&q, |d, _| d.skip()), NO_PREFERENCE);
        assert_eq!(draft_with(&q, |_, _| {}), NO_PREFERENCE);
        assert_eq!(
            draft_with(&q, |d, q| {
                d.toggle(q, 0);
                d.skip();
            }),
            NO_PREFERENCE
        );
    }

    #[test]
    fn untoggling_the_input_option_drops_its_text() {
        let q = question(true, true);
        let answer = draft_with(&q, |d, q| {
            d.set_text(q, "x".into());
            d.toggle(q, 3);
            d.toggle(q, 1);
        });
        assert_eq!(answer, "Thép (Steel)");
    }

    proptest! {
        /// Whatever the click order, a multi-select answer lists the chosen labels once
        /// each, in option order, joined by ", ".
        #[test]
        fn multi_select_encoding_is_option_ordered(clicks in prop::collection::vec(0usize..3, 0..12)) {
            let q = question(true, false);
            let mut d = AnswerDraft::default();
            for &c in &clicks { d.toggle(&q, c); }
            let mut expected: Vec<usize> = (0..3).filter(|i| clicks.iter().filter(|&&c| c == *i).count() % 2 == 1).collect();
            expected.sort();
            let encoded = encode(&q, &d);
            if expected.is_empty() {
                prop_assert_eq!(encoded, NO_PREFERENCE);
            } else {
                let want: Vec<&str> = expected.iter().map(|&i| q.options[i].label.as_str()).collect();
                prop_assert_eq!(encoded, want.join(", "));
            }
        }

        /// A single-select answer is always exactly one label or the last typed text,
        /// whatever was clicked before.
        #[test]
        fn single_select_encodes_one_choice(ops in prop::collection::vec((0usize..3, any::<bool>()), 1..10)) {
            let q = question(false, false);
            let mut d = AnswerDraft::default();
            for &(i, typed) in &ops {
                if typed { d.set_text(&q, format!("typed {i}")) } else { d.select(&q, vec![i]) }
            }
            let (last, typed) = *ops.last().unwrap();
            let want = if typed { format!("typed {last}") } else { q.options[last].label.clone() };
            prop_assert_eq!(encode(&q, &d), want);
        }
    }
}
