//! N-of-M approval: votes on a whole decision set, counted per identical set.
//!
//! Under a quorum a person's decision is a [`Vote`] for a complete set of decisions
//! (one per action, as it would be sent), not the outcome. The rules:
//! - one person votes once; a second vote by the same person is refused;
//! - a vote that does not let every action run (any `reject` or `respond`) ends the
//!   request at once: actions the voter rejected or answered keep that decision, the
//!   others are rejected too, so nothing runs without the quorum;
//! - otherwise the request resolves once `needed` distinct people voted the *same* set:
//!   approvals count with approvals, an edit only with edits to the same args.
//!
//! Multi-action requests vote on the whole set: "Approve all" is a vote, and so is
//! "Submit" of the shared draft (which everyone sees and may submit as it stands).
//! The votes live in the interaction's [`super::super::DecisionDraft`], persisted with it.

use serde::{Deserialize, Serialize};

use crate::interaction::access::Actor;
use crate::protocol::Decision;

/// One person's vote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Vote {
    pub voter: Actor,
    pub at_ms: i64,
    /// The full decision set voted for, in action order.
    pub decisions: Vec<Decision>,
}

/// The people who voted one decision set.
#[derive(Debug, Clone, PartialEq)]
pub struct Tally {
    pub decisions: Vec<Decision>,
    pub voters: Vec<Actor>,
}

impl Tally {
    /// Every action approved as asked (no edits): the common case, "Approve".
    pub fn is_plain_approval(&self) -> bool {
        self.decisions.iter().all(|d| matches!(d, Decision::Approve))
    }
}

/// What a renderer shows while votes arrive ("2 of 3 approvals: Lan ✔, Minh ✔").
#[derive(Debug, Clone, PartialEq)]
pub struct QuorumProgress {
    pub needed: u32,
    /// One entry per distinct decision set voted for, in order of its first vote.
    pub tallies: Vec<Tally>,
}

impl QuorumProgress {
    /// The most votes any one decision set has.
    pub fn leading(&self) -> usize {
        self.tallies.iter().map(|t| t.voters.len()).max().unwrap_or(0)
    }

    /// Everyone who voted, in vote order across tallies.
    pub fn voters(&self) -> impl Iterator<Item = &Actor> {
        self.tallies.iter().flat_map(|t| t.voters.iter())
    }
}

/// What casting one vote did.
#[derive(Debug, Clone, PartialEq)]
pub enum Cast {
    /// Recorded; the quorum is not reached yet.
    Counted,
    /// The outcome is final: send these decisions.
    Final(Vec<Decision>),
}

/// The earlier vote of `voter`, if they already voted.
pub fn earlier_vote<'a>(votes: &'a [Vote], voter: &Actor) -> Option<&'a Vote> {
    votes.iter().find(|v| v.voter.is_same_person(voter))
}

/// Whether a decision lets its action run.
fn lets_run(decision: &Decision) -> bool {
    matches!(decision, Decision::Approve | Decision::Edit { .. } | Decision::ApproveForSession)
}

/// Adds `vote` (whose voter has not voted yet: check with [`earlier_vote`]) and says
/// whether the outcome is now final.
pub fn cast(votes: &mut Vec<Vote>, vote: Vote, needed: u32) -> Cast {
    let decisions = vote.decisions.clone();
    votes.push(vote);
    if !decisions.iter().all(lets_run) {
        let stopped = decisions.into_iter().map(|d| if lets_run(&d) { Decision::Reject { message: None } } else { d }).collect();
        return Cast::Final(stopped);
    }
    let same = votes.iter().filter(|v| v.decisions == decisions).count();
    if same >= needed as usize { Cast::Final(decisions) } else { Cast::Counted }
}

/// The votes grouped by identical decision set.
pub fn progress(votes: &[Vote], needed: u32) -> QuorumProgress {
    let mut tallies: Vec<Tally> = Vec::new();
    for vote in votes {
        match tallies.iter_mut().find(|t| t.decisions == vote.decisions) {
            Some(t) => t.voters.push(vote.voter.clone()),
            None => tallies.push(Tally { decisions: vote.decisions.clone(), voters: vec![vote.voter.clone()] }),
        }
    }
    QuorumProgress { needed, tallies }
}
