//! Formatted `tracing` output captured in memory, for the tests that read the logs.

use std::{
    io::Write,
    sync::{Arc, Mutex},
};

/// A `tracing_subscriber` writer that keeps everything written to it; clones share the buffer.
#[derive(Clone, Default)]
pub(crate) struct Capture(Arc<Mutex<Vec<u8>>>);

impl Capture {
    /// Everything written so far (`tracing` writes UTF-8; anything else fails the test).
    pub(crate) fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()).expect("utf-8 log")
    }
}

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
