//! One grammar for button codes: the `code` part of a signed, versioned callback token
//! ([`TokenSigner`](crate::platform::kit::token::TokenSigner), DESIGN.md "Callback tokens").
//!
//! A code is a short name and at most two decimal indexes, never labels, question text
//! or args, so a token stays within the platform's limit whatever a card says. Each
//! platform keeps its own spellings (buttons already sent carry them, so they cannot
//! change) and states them once, as a table given to [`vocabulary!`]; the table yields
//! both `encode` and `parse`, so the two directions cannot drift apart. What differs
//! between platforms is a parameter, [`Grammar`]: whether the name is followed by a
//! `.` (`ap.1` on Discord and Slack, `a1` on Telegram) and the platform's length limit.
//!
//! Parsing is strict: anything unexpected is `None`, and the click is refused.
//!
//! The buttons every approval card has (approve, approve for the session, reject
//! without a reason, all at once, submit, remember) mean the same on every platform:
//! each platform's code has them as one [`Decide`], whose action is written once,
//! here.

use crate::interaction::{RememberScope, UserAction};
use crate::protocol::{Decision, DecisionType};

/// How many indexes a code carries at most (`op.3.24`: a question and its option).
const MAX_INDEXES: usize = 2;

/// Longest index, in digits: an index is plain decimal, with no sign (`usize::from_str`
/// takes a `+`), no spaces and a bounded length, so one value has one spelling.
const MAX_DIGITS: usize = 4;

/// Where a code's name ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameEnd {
    /// At the first character that is not an ASCII letter: `o1.3`, `Ms` (Telegram).
    AtFirstIndex,
    /// At the first `.`: `op.1.3`, `rms` (Discord, Slack).
    AtDot,
}

/// How a platform measures the data a button carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// Telegram: callback_data is 1 to 64 bytes.
    Bytes(usize),
    /// Discord and Slack count characters (custom_id 100, action_id 255, value 2000).
    Chars(usize),
}

impl Limit {
    /// Whether `data` is within the limit.
    pub fn fits(self, data: &str) -> bool {
        match self {
            Limit::Bytes(max) => data.len() <= max,
            Limit::Chars(max) => data.chars().count() <= max,
        }
    }
}

/// What one platform's codes look like on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grammar {
    pub name_end: NameEnd,
    /// The tightest limit a token of this platform must fit.
    pub limit: Limit,
}

/// The indexes read from a code, at most [`MAX_INDEXES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Indexes {
    values: [usize; MAX_INDEXES],
    len: usize,
}

impl Indexes {
    pub fn as_slice(&self) -> &[usize] {
        &self.values[..self.len]
    }
}

impl Grammar {
    /// The code `name` with `indexes`, as a button carries it.
    pub fn write(&self, name: &str, indexes: &[usize]) -> String {
        let mut out = name.to_owned();
        for (n, index) in indexes.iter().enumerate() {
            if n > 0 || self.name_end == NameEnd::AtDot {
                out.push('.');
            }
            out.push_str(&index.to_string());
        }
        out
    }

    /// A code's name and indexes; `None` for anything that is not strictly a name and
    /// up to [`MAX_INDEXES`] plain decimal indexes. Whether the name exists, and takes
    /// that many indexes, is the vocabulary's to say.
    pub fn read<'a>(&self, code: &'a str) -> Option<(&'a str, Indexes)> {
        // `rest` is `None` when the code has no indexes at all; with dots, `ap.` has
        // one empty index, refused below like any other malformed one.
        let (name, rest) = match self.name_end {
            NameEnd::AtFirstIndex => {
                let (name, rest) = code.split_at(code.bytes().position(|b| !b.is_ascii_alphabetic()).unwrap_or(code.len()));
                (name, Some(rest).filter(|rest| !rest.is_empty()))
            }
            NameEnd::AtDot => match code.split_once('.') {
                Some((name, rest)) => (name, Some(rest)),
                None => (code, None),
            },
        };
        let mut indexes = Indexes { values: [0; MAX_INDEXES], len: 0 };
        for part in rest.into_iter().flat_map(|rest| rest.split('.')) {
            if indexes.len == MAX_INDEXES {
                return None;
            }
            indexes.values[indexes.len] = index(part)?;
            indexes.len += 1;
        }
        Some((name, indexes))
    }
}

/// One index: plain decimal of at most [`MAX_DIGITS`] digits.
fn index(s: &str) -> Option<usize> {
    (!s.is_empty() && s.len() <= MAX_DIGITS && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten()
}

/// `encode` and `parse` for a platform's `Code` enum, from one table of spellings.
///
/// ```ignore
/// vocabulary! {
///     Code, GRAMMAR;
///     "ap" [i] => { Code::Approve(i) },
///     "apa" [] => { Code::ApproveAll },
///     // Encoded, never parsed: values a card may hold but no button is spelled for.
///     ; also Code::All(_) => "R" [],
/// }
/// ```
///
/// Each row is a name, the indexes it takes, and the variant it stands for, written so
/// that it reads both as a pattern (to encode) and as an expression (to parse). Rows
/// after `; also` only encode: they give a spelling to values no row covers.
/// A button that decides on its own, the same on every platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decide {
    Approve(usize),
    /// Approve, and let the backend approve the same action for the rest of the session.
    ApproveForSession(usize),
    /// Reject one action without a reason.
    Reject(usize),
    ApproveAll,
    RejectAll,
    /// The draft's decisions sent.
    Submit,
    /// Approve the one action and remember it, where the policy offers it (whether it
    /// does is the core's call: `RememberNotOffered`).
    Remember(RememberScope),
}

impl Decide {
    /// The engine action the button stands for.
    pub fn action(self) -> UserAction {
        match self {
            Decide::Approve(action) => UserAction::Decide { action, decision: Decision::Approve },
            Decide::ApproveForSession(action) => UserAction::Decide { action, decision: Decision::ApproveForSession },
            Decide::Reject(action) => UserAction::Decide { action, decision: Decision::Reject { message: None } },
            Decide::ApproveAll => UserAction::DecideAll { decision: DecisionType::Approve },
            Decide::RejectAll => UserAction::DecideAll { decision: DecisionType::Reject },
            Decide::Submit => UserAction::Submit,
            Decide::Remember(scope) => UserAction::Remember { scope },
        }
    }
}

/// The largest index a code carries in [`vocabulary!`]'s examples: every index at its
/// widest, so the examples are also the longest codes.
pub const WIDEST_INDEX: usize = 9999;

macro_rules! vocabulary {
    // The decision buttons as Discord and Slack spell them (`ap.0`, `as.0`, `apa`,
    // `rja`, `sub`, `rms`, `rma`), then the platform's own rows.
    (
        $code:ty, $grammar:expr; dotted decisions;
        $($rows:tt)+
    ) => {
        $crate::platform::kit::codes::vocabulary! {
            $code, $grammar;
            "ap" [i] => { Self::Decide($crate::platform::kit::codes::Decide::Approve(i)) },
            "as" [i] => { Self::Decide($crate::platform::kit::codes::Decide::ApproveForSession(i)) },
            "apa" [] => { Self::Decide($crate::platform::kit::codes::Decide::ApproveAll) },
            "rja" [] => { Self::Decide($crate::platform::kit::codes::Decide::RejectAll) },
            "sub" [] => { Self::Decide($crate::platform::kit::codes::Decide::Submit) },
            "rms" [] => { Self::Decide($crate::platform::kit::codes::Decide::Remember($crate::interaction::RememberScope::Session)) },
            "rma" [] => { Self::Decide($crate::platform::kit::codes::Decide::Remember($crate::interaction::RememberScope::Always)) },
            $($rows)+
        }
    };
    (
        $code:ty, $grammar:expr;
        $( $name:literal [$($index:ident),*] => { $($variant:tt)* } ),+ $(,)?
        $( ; also $( $pattern:pat => $also:literal [$($also_index:ident),*] ),+ $(,)? )?
    ) => {
        impl $code {
            /// The code as a button carries it.
            pub fn encode(&self) -> String {
                match *self {
                    $( $($variant)* => $grammar.write($name, &[$($index),*]), )+
                    $($( $pattern => $grammar.write($also, &[$($also_index),*]), )+)?
                }
            }

            /// The code a button carried; `None` for anything not spelled as above.
            pub fn parse(code: &str) -> Option<Self> {
                let (name, indexes) = $grammar.read(code)?;
                Some(match (name, indexes.as_slice()) {
                    $( ($name, &[$($index),*]) => $($variant)*, )+
                    _ => return None,
                })
            }

            /// One code of each spelling, every index at its widest
            /// ([`WIDEST_INDEX`](crate::platform::kit::codes::WIDEST_INDEX)).
            #[cfg(test)]
            pub fn examples() -> Vec<Self> {
                vec![$( { $(let $index: usize = $crate::platform::kit::codes::WIDEST_INDEX;)* $($variant)* } ),+]
            }
        }

        /// What every vocabulary must hold (see [`assert_vocabulary`]).
        ///
        /// [`assert_vocabulary`]: crate::platform::kit::codes::assert_vocabulary
        #[cfg(test)]
        mod vocabulary {
            use super::*;

            #[test]
            fn every_code_round_trips_and_fits() {
                $crate::platform::kit::codes::assert_vocabulary($grammar, &<$code>::examples(), <$code>::encode, <$code>::parse);
            }
        }
    };
}
pub(crate) use vocabulary;

/// What every platform's vocabulary must hold, for its unit tests: each code reads
/// back as itself, and the longest, signed, fits the platform's limit.
#[cfg(test)]
pub fn assert_vocabulary<C: Copy + PartialEq + std::fmt::Debug>(grammar: Grammar, examples: &[C], encode: fn(&C) -> String, parse: fn(&str) -> Option<C>) {
    let signer = crate::platform::kit::token::TokenSigner::new(b"secret");
    for code in examples {
        let written = encode(code);
        assert_eq!(parse(&written), Some(*code), "{written}");
        let token = signer.sign("a1b2c3d4e5f6", &written).expect("a code signs");
        assert!(grammar.limit.fits(&token), "{written} makes a token of {} bytes", token.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const JOINED: Grammar = Grammar { name_end: NameEnd::AtFirstIndex, limit: Limit::Bytes(64) };
    const DOTTED: Grammar = Grammar { name_end: NameEnd::AtDot, limit: Limit::Chars(100) };

    fn read(grammar: Grammar, code: &str) -> Option<(&str, Vec<usize>)> {
        grammar.read(code).map(|(name, indexes)| (name, indexes.as_slice().to_vec()))
    }

    #[test]
    fn both_grammars_write_what_they_read() {
        for (grammar, code, name, indexes) in [
            (JOINED, "o1.3", "o", vec![1, 3]),
            (JOINED, "a12", "a", vec![12]),
            (JOINED, "Ms", "Ms", vec![]),
            (DOTTED, "op.1.3", "op", vec![1, 3]),
            (DOTTED, "ap.12", "ap", vec![12]),
            (DOTTED, "rms", "rms", vec![]),
        ] {
            assert_eq!(read(grammar, code), Some((name, indexes.clone())), "{code}");
            assert_eq!(grammar.write(name, &indexes), code);
        }
    }

    #[test]
    fn indexes_are_strict() {
        for junk in ["a-1", "a+1", "a 1", "a12345", "o1.", "o.1", "o1..2", "o1.2.3", "a1x"] {
            assert_eq!(read(JOINED, junk), None, "{junk:?}");
        }
        for junk in ["ap.", "ap.-1", "ap.+1", "ap. 1", "ap.12345", "op.1.", "op.1.2.3", "ap..1", "ap.1 "] {
            assert_eq!(read(DOTTED, junk), None, "{junk:?}");
        }
    }

    #[test]
    fn a_decision_button_is_one_action_everywhere() {
        use crate::protocol::Decision;
        assert_eq!(Decide::Approve(2).action(), UserAction::Decide { action: 2, decision: Decision::Approve });
        assert_eq!(Decide::ApproveForSession(0).action(), UserAction::Decide { action: 0, decision: Decision::ApproveForSession });
        assert_eq!(Decide::Reject(1).action(), UserAction::Decide { action: 1, decision: Decision::Reject { message: None } });
        assert_eq!(Decide::RejectAll.action(), UserAction::DecideAll { decision: DecisionType::Reject });
        assert_eq!(Decide::Submit.action(), UserAction::Submit);
        assert_eq!(Decide::Remember(RememberScope::Always).action(), UserAction::Remember { scope: RememberScope::Always });
    }

    #[test]
    fn limits_count_as_the_platform_counts() {
        assert!(Limit::Bytes(4).fits("abcd") && !Limit::Bytes(4).fits("abcde"));
        assert!(Limit::Chars(2).fits("éé") && !Limit::Bytes(2).fits("éé"));
    }
}
