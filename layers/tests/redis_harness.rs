//! Tests of the throwaway Redis harness (`support/redis.rs`) that the Redis integration tests use.
//! Every test starts its own servers, so they can run in parallel processes.

#[path = "support/redis.rs"]
mod redis_support;

use std::time::Instant;

use redis_support::{RedisCluster, RedisServer};

#[test]
fn server_answers_and_stores_values() {
    let server = RedisServer::start();
    assert_ne!(server.port(), 6379, "never the shared server");
    assert_eq!(server.url(), format!("redis://127.0.0.1:{}", server.port()));
    assert!(server.is_running());

    assert_eq!(server.command(&["PING"]), "PONG");
    assert_eq!(server.command(&["DBSIZE"]), "0");
    assert_eq!(server.command(&["SET", "greeting", "hello world"]), "OK");
    assert_eq!(server.command(&["GET", "greeting"]), "hello world");
    assert_eq!(server.command(&["GET", "missing"]), "(nil)");
    assert_eq!(server.command(&["DBSIZE"]), "1");
    assert_eq!(server.command(&["KEYS", "*"]), "greeting");
    assert!(server.command(&["INCR", "greeting"]).starts_with("ERR:"), "errors are prefixed");
    assert_eq!(server.command(&["FLUSHALL"]), "OK");
    assert_eq!(server.command(&["DBSIZE"]), "0");
}

#[test]
fn replies_render_as_text() {
    let server = RedisServer::start();
    assert_eq!(server.command(&["RPUSH", "list", "a", "b", "c"]), "3");
    assert_eq!(server.command(&["LRANGE", "list", "0", "-1"]), "a\nb\nc");
    assert_eq!(server.command(&["LRANGE", "none", "0", "-1"]), "");
    assert_eq!(server.command(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]), "OK");
    assert_eq!(server.command(&["CONFIG", "GET", "maxmemory-policy"]), "maxmemory-policy\nallkeys-lru");
    assert_eq!(server.command(&["DEBUG", "SLEEP", "0"]), "OK");
    assert_eq!(server.command(&["CLIENT", "PAUSE", "10"]), "OK");
    assert!(server.command(&["NO-SUCH-COMMAND"]).starts_with("ERR:ERR unknown command"));
    assert!(server.command(&["INFO", "server"]).contains(&format!("tcp_port:{}", server.port())));
}

#[test]
fn servers_are_independent() {
    let a = RedisServer::start();
    let b = RedisServer::start();
    assert_ne!(a.port(), b.port());
    assert_ne!(a.dir(), b.dir());
    a.command(&["SET", "k", "a"]);
    assert_eq!(b.command(&["GET", "k"]), "(nil)");
}

#[test]
fn kill_and_restart_on_the_same_port() {
    let mut server = RedisServer::start();
    let port = server.port();
    let first_pid = server.pid().expect("running");
    server.command(&["SET", "k", "v"]);

    server.kill();
    assert!(!server.is_running());
    assert_eq!(server.pid(), None);
    assert!(server.try_command(&["PING"]).is_err(), "nothing answers on the port of a killed server");
    server.kill(); // a second kill does nothing

    server.restart();
    assert!(server.is_running());
    assert_eq!(server.port(), port);
    assert_ne!(server.pid(), Some(first_pid));
    assert_eq!(server.command(&["PING"]), "PONG");
    assert_eq!(server.command(&["DBSIZE"]), "0", "no persistence: it comes back empty");
}

#[test]
fn drop_kills_the_server_and_removes_its_dir() {
    let server = RedisServer::start();
    let port = server.port();
    let dir = server.dir().to_owned();
    assert!(dir.is_dir());
    drop(server);
    assert!(!dir.exists());
    assert!(RedisServer::start().port() != port || std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
}

#[test]
fn commandstats_counts_calls() {
    let server = RedisServer::start();
    for i in 0..5 {
        server.command(&["SET", &format!("k{i}"), "v"]);
    }
    server.command(&["GET", "k0"]);
    let stats = server.commandstats();
    assert_eq!(stats.get("set"), Some(&5), "{stats:?}");
    assert_eq!(stats.get("get"), Some(&1), "{stats:?}");
    assert_eq!(stats.get("evalsha"), None);

    server.reset_commandstats();
    server.command(&["SET", "k", "v"]);
    let stats = server.commandstats();
    assert_eq!(stats.get("set"), Some(&1), "{stats:?}");
    assert_eq!(stats.get("get"), None, "{stats:?}");
}

#[test]
fn cluster_of_three_masters() {
    let started = Instant::now();
    let mut cluster = RedisCluster::start(3);
    eprintln!("a 3-master cluster started in {:?}", started.elapsed());

    let urls = cluster.urls();
    assert_eq!(urls.len(), 3);
    assert!(urls.iter().all(|u| u.starts_with("redis://127.0.0.1:") && !u.ends_with(":6379")), "{urls:?}");
    for node in cluster.nodes() {
        assert!(node.command(&["CLUSTER", "INFO"]).lines().any(|l| l.trim() == "cluster_state:ok"));
    }
    let nodes = cluster.nodes()[0].command(&["CLUSTER", "NODES"]);
    let masters = nodes
        .lines()
        .filter(|line| line.split(' ').nth(2).is_some_and(|flags| flags.split(',').any(|f| f == "master")))
        .count();
    assert_eq!(masters, 3, "{nodes}");

    // Exactly one node owns a key; the others redirect.
    let replies: Vec<String> = cluster.nodes().iter().map(|n| n.command(&["SET", "some-key", "v"])).collect();
    assert_eq!(replies.iter().filter(|r| *r == "OK").count(), 1, "{replies:?}");
    assert!(replies.iter().filter(|r| *r != "OK").all(|r| r.starts_with("ERR:MOVED ")), "{replies:?}");
    assert_eq!(cluster.commandstats().get("set"), Some(&1), "redirected calls are not counted");

    // A restarted node keeps its identity and its view of the cluster.
    let id = cluster.nodes()[0].command(&["CLUSTER", "MYID"]);
    cluster.nodes_mut()[0].restart();
    assert_eq!(cluster.nodes()[0].command(&["CLUSTER", "MYID"]), id);
    assert!(cluster.nodes()[0].command(&["CLUSTER", "INFO"]).contains("cluster_known_nodes:3"));
}
