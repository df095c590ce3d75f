use std::{error::Error as StdError, fmt};

/// Why a config could not be loaded; see [`ConfigError::kind`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigErrorKind {
    /// The text is not valid YAML (the message carries the line and column).
    Yaml,
    /// A value has the wrong shape or type (a string where a list belongs, a word where a number
    /// belongs, a required key missing).
    Type,
    /// An `os.environ/NAME` reference names a variable that is not set.
    Env,
    /// A value is well-formed but not allowed (negative limit, unknown strategy, duplicate id,
    /// fallback to an unknown group, ...).
    Invalid,
    /// The config file could not be read.
    Io,
}

/// A config that cannot be loaded, with the path of the offending key.
///
/// `Display` reads `path: message`, e.g.
/// `model_list[2].litellm_params.rpm: must be >= 0, got -5`.
///
/// ```
/// use switchyard::config::{Config, ConfigErrorKind};
/// let err = Config::from_yaml_str("router_settings: { num_retries: -1 }").unwrap_err();
/// assert_eq!(err.path(), "router_settings.num_retries");
/// assert_eq!(err.kind(), ConfigErrorKind::Invalid);
/// assert_eq!(err.to_string(), "router_settings.num_retries: must be >= 0, got -1");
/// ```
#[derive(Debug)]
pub struct ConfigError {
    kind: ConfigErrorKind,
    path: String,
    message: String,
    source: Option<Box<dyn StdError + Send + Sync + 'static>>,
}

impl ConfigError {
    pub(crate) fn new(kind: ConfigErrorKind, path: impl Into<String>, message: impl Into<String>) -> Self {
        Self { kind, path: path.into(), message: message.into(), source: None }
    }

    pub(crate) fn invalid(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(ConfigErrorKind::Invalid, path, message)
    }

    pub(crate) fn type_error(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(ConfigErrorKind::Type, path, message)
    }

    /// Appends `note` to the message: "... (from `models.yaml`)".
    pub(crate) fn with_note(mut self, note: impl AsRef<str>) -> Self {
        self.message.push(' ');
        self.message.push_str(note.as_ref());
        self
    }

    pub(crate) fn with_source(mut self, source: impl StdError + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// Where in the config the problem is, e.g. `router_settings.fallbacks[1]`; empty when it
    /// concerns the whole document (a YAML syntax error, an unreadable file).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// What kind of problem it is.
    pub fn kind(&self) -> ConfigErrorKind {
        self.kind
    }

    /// The message without the path.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() { f.write_str(&self.message) } else { write!(f, "{}: {}", self.path, self.message) }
    }
}

impl StdError for ConfigError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn StdError + 'static))
    }
}
