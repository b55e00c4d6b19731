//! The pending interactions a shard created or read last, kept in memory so that a
//! click (the platform's look at the request, then the decision) reads nothing from
//! the store.
//!
//! A copy can only be stale in one way that matters: another replica changed the row
//! (a vote, an escalation, a settle). Every write of an interaction is conditional on
//! the revision it was read at, so a stale copy makes the write find nothing; the
//! shard then forgets the copy and reads the store again. Within a replica only the
//! session's shard writes its interactions, and it forgets or replaces its copy with
//! each write.
//!
//! Bounded: a shard keeps at most a handful, so ten thousand pending requests cost no
//! more memory than the few clicked lately.

use super::Shard;

use crate::interaction::Interaction;
use crate::store::StoreError;

/// The copies one shard holds, the most recently kept last.
pub(super) struct Copies {
    held: Vec<Interaction>,
    capacity: usize,
}

impl Copies {
    pub fn new(capacity: usize) -> Self {
        Self { held: Vec::with_capacity(capacity), capacity }
    }

    pub fn get(&self, id: &str) -> Option<Interaction> {
        self.held.iter().find(|i| i.id == id).cloned()
    }

    /// Keeps `interaction` as the store holds it now (its revision included),
    /// replacing an older copy and making room by dropping the oldest. A settled one
    /// is not kept: nothing decides on it any more.
    pub fn keep(&mut self, interaction: &Interaction) {
        self.forget(&interaction.id);
        if !interaction.status.is_pending() || self.capacity == 0 {
            return;
        }
        if self.held.len() == self.capacity {
            self.held.remove(0);
        }
        self.held.push(interaction.clone());
    }

    pub fn forget(&mut self, id: &str) {
        self.held.retain(|i| i.id != id);
    }
}

impl Shard {
    /// Interaction `id`: the shard's copy, or the store's (then kept, if pending).
    pub(super) async fn load(&mut self, id: &str) -> Result<Option<Interaction>, StoreError> {
        if let Some(copy) = self.copies.get(id) {
            return Ok(Some(copy));
        }
        let stored = self.store.interaction(id).await?;
        if let Some(interaction) = &stored {
            self.copies.keep(interaction);
        }
        Ok(stored)
    }
}

#[cfg(test)]
mod tests {
    use super::Copies;
    use crate::interaction::{Interaction, RequestBuilder, TimeoutDefaults};
    use crate::protocol::ActionRequest;

    fn interaction(n: usize) -> Interaction {
        let action = ActionRequest { name: "deploy".into(), args: serde_json::json!({}), description: None, tool_use_id: None };
        let request = RequestBuilder::start(&format!("k{n}"), vec![action], vec![], Some(600)).finish(TimeoutDefaults::default()).unwrap();
        Interaction::new(format!("i{n}"), "s1".into(), request, None, 0)
    }

    #[test]
    fn holds_at_most_its_capacity_dropping_the_oldest() {
        let mut copies = Copies::new(2);
        for n in 0..3 {
            copies.keep(&interaction(n));
        }
        assert!(copies.get("i0").is_none(), "the oldest made room");
        assert!(copies.get("i1").is_some() && copies.get("i2").is_some());
        // Keeping one again makes it the newest: the next to go is i2.
        copies.keep(&interaction(1));
        copies.keep(&interaction(3));
        assert!(copies.get("i2").is_none());
        assert!(copies.get("i1").is_some() && copies.get("i3").is_some());
    }

    #[test]
    fn a_newer_copy_replaces_the_older_and_a_settled_one_is_dropped() {
        let mut copies = Copies::new(4);
        let mut first = interaction(1);
        copies.keep(&first);
        first.revision.0 = 3;
        copies.keep(&first);
        assert_eq!(copies.get("i1").unwrap().revision.0, 3);
        assert!(first.cancel(5, "test"));
        copies.keep(&first);
        assert!(copies.get("i1").is_none(), "settled: nothing decides on it any more");
        copies.keep(&interaction(2));
        copies.forget("i2");
        assert!(copies.get("i2").is_none());
    }
}
