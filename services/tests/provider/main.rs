//! Loopback tests of the real provider: request shape per provider, key isolation,
//! classification of every failure, the streaming commit point, size limits and egress options.

mod anthropic;
mod classify;
mod egress;
mod request;
mod stream;
mod support;
mod timeouts;
#[cfg(all(feature = "vertex", feature = "mock"))]
mod vertex;
