//! hitl-bridge: answer an AI agent's questions and approve its tool calls from chat.
//!
//! The flow runs one way: a backend connector ([`backend`]) turns the agent's wire
//! format into events, the pure core ([`interaction`]) merges and tracks requests, the
//! store ([`store`]) makes every step durable, and platforms ([`platform`]) render
//! requests and turn clicks into actions. The engine ([`engine`]) wires them together
//! through the ports it owns ([`engine::Platform`], [`engine::Connector`]).
//!
//! Layers, from the bottom up; a module uses only layers below its own (never one
//! above, never a sibling), as `tests/layers.rs` checks and `docs/architecture.md`
//! explains:
//! 1. foundations: [`clock`], [`error_chain`], [`redact`];
//! 2. wire and listener: [`protocol`] (the wire contract's types), [`listener`] (what
//!    every HTTP listener allows a client);
//! 3. core: [`interaction`] (requests, the state machine, who may answer, policies,
//!    chat keys and platforms' address grammar, chat commands, backend events), and
//!    [`agent_sim`], a reference agent backend for the demo and the tests;
//! 4. memory: [`store`] (SQLite or PostgreSQL), [`logging`];
//! 5. instruments: [`metrics`];
//! 6. [`engine`]: applies actions, settles, delivers, routes requests to chats and
//!    runs deadlines, on parallel shards; platform calls go through per-chat lanes. It
//!    answers with typed outcomes and never words them;
//! 7. words: [`texts`], every string people read, in three languages;
//! 8. adapters: [`platform`] (the chat platforms, one folder each, listed once in
//!    `platform::registry`) and [`backend`] (the agent backends, one folder each,
//!    listed once in `backend::registry`, and the inbound HTTP API);
//! 9. front ends: [`server`] (`/healthz`, `/readyz`, `/metrics`, `/v1`), [`mcp`]
//!    (the bridge as an MCP server) and [`web`] (the inbox in a browser);
//! 10. [`config`]: the file and the environment, each section defined by what it
//!     configures;
//! 11. assembly and commands: [`app`] (a running bridge), [`admin`], [`pairing`],
//!     [`demo`]; `main` is the CLI.

pub mod admin;
pub mod agent_sim;
pub mod app;
pub mod backend;
pub mod clock;
pub mod config;
pub mod demo;
pub mod engine;
pub mod error_chain;
pub mod interaction;
pub mod listener;
pub mod logging;
pub mod mcp;
pub mod metrics;
pub mod pairing;
pub mod platform;
pub mod protocol;
pub mod redact;
pub mod server;
pub mod store;
pub mod texts;
pub mod web;
