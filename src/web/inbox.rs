//! `GET /inbox`: the pending requests that wait on the signed-in person, newest first,
//! 50 a page, filtered by agent, by where they are shown and by age. The title starts
//! with how many wait, `(N)`. `GET /inbox/chats`: the chats to filter by.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use maud::{Markup, html};

use super::Web;
use super::forms::Fields;
use super::layout::{Frame, html, span, unavailable, visit};
use super::visibility::{facts_wait_on, named_groups};
use crate::clock::now_ms;
use crate::interaction::access_facts::still_open;
use crate::interaction::chat::Networks;
use crate::interaction::{AccessFacts, Interaction, Origin, RequestKind, readable};
use crate::store::{ChatKey, PendingAccess};
use crate::texts::web::{WebMsg, waiting_title};

/// Requests per page.
const PAGE: usize = 50;

/// The age filter's choices: (query value, minimum age in ms, label).
const AGES: [(&str, i64, WebMsg); 3] = [("5m", 300_000, WebMsg::Older5m), ("1h", 3_600_000, WebMsg::Older1h), ("1d", 86_400_000, WebMsg::Older1d)];

pub(super) async fn page(State(web): State<Arc<Web>>, headers: HeaderMap, RawQuery(query): RawQuery) -> Response {
    let (viewer, locale) = match visit(&web, &headers).await {
        Ok(visitor) => visitor,
        Err(answer) => return answer,
    };
    let frame = Frame { web: &web, locale, viewer: Some(&viewer) };
    let now = now_ms();
    let filter = Filter::read(&Fields::query(query.as_deref()));
    let WaitingOn { mut waiting, .. } = match waiting_on(&web, &viewer, now).await {
        Ok(waiting) => waiting,
        Err(e) => return unavailable(&e),
    };
    // Newest first: the store hands them oldest first.
    waiting.reverse();
    let total = waiting.len();
    let mut written = ChatNames::new(&web.networks);
    // Where every request waiting is shown is read only to filter by a chat; the
    // chats to choose from are on a page of their own (`/inbox/chats`), so the list
    // itself reads only its page's rows' chats, however many are pending.
    let targets: Places = match &filter.target {
        Some(_) => match web.store.pending_targets().await {
            Ok(targets) => written.places(targets),
            Err(e) => return unavailable(&e),
        },
        None => Places::new(),
    };
    let agents: BTreeSet<&str> = waiting.iter().map(Waiting::agent).collect();
    let chosen: Vec<&Waiting> = waiting.iter().filter(|w| filter.keeps(w, &targets, now)).collect();
    let pages = chosen.len().div_ceil(PAGE).max(1);
    let page = filter.page.clamp(1, pages);
    let shown: Vec<String> = chosen[(page - 1) * PAGE..(page * PAGE).min(chosen.len())].iter().map(|w| w.id.clone()).collect();
    let targets: Places = match filter.target {
        Some(_) => targets,
        None => match web.store.pending_targets_of(&shown).await {
            Ok(targets) => written.places(targets),
            Err(e) => return unavailable(&e),
        },
    };
    // One read for the page; a request settled and pruned since is no longer waiting.
    let rows = match web.store.interactions_by_ids(&shown).await {
        Ok(rows) => rows,
        Err(e) => return unavailable(&e),
    };
    let body = html! {
        h1 { (frame.t(WebMsg::Inbox)) " " span.count id="inbox-count" data-live { "(" (total) ")" } }
        (filters(&frame, &filter, &agents))
        div id="inbox-list" data-live {
            @if rows.is_empty() {
                p.empty { (frame.t(WebMsg::NothingWaiting)) }
            } @else {
                ul.requests {
                    @for i in &rows { (row(&frame, i, &targets, now)) }
                }
            }
            (pager(&frame, &filter, page, pages))
        }
    };
    html(StatusCode::OK, frame.page(&waiting_title(total, frame.t(WebMsg::Inbox)), body))
}

/// `GET /inbox/chats`: every chat showing a request that waits on the person, each a
/// link to the inbox filtered by it (keeping the agent and age chosen). A page of its
/// own because listing them reads where every pending request is shown, which the
/// inbox's first page does not need.
pub(super) async fn chats(State(web): State<Arc<Web>>, headers: HeaderMap, RawQuery(query): RawQuery) -> Response {
    let (viewer, locale) = match visit(&web, &headers).await {
        Ok(visitor) => visitor,
        Err(answer) => return answer,
    };
    let frame = Frame { web: &web, locale, viewer: Some(&viewer) };
    let filter = Filter::read(&Fields::query(query.as_deref()));
    let WaitingOn { waiting, pending } = match waiting_on(&web, &viewer, now_ms()).await {
        Ok(waiting) => waiting,
        Err(e) => return unavailable(&e),
    };
    let mut written = ChatNames::new(&web.networks);
    // Every pending request waits on this person (the usual case for the people who
    // review): the store lists the chats as a row each. Otherwise only the chats of
    // the requests that wait on them, read request by request.
    let chats: BTreeSet<Arc<str>> = if waiting.len() == pending {
        match web.store.pending_places().await {
            Ok(chats) => chats.into_iter().map(|c| written.name(c)).collect(),
            Err(e) => return unavailable(&e),
        }
    } else {
        match web.store.pending_targets().await {
            Ok(targets) => {
                let targets = written.places(targets);
                waiting.iter().flat_map(|w| shown_in(&targets, &w.id)).cloned().collect()
            }
            Err(e) => return unavailable(&e),
        }
    };
    let body = html! {
        h1 { (frame.t(WebMsg::ChatsWaiting)) }
        @if chats.is_empty() {
            p.empty { (frame.t(WebMsg::NothingWaiting)) }
        } @else {
            ul.chats {
                @for chat in &chats {
                    li { a href=(frame.path(&format!("/inbox?{}", filter.with_target(chat).query(1)))) { (&**chat) } }
                }
            }
        }
        p { a href=(frame.path(&format!("/inbox?{}", filter.without_target().query(1)))) { (frame.t(WebMsg::Back)) } }
    };
    html(StatusCode::OK, frame.page(&waiting_title(waiting.len(), frame.t(WebMsg::ChatsWaiting)), body))
}

/// The pending requests that wait on a person, oldest first, and how many are pending
/// in all.
struct WaitingOn {
    waiting: Vec<Waiting>,
    pending: usize,
}

/// What waits on `viewer` now. The rule is applied to the stored facts, not the
/// bodies: once for every request sharing them (they come shared, one `Arc` each),
/// then each request's deadline. Only what the list needs is kept.
///
/// The viewer comes with the configured groups they are in now. A request naming
/// approver groups of its own is set aside, and once the read is done the person's
/// platform is asked about those groups too, once for all of them.
async fn waiting_on(web: &Web, viewer: &super::session::Viewer, now: i64) -> Result<WaitingOn, crate::store::StoreError> {
    let mut pending = 0;
    // Keyed by where the shared facts live (an address, not a pointer: the handler's
    // future must stay `Send`); the read keeps every `Arc` alive until it ends.
    let mut verdicts: HashMap<usize, bool> = HashMap::new();
    let mut named: Vec<String> = Vec::new();
    let slots = web.store.pending_access_each(|p| {
        pending += 1;
        if still_open(p.deadline_ms, now).is_err() {
            return None;
        }
        let own = named_groups(&p.facts.deciders());
        if !own.is_empty() {
            for group in own {
                if !named.contains(&group) {
                    named.push(group);
                }
            }
            return Some(Slot::Later(p));
        }
        let waits = *verdicts.entry(Arc::as_ptr(&p.facts) as usize).or_insert_with(|| facts_wait_on(web, &p.facts, &viewer.actor));
        waits.then(|| Slot::Waiting(Waiting::of(p)))
    });
    let slots = slots.await?;
    let actor = if named.is_empty() { viewer.actor.clone() } else { web.acting(&viewer.actor, &named).await };
    let waiting = slots
        .into_iter()
        .filter_map(|slot| match slot {
            Slot::Waiting(w) => Some(w),
            Slot::Later(p) => facts_wait_on(web, &p.facts, &actor).then(|| Waiting::of(p)),
        })
        .collect();
    Ok(WaitingOn { waiting, pending })
}

/// A pending request as the read hands it over: decided, or set aside until the
/// groups it names are known.
enum Slot {
    Waiting(Waiting),
    Later(PendingAccess),
}

/// Chats as operators write them (`telegram:-100123/7`), each written once however
/// many requests it shows.
struct ChatNames<'a> {
    networks: &'a Networks,
    written: HashMap<ChatKey, Arc<str>>,
}

impl<'a> ChatNames<'a> {
    fn new(networks: &'a Networks) -> Self {
        Self { networks, written: HashMap::new() }
    }

    fn name(&mut self, chat: ChatKey) -> Arc<str> {
        let networks = self.networks;
        self.written.entry(chat).or_insert_with_key(|c| networks.display_chat(c).into()).clone()
    }

    fn places(&mut self, targets: BTreeMap<String, Vec<ChatKey>>) -> Places {
        targets.into_iter().map(|(id, chats)| (id, chats.into_iter().map(|c| self.name(c)).collect())).collect()
    }
}

/// What the list keeps of a request waiting on the person.
struct Waiting {
    id: String,
    created_at_ms: i64,
    /// Its facts, shared with every request that has the same: they name its agent.
    facts: Arc<AccessFacts>,
}

impl Waiting {
    fn of(p: PendingAccess) -> Waiting {
        Waiting { id: p.id, created_at_ms: p.created_at_ms, facts: p.facts }
    }

    fn agent(&self) -> &str {
        self.facts.agent()
    }
}

/// What the query asks for.
#[derive(Default)]
struct Filter {
    agent: Option<String>,
    target: Option<String>,
    age: Option<(&'static str, i64)>,
    page: usize,
}

impl Filter {
    fn read(q: &Fields) -> Filter {
        Filter {
            agent: q.non_empty("agent").map(str::to_owned),
            target: q.non_empty("target").map(str::to_owned),
            age: q.get("age").and_then(|a| AGES.iter().find(|(v, ..)| *v == a)).map(|(v, ms, _)| (*v, *ms)),
            page: q.get("page").and_then(|p| p.parse().ok()).unwrap_or(1),
        }
    }

    fn keeps(&self, w: &Waiting, targets: &Places, now: i64) -> bool {
        self.agent.as_ref().is_none_or(|a| a == w.agent())
            && self.target.as_ref().is_none_or(|t| shown_in(targets, &w.id).any(|s| **s == **t))
            && self.age.is_none_or(|(_, ms)| now - w.created_at_ms >= ms)
    }

    /// This filter, narrowed to the requests shown in `chat`.
    fn with_target(&self, chat: &str) -> Filter {
        Filter { agent: self.agent.clone(), target: Some(chat.to_owned()), age: self.age, page: 1 }
    }

    /// This filter, in every chat.
    fn without_target(&self) -> Filter {
        Filter { agent: self.agent.clone(), target: None, age: self.age, page: 1 }
    }

    /// The query of this filter on page `page`.
    fn query(&self, page: usize) -> String {
        let mut q = url::form_urlencoded::Serializer::new(String::new());
        if let Some(a) = &self.agent {
            q.append_pair("agent", a);
        }
        if let Some(t) = &self.target {
            q.append_pair("target", t);
        }
        if let Some((a, _)) = self.age {
            q.append_pair("age", a);
        }
        q.append_pair("page", &page.to_string());
        q.finish()
    }
}

/// Where each pending request is shown, by interaction id, each chat as operators
/// write it (`telegram:-100123/7`).
type Places = BTreeMap<String, Vec<Arc<str>>>;

/// Every chat showing request `id`.
fn shown_in<'a>(targets: &'a Places, id: &str) -> impl Iterator<Item = &'a Arc<str>> + 'a {
    targets.get(id).into_iter().flatten()
}

/// What the request asks, in a line: its actions' names or its first question.
pub(super) fn asks(i: &Interaction) -> String {
    match &i.request.kind {
        RequestKind::Questions { questions, .. } => questions.first().map(|q| q.text.clone()).unwrap_or_default(),
        RequestKind::Approval { actions } => actions.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", "),
    }
}

/// Who started it: the person whose turn it is, or the agent that pushed it.
pub(super) fn started_by(frame: &Frame<'_>, i: &Interaction) -> String {
    match (&i.requester, &i.origin) {
        (Some(person), _) => format!("{} ({}:{})", person.name, person.platform, person.user_id),
        (None, Origin::Pushed { agent, .. }) => format!("{} {agent}", frame.t(WebMsg::Agent)),
        (None, Origin::Chat) => frame.t(WebMsg::Chat).to_owned(),
    }
}

fn row(frame: &Frame<'_>, i: &Interaction, targets: &Places, now: i64) -> Markup {
    let i = &*readable::interaction(i);
    let places: Vec<&str> = shown_in(targets, &i.id).map(|s| &**s).collect();
    html! {
        li.request {
            a.asks href=(frame.path(&format!("/inbox/requests/{}", i.id))) { (asks(i)) }
            dl {
                dt { (frame.t(WebMsg::StartedBy)) } dd { (started_by(frame, i)) }
                dt { (frame.t(WebMsg::Where)) } dd { (places.join(", ")) }
                dt { (frame.t(WebMsg::Age)) } dd { (span(now - i.created_at_ms)) }
                dt { (frame.t(WebMsg::Deadline)) } dd { (countdown(i.deadline_ms, now)) }
            }
        }
    }
}

/// The time left, counted down live by the page's script.
pub(super) fn countdown(deadline_ms: i64, now: i64) -> Markup {
    html! { time.countdown data-deadline=(deadline_ms) datetime=(super::layout::when(deadline_ms)) { (span(deadline_ms - now)) } }
}

fn filters(frame: &Frame<'_>, f: &Filter, agents: &BTreeSet<&str>) -> Markup {
    html! {
        form.filters method="get" action=(frame.path("/inbox")) {
            label { (frame.t(WebMsg::Agent)) " "
                select name="agent" {
                    option value="" { "—" }
                    @for a in agents { option value=(a) selected[f.agent.as_deref() == Some(*a)] { (a) } }
                }
            }
            // The chat is chosen on its own page, a link away (the choices read where
            // every pending request is shown); a chosen one rides along in the form.
            span.where { (frame.t(WebMsg::Where)) " "
                @if let Some(t) = &f.target {
                    input type="hidden" name="target" value=(t);
                    strong.chosen { (t) } " "
                    a.clear href=(frame.path(&format!("/inbox?{}", f.without_target().query(1)))) { (frame.t(WebMsg::AnyChat)) }
                } @else {
                    a.choose href=(frame.path(&format!("/inbox/chats?{}", f.query(1)))) { (frame.t(WebMsg::ChooseChat)) }
                }
            }
            label { (frame.t(WebMsg::Age)) " "
                select name="age" {
                    option value="" { (frame.t(WebMsg::AnyAge)) }
                    @for (v, _, label) in AGES { option value=(v) selected[f.age.map(|a| a.0) == Some(v)] { (frame.t(label)) } }
                }
            }
            button type="submit" { (frame.t(WebMsg::Filter)) }
        }
    }
}

fn pager(frame: &Frame<'_>, f: &Filter, page: usize, pages: usize) -> Markup {
    html! {
        @if pages > 1 {
            nav.pager aria-label="pages" {
                @if page > 1 { a rel="prev" href=(frame.path(&format!("/inbox?{}", f.query(page - 1)))) { (frame.t(WebMsg::PreviousPage)) } }
                span { (page) " / " (pages) }
                @if page < pages { a rel="next" href=(frame.path(&format!("/inbox?{}", f.query(page + 1)))) { (frame.t(WebMsg::NextPage)) } }
            }
        }
    }
}
