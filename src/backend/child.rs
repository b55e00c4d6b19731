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
//! recorded ([`Agents::record`]) and the next bridge of the same deployment (store) to
//! start on the host ends what a dead one left: SIGINT again, a grace, then SIGKILL
//! ([`Agents::end_left_by_dead_bridges`]).

use std::path::PathBuf;
use std::time::Duration;

use tokio::process::Command;

#[cfg(target_os = "linux")]
mod registry;

pub mod settings;
pub mod stdio;

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
        // signal, prctl, getppid and _exit are.
        unsafe {
            command.pre_exec(move || {
                // An ignored SIGINT survives exec: a bridge started with it ignored
                // (by `nohup`, a shell's background job) would hand agents a death
                // signal they never see.
                if libc::signal(libc::SIGINT, libc::SIG_DFL) == libc::SIG_ERR {
                    return Err(std::io::Error::last_os_error());
                }
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
/// when dropped. What a crash leaves of it tells the deployment's next bridge on this
/// host which processes to end ([`Agents::end_left_by_dead_bridges`]).
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

/// The agent processes of one deployment (the bridges sharing a store: its replicas
/// and its restarts) on this host. Cheap to clone; the default records nothing (a
/// bridge whose store has no identity yet, a test).
#[derive(Clone, Default)]
pub struct Agents {
    #[cfg(target_os = "linux")]
    registry: Option<std::sync::Arc<registry::Registry>>,
}

impl std::fmt::Debug for Agents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agents").finish_non_exhaustive()
    }
}

impl Agents {
    /// The agents of `deployment`, the store's identity ([`crate::store::Store::deployment_id`]):
    /// a bridge of another store on this host keeps its own, never touched here.
    pub fn of_deployment(deployment: &str) -> Agents {
        #[cfg(target_os = "linux")]
        return Agents { registry: registry::Registry::of_deployment(deployment).map(std::sync::Arc::new) };
        #[cfg(not(target_os = "linux"))]
        {
            let _ = deployment;
            Agents {}
        }
    }

    /// Records the agent process `pid` as started by this bridge. Without a record the
    /// agent still gets SIGINT when the bridge dies; only a stuck one would outlive it.
    pub fn record(&self, pid: Option<u32>) -> AgentRecord {
        #[cfg(target_os = "linux")]
        let path = self.registry.as_ref().and_then(|registry| registry.record(pid?));
        #[cfg(not(target_os = "linux"))]
        let path = pid.and(None);
        AgentRecord { path }
    }

    /// Ends the agent processes a bridge of this deployment left behind when it died (a
    /// SIGKILL, an OOM kill): normally they exit on the SIGINT they got then, but one
    /// stuck on its way out (Kimi CLI was seen to hang there) would stay beside the
    /// agent the restarted bridge starts on the same conversation. Each gets SIGINT
    /// again and [`GRACE`] to exit (Claude Code writes its transcript then), then
    /// SIGKILL. Agents of other deployments' bridges are not looked at, so nothing of
    /// theirs is ended or waited on. Called at start-up, before any agent is started;
    /// costs one directory listing when nothing is left.
    pub async fn end_left_by_dead_bridges(&self) {
        #[cfg(target_os = "linux")]
        if let Some(registry) = &self.registry {
            registry.end_orphans(GRACE).await;
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    /// A bridge started with SIGINT ignored (`nohup`, a shell's background job) would
    /// pass that on: its agents would never see the SIGINT their bridge's death sends.
    #[tokio::test]
    async fn an_agent_hears_sigint_even_when_the_bridge_was_started_ignoring_it() {
        let mut command = Command::new("sh");
        // The child sends itself SIGINT; ignored, it would sleep and exit 0.
        command.args(["-c", "kill -INT $$; sleep 5"]);
        // SAFETY: signal is async-signal-safe. Registered first, so it runs first: the
        // state an ignoring parent hands down.
        unsafe {
            command.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_IGN);
                Ok(())
            });
        }
        let status = dies_with_the_bridge(&mut command).status().await.expect("sh");
        assert_eq!(status.signal(), Some(libc::SIGINT), "{status:?}");
    }
}
