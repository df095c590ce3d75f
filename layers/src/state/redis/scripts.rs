//! The Lua scripts: every read-modify-write of shared state is one of these (atomic on the
//! server, one round trip). Loaded once per server by hash; `NOSCRIPT` (a restarted or flushed
//! server) reloads and retries.
//!
//! A script is its own file after the shared parts it calls (`clock.lua`: the server's time;
//! `window.lua`: the sliding windows; `cooldown.lua`: revisions and the JSON messages), and only
//! those: every `local function` is a closure the server makes again on every call (about 2 µs
//! per reservation for the parts a window script does not call).

use std::sync::LazyLock;

use redis::Script;

macro_rules! script {
    ($($part:literal),* => $file:literal) => {
        LazyLock::new(|| Script::new(concat!($(include_str!(concat!("lua/", $part)),)* include_str!(concat!("lua/", $file)))))
    };
}

pub(crate) static RESERVE: LazyLock<Script> = script!("clock.lua", "window.lua" => "reserve.lua");
pub(crate) static ROOM: LazyLock<Script> = script!("clock.lua", "window.lua" => "room.lua");
pub(crate) static USAGE: LazyLock<Script> = script!("clock.lua", "window.lua" => "usage.lua");
pub(crate) static OUTCOME: LazyLock<Script> = script!("clock.lua", "window.lua" => "outcome.lua");
pub(crate) static ADJUST: LazyLock<Script> = script!(=> "adjust.lua");
pub(crate) static BENCH: LazyLock<Script> = script!("clock.lua", "cooldown.lua" => "bench.lua");
pub(crate) static PROBE: LazyLock<Script> = script!("clock.lua", "cooldown.lua" => "probe.lua");
pub(crate) static RELEASE: LazyLock<Script> = script!("clock.lua", "cooldown.lua" => "release.lua");
pub(crate) static CLEAR: LazyLock<Script> = script!("clock.lua", "cooldown.lua" => "clear.lua");
pub(crate) static READ: LazyLock<Script> = script!("clock.lua", "cooldown.lua" => "read.lua");
pub(crate) static SPEND_ADD: LazyLock<Script> = script!(=> "spend_add.lua");
pub(crate) static SPEND_READ: LazyLock<Script> = script!(=> "spend_read.lua");
pub(crate) static HEALTH_SET: LazyLock<Script> = script!("clock.lua" => "health_set.lua");
pub(crate) static HEALTH_READ: LazyLock<Script> = script!("clock.lua" => "health_read.lua");
pub(crate) static BANDIT_ADD: LazyLock<Script> = script!("clock.lua" => "bandit_add.lua");
pub(crate) static BANDIT_READ: LazyLock<Script> = script!("clock.lua" => "bandit_read.lua");
