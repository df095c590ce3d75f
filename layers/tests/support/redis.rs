//! Throwaway Redis servers for integration tests: every test starts its own `redis-server` on a
//! free port in its own temporary directory, and the server dies with the value that owns it. No
//! test ever talks to a server someone else left running (such as one on 127.0.0.1:6379).
//!
//! Include it from `layers/tests/*.rs` with `#[path = "support/redis.rs"] mod redis_support;`, or
//! from the root crate's tests with `#[path = "../layers/tests/support/redis.rs"] mod redis_support;`.
//!
//! It uses only `std` and blocks: it is set-up code. The only waits are bounded polls (every
//! 10 ms) for a process to start or a cluster to settle; `redis-server` and `redis-cli` must be on
//! the `PATH` (`scripts/test` installs them).
//!
//! ```ignore
//! let server = RedisServer::start();
//! let client = redis::Client::open(server.url())?;
//! assert_eq!(server.command(&["DBSIZE"]), "0");
//! assert_eq!(server.commandstats().get("evalsha"), None);
//! ```

// Each test file that includes this module uses only some of its items; the others would be
// reported as dead code in that test binary.
#![allow(dead_code)]

use std::{
    collections::BTreeMap,
    fs,
    io::{self, BufRead, BufReader, Write},
    net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{self, Child, Command, Stdio},
    sync::{
        Mutex, OnceLock,
        atomic::{AtomicU64, Ordering},
    },
    thread,
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

const HOST: Ipv4Addr = Ipv4Addr::LOCALHOST;
/// How many fresh ports `start` (or how many times `restart`) tries before giving up.
const START_ATTEMPTS: usize = 5;
/// The polling period of every bounded wait.
const POLL: Duration = Duration::from_millis(10);
/// How long a started process may take to answer `PING`.
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long `restart` waits for the port to be bindable again before each attempt.
const PORT_FREE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a new cluster may take until every node reports `cluster_state:ok`.
const CLUSTER_READY_TIMEOUT: Duration = Duration::from_secs(30);
/// Connect timeout of every harness connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// Read/write timeout of `command` (long enough for a `DEBUG SLEEP` of a few seconds).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);
/// Read/write timeout of the readiness probes.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);
/// A cluster node also listens on its port + 10000 (the cluster bus).
const CLUSTER_BUS_OFFSET: u16 = 10_000;

fn missing_binary(binary: &str, package: &str) -> ! {
    panic!(
        "`{binary}` is not installed (not found on PATH): run scripts/test, which installs it with apt-get \
         (Debian package `{package}`)"
    )
}

/// The major version of the installed `redis-server`; panics with an install hint if it is missing.
fn redis_major_version() -> u32 {
    static MAJOR: OnceLock<u32> = OnceLock::new();
    *MAJOR.get_or_init(|| {
        let output = match Command::new("redis-server").arg("--version").stdin(Stdio::null()).output() {
            Ok(output) => output,
            Err(e) if e.kind() == io::ErrorKind::NotFound => missing_binary("redis-server", "redis-server"),
            Err(e) => panic!("cannot run `redis-server --version`: {e}"),
        };
        // "Redis server v=7.0.15 sha=... malloc=... bits=64 build=..."
        let text = String::from_utf8_lossy(&output.stdout);
        text.split_whitespace()
            .find_map(|word| word.strip_prefix("v="))
            .and_then(|version| version.split('.').next())
            .and_then(|major| major.parse().ok())
            .unwrap_or_else(|| panic!("cannot read the version of redis-server from {text:?}"))
    })
}

/// A fresh, empty directory under the system temp dir.
fn temp_dir() -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    loop {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("switchyard-redis-{}-{n}-{nanos}", process::id()));
        match fs::create_dir(&dir) {
            Ok(()) => return dir,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => panic!("cannot create a temp dir for redis-server at {}: {e}", dir.display()),
        }
    }
}

fn can_bind(port: u16) -> bool {
    TcpListener::bind((HOST, port)).is_ok()
}

/// A port that is free right now (the kernel picks it); for a cluster node, its bus port
/// (port + 10000) is free too. Another process may still take it before the server binds it:
/// `start` detects that and tries another port.
fn free_port(cluster: bool) -> u16 {
    for _ in 0..1000 {
        let listener = TcpListener::bind((HOST, 0)).expect("bind 127.0.0.1:0 to find a free port");
        let port = listener.local_addr().expect("local address of a bound listener").port();
        if !cluster {
            return port;
        }
        // Both must be free at once: keep `listener` bound while checking the bus port.
        if port.checked_add(CLUSTER_BUS_OFFSET).is_some_and(can_bind) {
            return port;
        }
    }
    panic!("found no free port pair (P, P + {CLUSTER_BUS_OFFSET}) on 127.0.0.1 for a cluster node")
}

/// One `redis-server` process, started on a free port of 127.0.0.1 with its own temporary
/// directory, no persistence and no protected mode. Dropping it kills the process and removes the
/// directory. Debug commands (`DEBUG SLEEP`) are enabled.
#[derive(Debug)]
pub(crate) struct RedisServer {
    port: u16,
    dir: PathBuf,
    cluster: bool,
    /// `None` after `kill`. In a mutex so `is_running` can take `&self` and the server can be shared.
    child: Mutex<Option<Child>>,
}

impl RedisServer {
    /// Starts a standalone server and waits until it answers `PING`. Panics with a clear message
    /// if `redis-server` is not installed or does not come up.
    pub(crate) fn start() -> RedisServer {
        Self::start_with(false)
    }

    fn start_with(cluster: bool) -> RedisServer {
        redis_major_version(); // panics with the install hint before anything is created
        let dir = temp_dir();
        let mut failures = Vec::new();
        for _ in 0..START_ATTEMPTS {
            let port = free_port(cluster);
            match spawn(port, &dir, cluster) {
                Ok(child) => return RedisServer { port, dir, cluster, child: Mutex::new(Some(child)) },
                Err(e) => failures.push(e),
            }
        }
        let _ = fs::remove_dir_all(&dir);
        panic!("redis-server did not start in {START_ATTEMPTS} attempts:\n{}", failures.join("\n"))
    }

    /// The TCP port the server listens on (stays the same across `kill` and `restart`).
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:{port}`.
    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The server's working directory (its log files are `redis-{port}.log` and `.out` in it).
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The process id of the running server, `None` after `kill`.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map(Child::id)
    }

    /// Whether the server process is alive.
    pub(crate) fn is_running(&self) -> bool {
        let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        child.as_mut().is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Kills the process with SIGKILL and waits for it to exit (like a crash: no shutdown, open
    /// connections break). The port is kept for `restart`. Does nothing if it is not running.
    pub(crate) fn kill(&mut self) {
        if let Some(mut child) = self.child.get_mut().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port and directory (killing it first if it still
    /// runs) and waits until it answers `PING`. A standalone server comes back empty; a cluster
    /// node comes back with its cluster identity (its nodes file survives in the directory).
    /// Panics if the port was taken by another process in the meantime.
    pub(crate) fn restart(&mut self) {
        self.kill();
        let mut failures = Vec::new();
        for _ in 0..START_ATTEMPTS {
            wait_until_bindable(self.port, self.cluster);
            match spawn(self.port, &self.dir, self.cluster) {
                Ok(child) => {
                    *self.child.get_mut().unwrap_or_else(|e| e.into_inner()) = Some(child);
                    return;
                }
                Err(e) => failures.push(e),
            }
        }
        panic!(
            "redis-server did not restart on port {} in {START_ATTEMPTS} attempts:\n{}",
            self.port,
            failures.join("\n")
        )
    }

    /// Runs one command on a new connection and renders the reply as text: a simple string or an
    /// integer as is, an error as `ERR:` + its message (`ERR:MOVED 3999 127.0.0.1:7001`), a bulk
    /// string as its content, a null as `(nil)`, an array as its rendered elements joined by
    /// newlines. Panics if the server cannot be reached (use `try_command` to see that error).
    pub(crate) fn command(&self, args: &[&str]) -> String {
        self.try_command(args).unwrap_or_else(|e| panic!("redis command {args:?} on port {}: {e}", self.port))
    }

    /// `command`, with connection and protocol failures returned instead of panicking.
    pub(crate) fn try_command(&self, args: &[&str]) -> io::Result<String> {
        run_command(self.port, args, COMMAND_TIMEOUT)
    }

    /// Calls per command since start (or the last `reset_commandstats`), from `INFO commandstats`:
    /// `cmdstat_evalsha:calls=12,...` becomes `"evalsha" => 12`, subcommands read
    /// `"client|setname"`. Commands that were never called are absent; the `info` calls that read
    /// the statistics are counted too.
    pub(crate) fn commandstats(&self) -> BTreeMap<String, u64> {
        parse_commandstats(&self.command(&["INFO", "commandstats"]))
    }

    /// Resets the statistics `commandstats` reads (`CONFIG RESETSTAT`).
    pub(crate) fn reset_commandstats(&self) {
        let reply = self.command(&["CONFIG", "RESETSTAT"]);
        assert_eq!(reply, "OK", "CONFIG RESETSTAT on port {}", self.port);
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Starts `redis-server` on `port` and waits until that process answers `PING`. On failure the
/// process is gone and the error says why (with the end of its log).
fn spawn(port: u16, dir: &Path, cluster: bool) -> Result<Child, String> {
    let log = dir.join(format!("redis-{port}.log"));
    let out = dir.join(format!("redis-{port}.out"));
    let out_file = fs::File::create(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let err_file = out_file.try_clone().map_err(|e| format!("cannot clone the handle of {}: {e}", out.display()))?;

    let mut cmd = Command::new("redis-server");
    cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no", "--daemonize", "no", "--protected-mode", "no"])
        .args(["--loglevel", "warning"])
        .arg("--dir")
        .arg(dir)
        .arg("--logfile")
        .arg(&log);
    if redis_major_version() >= 7 {
        // Redis 7 refuses DEBUG (used by tests as `DEBUG SLEEP`) unless enabled.
        cmd.args(["--enable-debug-command", "yes"]);
    }
    if cluster {
        cmd.args(["--cluster-enabled", "yes", "--cluster-node-timeout", "2000"])
            .args(["--cluster-config-file", &format!("nodes-{port}.conf")]);
    }
    cmd.current_dir(dir).stdin(Stdio::null()).stdout(out_file).stderr(err_file);

    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) if e.kind() == io::ErrorKind::NotFound => missing_binary("redis-server", "redis-server"),
        Err(e) => return Err(format!("cannot spawn redis-server: {e}")),
    };
    match wait_ready(&mut child, port) {
        Ok(()) => Ok(child),
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(format!("port {port}: {e}\n{}", log_tail(&[&log, &out])))
        }
    }
}

/// Polls until the process `child` answers `PING` on `port`, or fails: the process exited (most
/// often: the port was taken), another process answers on that port, or it took too long.
fn wait_ready(child: &mut Child, port: u16) -> Result<(), String> {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        if let Some(status) = child.try_wait().map_err(|e| format!("cannot poll redis-server: {e}"))? {
            return Err(format!("redis-server exited during start-up ({status})"));
        }
        if let Ok(pid) = probe(port) {
            // Whoever answers must be our process, not a server that won a race for the port.
            return if pid == child.id() {
                Ok(())
            } else {
                Err(format!("port {port} is served by another process (pid {pid}), not by ours ({})", child.id()))
            };
        }
        if Instant::now() >= deadline {
            return Err(format!("redis-server did not answer PING within {READY_TIMEOUT:?}"));
        }
        thread::sleep(POLL);
    }
}

/// `PING` (expecting `+PONG`), then the process id of whoever answers, from `INFO server`.
fn probe(port: u16) -> io::Result<u32> {
    let mut conn = connect(port, PROBE_TIMEOUT)?;
    conn.get_mut().write_all(&encode(&["PING"]))?;
    let mut line = Vec::new();
    read_line(&mut conn, &mut line)?;
    if line != b"+PONG" {
        return Err(io::Error::other(format!("PING answered {:?}", String::from_utf8_lossy(&line))));
    }
    conn.get_mut().write_all(&encode(&["INFO", "server"]))?;
    let info = read_reply(&mut conn)?;
    info.lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .and_then(|pid| pid.trim().parse().ok())
        .ok_or_else(|| io::Error::other("INFO server has no process_id"))
}

/// Waits (bounded) until `port` (and its bus port for a cluster node) can be bound again.
fn wait_until_bindable(port: u16, cluster: bool) {
    let deadline = Instant::now() + PORT_FREE_TIMEOUT;
    while !(can_bind(port) && (!cluster || can_bind(port + CLUSTER_BUS_OFFSET))) && Instant::now() < deadline {
        thread::sleep(POLL);
    }
}

fn log_tail(files: &[&Path]) -> String {
    let mut text = String::new();
    for file in files {
        let content = fs::read_to_string(file).unwrap_or_default();
        let lines: Vec<&str> = content.lines().collect();
        let tail = &lines[lines.len().saturating_sub(10)..];
        if !tail.is_empty() {
            text.push_str(&format!("  {}:\n    {}\n", file.display(), tail.join("\n    ")));
        }
    }
    text
}

fn connect(port: u16, timeout: Duration) -> io::Result<BufReader<TcpStream>> {
    let stream = TcpStream::connect_timeout(&SocketAddr::from((HOST, port)), CONNECT_TIMEOUT)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    stream.set_nodelay(true)?;
    Ok(BufReader::new(stream))
}

fn run_command(port: u16, args: &[&str], timeout: Duration) -> io::Result<String> {
    let mut conn = connect(port, timeout)?;
    conn.get_mut().write_all(&encode(args))?;
    read_reply(&mut conn)
}

/// A command as a RESP array of bulk strings.
fn encode(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// One line without its `\r\n`.
fn read_line(r: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<()> {
    line.clear();
    r.read_until(b'\n', line)?;
    if !line.ends_with(b"\r\n") {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed in the middle of a reply"));
    }
    line.truncate(line.len() - 2);
    Ok(())
}

/// Reads one RESP2 reply and renders it as described on `RedisServer::command`.
fn read_reply(r: &mut impl BufRead) -> io::Result<String> {
    let mut line = Vec::new();
    read_line(r, &mut line)?;
    let Some((&kind, rest)) = line.split_first() else {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "empty reply line"));
    };
    let rest = String::from_utf8_lossy(rest).into_owned();
    let length = || -> io::Result<i64> {
        rest.parse().map_err(|_| io::Error::new(io::ErrorKind::InvalidData, format!("bad length {rest:?}")))
    };
    match kind {
        b'+' | b':' => Ok(rest),
        b'-' => Ok(format!("ERR:{rest}")),
        b'$' => {
            let Ok(len) = usize::try_from(length()?) else { return Ok("(nil)".to_owned()) };
            let mut data = vec![0; len + 2];
            r.read_exact(&mut data)?;
            if !data.ends_with(b"\r\n") {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "bulk string without its \\r\\n"));
            }
            data.truncate(len);
            Ok(String::from_utf8_lossy(&data).into_owned())
        }
        b'*' => {
            let Ok(len) = usize::try_from(length()?) else { return Ok("(nil)".to_owned()) };
            let items = (0..len).map(|_| read_reply(r)).collect::<io::Result<Vec<_>>>()?;
            Ok(items.join("\n"))
        }
        other => Err(io::Error::new(io::ErrorKind::InvalidData, format!("unknown reply type {:?}", other as char))),
    }
}

/// `cmdstat_evalsha:calls=12,usec=...` lines to `{"evalsha": 12}`.
fn parse_commandstats(info: &str) -> BTreeMap<String, u64> {
    info.lines()
        .filter_map(|line| {
            let (name, fields) = line.trim().strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = fields.split(',').find_map(|f| f.strip_prefix("calls="))?.parse().ok()?;
            Some((name.to_owned(), calls))
        })
        .collect()
}

/// A Redis Cluster of `masters` master nodes (no replicas) on free ports of 127.0.0.1, each node a
/// `RedisServer` with its own directory, all 16384 slots assigned. Dropping it kills every node.
#[derive(Debug)]
pub(crate) struct RedisCluster {
    nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// Starts `masters` (at least 3) cluster-enabled servers, joins them with
    /// `redis-cli --cluster create`, and waits until every node knows every other and reports
    /// `cluster_state:ok`. Panics with a clear message if a binary is missing or it does not settle.
    pub(crate) fn start(masters: usize) -> RedisCluster {
        assert!(masters >= 3, "redis-cli --cluster create needs at least 3 masters, asked for {masters}");
        // One after another: a running node holds its ports, so the next free-port pick avoids them.
        let nodes: Vec<RedisServer> = (0..masters).map(|_| RedisServer::start_with(true)).collect();

        let output = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(nodes.iter().map(|n| format!("127.0.0.1:{}", n.port())))
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdin(Stdio::null())
            .output();
        let output = match output {
            Ok(output) => output,
            Err(e) if e.kind() == io::ErrorKind::NotFound => missing_binary("redis-cli", "redis-tools"),
            Err(e) => panic!("cannot run redis-cli --cluster create: {e}"),
        };
        let transcript = format!(
            "redis-cli --cluster create ({}):\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(output.status.success(), "creating the cluster failed; {transcript}");

        let cluster = RedisCluster { nodes };
        let known = format!("cluster_known_nodes:{masters}");
        let deadline = Instant::now() + CLUSTER_READY_TIMEOUT;
        loop {
            let infos: Vec<String> = cluster
                .nodes
                .iter()
                .map(|n| n.try_command(&["CLUSTER", "INFO"]).unwrap_or_else(|e| e.to_string()))
                .collect();
            let settled = infos.iter().all(|info| {
                let lines: Vec<&str> = info.lines().map(str::trim).collect();
                lines.contains(&"cluster_state:ok") && lines.contains(&known.as_str())
            });
            if settled {
                return cluster;
            }
            assert!(
                Instant::now() < deadline,
                "the cluster did not reach cluster_state:ok on every node within {CLUSTER_READY_TIMEOUT:?}; \
                 CLUSTER INFO per node: {infos:#?}\n{transcript}"
            );
            thread::sleep(POLL);
        }
    }

    /// `redis://127.0.0.1:{port}` of every node, in start order.
    pub(crate) fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    /// The nodes, in start order (`nodes()[i].command(...)` talks to one node).
    pub(crate) fn nodes(&self) -> &[RedisServer] {
        &self.nodes
    }

    /// The nodes, to `kill` or `restart` one.
    pub(crate) fn nodes_mut(&mut self) -> &mut [RedisServer] {
        &mut self.nodes
    }

    /// `commandstats` summed over all nodes.
    pub(crate) fn commandstats(&self) -> BTreeMap<String, u64> {
        let mut total = BTreeMap::new();
        for node in &self.nodes {
            for (name, calls) in node.commandstats() {
                *total.entry(name).or_insert(0) += calls;
            }
        }
        total
    }

    /// `reset_commandstats` on every node.
    pub(crate) fn reset_commandstats(&self) {
        self.nodes.iter().for_each(RedisServer::reset_commandstats);
    }
}
