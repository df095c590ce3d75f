//! Encoding our own wire types for the simulated and mock upstreams.

use bytes::Bytes;
use serde::Serialize;

/// `value` as JSON.
pub(crate) fn to_json<T: Serialize>(value: &T) -> Bytes {
    // Our own wire types hold only strings, numbers and JSON values: serializing cannot fail.
    Bytes::from(serde_json::to_vec(value).unwrap_or_default())
}

/// `value` as one server-sent event: `data: {json}\n\n`.
pub(crate) fn sse<T: Serialize>(value: &T) -> Bytes {
    let mut out = b"data: ".to_vec();
    out.extend_from_slice(&serde_json::to_vec(value).unwrap_or_default());
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}
