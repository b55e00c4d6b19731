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

use tokio::process::Command;

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
