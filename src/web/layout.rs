//! The frame every inbox page shares: the document head (the embedded stylesheet and
//! script), the navigation with the sign-out button, and the reply helpers. The
//! language is the browser's (`Accept-Language`), among the bridge's three.

use axum::http::header::{ACCEPT_LANGUAGE, CONTENT_TYPE, LOCATION};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};

use super::Web;
use super::session::{CSRF_FIELD, Viewer};
use crate::texts::web::{WebMsg, web_text};
use crate::texts::{Locale, Msg, text};

/// The browser's preferred language among the bridge's, else English.
pub(super) fn locale(headers: &HeaderMap) -> Locale {
    let header = headers.get(ACCEPT_LANGUAGE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    // Listed in order of preference; weights are rarely out of order in practice.
    Locale::pick(header.split(',').map(|part| Some(part.split(';').next().unwrap_or_default().trim())))
}

/// What a page is drawn with.
pub(super) struct Frame<'a> {
    pub web: &'a Web,
    pub locale: Locale,
    pub viewer: Option<&'a Viewer>,
}

impl Frame<'_> {
    pub(super) fn t(&self, msg: WebMsg) -> &'static str {
        web_text(self.locale, msg)
    }

    pub(super) fn chat(&self, msg: Msg) -> &'static str {
        text(self.locale, msg)
    }

    pub(super) fn path(&self, path: &str) -> String {
        self.web.path(path)
    }

    /// The hidden CSRF field of a state-changing form.
    pub(super) fn csrf(&self) -> Markup {
        html! { @if let Some(v) = self.viewer { input type="hidden" name=(CSRF_FIELD) value=(v.csrf); } }
    }

    /// A whole page: `title` in the tab, `body` in `<main>`.
    pub(super) fn page(&self, title: &str, body: Markup) -> Markup {
        html! {
            (DOCTYPE)
            html lang=(self.locale.code()) {
                head {
                    meta charset="utf-8";
                    meta name="viewport" content="width=device-width, initial-scale=1";
                    title { (title) }
                    link rel="stylesheet" href=(self.path("/inbox/static/app.css"));
                    script src=(self.path("/inbox/static/app.js")) defer {}
                }
                body data-events=[self.viewer.map(|_| self.path("/inbox/events"))] {
                    header.top {
                        nav aria-label="hitl-bridge" {
                            a href=(self.path("/inbox")) { (self.t(WebMsg::Inbox)) }
                            a href=(self.path("/inbox/audit")) { (self.t(WebMsg::Audit)) }
                        }
                        @if let Some(viewer) = self.viewer {
                            form.signout method="post" action=(self.path("/inbox/sign-out")) {
                                (self.csrf())
                                span.who { (crate::interaction::readable::text(&viewer.actor.name)) " (" (viewer.actor.platform) ":" (viewer.actor.user_id) ")" }
                                button type="submit" { (self.t(WebMsg::SignOut)) }
                            }
                        }
                    }
                    main id="main" { (body) }
                }
            }
        }
    }
}

/// An HTML answer.
pub(super) fn html(status: StatusCode, markup: Markup) -> Response {
    (status, [(CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"))], markup.into_string()).into_response()
}

/// See other: where a browser goes after a form is handled.
pub(super) fn see_other(location: &str) -> Response {
    match HeaderValue::from_str(location) {
        Ok(value) => (StatusCode::SEE_OTHER, [(LOCATION, value)]).into_response(),
        Err(_) => StatusCode::BAD_REQUEST.into_response(),
    }
}

/// Who is asking, for a page only a signed-in person sees: their session and language,
/// or the answer to give instead (how to sign in; the store did not answer).
pub(super) async fn visit(web: &Web, headers: &HeaderMap) -> Result<(Viewer, Locale), Response> {
    let locale = locale(headers);
    match super::session::viewer(web, headers).await {
        Ok(Some(viewer)) => Ok((viewer, locale)),
        Ok(None) => Err(signed_out(&Frame { web, locale, viewer: None })),
        Err(e) => Err(unavailable(&e)),
    }
}

/// The page for someone not signed in: how to get a sign-in link.
pub(super) fn signed_out(frame: &Frame<'_>) -> Response {
    let body = html! {
        h1 { (frame.t(WebMsg::SignInTitle)) }
        p { (frame.t(WebMsg::HowToSignIn)) }
    };
    html(StatusCode::UNAUTHORIZED, frame.page(frame.t(WebMsg::SignInTitle), body))
}

/// A form without this session's CSRF token, or a session that ended meanwhile.
pub(super) fn form_expired(frame: &Frame<'_>) -> Response {
    let body = html! { h1 { (frame.t(WebMsg::FormExpired)) } p { a href=(frame.path("/inbox")) { (frame.t(WebMsg::Back)) } } };
    html(StatusCode::FORBIDDEN, frame.page(frame.t(WebMsg::FormExpired), body))
}

/// The store did not answer.
pub(super) fn unavailable(error: &crate::store::StoreError) -> Response {
    tracing::error!(%error, "the web inbox cannot read the store");
    (StatusCode::SERVICE_UNAVAILABLE, "the store did not answer; try again shortly\n").into_response()
}

/// `3m 20s`, `2h 5m`, `4d 1h`: a duration at a glance.
pub(super) fn span(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m {}s", s / 60, s % 60),
        3600..86_400 => format!("{}h {}m", s / 3600, s / 60 % 60),
        _ => format!("{}d {}h", s / 86_400, s / 3600 % 24),
    }
}

/// A unix-ms time as `YYYY-MM-DD HH:MM:SS UTC`.
pub(super) fn when(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_and_spans() {
        let mut h = HeaderMap::new();
        h.insert(ACCEPT_LANGUAGE, "fr-FR,vi;q=0.9,en;q=0.8".parse().unwrap());
        assert_eq!(locale(&h), Locale::Vi);
        assert_eq!(locale(&HeaderMap::new()), Locale::En);
        assert_eq!(span(59_999), "59s");
        assert_eq!(span(200_000), "3m 20s");
        assert_eq!(span(7_500_000), "2h 5m");
        assert_eq!(when(0), "1970-01-01 00:00:00 UTC");
    }
}
