//! Agent processes the bridge starts (Claude Code, Kimi) end with the bridge, however
//! it ends. `kill_on_drop` covers a clean stop; a SIGKILL, an OOM kill or a panic
//! that aborts drops nothing, and an orphaned agent would go on with a turn nobody
//! reads, next to the one the restarted bridge starts on the same conversation.
//!
//! The signal is SIGINT, as Ctrl-C in a terminal: the agent interrupts its turn and
//! exits, writing down on its way out what it read (Claude Code flushes its
//! transcript), which is the record a restarted bridge checks before sending a message
//! again. SIGKILL would lose that record; SIGTERM lets Claude Code answer its open
//! permission request with an error and ask the model once more before it exits
//! (tests/backend_claude_code.rs saw both).
//!
//! An agent stuck on its way out would outlive the SIGINT, so each running agent is
//! recorded ([`record`]) and the next bridge to start on the host ends what a dead
//! bridge left: SIGINT again, a grace, then SIGKILL ([`end_agents_left_by_dead_bridges`]).

use std::path::PathBuf;
use std::time::Duration;

use tokio::process::Command;

#[cfg(target_os = "linux")]
mod registry;

/// Makes the child started by `command` receive SIGINT when the bridge dies.
///
/// Linux delivers it when the thread that spawned the child exits; children are
/// spawned from the runtime's worker threads, which live as long as the process.
/// Elsewhere this does nothing and only `kill_on_drop` applies.
pub fn dies_with_the_bridge(command: &mut Command) -> &mut Command {
    #[cfg(target_os = "linux")]
    {
        let bridge = std::process::id() as libc::pid_t;
        // SAFETY: between fork and exec only async-signal-safe calls are allowed;
        // prctl, getppid and _exit are.
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGINT) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The bridge may have died before prctl took effect.
                if libc::getppid() != bridge {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
    }
    command
}

/// How long an agent left by a dead bridge has, after the SIGINT it got when its
/// bridge died and the one sent again at start-up, before it is killed.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
const GRACE: Duration = Duration::from_secs(5);

/// The record of one running agent process, kept while the bridge holds it and removed
/// when dropped. What a crash leaves of it tells the next bridge on this host which
/// processes to end ([`end_agents_left_by_dead_bridges`]).
pub struct AgentRecord {
    path: Option<PathBuf>,
}

impl Drop for AgentRecord {
    fn drop(&mut self) {
        if let Some(path) = self.path.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Records the agent process `pid` as started by this bridge. Without a record the
/// agent still gets SIGINT when the bridge dies; only a stuck one would outlive it.
pub fn record(pid: Option<u32>) -> AgentRecord {
    #[cfg(target_os = "linux")]
    let path = this_bridges_registry().and_then(|registry| registry.record(pid?));
    #[cfg(not(target_os = "linux"))]
    let path = pid.and(None);
    AgentRecord { path }
}

/// Ends the agent processes a bridge on this host left behind when it died (a SIGKILL,
/// an OOM kill): normally they exit on the SIGINT they got then, but one stuck on its
/// way out (Kimi CLI was seen to hang there) would stay beside the agent the restarted
/// bridge starts on the same conversation. Each gets SIGINT again and [`GRACE`] to exit
/// (Claude Code writes its transcript then), then SIGKILL. Called at start-up, before
/// any agent is started; costs one directory listing when nothing is left.
pub async fn end_agents_left_by_dead_bridges() {
    #[cfg(target_os = "linux")]
    if let Some(registry) = this_bridges_registry() {
        registry.end_orphans(GRACE).await;
    }
}

/// The registry, looked up (and its ownership checked, a refusal logged) once per
/// process rather than at every agent started.
#[cfg(target_os = "linux")]
fn this_bridges_registry() -> Option<&'static registry::Registry> {
    static REGISTRY: std::sync::OnceLock<Option<registry::Registry>> = std::sync::OnceLock::new();
    REGISTRY.get_or_init(registry::Registry::of_this_bridge).as_ref()
}
