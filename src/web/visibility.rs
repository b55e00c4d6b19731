//! Who sees and answers what in the browser: exactly the core's rule for a click
//! ([`Interaction::may_act`]: approvers, roles, four eyes, a decision policy's
//! approvers, the request's state), plus what a chat gives for free and the web cannot
//! know: a request open to anyone in its chat is shown only to `access.users` and
//! `access.admins`. A person who already cast a quorum vote is not asked again.
//!
//! The inbox list asks the same of thousands of pending requests at once, from their
//! stored [`AccessFacts`] instead of their bodies ([`facts_wait_on`]); both
//! paths go through the core's one rule ([`crate::interaction::access_facts`]).

use super::Web;
use crate::interaction::access_facts::Deciders;
use crate::interaction::policy::quorum;
use crate::interaction::{AccessFacts, Actor, Draft, Interaction, Origin, Refusal};

/// Why `actor` may not answer `i` now; `None` when they may.
pub(super) fn refusal(web: &Web, i: &Interaction, actor: &Actor, now_ms: i64) -> Option<Refusal> {
    if open_to_anyone(web, &i.deciders()) && !web.is_open_viewer(actor) {
        return Some(Refusal::NotAllowed);
    }
    i.may_act(actor, &web.policy, now_ms).err()
}

/// Whether `actor` may see `i`'s page: they may answer it, or could have before it
/// ended. Anyone else is told no such request exists.
pub(super) fn may_see(web: &Web, i: &Interaction, actor: &Actor, now_ms: i64) -> bool {
    !matches!(refusal(web, i, actor, now_ms), Some(Refusal::NotAllowed | Refusal::SelfApproval))
}

/// Whether `i` waits on `actor`: they may answer it and have not voted on it yet.
pub(super) fn waits_on(web: &Web, i: &Interaction, actor: &Actor, now_ms: i64) -> bool {
    refusal(web, i, actor, now_ms).is_none() && !already_voted(i, actor)
}

/// [`waits_on`] for a pending request known by its stored facts, but for its deadline
/// ([`still_open`], asked of each request): the same answer without its body, asked
/// once of every request sharing the facts.
pub(super) fn facts_wait_on(web: &Web, facts: &AccessFacts, actor: &Actor) -> bool {
    if open_to_anyone(web, &facts.deciders()) && !web.is_open_viewer(actor) {
        return false;
    }
    facts.deciders().check(actor, &web.policy).is_ok() && !facts.has_voted(actor)
}

/// The approver groups a request names itself (its decision policy's, a pushed
/// request's `approvers.roles`): asked of the person's platform with the configured
/// ones ([`super::Web::acting`]).
pub(super) fn named_groups(deciders: &Deciders<'_>) -> Vec<String> {
    let pushed: &[String] = match deciders.origin {
        Origin::Pushed { approvers: Some(approvers), .. } => &approvers.roles,
        _ => &[],
    };
    let mut named: Vec<String> = Vec::new();
    for group in deciders.policy_roles.iter().chain(pushed) {
        if !named.contains(group) {
            named.push(group.clone());
        }
    }
    named
}

fn already_voted(i: &Interaction, actor: &Actor) -> bool {
    matches!(&i.draft, Draft::Decisions(d) if quorum::earlier_vote(&d.votes, actor).is_some())
}

/// Whether the core would let anyone at all answer `i` (a pushed request naming no
/// approvers, with none configured): asked of a person who is nobody.
fn open_to_anyone(web: &Web, deciders: &Deciders<'_>) -> bool {
    let nobody = Actor::new("", "", "");
    !matches!(deciders.check(&nobody, &web.policy), Err(Refusal::NotAllowed))
}
