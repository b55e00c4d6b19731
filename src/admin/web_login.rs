//! `hitl-bridge web login PLATFORM:USER_ID`: a one-time sign-in link to the web inbox
//! for that platform user, printed alone on one line, for an operator to hand over.
//! It goes through the store, so it works beside a running bridge.

use super::AdminError;
use crate::interaction::Actor;
use crate::store::Store;
use crate::web::{WebSettings, sign_in_link};

/// The link for `person` (`telegram:123456`), named `name` in the inbox and the audit
/// log (default: the id itself).
pub async fn run(store: &Store, web: &WebSettings, person: &str, name: Option<&str>) -> Result<String, AdminError> {
    if !web.enabled {
        return Err(AdminError::WebDisabled);
    }
    let (platform, user_id) = crate::platform::registry::networks().parse_user(person).ok_or_else(|| AdminError::NotAPerson(person.to_owned()))?;
    let actor = Actor::new(&platform, &user_id, name.unwrap_or(person));
    Ok(sign_in_link(store, web, &actor).await?)
}
