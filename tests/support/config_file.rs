//! A config file in the temporary directory for the tests that load or reload one from disk.

use std::{
    path::{Path, PathBuf},
    sync::atomic::{AtomicU32, Ordering},
};

/// A config file that is removed when the test ends.
pub(crate) struct ConfigFile(PathBuf);

impl ConfigFile {
    /// A new file holding `yaml`, named after the process and a counter so that tests running at
    /// once never share one.
    pub(crate) fn new(yaml: &str) -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let name = format!("switchyard-test-{}-{}.yaml", std::process::id(), N.fetch_add(1, Ordering::Relaxed));
        let file = Self(std::env::temp_dir().join(name));
        file.write(yaml);
        file
    }

    /// Replaces the file's content.
    pub(crate) fn write(&self, yaml: &str) {
        std::fs::write(&self.0, yaml).expect("write the config file");
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ConfigFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
