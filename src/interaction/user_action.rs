//! What a person did to a request, as a platform understood it: a click, a choice, a
//! form sent. [`super::Interaction::apply`] decides what it means.

use serde::{Deserialize, Serialize};

use super::policy::RememberScope;
use crate::protocol::{Decision, DecisionType};

/// What a person did, as a platform understood it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum UserAction {
    /// Decide one action. With a single action this submits at once.
    Decide {
        action: usize,
        decision: Decision,
    },
    /// New args typed as JSON for one action (Edit).
    EditArgs {
        action: usize,
        json: String,
    },
    /// A comment: a `respond` decision where allowed, else `user_edit_content`.
    Comment {
        action: usize,
        text: String,
    },
    /// Approve all / Reject all, submitted at once.
    DecideAll {
        decision: DecisionType,
    },
    /// Replace a question's selection (a select menu, a typed number list).
    Select {
        question: usize,
        options: Vec<usize>,
    },
    /// Flip one option (a multi-select button).
    Toggle {
        question: usize,
        option: usize,
    },
    /// Free text for a question ("Other" or its input option).
    OtherText {
        question: usize,
        text: String,
    },
    Skip {
        question: usize,
    },
    /// Send what has been chosen.
    Submit,
    /// Approve the one action and remember it ("Approve for this session", "Always
    /// approve"), where the policy offers it: [`super::Interaction::remember_offered`].
    Remember {
        scope: RememberScope,
    },
}
