//! `GET /inbox/audit`: the audit log newest first, 50 a page, filtered by agent,
//! person and outcome, with the commands that export it whole. Only people who may
//! answer something see it: configured approvers and `access.users`/`access.admins`.

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use maud::html;

use super::Web;
use super::forms::Fields;
use super::layout::{Frame, html, unavailable, visit, when};
use super::request_page::person;
use crate::interaction::readable;
use crate::store::AuditFilter;
use crate::texts::web::WebMsg;

const PAGE: i64 = 50;

/// The outcomes an entry can have (`AuditEntry::outcome`), as the audit page offers
/// them and docs/operations.md lists them (tests/docs.rs).
pub const OUTCOMES: [&str; 8] = ["resolved", "resolved_elsewhere", "expired", "expired_by_backend", "cancelled", "refused", "escalated", "rule_revoked"];

pub(super) async fn page(State(web): State<Arc<Web>>, headers: HeaderMap, RawQuery(query): RawQuery) -> Response {
    let (viewer, locale) = match visit(&web, &headers).await {
        Ok(visitor) => visitor,
        Err(answer) => return answer,
    };
    let viewer = &viewer;
    let frame = Frame { web: &web, locale, viewer: Some(viewer) };
    if !web.policy.is_approver(&viewer.actor) && !web.is_open_viewer(&viewer.actor) {
        return super::request_page::not_found(&frame);
    }
    let q = Fields::query(query.as_deref());
    let filter = AuditFilter {
        agent: q.non_empty("agent").map(str::to_owned),
        person: q.non_empty("person").map(str::to_owned),
        outcome: q.non_empty("outcome").filter(|o| OUTCOMES.contains(o)).map(str::to_owned),
    };
    let before = q.get("before").and_then(|b| b.parse().ok());
    let rows = match web.store.audit_newest(&filter, before, PAGE).await {
        Ok(rows) => rows,
        Err(e) => return unavailable(&e),
    };
    let next = (rows.len() as i64 == PAGE).then(|| rows.last().map(|r| r.id)).flatten();
    let next_query = next.map(|id| {
        let mut s = url::form_urlencoded::Serializer::new(String::new());
        for (key, value) in [("agent", &filter.agent), ("person", &filter.person), ("outcome", &filter.outcome)] {
            if let Some(v) = value {
                s.append_pair(key, v);
            }
        }
        s.append_pair("before", &id.to_string());
        s.finish()
    });
    let body = html! {
        h1 { (frame.t(WebMsg::Audit)) }
        form.filters method="get" action=(frame.path("/inbox/audit")) {
            label { (frame.t(WebMsg::Agent)) " " input type="text" name="agent" value=[filter.agent.as_deref()]; }
            label { (frame.t(WebMsg::Person)) " " input type="text" name="person" placeholder="telegram:123456" value=[filter.person.as_deref()]; }
            label { (frame.t(WebMsg::Outcome)) " "
                select name="outcome" {
                    option value="" { "—" }
                    @for o in OUTCOMES { option value=(o) selected[filter.outcome.as_deref() == Some(o)] { (o) } }
                }
            }
            button type="submit" { (frame.t(WebMsg::Filter)) }
        }
        p.exports { (frame.t(WebMsg::Exports)) " " code { "hitl-bridge audit export --format csv" } " · " code { "hitl-bridge audit export --format jsonl" } }
        table.audit {
            thead { tr { th { (frame.t(WebMsg::When)) } th { (frame.t(WebMsg::Outcome)) } th { (frame.t(WebMsg::Agent)) } th { (frame.t(WebMsg::Person)) } th { (frame.t(WebMsg::Request)) } } }
            tbody {
                @for row in &rows {
                    @let e = &row.entry;
                    tr {
                        td { (when(e.at_ms)) }
                        td { (e.outcome) }
                        td { (readable::text(e.agent.as_deref().unwrap_or("—"))) }
                        td { (person(&frame, e)) }
                        td { a href=(frame.path(&format!("/inbox/requests/{}", e.interaction_id))) { (readable::text(&e.tools.as_ref().map(|t| t.join(", ")).unwrap_or_else(|| e.approval_key.clone()))) } }
                    }
                }
            }
        }
        @if let Some(q) = &next_query { nav.pager { a rel="next" href=(frame.path(&format!("/inbox/audit?{q}"))) { (frame.t(WebMsg::NextPage)) } } }
    };
    html(StatusCode::OK, frame.page(frame.t(WebMsg::Audit), body))
}
