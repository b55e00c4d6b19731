//! Reading what a browser sent: `application/x-www-form-urlencoded` bodies and query
//! strings as ordered pairs (a checkbox group repeats its name), and the cookies.

use axum::http::HeaderMap;
use axum::http::header::COOKIE;

/// A posted form or a query string, in the order sent.
pub(super) struct Fields(Vec<(String, String)>);

impl Fields {
    pub(super) fn parse(bytes: &[u8]) -> Fields {
        Fields(url::form_urlencoded::parse(bytes).into_owned().collect())
    }

    pub(super) fn query(raw: Option<&str>) -> Fields {
        Fields::parse(raw.unwrap_or_default().as_bytes())
    }

    /// The first value of `name`.
    pub(super) fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The first value of `name`, unless empty.
    pub(super) fn non_empty(&self, name: &str) -> Option<&str> {
        self.get(name).filter(|v| !v.trim().is_empty())
    }

    /// Every value of `name` (a checkbox group).
    pub(super) fn all(&self, name: &str) -> impl Iterator<Item = &str> {
        self.0.iter().filter(move |(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// The value of cookie `name`.
pub(super) fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_fields_and_cookies() {
        let f = Fields::parse(b"q0=1&q0=3&q0.other=caf%C3%A9+au+lait&csrf=");
        assert_eq!(f.all("q0").collect::<Vec<_>>(), ["1", "3"]);
        assert_eq!(f.get("q0.other"), Some("café au lait"));
        assert_eq!(f.non_empty("csrf"), None);
        let mut headers = HeaderMap::new();
        headers.insert(COOKIE, "a=1; hitl_inbox=xyz; b=2".parse().unwrap());
        assert_eq!(cookie(&headers, "hitl_inbox"), Some("xyz"));
        assert_eq!(cookie(&headers, "c"), None);
    }
}
