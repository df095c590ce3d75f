//! Loopback tests of the real provider: request shape per provider, key isolation,
//! classification of every failure, the streaming commit point, size limits and egress options.

mod classify;
mod egress;
mod request;
mod stream;
mod support;
