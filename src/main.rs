//! The `hitl-bridge` command: `run`, `demo`, `agent-sim`, `check-config`, `pair`, and
//! the admin commands `pending`, `cancel`, `audit export`, `rules` and `web login`, and
//! each platform's own (`slack manifest`), from the registry.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use hitl_bridge::admin::{self, AdminCommand, audit_export};
use hitl_bridge::agent_sim::{self, SimOptions};
use hitl_bridge::app::App;
use hitl_bridge::config::Settings;
use hitl_bridge::demo::{DemoChat, STORE as DEMO_STORE};
use hitl_bridge::pairing::{self, PairCommand};
use hitl_bridge::platform::registry;
use tokio::io::BufReader;

#[derive(Parser)]
#[command(name = "hitl-bridge", version, about = "Answer an AI agent's questions and approve its tool calls from chat")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the bridge.
    Run {
        /// A config file holding the keys you change, on top of the built-in defaults
        /// (without it: config/default.toml in this directory, if present). Every key can
        /// also be set as HITL_BRIDGE__SECTION__KEY.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Reference agent + bridge + terminal in one process; no set-up needed. With
    /// --telegram or --discord the chat is your own bot (its token from
    /// HITL_BRIDGE__TELEGRAM__TOKEN / HITL_BRIDGE__DISCORD__TOKEN) and the terminal asks
    /// you to let in whoever writes to it.
    Demo {
        /// Use your Telegram bot as the chat.
        #[arg(long, conflicts_with = "discord")]
        telegram: bool,
        /// Use your Discord bot as the chat (HITL_BRIDGE__DISCORD__CHANNELS: where).
        #[arg(long, conflicts_with = "chat")]
        discord: bool,
        /// Use your bot on this chat platform as the chat (`--chat telegram` is
        /// `--telegram`); its keys from HITL_BRIDGE__<PLATFORM>__*.
        #[arg(long, value_name = "PLATFORM", conflicts_with = "telegram")]
        chat: Option<String>,
        /// Seconds before the "timeout" scenario gives up.
        #[arg(long, default_value_t = 20)]
        timeout_secs: u64,
        /// Where the demo serves the HTTP API (token `demo-token`).
        #[arg(long, default_value = "127.0.0.1:8790")]
        http_listen: String,
    },
    /// Run the reference agent backend alone.
    AgentSim {
        #[arg(long, default_value = "127.0.0.1:8787")]
        listen: SocketAddr,
        /// Seconds before the "timeout" scenario gives up.
        #[arg(long, default_value_t = 20)]
        timeout_secs: u64,
        /// Require `Authorization: Bearer <token>` on the WebSocket.
        #[arg(long, env = "HITL_BRIDGE_SIM_TOKEN")]
        token: Option<String>,
    },
    /// Print the effective configuration (secrets redacted) or say what is wrong.
    CheckConfig {
        /// A config file holding the keys you change, on top of the built-in defaults
        /// (without it: config/default.toml in this directory, if present). Every key can
        /// also be set as HITL_BRIDGE__SECTION__KEY.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Approve a pairing code (access.pairing), list paired users, or revoke one.
    Pair {
        /// The code the person was shown.
        #[arg(required_unless_present_any = ["list", "revoke"], conflicts_with_all = ["list", "revoke"])]
        code: Option<String>,
        /// List paired users.
        #[arg(long, conflicts_with = "revoke")]
        list: bool,
        /// Un-pair a user, as platform:user_id.
        #[arg(long, value_name = "PLATFORM:USER_ID")]
        revoke: Option<String>,
        /// A config file holding the keys you change, on top of the built-in defaults
        /// (without it: config/default.toml in this directory, if present). Every key can
        /// also be set as HITL_BRIDGE__SECTION__KEY.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Ask a running bridge whether it is ready (the container's HEALTHCHECK): exit 0
    /// when /readyz answers 2xx, else 1 with the reason.
    Health {
        #[arg(long, default_value = hitl_bridge::server::DEFAULT_PROBE_URL)]
        url: String,
    },
    /// List pending requests: key, session, where shown, kind, age, deadline.
    Pending {
        /// A config file holding the keys you change, on top of the built-in defaults
        /// (without it: config/default.toml in this directory, if present). Every key can
        /// also be set as HITL_BRIDGE__SECTION__KEY.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Cancel a pending request. A chat turn's approval is rejected with the reason;
    /// running bridges update its messages within 10 s.
    Cancel {
        /// The request's approval key.
        key: String,
        /// The session, when the key is pending in several.
        #[arg(long)]
        session: Option<String>,
        /// Shown in the chats and sent to the agent.
        #[arg(long)]
        reason: Option<String>,
        /// Who is cancelling, for the audit log.
        #[arg(long, env = "USER", default_value = "operator")]
        by: String,
        /// A config file holding the keys you change, on top of the built-in defaults
        /// (without it: config/default.toml in this directory, if present). Every key can
        /// also be set as HITL_BRIDGE__SECTION__KEY.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// The audit log.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// An MCP server on stdin/stdout for clients that launch stdio servers (Claude
    /// Desktop, …): every tool call goes to the running bridge at --url with --token.
    Mcp {
        /// The running bridge's HTTP listener.
        #[arg(long, env = "HITL_BRIDGE_MCP_URL", default_value = "http://127.0.0.1:8790")]
        url: String,
        /// One of the bridge's http.api_tokens secrets; its name is the agent the
        /// audit log records.
        #[arg(long, env = "HITL_BRIDGE_MCP_TOKEN", hide_env_values = true)]
        token: String,
        /// Where requests are shown when a call names no targets (as in
        /// routing.channels); repeat it, or separate with commas in the variable.
        #[arg(long = "target", env = "HITL_BRIDGE_MCP_TARGETS", value_delimiter = ',')]
        targets: Vec<String>,
    },
    /// Remembered approvals ("approve for this session", "always approve"): list the
    /// active ones (the default), or revoke one.
    Rules {
        #[command(subcommand)]
        command: Option<RulesCommand>,
        /// A config file holding the keys you change, on top of the built-in defaults
        /// (without it: config/default.toml in this directory, if present). Every key can
        /// also be set as HITL_BRIDGE__SECTION__KEY.
        #[arg(long, global = true, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// The web inbox (web.enabled): `web login PLATFORM:USER_ID` prints a sign-in link.
    Web {
        #[command(subcommand)]
        command: WebCommand,
    },
}

#[derive(Subcommand)]
enum WebCommand {
    /// Print a one-time sign-in link to the web inbox for a platform user (valid 10
    /// minutes, usable once), alone on one line.
    Login {
        /// Who signs in, as platform:user_id (e.g. telegram:123456789).
        person: String,
        /// Their name in the inbox and the audit log (default: platform:user_id).
        #[arg(long)]
        name: Option<String>,
        /// A config file holding the keys you change, on top of the built-in defaults
        /// (without it: config/default.toml in this directory, if present). Every key can
        /// also be set as HITL_BRIDGE__SECTION__KEY.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum RulesCommand {
    /// Print the active rules, oldest first: id, scope, tool, args, session, backend,
    /// who set it, when, and the policy that offered it.
    List,
    /// Revoke a rule: from now on its requests are asked again.
    Revoke {
        /// The rule's id, as `rules list` shows it.
        id: String,
        /// Who is revoking, for the audit log.
        #[arg(long, env = "USER", default_value = "operator")]
        by: String,
    },
}

#[derive(Subcommand)]
enum AuditCommand {
    /// Print audit entries, oldest first: who, what, when, args, decision, latency, refusals.
    Export {
        /// Only entries at or after this RFC 3339 time, e.g. 2025-06-01T00:00:00Z.
        #[arg(long, value_parser = audit_export::parse_since)]
        since: Option<i64>,
        /// `jsonl` (one JSON object per line) or `csv`.
        #[arg(long, default_value = "jsonl", value_parser = audit_export::parse_format)]
        format: audit_export::Format,
        /// A config file holding the keys you change, on top of the built-in defaults
        /// (without it: config/default.toml in this directory, if present). Every key can
        /// also be set as HITL_BRIDGE__SECTION__KEY.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
}

/// Runs the command; an error is printed once, as one line with its causes, and the
/// exit status is 1. A closed stdout (`… | head`) ends the command quietly.
fn main() -> ExitCode {
    limit_malloc_arenas();
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let cli = match parse() {
        Parsed::Bridge(cli) => cli,
        Parsed::Platform(done) => return done,
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_closed_stdout(&e) => ExitCode::SUCCESS,
        Err(e) => {
            let chain: Vec<String> = e.chain().map(ToString::to_string).collect();
            // anyhow's context and the error it wraps often say the same thing.
            let mut line: Vec<&str> = Vec::new();
            for part in &chain {
                if !line.iter().any(|seen| seen.contains(part.as_str())) {
                    line.push(part);
                }
            }
            eprintln!("error: {}", line.join(": "));
            ExitCode::FAILURE
        }
    }
}

/// What the command line asks for.
enum Parsed {
    /// One of the bridge's own commands.
    Bridge(Cli),
    /// A platform's own admin command (`slack manifest`), already run.
    Platform(ExitCode),
}

/// Parses the command line; the registry's platforms add their own subcommands
/// (named after the platform), which run here.
fn parse() -> Parsed {
    let mut command = Cli::command();
    for descriptor in registry::DESCRIPTORS {
        if let Some(subcommand) = descriptor.admin_command() {
            command = command.subcommand(subcommand);
        }
    }
    let matches = command.get_matches();
    if let Some((name, args)) = matches.subcommand()
        && let Some(descriptor) = registry::descriptor(name)
        && descriptor.admin_command().is_some()
    {
        return Parsed::Platform(match descriptor.run_admin_command(args) {
            Ok(printed) => {
                println!("{printed}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        });
    }
    Parsed::Bridge(Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit()))
}

/// The async runtime: one worker thread, or `TOKIO_WORKER_THREADS` of them. A bridge's
/// tasks wait on the network and the store and never compute for long (nothing here
/// blocks a worker; SQLite has threads of its own), so a second worker adds no
/// throughput, only tasks woken across threads: on two cores, a burst of 200 decisions
/// on PostgreSQL cost 0.49–0.54 ms of CPU a decision with one worker and 0.64–0.74 ms
/// with two, and one request at a time a quarter to a third less CPU
/// (docs/performance.md, the eighth section).
fn runtime() -> Result<tokio::runtime::Runtime, String> {
    let workers = match std::env::var_os("TOKIO_WORKER_THREADS") {
        None => 1,
        Some(value) => value
            .to_str()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|n| *n > 0)
            .ok_or_else(|| format!("TOKIO_WORKER_THREADS={value:?} is not a number of threads above 0"))?,
    };
    tokio::runtime::Builder::new_multi_thread().worker_threads(workers).enable_all().build().map_err(|e| e.to_string())
}

/// glibc gives threads that allocate at the same time arenas of their own (up to 8
/// per core) and keeps what each has freed, so a burst spread over the runtime's and
/// SQLite's threads leaves megabytes of idle heap behind (`docs/performance.md`: the
/// peak with 10,000 pending). Two arenas hold the heap near what the work needs. A
/// `MALLOC_ARENA_MAX` set in the environment wins.
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: runs before any other thread exists; mallopt only sets a parameter.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 2);
        }
    }
}

/// The reader of stdout went away (`audit export | head -1`): not an error.
fn is_closed_stdout(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| cause.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::CheckConfig { config } => {
            let settings = Settings::load(config.as_deref())?;
            println!("{}", settings.redacted_json());
            // Where the changes came from, for people; stdout stays the JSON.
            for warning in Settings::environment_warnings() {
                eprintln!("warning: {warning}");
            }
            let changed = Settings::provenance(config.as_deref())?;
            if changed.is_empty() {
                eprintln!("every value is the built-in default");
            } else {
                eprintln!("values that differ from the built-in defaults:");
                for (key, source) in changed {
                    eprintln!("  {key}  ({source})");
                }
            }
            Ok(())
        }
        Command::Run { config } => {
            let settings = Settings::load(config.as_deref())?;
            hitl_bridge::logging::init(&settings.log);
            tracing::info!("{}", startup_line(&settings, config.as_deref()));
            warn_about_unread_variables();
            run_until_stopped(&settings).await
        }
        Command::AgentSim { listen, timeout_secs, token } => {
            init_logging("info");
            let listener = tokio::net::TcpListener::bind(listen).await.with_context(|| format!("cannot listen on {listen}"))?;
            tracing::info!(%listen, "agent-sim listening");
            agent_sim::serve(listener, SimOptions { timeout_secs, token }).await?;
            Ok(())
        }
        Command::Demo { timeout_secs, http_listen, telegram, discord, chat } => {
            let bot = chat.or_else(|| telegram.then(|| "telegram".to_owned())).or_else(|| discord.then(|| "discord".to_owned()));
            let chat = match bot {
                None => DemoChat::Terminal,
                Some(name) => {
                    DemoChat::bot(&name).with_context(|| format!("--chat {name}: not a chat platform with a bot ({})", registry::networks().listed()))?
                }
            };
            demo(chat, timeout_secs, http_listen).await
        }
        Command::Mcp { url, token, targets } => {
            // stdout carries the protocol: logs go to stderr only (init_logging does).
            init_logging("warn");
            let networks = registry::networks();
            if let Some(bad) = targets.iter().find(|t| hitl_bridge::mcp::tools::target(&networks, t).is_none()) {
                anyhow::bail!("--target {bad:?} is not platform:chat {}", networks.chat_examples(true));
            }
            hitl_bridge::mcp::stdio::run(&url, &token, hitl_bridge::mcp::tools::Targets { networks, defaults: targets }).await?;
            Ok(())
        }
        Command::Pair { code, list, revoke, config } => {
            let settings = Settings::load(config.as_deref())?;
            let command = match (code, revoke) {
                (Some(code), _) => PairCommand::Approve(code),
                (None, Some(user)) => PairCommand::Revoke(user),
                (None, None) if list => PairCommand::List,
                (None, None) => anyhow::bail!("give a code, --list or --revoke"),
            };
            println!("{}", pairing::run_cli(&settings, &command).await?);
            Ok(())
        }
        Command::Health { url } => match hitl_bridge::server::probe(&url).await {
            Ok(answer) => {
                println!("healthy: {answer}");
                Ok(())
            }
            Err(e) => {
                eprintln!("unhealthy: {e}");
                std::process::exit(1);
            }
        },
        Command::Pending { config } => run_admin(config, AdminCommand::Pending).await,
        Command::Cancel { key, session, reason, by, config } => run_admin(config, AdminCommand::Cancel { key, session, reason, by }).await,
        Command::Audit { command: AuditCommand::Export { since, format, config } } => {
            run_admin(config, AdminCommand::AuditExport { since_ms: since, format }).await
        }
        Command::Rules { command, config } => {
            let command = match command {
                None | Some(RulesCommand::List) => AdminCommand::RulesList,
                Some(RulesCommand::Revoke { id, by }) => AdminCommand::RulesRevoke { id, by },
            };
            run_admin(config, command).await
        }
        Command::Web { command: WebCommand::Login { person, name, config } } => {
            let web = Settings::load(config.as_deref())?.web;
            run_admin(config, AdminCommand::WebLogin { person, name, web }).await
        }
    }
}

async fn run_admin(config: Option<PathBuf>, command: AdminCommand) -> anyhow::Result<()> {
    let settings = Settings::load(config.as_deref())?;
    // Opening a SQLite store creates it: an admin command on a wrong path would then
    // report an empty store instead of the mistake.
    if let Some(path) = hitl_bridge::store::lock::sqlite_file(&settings.store.url)
        && !path.exists()
    {
        anyhow::bail!(
            "no store at {} (store.url = {}); set store.url, or HITL_BRIDGE__STORE__URL, to the running bridge's (the demo's is {DEMO_STORE})",
            path.display(),
            settings.store.url
        );
    }
    let mut out = std::io::BufWriter::new(std::io::stdout());
    admin::run_cli(&settings, &command, &mut out).await?;
    Ok(())
}

/// The demo's API token: the demo listens on loopback only.
const DEMO_TOKEN: &str = "demo-token";

/// What `run` says first: enough to tell from a log which bridge this is and what it
/// talks to (no secrets: the store's password is redacted).
fn startup_line(settings: &Settings, config: Option<&std::path::Path>) -> String {
    let source = match hitl_bridge::config::sources::file_layer(config) {
        Some(file) => format!("built-in defaults + {} + environment", file.display()),
        None => "built-in defaults + environment".to_owned(),
    };
    let kind = &settings.backend.kind;
    let backend = match settings.chat_backend().and_then(|(backend, section)| backend.address(section, &settings.backend)) {
        Some(address) => format!("{kind} {address}"),
        None => kind.clone(),
    };
    let platforms: Vec<&str> = settings.platforms.enabled().collect();
    let http = if settings.http.enabled { settings.http.listen.clone() } else { "off".to_owned() };
    format!(
        "hitl-bridge {} starting: config {source}; store {}; backend {backend}; platforms {}; http {http}",
        env!("CARGO_PKG_VERSION"),
        hitl_bridge::config::url_without_password(&settings.store.url),
        if platforms.is_empty() { "none".to_owned() } else { platforms.join(", ") },
    )
}

async fn demo(chat: DemoChat, timeout_secs: u64, http_listen: String) -> anyhow::Result<()> {
    // Quiet by default: the terminal is the demo's user interface.
    init_logging("warn");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let sim = agent_sim::spawn(listener, SimOptions { timeout_secs, token: None }).await?;
    let url = format!("ws://{}/ws/{{session_id}}", sim.addr);
    let history = format!("http://{}/sessions/{{session_id}}/history", sim.addr);
    let mut settings = hitl_bridge::demo::settings(chat, &url, &history, &http_listen)?;
    settings.http.api_tokens = vec![format!("demo:{DEMO_TOKEN}")];
    // As typed: `hitl-bridge`, or `target/release/hitl-bridge` after `cargo run`.
    let program = std::env::args().next().unwrap_or_else(|| "hitl-bridge".to_owned());
    println!("{}", hitl_bridge::demo::banner(chat, &sim.addr.to_string(), &http_listen, DEMO_TOKEN, timeout_secs, &program));
    warn_about_unread_variables();
    let pairing = if chat == DemoChat::Terminal {
        None
    } else {
        let store = hitl_bridge::store::Store::connect_with(&settings.store.url, settings.store.sqlite_synchronous).await?;
        Some(tokio::spawn(hitl_bridge::demo::approve_at_the_terminal(store)))
    };
    let result = run_until_stopped(&settings).await;
    if let Some(pairing) = pairing {
        pairing.abort();
    }
    sim.shutdown().await;
    result
}

async fn run_until_stopped(settings: &Settings) -> anyhow::Result<()> {
    // One bridge per SQLite file; released by the OS however this process ends.
    let _store_lock = hitl_bridge::store::lock::lock_store(&settings.store.url)?;
    // The terminal, for the platform that is the terminal (when it is enabled).
    let console = Some((BufReader::new(tokio::io::stdin()), tokio::io::stdout()));
    let mut app = App::start(settings, console).await?;
    let engine_stopped = app.engine_stopped();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => tracing::info!("interrupted; stopping"),
        _ = terminated() => tracing::info!("SIGTERM; stopping"),
        _ = app.console_closed() => tracing::info!("console input ended; stopping"),
        end = engine_stopped => {
            // Without the engine every click would be answered "shutting down": exit
            // non-zero instead, so the supervisor restarts the bridge.
            tracing::error!(%end, "the engine stopped unexpectedly; exiting");
            app.stop().await;
            anyhow::bail!("{end}; exiting so the bridge can be restarted");
        }
    }
    app.stop().await;
    Ok(())
}

/// Resolves on SIGTERM (what `docker stop` and Kubernetes send): a normal stop, not
/// a crash. Never resolves where there is no such signal.
async fn terminated() {
    #[cfg(unix)]
    {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
                return;
            }
            Err(e) => tracing::warn!(error = %e, "cannot listen for SIGTERM"),
        }
    }
    std::future::pending::<()>().await
}

/// Variables meant for the bridge that set nothing (`HITL_BRIDGE_TELEGRAM__TOKEN`),
/// logged once each at start.
fn warn_about_unread_variables() {
    for warning in Settings::environment_warnings() {
        tracing::warn!("{warning}");
    }
}

/// Pretty logs with `default_filter` (`RUST_LOG` wins), for the commands without a config.
fn init_logging(default_filter: &str) {
    hitl_bridge::logging::init(&hitl_bridge::config::LogSettings { filter: default_filter.into(), ..Default::default() });
}
