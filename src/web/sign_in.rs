//! Signing in and out. A sign-in link opens a page with a **Sign in** button: only
//! the POST spends the link, so a link preview or a scanner fetching it changes
//! nothing, and a form posted from another site is refused. Signing out ends the
//! session in the store.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::header::SET_COOKIE;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::html;

use super::Web;
use super::forms::Fields;
use super::layout::{Frame, form_expired, html, locale, see_other, unavailable};
use super::links::hash;
use super::session;
use crate::clock::now_ms;
use crate::texts::web::WebMsg;

/// `GET /inbox/sign-in/{token}`: the button, or why the link no longer works.
pub(super) async fn page(State(web): State<Arc<Web>>, Path(token): Path<String>, headers: HeaderMap) -> Response {
    let frame = Frame { web: &web, locale: locale(&headers), viewer: None };
    match web.store.sign_in_link_person(&hash(&token), now_ms()).await {
        Ok(Some(person)) => {
            let body = html! {
                h1 { (frame.t(WebMsg::SignInTitle)) }
                form method="post" action=(frame.path("/inbox/sign-in")) {
                    input type="hidden" name="token" value=(token);
                    p { (frame.t(WebMsg::SignInOnce)) " " strong { (crate::interaction::readable::text(&person.name)) " (" (person.platform) ":" (person.user_id) ")" } }
                    button type="submit" { (frame.t(WebMsg::SignIn)) }
                }
            };
            html(StatusCode::OK, frame.page(frame.t(WebMsg::SignInTitle), body))
        }
        Ok(None) => refused(&frame),
        Err(e) => unavailable(&e),
    }
}

/// `POST /inbox/sign-in`: spends the link and opens the session.
pub(super) async fn spend(State(web): State<Arc<Web>>, headers: HeaderMap, body: Bytes) -> Response {
    let frame = Frame { web: &web, locale: locale(&headers), viewer: None };
    // A page of another site submitting someone's link would sign the browser in as
    // that someone (login CSRF); browsers say where a form came from.
    if headers.get("sec-fetch-site").is_some_and(|site| site == "cross-site") {
        return form_expired(&frame);
    }
    let form = Fields::parse(&body);
    let Some(token) = form.non_empty("token") else { return refused(&frame) };
    let actor = match web.store.spend_sign_in_link(&hash(token), now_ms()).await {
        Ok(Some(actor)) => actor,
        Ok(None) => return refused(&frame),
        Err(e) => return unavailable(&e),
    };
    match session::open(&web, &actor).await {
        Ok(cookie) => {
            tracing::info!(platform = %actor.platform, user = %actor.user_id, "signed in to the web inbox");
            let mut response = see_other(&web.path("/inbox"));
            response.headers_mut().insert(SET_COOKIE, cookie);
            response
        }
        Err(e) => unavailable(&e),
    }
}

/// `POST /inbox/sign-out`.
pub(super) async fn sign_out(State(web): State<Arc<Web>>, headers: HeaderMap, body: Bytes) -> Response {
    let viewer = match session::viewer(&web, &headers).await {
        Ok(v) => v,
        Err(e) => return unavailable(&e),
    };
    let frame = Frame { web: &web, locale: locale(&headers), viewer: viewer.as_ref() };
    let Some(viewer) = viewer.as_ref().filter(|v| v.csrf_ok(&Fields::parse(&body))) else { return form_expired(&frame) };
    match session::close(&web, viewer).await {
        Ok(cookie) => {
            let mut response = see_other(&web.path("/inbox"));
            response.headers_mut().insert(SET_COOKIE, cookie);
            response
        }
        Err(e) => unavailable(&e),
    }
}

fn refused(frame: &Frame<'_>) -> Response {
    let body = html! {
        h1 { (frame.t(WebMsg::SignInTitle)) }
        p.error role="alert" { (frame.t(WebMsg::LinkRefused)) }
        p { (frame.t(WebMsg::HowToSignIn)) }
    };
    let mut response = html(StatusCode::GONE, frame.page(frame.t(WebMsg::SignInTitle), body));
    // The page repeats nothing secret, but keep scanners from indexing it.
    response.headers_mut().insert("x-robots-tag", axum::http::HeaderValue::from_static("noindex"));
    response.into_response()
}
