//! Which agent processes were started by bridges of this deployment that have died, on
//! Linux: a directory of records (one file per running agent, named after the agent,
//! holding the bridge that started it) and the process identities read from `/proc`.
//!
//! The directory is the deployment's (named after the store's identity): bridges of
//! other stores on the same host, another project's or a test's, keep their own, so a
//! bridge never ends, nor waits on, an agent that is not its own predecessors'.

use std::path::PathBuf;
use std::time::Duration;

/// A process as the kernel tells it apart: a pid is reused, a pid with its start time
/// is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ProcessId {
    pid: u32,
    /// Clock ticks after boot (`/proc/<pid>/stat`, field 22).
    start: u64,
}

impl ProcessId {
    /// The process `pid` if it is running (a zombie has ended: it only waits for its
    /// parent, which for an orphan may never come).
    fn running(pid: u32) -> Option<ProcessId> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The command name (field 2) is in parentheses and may hold anything.
        let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        if fields.first() == Some(&"Z") {
            return None;
        }
        let start = fields.get(19)?.parse().ok()?;
        Some(ProcessId { pid, start })
    }

    fn is_running(self) -> bool {
        ProcessId::running(self.pid) == Some(self)
    }

    fn parse(text: &str) -> Option<ProcessId> {
        let (pid, start) = text.trim().split_once('-')?;
        Some(ProcessId { pid: pid.parse().ok()?, start: start.parse().ok()? })
    }
}

impl std::fmt::Display for ProcessId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.pid, self.start)
    }
}

/// A directory of agent records: one file per running agent, named after the agent and
/// holding the bridge that started it.
pub(super) struct Registry {
    dir: PathBuf,
    bridge: ProcessId,
}

impl Registry {
    /// The registry of `deployment` (the store's identity) for this user in the
    /// temporary directory, shared by this deployment's bridges on this host (its
    /// replicas and restarts; a container's processes end with its temporary
    /// directory's), if this is Linux and the directory is this user's alone: a record
    /// is an order to kill, so nobody else may write one.
    pub(super) fn of_deployment(deployment: &str) -> Option<Registry> {
        let bridge = ProcessId::running(std::process::id())?;
        Registry::at(Registry::dir_in(&std::env::temp_dir(), deployment)?, bridge)
    }

    /// The directory of `deployment`'s records under `base`; none for a name that is
    /// not a plain file name (the store makes it, but a path must never come of it).
    fn dir_in(base: &std::path::Path, deployment: &str) -> Option<PathBuf> {
        let plain = !deployment.is_empty() && deployment.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !plain {
            tracing::warn!(deployment, "the deployment's name is not a plain file name; agents a crash leaves are not ended at start-up");
            return None;
        }
        Some(base.join(format!("hitl-bridge-agents-{}-{deployment}", effective_uid())))
    }

    fn at(dir: PathBuf, bridge: ProcessId) -> Option<Registry> {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt};
        let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
        let meta = std::fs::symlink_metadata(&dir).ok()?;
        if !meta.is_dir() || meta.uid() != effective_uid() || meta.mode() & 0o077 != 0 {
            tracing::warn!(dir = %dir.display(), "the agent registry is not a directory of this user's alone; agents a crash leaves are not ended at start-up");
            return None;
        }
        Some(Registry { dir, bridge })
    }

    pub(super) fn record(&self, pid: u32) -> Option<PathBuf> {
        let agent = ProcessId::running(pid)?;
        let path = self.dir.join(agent.to_string());
        match std::fs::write(&path, self.bridge.to_string()) {
            Ok(()) => Some(path),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot record an agent process; a crash may leave it running");
                None
            }
        }
    }

    /// The agents recorded by bridges that are gone and still running; the records of
    /// agents that ended are removed. Records of running bridges are theirs.
    fn orphans(&self) -> Vec<(ProcessId, PathBuf)> {
        let mut orphans = Vec::new();
        for entry in std::fs::read_dir(&self.dir).into_iter().flatten().flatten() {
            let path = entry.path();
            let bridge = std::fs::read_to_string(&path).ok().and_then(|text| ProcessId::parse(&text));
            if bridge.is_some_and(ProcessId::is_running) {
                continue;
            }
            match ProcessId::parse(&entry.file_name().to_string_lossy()) {
                Some(agent) if agent.is_running() => orphans.push((agent, path)),
                _ => {
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        orphans
    }

    pub(super) async fn end_orphans(&self, grace: Duration) {
        let orphans = self.orphans();
        if orphans.is_empty() {
            return;
        }
        for (agent, _) in &orphans {
            tracing::warn!(pid = agent.pid, "an agent process left by a bridge that died is still running; ending it");
            signal(agent.pid, libc::SIGINT);
        }
        until_ended(&orphans, grace).await;
        for (agent, _) in &orphans {
            if agent.is_running() {
                tracing::warn!(pid = agent.pid, grace_secs = grace.as_secs(), "the agent did not exit on SIGINT; killing it");
                signal(agent.pid, libc::SIGKILL);
            }
        }
        // A killed process takes a moment to go (a large one, to free its memory).
        until_ended(&orphans, KILL_WAIT).await;
        for (_, path) in orphans {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// How long a killed agent may take to be gone before start-up goes on regardless.
const KILL_WAIT: Duration = Duration::from_secs(2);

/// Waits until none of `agents` runs, for `at_most`.
async fn until_ended(agents: &[(ProcessId, PathBuf)], at_most: Duration) {
    let deadline = tokio::time::Instant::now() + at_most;
    while agents.iter().any(|(agent, _)| agent.is_running()) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn effective_uid() -> u32 {
    // SAFETY: geteuid cannot fail and touches no memory.
    unsafe { libc::geteuid() }
}

fn signal(pid: u32, signal: libc::c_int) {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return };
    // SAFETY: kill only sends a signal; a process that is gone makes it fail with ESRCH.
    unsafe {
        libc::kill(pid, signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::{Child, Command, ExitStatus};

    /// A bridge that is gone: no process has pid 0 in `/proc`.
    const DEAD_BRIDGE: ProcessId = ProcessId { pid: 0, start: 0 };

    fn registry(dir: &tempfile::TempDir, bridge: ProcessId) -> Registry {
        deployment_registry(dir, "d1", bridge)
    }

    fn deployment_registry(dir: &tempfile::TempDir, deployment: &str, bridge: ProcessId) -> Registry {
        Registry::at(Registry::dir_in(dir.path(), deployment).expect("a plain name"), bridge).expect("a private registry")
    }

    fn agent(script: &str) -> Child {
        let mut command = Command::new("sh");
        command.args(["-c", script]);
        // The test runner may have been started with SIGINT ignored (a background
        // job), which the shell would inherit and the test would read as "ignores it".
        // SAFETY: signal is async-signal-safe.
        unsafe {
            command.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                Ok(())
            });
        }
        let child = command.spawn().expect("sh");
        // Until the shell has set its traps, a SIGINT would end it whatever the script says.
        std::thread::sleep(Duration::from_millis(200));
        child
    }

    fn ended_by(mut child: Child) -> ExitStatus {
        child.wait().expect("wait")
    }

    fn signal_of(status: ExitStatus) -> Option<i32> {
        use std::os::unix::process::ExitStatusExt;
        status.signal()
    }

    #[tokio::test]
    async fn an_agent_of_a_dead_bridge_gets_sigint_and_one_that_ignores_it_is_killed_after_the_grace() {
        let dir = tempfile::tempdir().expect("tempdir");
        let registry = registry(&dir, DEAD_BRIDGE);
        let polite = agent("exec sleep 60");
        let stuck = agent("trap '' INT; exec sleep 60");
        let records = [registry.record(polite.id()).expect("recorded"), registry.record(stuck.id()).expect("recorded")];

        let started = std::time::Instant::now();
        registry.end_orphans(Duration::from_millis(500)).await;
        let took = started.elapsed();

        assert_eq!(signal_of(ended_by(polite)), Some(libc::SIGINT));
        assert_eq!(signal_of(ended_by(stuck)), Some(libc::SIGKILL));
        assert!(took >= Duration::from_millis(500), "the stuck agent had its grace: {took:?}");
        assert!(records.iter().all(|record| !record.exists()), "the records are removed");
    }

    #[tokio::test]
    async fn agents_of_a_running_bridge_are_left_alone_and_records_of_ended_agents_are_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let this_bridge = ProcessId::running(std::process::id()).expect("this process");
        let mut ours = agent("exec sleep 60");
        let ours_record = registry(&dir, this_bridge).record(ours.id()).expect("recorded");
        let mut gone = Command::new("sleep").arg("0.2").spawn().expect("sleep");
        let gone_record = registry(&dir, DEAD_BRIDGE).record(gone.id()).expect("recorded while it runs");
        gone.wait().expect("wait");

        let other = registry(&dir, DEAD_BRIDGE);
        assert!(other.orphans().is_empty(), "nothing to end");
        other.end_orphans(Duration::from_millis(100)).await;

        assert!(ours.try_wait().expect("try_wait").is_none(), "a running bridge's agent runs on");
        assert!(ours_record.exists(), "its record stays");
        assert!(!gone_record.exists(), "the record of an agent that ended is removed");
        ours.kill().expect("kill");
        ours.wait().expect("wait");
    }

    /// Two bridges on two stores on one host: the agent left by a dead bridge of store A
    /// is not the business of store B's bridge, which neither ends it nor waits on it;
    /// the next bridge of store A ends it.
    #[tokio::test]
    async fn a_bridge_of_another_store_leaves_a_dead_bridges_agent_alone_and_does_not_wait_on_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let stuck = agent("trap '' INT; exec sleep 60");
        let record = deployment_registry(&dir, "store-a", DEAD_BRIDGE).record(stuck.id()).expect("recorded");

        let this_bridge = ProcessId::running(std::process::id()).expect("this process");
        let other_store = deployment_registry(&dir, "store-b", this_bridge);
        let started = std::time::Instant::now();
        other_store.end_orphans(Duration::from_secs(5)).await;
        assert!(started.elapsed() < Duration::from_millis(500), "no wait on another store's agents: {:?}", started.elapsed());
        assert!(ProcessId::running(stuck.id()).is_some(), "another store's agent runs on");
        assert!(record.exists(), "its record stays for its own deployment");

        deployment_registry(&dir, "store-a", this_bridge).end_orphans(Duration::from_millis(200)).await;
        assert_eq!(signal_of(ended_by(stuck)), Some(libc::SIGKILL), "its own deployment's next bridge ends it");
        assert!(!record.exists());
    }

    #[test]
    fn a_deployment_name_that_is_not_a_plain_file_name_gets_no_registry() {
        let base = std::path::Path::new("/tmp");
        for name in ["", "../x", "a/b", "a b", "."] {
            assert_eq!(Registry::dir_in(base, name), None, "{name:?}");
        }
        let dir = Registry::dir_in(base, "0f3a-b_c").expect("plain");
        assert_eq!(dir, base.join(format!("hitl-bridge-agents-{}-0f3a-b_c", effective_uid())));
    }

    #[test]
    fn a_reused_pid_is_not_the_recorded_process() {
        let this = ProcessId::running(std::process::id()).expect("this process");
        assert!(this.is_running());
        assert!(!ProcessId { start: this.start + 1, ..this }.is_running());
        assert_eq!(ProcessId::parse(&this.to_string()), Some(this));
        assert_eq!(ProcessId::parse("12-x"), None);
    }

    #[test]
    fn a_registry_others_can_write_to_is_not_used() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let shared = Registry::dir_in(dir.path(), "d1").expect("a plain name");
        std::fs::create_dir(&shared).expect("mkdir");
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        assert!(Registry::at(shared, DEAD_BRIDGE).is_none());
    }
}
