//! The Lua scripts: every read-modify-write of shared state is one of these (atomic on the
//! server, one round trip). Loaded once per server by hash; `NOSCRIPT` (a restarted or flushed
//! server) reloads and retries.

use std::sync::LazyLock;

use redis::Script;

macro_rules! script {
    ($file:literal) => {
        LazyLock::new(|| Script::new(concat!(include_str!("lua/prelude.lua"), include_str!(concat!("lua/", $file)))))
    };
}

pub(crate) static RESERVE: LazyLock<Script> = script!("reserve.lua");
pub(crate) static ROOM: LazyLock<Script> = script!("room.lua");
pub(crate) static USAGE: LazyLock<Script> = script!("usage.lua");
pub(crate) static OUTCOME: LazyLock<Script> = script!("outcome.lua");
pub(crate) static ADJUST: LazyLock<Script> = script!("adjust.lua");
pub(crate) static BENCH: LazyLock<Script> = script!("bench.lua");
pub(crate) static PROBE: LazyLock<Script> = script!("probe.lua");
pub(crate) static RELEASE: LazyLock<Script> = script!("release.lua");
pub(crate) static CLEAR: LazyLock<Script> = script!("clear.lua");
pub(crate) static READ: LazyLock<Script> = script!("read.lua");
pub(crate) static SPEND_ADD: LazyLock<Script> = script!("spend_add.lua");
pub(crate) static SPEND_READ: LazyLock<Script> = script!("spend_read.lua");
