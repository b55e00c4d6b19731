//! An error with its causes, on one line. reqwest's (and hyper's) own messages hide
//! why a call failed ("error sending request"); the cause chain says it (a refused
//! connection, a DNS failure, the callback guard's refusal).

/// `e: cause: cause…`, whitespace collapsed so it stays one log or error line.
pub fn one_line(e: &dyn std::error::Error) -> String {
    let mut line = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        line.push_str(": ");
        line.push_str(&cause.to_string());
        source = cause.source();
    }
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn causes_follow_the_error() {
        #[derive(Debug, thiserror::Error)]
        #[error("cannot send\n the callback")]
        struct Send(#[source] std::io::Error);
        assert_eq!(super::one_line(&Send(std::io::Error::other("dns failed"))), "cannot send the callback: dns failed");
    }
}
