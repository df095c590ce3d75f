//! Per-error-class tables ([`PerErrorClass`]): the one shape of LiteLLM's `retry_policy` and
//! `allowed_fails_policy`, read from LiteLLM's field names here and nowhere else.
//!
//! LiteLLM keys both settings by exception class (`RateLimitErrorRetries`,
//! `RateLimitErrorAllowedFails`, ...). A [`PerErrorClass`] holds one optional count per
//! [`ErrorClass`]; its type parameter says which setting it is ([`Retries`] for the retry layer's
//! [`RetryPolicy`](crate::retry::RetryPolicy), [`AllowedFails`] for the cooldown layer's
//! [`AllowedFailsPolicy`](crate::cooldown::AllowedFailsPolicy)), and so which LiteLLM names it
//! reads. Both layers import this module; neither imports the other.
//!
//! ```
//! use std::collections::BTreeMap;
//! use switchyard_layers::{Outcome, error_class::{AllowedFails, ErrorClass, PerErrorClass}};
//!
//! let map = BTreeMap::from([("NotFoundErrorAllowedFails".to_owned(), 0), ("InternalServerErrorAllowedFails".to_owned(), 5)]);
//! let policy = PerErrorClass::<AllowedFails>::from_litellm(&map)?;
//! assert_eq!(policy.get(ErrorClass::NotFound), Some(0));
//! // A 503 is a service-unavailable error, then (with no value of its own) an internal server error.
//! assert_eq!(policy.for_failure(Outcome::ServerError, Some(503)), Some(5));
//! assert!(PerErrorClass::<AllowedFails>::from_litellm(&BTreeMap::from([("Typo".to_owned(), 1)])).is_err());
//! # Ok::<(), switchyard_layers::error_class::UnknownPolicyField>(())
//! ```

use std::{collections::BTreeMap, fmt, hash::Hash, marker::PhantomData};

use crate::Outcome;

/// An error class, as LiteLLM names its exceptions in per-class settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ErrorClass {
    /// `BadRequestError`: 400-class errors the caller caused, context-window and content-policy
    /// errors included (they are subclasses in LiteLLM).
    BadRequest,
    /// `AuthenticationError`: 401/403.
    Authentication,
    /// `Timeout`: 408 and attempts that ran out of time.
    Timeout,
    /// `RateLimitError`: 429 and our own rate-limit refusals.
    RateLimit,
    /// `ContentPolicyViolationError`: content filter refusals.
    ContentPolicy,
    /// `InternalServerError`: 5xx, connection failures and broken transfers.
    InternalServerError,
    /// `ServiceUnavailableError`: 503.
    ServiceUnavailable,
    /// `BadGatewayError`: 502.
    BadGateway,
    /// `NotFoundError`: 404.
    NotFound,
}

impl ErrorClass {
    /// Every class, in LiteLLM's field order.
    pub const ALL: [ErrorClass; 9] = [
        Self::BadRequest,
        Self::Authentication,
        Self::Timeout,
        Self::RateLimit,
        Self::ContentPolicy,
        Self::InternalServerError,
        Self::ServiceUnavailable,
        Self::BadGateway,
        Self::NotFound,
    ];

    /// The start of the class's LiteLLM field names (`RateLimitError` in `RateLimitErrorRetries`).
    pub const fn litellm_stem(self) -> &'static str {
        match self {
            Self::BadRequest => "BadRequestError",
            Self::Authentication => "AuthenticationError",
            Self::Timeout => "TimeoutError",
            Self::RateLimit => "RateLimitError",
            Self::ContentPolicy => "ContentPolicyViolationError",
            Self::InternalServerError => "InternalServerError",
            Self::ServiceUnavailable => "ServiceUnavailableError",
            Self::BadGateway => "BadGatewayError",
            Self::NotFound => "NotFoundError",
        }
    }

    /// The classes of a failure, the most specific first, as LiteLLM's `isinstance` checks see
    /// its exceptions: a content-policy error is also a bad request; a 502 or 503 is, in
    /// Switchyard, also an internal server error. A table uses the first class it has a value for.
    /// Success has no class, and neither has anything else LiteLLM leaves unclassified.
    pub fn of(outcome: Outcome, status: Option<u16>) -> [Option<ErrorClass>; 2] {
        match outcome {
            Outcome::BadRequest | Outcome::ContextWindowExceeded => [Some(Self::BadRequest), None],
            Outcome::ContentPolicy => [Some(Self::ContentPolicy), Some(Self::BadRequest)],
            Outcome::Auth => [Some(Self::Authentication), None],
            Outcome::Timeout => [Some(Self::Timeout), None],
            Outcome::RateLimited => [Some(Self::RateLimit), None],
            Outcome::NotFound => [Some(Self::NotFound), None],
            Outcome::ServerError => match status {
                Some(503) => [Some(Self::ServiceUnavailable), Some(Self::InternalServerError)],
                Some(502) => [Some(Self::BadGateway), Some(Self::InternalServerError)],
                _ => [Some(Self::InternalServerError), None],
            },
            Outcome::Connect | Outcome::Transport => [Some(Self::InternalServerError), None],
            Outcome::Success => [None, None],
        }
    }
}

mod sealed {
    #[allow(unreachable_pub)] // named only as the supertrait of `PolicyKind`, which seals it
    pub trait Sealed {}
}

/// Which LiteLLM setting a [`PerErrorClass`] is: its name, and the field names it accepts.
///
/// Sealed: the kinds are [`Retries`] and [`AllowedFails`].
pub trait PolicyKind: sealed::Sealed {
    /// The setting's key in a LiteLLM config (`retry_policy`).
    const SETTING: &'static str;
    /// The field names LiteLLM defines for the setting, with their classes, in LiteLLM's order.
    const FIELDS: &'static [(&'static str, ErrorClass)];
    /// The field that sets the value for every class without one of its own
    /// (`DefaultRetries`), when the setting has one.
    const DEFAULT_FIELD: Option<&'static str>;
}

/// The kind of [`RetryPolicy`](crate::retry::RetryPolicy): retries per error class
/// (`retry_policy`, `...ErrorRetries`).
#[derive(Debug)]
pub enum Retries {}

/// The kind of [`AllowedFailsPolicy`](crate::cooldown::AllowedFailsPolicy): failures allowed
/// before a cooldown, per error class (`allowed_fails_policy`, `...ErrorAllowedFails`).
#[derive(Debug)]
pub enum AllowedFails {}

impl sealed::Sealed for Retries {}
impl sealed::Sealed for AllowedFails {}

/// The LiteLLM names of `retry_policy`'s per-class fields, in its order: LiteLLM 1.100's six
/// (`RetryPolicy`), then the classes newer LiteLLM releases added (404, 503, 502). The field
/// for every other class is [`DEFAULT_RETRIES_FIELD`].
pub const RETRY_POLICY_FIELDS: [&str; 9] = [
    "BadRequestErrorRetries",
    "AuthenticationErrorRetries",
    "TimeoutErrorRetries",
    "RateLimitErrorRetries",
    "ContentPolicyViolationErrorRetries",
    "InternalServerErrorRetries",
    "ServiceUnavailableErrorRetries",
    "BadGatewayErrorRetries",
    "NotFoundErrorRetries",
];

/// `retry_policy.DefaultRetries` (newer LiteLLM releases): the retry count of a failure whose
/// class has no field of its own in the policy.
pub const DEFAULT_RETRIES_FIELD: &str = "DefaultRetries";

/// The LiteLLM names of `allowed_fails_policy`'s fields (LiteLLM 1.100 `AllowedFailsPolicy`), in
/// its order.
pub const ALLOWED_FAILS_POLICY_FIELDS: [&str; 9] = [
    "BadRequestErrorAllowedFails",
    "AuthenticationErrorAllowedFails",
    "TimeoutErrorAllowedFails",
    "RateLimitErrorAllowedFails",
    "ContentPolicyViolationErrorAllowedFails",
    "InternalServerErrorAllowedFails",
    "ServiceUnavailableErrorAllowedFails",
    "BadGatewayErrorAllowedFails",
    "NotFoundErrorAllowedFails",
];

impl PolicyKind for Retries {
    const SETTING: &'static str = "retry_policy";
    const FIELDS: &'static [(&'static str, ErrorClass)] = &[
        (RETRY_POLICY_FIELDS[0], ErrorClass::BadRequest),
        (RETRY_POLICY_FIELDS[1], ErrorClass::Authentication),
        (RETRY_POLICY_FIELDS[2], ErrorClass::Timeout),
        (RETRY_POLICY_FIELDS[3], ErrorClass::RateLimit),
        (RETRY_POLICY_FIELDS[4], ErrorClass::ContentPolicy),
        (RETRY_POLICY_FIELDS[5], ErrorClass::InternalServerError),
        (RETRY_POLICY_FIELDS[6], ErrorClass::ServiceUnavailable),
        (RETRY_POLICY_FIELDS[7], ErrorClass::BadGateway),
        (RETRY_POLICY_FIELDS[8], ErrorClass::NotFound),
    ];
    const DEFAULT_FIELD: Option<&'static str> = Some(DEFAULT_RETRIES_FIELD);
}

impl PolicyKind for AllowedFails {
    const SETTING: &'static str = "allowed_fails_policy";
    const FIELDS: &'static [(&'static str, ErrorClass)] = &[
        (ALLOWED_FAILS_POLICY_FIELDS[0], ErrorClass::BadRequest),
        (ALLOWED_FAILS_POLICY_FIELDS[1], ErrorClass::Authentication),
        (ALLOWED_FAILS_POLICY_FIELDS[2], ErrorClass::Timeout),
        (ALLOWED_FAILS_POLICY_FIELDS[3], ErrorClass::RateLimit),
        (ALLOWED_FAILS_POLICY_FIELDS[4], ErrorClass::ContentPolicy),
        (ALLOWED_FAILS_POLICY_FIELDS[5], ErrorClass::InternalServerError),
        (ALLOWED_FAILS_POLICY_FIELDS[6], ErrorClass::ServiceUnavailable),
        (ALLOWED_FAILS_POLICY_FIELDS[7], ErrorClass::BadGateway),
        (ALLOWED_FAILS_POLICY_FIELDS[8], ErrorClass::NotFound),
    ];
    const DEFAULT_FIELD: Option<&'static str> = None;
}

/// One optional count per [`ErrorClass`]; `K` says which LiteLLM setting it is.
///
/// A field that is `None` leaves the class to the setting's next source (the layer documents
/// which). The fields are public for reading; build a table with [`new`](Self::new) and the
/// setters, or from LiteLLM's names with [`from_litellm`](Self::from_litellm).
#[non_exhaustive]
pub struct PerErrorClass<K> {
    /// [`ErrorClass::BadRequest`] (`BadRequestError...`).
    pub bad_request: Option<u32>,
    /// [`ErrorClass::Authentication`] (`AuthenticationError...`).
    pub authentication: Option<u32>,
    /// [`ErrorClass::Timeout`] (`TimeoutError...`).
    pub timeout: Option<u32>,
    /// [`ErrorClass::RateLimit`] (`RateLimitError...`).
    pub rate_limit: Option<u32>,
    /// [`ErrorClass::ContentPolicy`] (`ContentPolicyViolationError...`).
    pub content_policy: Option<u32>,
    /// [`ErrorClass::InternalServerError`] (`InternalServerError...`).
    pub internal_server_error: Option<u32>,
    /// [`ErrorClass::ServiceUnavailable`] (`ServiceUnavailableError...`).
    pub service_unavailable: Option<u32>,
    /// [`ErrorClass::BadGateway`] (`BadGatewayError...`).
    pub bad_gateway: Option<u32>,
    /// [`ErrorClass::NotFound`] (`NotFoundError...`).
    pub not_found: Option<u32>,
    /// The value of every class without one of its own (`DefaultRetries`; allowed-fails policies
    /// have no such field). Not returned by [`get`](Self::get) or
    /// [`for_failure`](Self::for_failure): a layer decides where it ranks.
    pub default: Option<u32>,
    kind: PhantomData<fn() -> K>,
}

impl<K> PerErrorClass<K> {
    /// A table that sets no class.
    pub const fn new() -> Self {
        Self {
            bad_request: None,
            authentication: None,
            timeout: None,
            rate_limit: None,
            content_policy: None,
            internal_server_error: None,
            service_unavailable: None,
            bad_gateway: None,
            not_found: None,
            default: None,
            kind: PhantomData,
        }
    }

    /// Sets the value for every class without one of its own (`DefaultRetries`).
    pub const fn default_value(mut self, n: u32) -> Self {
        self.default = Some(n);
        self
    }

    /// Sets the value for 400-class errors (context-window errors included; content-policy
    /// errors without a value of their own).
    pub const fn bad_request(mut self, n: u32) -> Self {
        self.bad_request = Some(n);
        self
    }

    /// Sets the value for authentication errors.
    pub const fn authentication(mut self, n: u32) -> Self {
        self.authentication = Some(n);
        self
    }

    /// Sets the value for timeouts.
    pub const fn timeout(mut self, n: u32) -> Self {
        self.timeout = Some(n);
        self
    }

    /// Sets the value for rate limits.
    pub const fn rate_limit(mut self, n: u32) -> Self {
        self.rate_limit = Some(n);
        self
    }

    /// Sets the value for content-policy refusals.
    pub const fn content_policy(mut self, n: u32) -> Self {
        self.content_policy = Some(n);
        self
    }

    /// Sets the value for server errors, connection failures and broken transfers.
    pub const fn internal_server_error(mut self, n: u32) -> Self {
        self.internal_server_error = Some(n);
        self
    }

    /// Sets the value for 503s (else they take `internal_server_error`'s).
    pub const fn service_unavailable(mut self, n: u32) -> Self {
        self.service_unavailable = Some(n);
        self
    }

    /// Sets the value for 502s (else they take `internal_server_error`'s).
    pub const fn bad_gateway(mut self, n: u32) -> Self {
        self.bad_gateway = Some(n);
        self
    }

    /// Sets the value for 404s.
    pub const fn not_found(mut self, n: u32) -> Self {
        self.not_found = Some(n);
        self
    }

    /// The value set for one class.
    pub const fn get(&self, class: ErrorClass) -> Option<u32> {
        *self.slot(class)
    }

    /// Sets (or, with `None`, clears) the value for one class.
    pub fn set(&mut self, class: ErrorClass, value: Option<u32>) {
        *self.slot_mut(class) = value;
    }

    /// The value for a failure: that of its most specific [class](ErrorClass::of) that has one.
    /// `status` is the upstream status, when there is one (it tells a 502 or 503 from other
    /// server errors).
    pub fn for_failure(&self, outcome: Outcome, status: Option<u16>) -> Option<u32> {
        ErrorClass::of(outcome, status).into_iter().flatten().find_map(|class| self.get(class))
    }

    /// [`for_failure`](Self::for_failure) without a status: every server error is an internal
    /// server error.
    pub fn for_outcome(&self, outcome: Outcome) -> Option<u32> {
        self.for_failure(outcome, None)
    }

    const fn slot(&self, class: ErrorClass) -> &Option<u32> {
        match class {
            ErrorClass::BadRequest => &self.bad_request,
            ErrorClass::Authentication => &self.authentication,
            ErrorClass::Timeout => &self.timeout,
            ErrorClass::RateLimit => &self.rate_limit,
            ErrorClass::ContentPolicy => &self.content_policy,
            ErrorClass::InternalServerError => &self.internal_server_error,
            ErrorClass::ServiceUnavailable => &self.service_unavailable,
            ErrorClass::BadGateway => &self.bad_gateway,
            ErrorClass::NotFound => &self.not_found,
        }
    }

    fn slot_mut(&mut self, class: ErrorClass) -> &mut Option<u32> {
        match class {
            ErrorClass::BadRequest => &mut self.bad_request,
            ErrorClass::Authentication => &mut self.authentication,
            ErrorClass::Timeout => &mut self.timeout,
            ErrorClass::RateLimit => &mut self.rate_limit,
            ErrorClass::ContentPolicy => &mut self.content_policy,
            ErrorClass::InternalServerError => &mut self.internal_server_error,
            ErrorClass::ServiceUnavailable => &mut self.service_unavailable,
            ErrorClass::BadGateway => &mut self.bad_gateway,
            ErrorClass::NotFound => &mut self.not_found,
        }
    }
}

impl<K: PolicyKind> PerErrorClass<K> {
    /// The LiteLLM field names this kind of table reads, in LiteLLM's order.
    pub fn litellm_fields() -> impl ExactSizeIterator<Item = &'static str> {
        K::FIELDS.iter().map(|(name, _)| *name)
    }

    /// The class a LiteLLM field name of this kind sets, if LiteLLM defines it.
    pub fn litellm_class(field: &str) -> Option<ErrorClass> {
        K::FIELDS.iter().find(|(name, _)| *name == field).map(|(_, class)| *class)
    }

    /// Reads a LiteLLM mapping (`{"RateLimitErrorRetries": 4}`). A name LiteLLM does not define
    /// for this setting is an error naming it, rather than silently ignored.
    pub fn from_litellm(map: &BTreeMap<String, u32>) -> Result<Self, UnknownPolicyField> {
        let mut table = Self::new();
        for (name, &n) in map {
            if K::DEFAULT_FIELD == Some(name.as_str()) {
                table.default = Some(n);
                continue;
            }
            let class = Self::litellm_class(name).ok_or_else(|| UnknownPolicyField {
                setting: K::SETTING,
                field: name.clone(),
                valid: K::FIELDS,
                default_field: K::DEFAULT_FIELD,
            })?;
            table.set(class, Some(n));
        }
        Ok(table)
    }
}

// By hand: derives would require `K: Clone` and so on, and `K` is a marker.
impl<K> Clone for PerErrorClass<K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K> Copy for PerErrorClass<K> {}

impl<K> Default for PerErrorClass<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K> PartialEq for PerErrorClass<K> {
    fn eq(&self, other: &Self) -> bool {
        ErrorClass::ALL.into_iter().all(|c| self.get(c) == other.get(c)) && self.default == other.default
    }
}

impl<K> Eq for PerErrorClass<K> {}

impl<K> Hash for PerErrorClass<K> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        ErrorClass::ALL.map(|c| self.get(c)).hash(state);
        self.default.hash(state);
    }
}

impl<K: PolicyKind> fmt::Debug for PerErrorClass<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The classes that are set, by their LiteLLM names where the setting has one.
        let mut map = f.debug_map();
        for class in ErrorClass::ALL {
            if let Some(n) = self.get(class) {
                match K::FIELDS.iter().find(|(_, c)| *c == class) {
                    Some((name, _)) => map.entry(name, &n),
                    None => map.entry(&class, &n),
                };
            }
        }
        if let Some(n) = self.default {
            match K::DEFAULT_FIELD {
                Some(name) => map.entry(&name, &n),
                None => map.entry(&"default", &n),
            };
        }
        map.finish()
    }
}

/// A LiteLLM per-class setting named a field that LiteLLM does not define for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownPolicyField {
    setting: &'static str,
    field: String,
    valid: &'static [(&'static str, ErrorClass)],
    default_field: Option<&'static str>,
}

impl UnknownPolicyField {
    /// The unknown field name.
    pub fn field(&self) -> &str {
        &self.field
    }

    /// The setting it was found in (`retry_policy`, `allowed_fails_policy`).
    pub fn setting(&self) -> &'static str {
        self.setting
    }
}

impl fmt::Display for UnknownPolicyField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown {} field `{}`; valid: ", self.setting, self.field)?;
        for (i, (name, _)) in self.valid.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(name)?;
        }
        if let Some(name) = self.default_field {
            write!(f, ", {name}")?;
        }
        Ok(())
    }
}

impl std::error::Error for UnknownPolicyField {}

/// `AllowedFailsPolicy::from_litellm` returned a `String` before it returned this error; the
/// conversion keeps `impl Into<String>` callers working.
impl From<UnknownPolicyField> for String {
    fn from(e: UnknownPolicyField) -> Self {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names<K: PolicyKind>(suffix: &str) -> Vec<String> {
        K::FIELDS.iter().map(|(_, class)| format!("{}{suffix}", class.litellm_stem())).collect()
    }

    #[test]
    fn field_names_are_the_class_stem_and_the_setting_suffix() {
        assert_eq!(names::<Retries>("Retries"), RETRY_POLICY_FIELDS);
        assert_eq!(names::<AllowedFails>("AllowedFails"), ALLOWED_FAILS_POLICY_FIELDS);
        assert_eq!(AllowedFails::FIELDS.iter().map(|(_, c)| *c).collect::<Vec<_>>(), ErrorClass::ALL);
        assert_eq!(Retries::FIELDS.iter().map(|(_, c)| *c).collect::<Vec<_>>(), ErrorClass::ALL);
    }

    #[test]
    fn every_litellm_name_sets_its_class() {
        let map = ALLOWED_FAILS_POLICY_FIELDS.iter().zip(1..).map(|(k, v)| ((*k).to_owned(), v)).collect();
        let t = PerErrorClass::<AllowedFails>::from_litellm(&map).expect("known names");
        assert_eq!(ErrorClass::ALL.map(|c| t.get(c)), [1, 2, 3, 4, 5, 6, 7, 8, 9].map(Some));
    }

    #[test]
    fn retry_policy_reads_the_newer_litellm_fields() {
        let map = BTreeMap::from([
            ("NotFoundErrorRetries".to_owned(), 1),
            ("ServiceUnavailableErrorRetries".to_owned(), 2),
            ("BadGatewayErrorRetries".to_owned(), 3),
            ("DefaultRetries".to_owned(), 4),
        ]);
        let t = PerErrorClass::<Retries>::from_litellm(&map).expect("known names");
        assert_eq!(t.for_outcome(Outcome::NotFound), Some(1));
        assert_eq!(t.for_failure(Outcome::ServerError, Some(503)), Some(2));
        assert_eq!(t.for_failure(Outcome::ServerError, Some(502)), Some(3));
        assert_eq!(t.for_failure(Outcome::ServerError, Some(500)), None, "the default is the layer's to rank");
        assert_eq!(t.default, Some(4));
        let err = PerErrorClass::<Retries>::from_litellm(&BTreeMap::from([("Typo".to_owned(), 1)])).unwrap_err();
        assert_eq!((err.setting(), err.field()), ("retry_policy", "Typo"));
        assert!(err.to_string().ends_with(&format!("{}, DefaultRetries", RETRY_POLICY_FIELDS.join(", "))), "{err}");
        let err = PerErrorClass::<AllowedFails>::from_litellm(&BTreeMap::from([("DefaultRetries".to_owned(), 1)]));
        assert!(err.is_err(), "allowed-fails policies have no default field");
    }

    #[test]
    fn not_found_is_its_own_class_and_never_borrows_another() {
        let t = PerErrorClass::<AllowedFails>::new().authentication(7).bad_request(8).internal_server_error(9);
        assert_eq!(t.for_outcome(Outcome::NotFound), None);
        assert_eq!(t.not_found(0).for_outcome(Outcome::NotFound), Some(0));
    }

    #[test]
    fn a_specific_class_wins_and_falls_back_to_its_parent() {
        let t = PerErrorClass::<AllowedFails>::new().bad_request(1).internal_server_error(2);
        assert_eq!(t.for_outcome(Outcome::ContentPolicy), Some(1), "a content-policy error is a bad request");
        assert_eq!(t.content_policy(3).for_outcome(Outcome::ContentPolicy), Some(3));
        assert_eq!(t.for_failure(Outcome::ServerError, Some(503)), Some(2));
        assert_eq!(t.service_unavailable(4).for_failure(Outcome::ServerError, Some(503)), Some(4));
        assert_eq!(t.bad_gateway(5).for_failure(Outcome::ServerError, Some(502)), Some(5));
        assert_eq!(t.bad_gateway(5).for_failure(Outcome::ServerError, Some(500)), Some(2));
        assert_eq!(t.for_outcome(Outcome::Success), None);
    }

    #[test]
    fn debug_shows_the_set_fields_by_their_litellm_names() {
        let t = PerErrorClass::<Retries>::new().rate_limit(4).not_found(1).default_value(2);
        assert_eq!(
            format!("{t:?}"),
            "{\"RateLimitErrorRetries\": 4, \"NotFoundErrorRetries\": 1, \"DefaultRetries\": 2}"
        );
        let t = PerErrorClass::<AllowedFails>::new().default_value(2);
        assert_eq!(format!("{t:?}"), "{\"default\": 2}");
    }
}
