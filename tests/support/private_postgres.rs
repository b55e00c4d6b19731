//! A PostgreSQL server of the test's own, in a temporary directory on a free port, so a
//! test can stop, restart or replace it without touching the machine's shared server
//! (which other tests use at the same time). Built from the server binaries Debian's
//! `postgresql` package installs; run as the `postgres` user (the server refuses
//! root). A standby streaming from it can be promoted and moved to its address: a
//! failover to a new primary at the same address, with no committed row lost
//! (`synchronous_standby_names = '*'`: a commit returns once the standby has it).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub struct PrivatePostgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    pub port: u16,
    /// The data directory now serving `port`.
    serving: PathBuf,
    /// A standby's data directory and port, once [`Self::add_standby`] made one.
    standby: Option<(PathBuf, u16)>,
}

/// The directory of the newest installed server's binaries.
fn server_bin() -> PathBuf {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL's server binaries in /usr/lib/postgresql (Debian's postgresql package)")
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|bin| bin.join("postgres").exists())
        .collect();
    versions.sort();
    versions.pop().expect("a PostgreSQL server under /usr/lib/postgresql")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().unwrap().port()
}

/// Runs `program args…` as the `postgres` user; panics with its output on failure.
fn as_postgres(program: &Path, args: &[&str]) {
    let output =
        Command::new("runuser").args(["-u", "postgres", "--"]).arg(program).args(args).stdin(Stdio::null()).output().expect("run runuser (util-linux)");
    assert!(
        output.status.success(),
        "{} {args:?} failed: {}{}",
        program.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

impl PrivatePostgres {
    /// Creates a cluster and starts it.
    pub fn start() -> PrivatePostgres {
        let dir = tempfile::tempdir().expect("temp dir");
        let status = Command::new("chown").args(["-R", "postgres:postgres"]).arg(dir.path()).status().expect("chown");
        assert!(status.success(), "cannot hand the directory to the postgres user (this test needs root)");
        let bin = server_bin();
        let data = dir.path().join("primary");
        as_postgres(&bin.join("initdb"), &["-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync", "-D", data.to_str().unwrap()]);
        let server = PrivatePostgres { port: free_port(), dir, bin, serving: data, standby: None };
        server.start_dir(&server.serving.clone(), server.port);
        server
    }

    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    fn start_dir(&self, data: &Path, port: u16) {
        let socket_dir = self.dir.path().to_str().unwrap();
        let options = format!("-p {port} -k {socket_dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off");
        let log = data.join("server.log");
        as_postgres(&self.bin.join("pg_ctl"), &["-D", data.to_str().unwrap(), "-l", log.to_str().unwrap(), "-o", &options, "-w", "-t", "30", "start"]);
    }

    fn stop_dir(&self, data: &Path, mode: &str) {
        as_postgres(&self.bin.join("pg_ctl"), &["-D", data.to_str().unwrap(), "-m", mode, "-w", "-t", "30", "stop"]);
    }

    /// Stops the server: `fast` (sessions are ended with an error, as a restart does)
    /// or `immediate` (a crash).
    pub fn stop(&self, mode: &str) {
        self.stop_dir(&self.serving, mode);
    }

    /// Starts the server again on its port; returns once it accepts connections.
    pub fn start_again(&self) {
        self.start_dir(&self.serving, self.port);
    }

    /// A standby streaming from the primary on a port of its own, and the primary's
    /// commits made to wait for it.
    pub fn add_standby(&mut self) {
        let data = self.dir.path().join("standby");
        let port = free_port();
        let primary_port = self.port.to_string();
        as_postgres(
            &self.bin.join("pg_basebackup"),
            &["-D", data.to_str().unwrap(), "-R", "-X", "stream", "-h", "127.0.0.1", "-p", &primary_port, "-U", "postgres", "--no-sync"],
        );
        self.start_dir(&data, port);
        let conf = self.serving.join("postgresql.auto.conf");
        let mut auto = std::fs::read_to_string(&conf).unwrap_or_default();
        auto.push_str("synchronous_standby_names = '*'\n");
        std::fs::write(&conf, auto).expect("write postgresql.auto.conf");
        as_postgres(&self.bin.join("pg_ctl"), &["-D", self.serving.to_str().unwrap(), "reload"]);
        self.standby = Some((data, port));
    }

    /// The primary dies (`immediate`); the standby is promoted and takes over the
    /// primary's address. Returns once the new primary accepts connections.
    pub fn fail_over(&mut self) {
        let (standby, standby_port) = self.standby.take().expect("add_standby first");
        self.stop("immediate");
        as_postgres(&self.bin.join("pg_ctl"), &["-D", standby.to_str().unwrap(), "-w", "promote"]);
        // Moved to the old primary's port: the bridge's URL does not change.
        self.stop_dir(&standby, "fast");
        let _ = standby_port;
        let conf = standby.join("postgresql.auto.conf");
        let auto = std::fs::read_to_string(&conf).unwrap_or_default().replace("synchronous_standby_names = '*'", "");
        std::fs::write(&conf, auto).expect("write postgresql.auto.conf");
        self.serving = standby;
        self.start_again();
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let mut dirs = vec![self.serving.clone()];
        dirs.extend(self.standby.as_ref().map(|(d, _)| d.clone()));
        dirs.push(self.dir.path().join("primary"));
        for data in dirs {
            let _ = Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(self.bin.join("pg_ctl"))
                .args(["-D", data.to_str().unwrap(), "-m", "immediate", "stop"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}
