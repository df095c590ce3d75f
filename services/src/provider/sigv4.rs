//! AWS credentials of a Bedrock deployment and SigV4 signing of its requests, with AWS's own
//! signer (`aws-sigv4`): nothing of the canonical request is written here.
//!
//! Credentials come from the deployment (`aws_access_key_id`, `aws_secret_access_key`,
//! `aws_session_token`, `aws_region_name`), else from the standard environment variables
//! (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION` /
//! `AWS_DEFAULT_REGION`). A Bedrock API key (the deployment's `api_key`, else
//! `AWS_BEARER_TOKEN_BEDROCK`) is sent as a bearer token instead of signing.

use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_sigv4::{
    http_request::{SignableBody, SignableRequest, SigningSettings, sign},
    sign::v4,
};
use aws_smithy_runtime_api::client::identity::Identity;
use http::{HeaderName, HeaderValue};
use serde_json::Value;
use switchyard_layers::Deployment;

/// The region a Bedrock deployment calls: `aws_region_name`, else the environment's.
pub(crate) fn region(d: &Deployment) -> Option<String> {
    param(d, "aws_region_name").or_else(|| env("AWS_REGION")).or_else(|| env("AWS_DEFAULT_REGION"))
}

/// How a Bedrock deployment authenticates.
pub(crate) enum AwsAuth {
    /// A Bedrock API key, sent as `Authorization: Bearer`.
    Bearer(String),
    /// SigV4 with these credentials.
    Keys { access_key_id: String, secret_access_key: String, session_token: Option<String> },
}

impl AwsAuth {
    /// The deployment's credentials, else the environment's; `None` when there are none.
    pub(crate) fn of(d: &Deployment) -> Option<Self> {
        if let Some(key) = d.api_key.as_ref().map(|k| k.expose().to_owned()).filter(|k| !k.is_empty()) {
            return Some(Self::Bearer(key));
        }
        let id = param(d, "aws_access_key_id").or_else(|| env("AWS_ACCESS_KEY_ID"));
        let secret = param(d, "aws_secret_access_key").or_else(|| env("AWS_SECRET_ACCESS_KEY"));
        match (id, secret) {
            (Some(access_key_id), Some(secret_access_key)) => {
                let session_token = param(d, "aws_session_token").or_else(|| env("AWS_SESSION_TOKEN"));
                Some(Self::Keys { access_key_id, secret_access_key, session_token })
            }
            _ => env("AWS_BEARER_TOKEN_BEDROCK").map(Self::Bearer),
        }
    }
}

/// Signs `req` (its method, URL, headers and `body`) for `service` in `region` at `time`, adding
/// `authorization`, `x-amz-date` and, with a session token, `x-amz-security-token`.
pub(crate) fn sign_request(
    req: &mut http::Request<http_body_util::Full<bytes::Bytes>>,
    body: &[u8],
    auth: &AwsAuth,
    region: &str,
    service: &str,
    time: SystemTime,
) -> Result<(), String> {
    let AwsAuth::Keys { access_key_id, secret_access_key, session_token } = auth else {
        let AwsAuth::Bearer(token) = auth else { unreachable!("two variants") };
        let mut value =
            HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| "the API key is not a valid header")?;
        value.set_sensitive(true);
        req.headers_mut().insert(http::header::AUTHORIZATION, value);
        return Ok(());
    };
    let identity: Identity =
        Credentials::new(access_key_id, secret_access_key, session_token.clone(), None, "switchyard-deployment").into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(service)
        .time(time)
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| format!("cannot sign: {e}"))?
        .into();
    let uri = req.uri().to_string();
    let headers: Vec<(String, String)> =
        req.headers().iter().filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned()))).collect();
    let signable = SignableRequest::new(
        req.method().as_str(),
        &uri,
        headers.iter().map(|(n, v)| (n.as_str(), v.as_str())),
        SignableBody::Bytes(body),
    )
    .map_err(|e| format!("cannot sign: {e}"))?;
    let (instructions, _signature) = sign(signable, &params).map_err(|e| format!("cannot sign: {e}"))?.into_parts();
    for (name, value) in instructions.headers() {
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| "the signer made an invalid header name")?;
        let mut value = HeaderValue::from_str(value).map_err(|_| "the signer made an invalid header value")?;
        value.set_sensitive(true);
        req.headers_mut().insert(name, value);
    }
    Ok(())
}

fn param(d: &Deployment, key: &str) -> Option<String> {
    d.params.get(key).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned)
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// AWS's published SigV4 test suite, `get-vanilla`: a GET of `/` on `example.amazonaws.com`
    /// for service `service` in `us-east-1` at 2015-08-30T12:36:00Z with the documentation's
    /// example keys.
    #[test]
    fn the_signature_matches_awss_get_vanilla_test_vector() {
        let mut req = http::Request::new(http_body_util::Full::new(bytes::Bytes::new()));
        *req.uri_mut() = "https://example.amazonaws.com/".parse().expect("uri");
        req.headers_mut().insert(http::header::HOST, HeaderValue::from_static("example.amazonaws.com"));
        let auth = AwsAuth::Keys {
            access_key_id: "AKIDEXAMPLE".to_owned(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".to_owned(),
            session_token: None,
        };
        let time = SystemTime::UNIX_EPOCH + Duration::from_secs(1_440_938_160);
        sign_request(&mut req, &[], &auth, "us-east-1", "service", time).expect("signs");
        assert_eq!(req.headers()["x-amz-date"], "20150830T123600Z");
        assert_eq!(
            req.headers()[http::header::AUTHORIZATION],
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
             SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
        );
    }
}
