//! Which approver groups a request names, for a platform whose people's groups must be
//! asked of the platform (Slack's user groups, Mattermost's custom groups and
//! channels): a click carries the person, never their groups.

use crate::interaction::{Interaction, Origin};

/// The groups request `interaction` names that `is_group` recognises as the
/// platform's: its policy's `approver_roles` and a pushed request's
/// `approvers.roles`, each once, in that order.
pub fn named_by(interaction: &Interaction, is_group: impl Fn(&str) -> bool) -> Vec<String> {
    let policy = interaction.policy.iter().flat_map(|p| p.approver_roles.iter());
    let pushed: &[String] = match &interaction.origin {
        Origin::Pushed { approvers: Some(approvers), .. } => &approvers.roles,
        _ => &[],
    };
    let mut ids: Vec<String> = Vec::new();
    for id in policy.chain(pushed).filter(|id| is_group(id)) {
        if !ids.contains(id) {
            ids.push(id.clone());
        }
    }
    ids
}
