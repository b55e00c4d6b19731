//! Wall-clock time as unix milliseconds: the one place the bridge reads the clock.
//! The core never calls this; time is passed in.

use std::time::{SystemTime, UNIX_EPOCH};

pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}
