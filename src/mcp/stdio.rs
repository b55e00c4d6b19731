//! `hitl-bridge mcp`: the MCP server on standard input and output, for clients that
//! only launch stdio servers (Claude Desktop, some IDEs). It owns nothing: every tool
//! call goes to a running bridge's `/v1` at `--url` with `--token`, so the bridge
//! stays the one process that owns the store and the chats, and this process can be
//! started and killed by the client at will.

use std::sync::Arc;

use rmcp::ServiceExt;

use super::bridge_api::BridgeApi;
use super::server::{HitlTools, Upstream};
use super::tools::{self, Targets};

#[derive(Debug, thiserror::Error)]
pub enum StdioError {
    #[error("cannot start the MCP server on stdio: {0}")]
    Start(String),
    #[error("the MCP session ended with an error: {0}")]
    Session(String),
}

/// Serves until the client closes standard input; `targets` are `--target`'s, with
/// every platform's address grammar.
pub async fn run(url: &str, token: &str, targets: Targets) -> Result<(), StdioError> {
    let upstream = Upstream {
        base: url.to_owned(),
        token: Some(token.to_owned()),
        http: BridgeApi::http_client(),
        max_body_bytes: crate::listener::DEFAULT_MAX_BODY_BYTES,
    };
    let offered: Vec<String> = tools::ALL.iter().map(|t| (*t).to_owned()).collect();
    let server = HitlTools::new(upstream, Arc::new(targets), &offered);
    let running = server.serve(rmcp::transport::stdio()).await.map_err(|e| StdioError::Start(e.to_string()))?;
    running.waiting().await.map_err(|e| StdioError::Session(e.to_string()))?;
    Ok(())
}
