//! What a component's `custom_id` means. The id itself is a signed token
//! ([`TokenSigner`](crate::platform::kit::token::TokenSigner)) whose action code is one of
//! these: short, with indexes only, never labels or question text. Parsing is strict;
//! a code that does not parse is treated like a forged token. The spellings below are a
//! table over the kit's grammar ([`crate::platform::kit::codes`]).

use super::limits;

use crate::platform::kit::codes::{Decide, Grammar, Limit, NameEnd, vocabulary};

/// One button, select or modal, as its code names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// A button that decides on its own: approve, approve for the session or reject
    /// one action (`ap.0`, `as.0`, `rj.0`), all at once (`apa`, `rja`), submit
    /// (`sub`), approve and remember for the session (`rms`) or always (`rma`).
    Decide(Decide),
    /// Opens the edit modal for an action.
    Edit(usize),
    /// Opens the comment modal for an action.
    Respond(usize),
    /// The select menu of a question.
    Select(usize),
    /// Opens the Other… modal for the questions on a page.
    Other(usize),
    /// Skips every question and submits.
    Skip,
    /// Shows another page of actions or questions.
    Page(usize),
    /// The edit modal's submit.
    EditModal(usize),
    /// The comment modal's submit.
    RespondModal(usize),
    /// The Other… modal's submit, for a page.
    OtherModal(usize),
}

/// Discord's grammar: a name, then its indexes after dots (`ap.0`), in a custom_id of
/// at most 100 characters.
pub const GRAMMAR: Grammar = Grammar { name_end: NameEnd::AtDot, limit: Limit::Chars(limits::CUSTOM_ID) };

vocabulary! {
    Code, GRAMMAR; dotted decisions;
    "rj" [i] => { Code::Decide(Decide::Reject(i)) },
    "ed" [i] => { Code::Edit(i) },
    "rs" [i] => { Code::Respond(i) },
    "sel" [q] => { Code::Select(q) },
    "oth" [p] => { Code::Other(p) },
    "skp" [] => { Code::Skip },
    "pg" [p] => { Code::Page(p) },
    "med" [i] => { Code::EditModal(i) },
    "mrs" [i] => { Code::RespondModal(i) },
    "mot" [p] => { Code::OtherModal(p) },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::RememberScope;

    #[test]
    fn buttons_already_sent_keep_their_meaning() {
        let sent = [
            ("rms", Code::Decide(Decide::Remember(RememberScope::Session))),
            ("as.0", Code::Decide(Decide::ApproveForSession(0))),
            ("rj.3", Code::Decide(Decide::Reject(3))),
        ];
        for (spelled, code) in sent {
            assert_eq!(Code::parse(spelled), Some(code), "{spelled}");
        }
    }

    #[test]
    fn junk_does_not_parse() {
        for junk in [
            "",
            "ap",
            "ap.",
            "ap.x",
            "ap.-1",
            "ap.+1",
            "ap. 1",
            "ap.12345",
            "sub.1",
            "zz.1",
            "pg.99999999999999999999999",
            "rms.0",
            "rma.",
            "rm",
            "rmx",
            "RMS",
            "rms ",
        ] {
            assert_eq!(Code::parse(junk), None, "{junk}");
        }
    }
}
