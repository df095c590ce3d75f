//! Who may call the mock's Bedrock routes: a SigV4-signed request (its `Authorization` header and
//! `x-amz-date` well formed, scoped to the service `bedrock`; its signature recomputed with AWS's
//! own signer when the secret key is known) or a Bedrock API key as a bearer token. What AWS's
//! front end answers otherwise: `403` with its exception names and messages.

use std::{
    fmt,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use aws_credential_types::Credentials;
use aws_sigv4::{
    http_request::{SignableBody, SignableRequest, SigningSettings, sign},
    sign::v4,
};
use aws_smithy_runtime_api::client::identity::Identity;
use http::{HeaderMap, Method, Uri, header};
use parking_lot::RwLock;

use super::answer::Exception;
use crate::mock::MockHandle;

/// The only signing algorithm Bedrock takes in an `Authorization` header.
const ALGORITHM: &str = "AWS4-HMAC-SHA256";
/// The signing name of Bedrock Runtime (its endpoint prefix is `bedrock-runtime`).
const SERVICE: &str = "bedrock";

/// What the mock's Bedrock routes accept beyond a well-formed signature: the access key id and
/// region a SigV4 credential scope must name, the secret key the signature is recomputed with
/// (AWS's `aws-sigv4` signer over the request's method, path, query, signed headers and body), and
/// the API key a bearer token must be. Each is unchecked while unset (any well-formed value
/// passes; without a secret key, a signature of 64 lowercase hex digits).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
/// use switchyard_services::mock::{BedrockAuth, MockProfile, MockUpstream};
///
/// let upstream = MockUpstream::start(MockProfile::healthy())?;
/// upstream.set_bedrock_auth(
///     BedrockAuth::new()
///         .access_key_id("AKIDEXAMPLE")
///         .secret_access_key("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
///         .region("us-east-1"),
/// );
/// # upstream.shutdown().await;
/// # Ok(()) }
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BedrockAuth {
    access_key_id: Option<String>,
    secret_access_key: Option<String>,
    region: Option<String>,
    api_key: Option<String>,
}

impl fmt::Debug for BedrockAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let masked = |s: &Option<String>| s.as_ref().map(|_| "***");
        f.debug_struct("BedrockAuth")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &masked(&self.secret_access_key))
            .field("region", &self.region)
            .field("api_key", &masked(&self.api_key))
            .finish()
    }
}

impl BedrockAuth {
    /// Accepts any well-formed signature or bearer token.
    pub fn new() -> Self {
        Self::default()
    }

    /// The access key id a SigV4 credential must name (`UnrecognizedClientException` otherwise).
    pub fn access_key_id(mut self, id: impl Into<String>) -> Self {
        self.access_key_id = Some(id.into());
        self
    }

    /// The secret key SigV4 signatures are recomputed with (`InvalidSignatureException` when
    /// they differ, or when the signing time is more than 15 minutes from now, as AWS allows).
    pub fn secret_access_key(mut self, secret: impl Into<String>) -> Self {
        self.secret_access_key = Some(secret.into());
        self
    }

    /// The region a SigV4 credential scope must name (`InvalidSignatureException` otherwise).
    pub fn region(mut self, region: impl Into<String>) -> Self {
        self.region = Some(region.into());
        self
    }

    /// The Bedrock API key a bearer token must be (`UnrecognizedClientException` otherwise).
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }
}

/// The [`BedrockAuth`] a server checks against.
#[derive(Debug, Default)]
pub(in crate::mock) struct Keys(RwLock<BedrockAuth>);

impl MockHandle {
    /// Checks Bedrock requests against `auth` from the next request on.
    pub fn set_bedrock_auth(&self, auth: BedrockAuth) {
        *self.shared.bedrock.0.write() = auth;
    }
}

impl Keys {
    /// Whether the request may call Bedrock; AWS's refusal otherwise.
    pub(super) fn check(&self, method: &Method, uri: &Uri, headers: &HeaderMap, body: &[u8]) -> Result<(), Exception> {
        let auth = self.0.read().clone();
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return Err(Exception::coral("MissingAuthenticationTokenException", "Missing Authentication Token"));
        };
        let Ok(value) = value.to_str() else {
            return Err(incomplete("Authorization header is not valid ASCII."));
        };
        if let Some(token) = value.strip_prefix("Bearer ") {
            return check_bearer(token.trim(), &auth);
        }
        let Some(params) = value.strip_prefix(ALGORITHM).filter(|rest| rest.starts_with(' ')) else {
            let algorithm = value.split_whitespace().next().unwrap_or_default();
            return Err(incomplete(format!("Unsupported AWS 'algorithm': '{algorithm}'.")));
        };
        let signature = Signature::parse(params)?;
        signature.check(headers, &auth)?;
        match &auth.secret_access_key {
            Some(secret) => signature.verify(method, uri, headers, body, secret),
            None => Ok(()),
        }
    }
}

fn check_bearer(token: &str, auth: &BedrockAuth) -> Result<(), Exception> {
    if token.is_empty() || auth.api_key.as_deref().is_some_and(|key| key != token) {
        return Err(unrecognized());
    }
    Ok(())
}

fn incomplete(message: impl Into<String>) -> Exception {
    Exception::coral("IncompleteSignatureException", message)
}

fn invalid(message: impl Into<String>) -> Exception {
    Exception::coral("InvalidSignatureException", message)
}

fn unrecognized() -> Exception {
    Exception::coral("UnrecognizedClientException", "The security token included in the request is invalid.")
}

fn mismatch() -> Exception {
    invalid(
        "The request signature we calculated does not match the signature you provided. Check your AWS Secret \
         Access Key and signing method. Consult the service documentation for details.",
    )
}

/// The parts of an `AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...` header.
#[derive(Debug)]
struct Signature<'a> {
    /// `<access key id>/<yyyymmdd>/<region>/<service>/aws4_request`.
    credential: &'a str,
    /// Lowercase header names, sorted, separated by `;`.
    signed_headers: &'a str,
    /// 64 lowercase hex digits.
    signature: &'a str,
}

impl<'a> Signature<'a> {
    fn parse(params: &'a str) -> Result<Self, Exception> {
        let (mut credential, mut signed_headers, mut signature) = (None, None, None);
        for param in params.split(',').map(str::trim) {
            let Some((name, value)) = param.split_once('=') else {
                return Err(incomplete(format!(
                    "'{param}' not a valid key=value pair (missing equal-sign) in Authorization header."
                )));
            };
            match name {
                "Credential" => credential = Some(value),
                "SignedHeaders" => signed_headers = Some(value),
                "Signature" => signature = Some(value),
                _ => {}
            }
        }
        let require = |part: Option<&'a str>, name: &str| {
            part.ok_or_else(|| incomplete(format!("Authorization header requires '{name}' parameter.")))
        };
        Ok(Self {
            credential: require(credential, "Credential")?,
            signed_headers: require(signed_headers, "SignedHeaders")?,
            signature: require(signature, "Signature")?,
        })
    }

    fn check(&self, headers: &HeaderMap, auth: &BedrockAuth) -> Result<(), Exception> {
        let Some(date_time) = headers.get("x-amz-date").and_then(|d| d.to_str().ok()) else {
            return Err(incomplete(
                "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.",
            ));
        };
        if !is_iso8601_basic(date_time) {
            return Err(incomplete(format!(
                "Date must be in ISO-8601 'basic format'. Got '{date_time}'. See http://en.wikipedia.org/wiki/ISO_8601"
            )));
        }
        let parts: Vec<&str> = self.credential.split('/').collect();
        let [key_id, date, region, service, terminator] = parts.as_slice() else {
            return Err(incomplete(format!(
                "Credential should be scoped to a valid region, service and terminator: '{}'.",
                self.credential
            )));
        };
        if key_id.is_empty() || auth.access_key_id.as_deref().is_some_and(|id| id != *key_id) {
            return Err(unrecognized());
        }
        if *terminator != "aws4_request" {
            return Err(invalid(format!(
                "Credential should be scoped with a valid terminator: 'aws4_request', not '{terminator}'."
            )));
        }
        if *service != SERVICE {
            return Err(invalid(format!("Credential should be scoped to correct service: '{SERVICE}'.")));
        }
        let valid_region =
            !region.is_empty() && region.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !valid_region || auth.region.as_deref().is_some_and(|r| r != *region) {
            return Err(invalid(format!("Credential should be scoped to a valid region, not '{region}'.")));
        }
        if !date_time.starts_with(date) || date.len() != 8 {
            return Err(invalid(format!(
                "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '{date}' != \
                 '{}', from '{date_time}'.",
                &date_time[..8]
            )));
        }
        let names: Vec<&str> = self.signed_headers.split(';').collect();
        if !names.contains(&"host") {
            return Err(invalid("'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization."));
        }
        let well_formed = names.iter().all(|n| !n.is_empty() && !n.bytes().any(|b| b.is_ascii_uppercase()))
            && names.windows(2).all(|w| w[0] < w[1]);
        // A signed header that is absent, or a list in another order, cannot give the signature a
        // canonical request would.
        if !well_formed || names.iter().any(|n| !headers.contains_key(*n)) {
            return Err(mismatch());
        }
        if self.signature.len() != 64 || !self.signature.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(mismatch());
        }
        Ok(())
    }
}

impl Signature<'_> {
    /// Recomputes the signature with `secret` over what the request says it signed.
    fn verify(
        &self,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        body: &[u8],
        secret: &str,
    ) -> Result<(), Exception> {
        // `check` saw the scope and the date well formed.
        let mut scope = self.credential.split('/');
        let (Some(key_id), Some(_), Some(region)) = (scope.next(), scope.next(), scope.next()) else {
            return Err(mismatch());
        };
        let date_time = headers.get("x-amz-date").and_then(|d| d.to_str().ok()).unwrap_or_default();
        let time = parse_date_time(date_time).ok_or_else(mismatch)?;
        let skew = match SystemTime::now().duration_since(time) {
            Ok(ago) => ago,
            Err(ahead) => ahead.duration(),
        };
        if skew > MAX_SKEW {
            return Err(invalid(format!("Signature expired: {date_time} is more than 15 minutes from now.")));
        }
        let names: Vec<&str> = self.signed_headers.split(';').collect();
        // The signer adds `host`, `x-amz-date` and the session token itself.
        let token = names
            .contains(&"x-amz-security-token")
            .then(|| headers.get("x-amz-security-token").and_then(|t| t.to_str().ok()).map(str::to_owned))
            .flatten();
        let signed: Vec<(&str, &str)> = names
            .iter()
            .filter(|n| !matches!(**n, "host" | "x-amz-date" | "x-amz-security-token"))
            .flat_map(|n| headers.get_all(*n).iter().filter_map(move |v| Some((*n, v.to_str().ok()?))))
            .collect();
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("localhost");
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        let url = format!("http://{host}{path}");
        let identity: Identity = Credentials::new(key_id, secret, token, None, "mock-upstream").into();
        let mut settings = SigningSettings::default();
        // Whatever the client signed counts, `user-agent` included.
        settings.excluded_headers = None;
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(region)
            .name(SERVICE)
            .time(time)
            .settings(settings)
            .build()
            .map_err(|_| mismatch())?
            .into();
        let signable = SignableRequest::new(method.as_str(), url, signed.into_iter(), SignableBody::Bytes(body))
            .map_err(|_| mismatch())?;
        let (_, expected) = sign(signable, &params).map_err(|_| mismatch())?.into_parts();
        if expected != self.signature {
            return Err(mismatch());
        }
        Ok(())
    }
}

/// How far a signing time may be from now (AWS's limit).
const MAX_SKEW: Duration = Duration::from_secs(15 * 60);

/// `yyyymmddThhmmssZ` as an instant.
fn parse_date_time(s: &str) -> Option<SystemTime> {
    if !is_iso8601_basic(s) {
        return None;
    }
    let n = |range: std::ops::Range<usize>| s.get(range)?.parse::<u64>().ok();
    let (year, month, day) = (n(0..4)?, n(4..6)?, n(6..8)?);
    let (hour, minute, second) = (n(9..11)?, n(11..13)?, n(13..15)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || year < 1970 {
        return None;
    }
    // Days since 1970-01-01 of a civil date (H. Hinnant's `days_from_civil`), counted in
    // 400-year eras from 0000-03-01 so that leap days end each year.
    let y = if month <= 2 { year - 1 } else { year };
    let (era, yoe) = (y / 400, y % 400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = (era * 146_097 + doe).checked_sub(719_468)?;
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second;
    Some(UNIX_EPOCH + Duration::from_secs(secs))
}

/// `yyyymmddThhmmssZ`.
fn is_iso8601_basic(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 16
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[8] == b'T'
        && b[9..15].iter().all(u8::is_ascii_digit)
        && b[15] == b'Z'
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signed(authorization: &str, date: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, authorization.parse().expect("a header value"));
        headers.insert("x-amz-date", date.parse().expect("a header value"));
        headers.insert(header::HOST, "localhost".parse().expect("a header value"));
        headers
    }

    fn check(auth: &BedrockAuth, headers: &HeaderMap) -> Result<(), Exception> {
        let keys = Keys(RwLock::new(auth.clone()));
        keys.check(&Method::POST, &Uri::from_static("/model/m/converse"), headers, b"")
    }

    const SIG: &str = "fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024";

    #[test]
    fn a_well_formed_signature_scoped_to_bedrock_passes() {
        let value = format!(
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/bedrock/aws4_request, \
             SignedHeaders=host;x-amz-date, Signature={SIG}"
        );
        let headers = signed(&value, "20150830T123600Z");
        assert!(check(&BedrockAuth::new(), &headers).is_ok());
        assert!(check(&BedrockAuth::new().access_key_id("AKIDEXAMPLE").region("us-east-1"), &headers).is_ok());
        assert!(check(&BedrockAuth::new().region("eu-west-1"), &headers).is_err());
        assert!(check(&BedrockAuth::new().access_key_id("OTHER"), &headers).is_err());
    }

    #[test]
    fn signing_times_parse_as_utc_instants() {
        let at = |secs| Some(UNIX_EPOCH + Duration::from_secs(secs));
        assert_eq!(parse_date_time("19700101T000000Z"), at(0));
        assert_eq!(parse_date_time("20000229T000000Z"), at(951_782_400));
        assert_eq!(parse_date_time("20150830T123600Z"), at(1_440_938_160));
        assert_eq!(parse_date_time("2015-08-30T12:36:00Z"), None);
    }

    #[test]
    fn a_scope_for_another_service_or_date_is_refused() {
        let other_service = format!(
            "AWS4-HMAC-SHA256 Credential=AKID/20150830/us-east-1/s3/aws4_request, SignedHeaders=host, Signature={SIG}"
        );
        assert!(check(&BedrockAuth::new(), &signed(&other_service, "20150830T123600Z")).is_err());
        let other_day = format!(
            "AWS4-HMAC-SHA256 Credential=AKID/20150830/us-east-1/bedrock/aws4_request, SignedHeaders=host, \
             Signature={SIG}"
        );
        assert!(check(&BedrockAuth::new(), &signed(&other_day, "20150831T000000Z")).is_err());
        assert!(check(&BedrockAuth::new(), &signed(&other_day, "2015-08-30T00:00:00Z")).is_err());
    }
}
