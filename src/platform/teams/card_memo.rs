//! A click's card, rendered once for the two who need it: the clicker's
//! `adaptiveCard/action` answer and the update of the card's copies (the engine's
//! refresh). Both show the same state of the interaction, and rendering an Adaptive
//! Card (its signed buttons, its checked text) was a noticeable share of a click's
//! CPU.
//!
//! A rendering is kept for one reuse, and only for the very state it shows (the whole
//! interaction is compared): whichever of the two comes second takes it. What is never
//! reused (a refresh with no click, an expiry) waits in a small map whose oldest
//! entries go first; a miss only costs a rendering, never a stale card.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::interaction::Interaction;
use crate::platform::kit::bounded::BoundedMap;

/// Renderings kept at most: enough for a burst's clicks to find theirs, small enough
/// to be no memory worth naming (each is an interaction and its card, a few KiB).
const KEPT: usize = 64;

/// Renderings waiting for their one reuse, by interaction id.
pub struct CardMemo {
    kept: Mutex<BoundedMap<String, (Interaction, Arc<Value>)>>,
}

impl Default for CardMemo {
    fn default() -> Self {
        Self { kept: Mutex::new(BoundedMap::new(KEPT)) }
    }
}

impl CardMemo {
    /// The message activity showing `interaction`: the one rendered for this same
    /// state and not yet reused, or `render`'s, kept for its reuse.
    pub fn take_or_render(&self, interaction: &Interaction, render: impl FnOnce() -> Value) -> Arc<Value> {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((shown, _)) = kept.get(&interaction.id)
            && shown == interaction
        {
            return kept.remove(&interaction.id).map(|(_, card)| card).expect("just found");
        }
        drop(kept);
        let card = Arc::new(render());
        self.kept.lock().unwrap_or_else(|p| p.into_inner()).insert(interaction.id.clone(), (interaction.clone(), card.clone()));
        card
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::{RequestBuilder, TimeoutDefaults};
    use crate::protocol::ActionRequest;
    use serde_json::json;

    fn interaction(id: &str) -> Interaction {
        let action = ActionRequest { name: "deploy".into(), args: json!({}), description: None, tool_use_id: None };
        let request = RequestBuilder::start("k", vec![action], vec![], Some(600)).finish(TimeoutDefaults::default()).expect("request");
        Interaction::new(id.into(), "s".into(), request, None, 0)
    }

    #[test]
    fn a_rendering_serves_the_same_state_once() {
        let memo = CardMemo::default();
        let pending = interaction("a");
        let renders = std::cell::Cell::new(0);
        let render = || {
            renders.set(renders.get() + 1);
            json!({ "render": renders.get() })
        };
        let first = memo.take_or_render(&pending, render);
        let second = memo.take_or_render(&pending, render);
        assert!(Arc::ptr_eq(&first, &second), "the second asker reuses the first rendering");
        assert_eq!(renders.get(), 1);
        memo.take_or_render(&pending, render);
        assert_eq!(renders.get(), 2, "a rendering is reused once");
    }

    #[test]
    fn another_state_is_rendered_anew() {
        let memo = CardMemo::default();
        let pending = interaction("a");
        memo.take_or_render(&pending, || json!("pending"));
        let mut later = pending.clone();
        later.deadline_ms += 1;
        assert_eq!(*memo.take_or_render(&later, || json!("later")), json!("later"));
        assert_eq!(*memo.take_or_render(&later, || json!("again")), json!("later"), "the newer rendering is the one kept");
    }

    #[test]
    fn renderings_never_reused_are_bounded() {
        let memo = CardMemo::default();
        for n in 0..10 * KEPT {
            memo.take_or_render(&interaction(&format!("i{n}")), || json!(n));
        }
        assert!(memo.kept.lock().unwrap().len() <= KEPT);
    }
}
