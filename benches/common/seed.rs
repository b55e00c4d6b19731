//! The seed 000 approval request (tests/fixtures), parsed and merged the way the
//! stream connector does, as an interaction: the request both benchmarks measure with.

use hitl_bridge::interaction::{Actor, Interaction, RequestBuilder, TimeoutDefaults};
use hitl_bridge::protocol::{BackendEvent, ContentBlock};

const SEED_START: &str = include_str!("../../tests/fixtures/seed000/01_stream_approval_request_start.json");
const SEED_DELTA: &str = include_str!("../../tests/fixtures/seed000/02_stream_approval_request_delta_questions.json");

/// The seed request as interaction `id`, its key made unique by the id, created at 0.
pub fn seed_interaction(id: String) -> Interaction {
    let BackendEvent::ContentBlockStart { content_block: ContentBlock::ApprovalRequest { approval_key, actions, review_configs, timeout_seconds, .. }, .. } =
        BackendEvent::parse(SEED_START).expect("fixture")
    else {
        unreachable!("the fixture is an approval_request start")
    };
    let BackendEvent::ContentBlockDelta { delta, .. } = BackendEvent::parse(SEED_DELTA).expect("fixture") else { unreachable!() };
    let mut builder = RequestBuilder::start(&format!("{approval_key}-{id}"), actions, review_configs, timeout_seconds);
    builder.apply_delta(delta);
    let request = builder.finish(TimeoutDefaults::default()).expect("valid");
    Interaction::new(id, "session".into(), request, Some(Actor::new("console", "u", "U")), 0)
}
