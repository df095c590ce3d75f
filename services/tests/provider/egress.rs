//! Egress options: HTTP proxy (absolute form for http://, CONNECT for https://), CA bundle.

use switchyard_layers::{ApiKey, Deployment, Outcome, RequestFacts};
use switchyard_services::provider::{HttpProvider, ProviderConfig};

use crate::support::{Reply, Server, attempt, chat_body, provider, route_error, send};

const COMPLETION: &str = r#"{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4o",
    "choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}"#;

/// A self-signed CA certificate (EC P-256), only ever parsed.
const TEST_CA: &str = "-----BEGIN CERTIFICATE-----
MIIBkTCCATegAwIBAgIUCf0YqIKjpZevcD2rkp4lhK1CwigwCgYIKoZIzj0EAwIw
HTEbMBkGA1UEAwwSc3dpdGNoeWFyZC10ZXN0LWNhMCAXDTI2MTEzMDAwNTU1OFoY
DzIxMjYxMTA2MDA1NTU4WjAdMRswGQYDVQQDDBJzd2l0Y2h5YXJkLXRlc3QtY2Ew
WTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAATmUaaGITm6rGQ1lHn9I+DJbc9JN7mF
EKmaX2pxWMSHWiGwHPLUM14ajznvfVEIrI85dQKE8xPihl9hjkn7SbARo1MwUTAd
BgNVHQ4EFgQUp9A5g+fZihzj9R88LZ2apMVFP0owHwYDVR0jBBgwFoAUp9A5g+fZ
ihzj9R88LZ2apMVFP0owDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNIADBF
AiA/dfQzsi4raUcmdHuLQpgFJvTN0IMLA2Q0EFKYbJMYpgIhAKKKNUF0H78o1+Hl
r/brVXuGH7pVrenmyKyEu6ekRuYq
-----END CERTIFICATE-----
";

fn through(proxy: &Server) -> ProviderConfig {
    let uri = format!("http://user:pw@{}", proxy.addr);
    ProviderConfig::default().proxy(uri.parse().expect("proxy URI"))
}

fn upstream(base: &str) -> Deployment {
    Deployment::builder("gpt-4o", "openai/gpt-4o")
        .api_base(base)
        .api_key(ApiKey::new("sk-upstream"))
        .build()
        .expect("valid deployment")
}

#[tokio::test]
async fn http_targets_go_through_the_proxy_in_absolute_form() {
    // The proxy answers itself: the test only checks what it was asked.
    let proxy = Server::start().await;
    proxy.reply(Reply::json(200, COMPLETION));
    let req = attempt(upstream("http://upstream.invalid:8080/v1"), RequestFacts::new(), &chat_body());
    send(&provider(through(&proxy)), req).await.expect("answered by the proxy");

    let seen = proxy.request().await;
    assert_eq!(seen.target, "http://upstream.invalid:8080/v1/chat/completions");
    assert_eq!(seen.header("host"), Some("upstream.invalid:8080"));
    assert_eq!(seen.header("proxy-authorization"), Some("Basic dXNlcjpwdw=="));
    assert_eq!(seen.header("authorization"), Some("Bearer sk-upstream"));
}

#[tokio::test]
async fn https_targets_tunnel_through_connect() {
    // The proxy refuses the tunnel: nothing reached the upstream, so it is a connect failure.
    let proxy = Server::start().await;
    proxy.reply(Reply::Close);
    let req = attempt(upstream("https://upstream.invalid/v1"), RequestFacts::new(), &chat_body());
    let err = route_error(send(&provider(through(&proxy)), req).await);
    assert_eq!(err.outcome(), Some(Outcome::Connect));

    let seen = proxy.request().await;
    assert_eq!((seen.method.as_str(), seen.target.as_str()), ("CONNECT", "upstream.invalid:443"));
    assert_eq!(seen.header("proxy-authorization"), Some("Basic dXNlcjpwdw=="));
    assert_eq!(seen.header("authorization"), None, "the key travels only inside the TLS tunnel");
}

#[test]
fn an_https_proxy_is_refused_without_showing_its_credentials() {
    let config = ProviderConfig::default().proxy("https://user:secret-pw@proxy:443".parse().expect("uri"));
    let err = HttpProvider::new(config).expect_err("only http:// proxies");
    assert!(err.is_proxy());
    assert!(!err.to_string().contains("secret-pw"), "{err}");
}

#[test]
fn debug_output_never_shows_proxy_credentials() {
    let config = ProviderConfig::default().proxy("http://user:secret-pw@proxy:3128".parse().expect("uri"));
    let provider = HttpProvider::new(config).expect("builds");
    let shown = format!("{provider:?}");
    assert!(!shown.contains("secret-pw") && shown.contains("proxy:3128"), "{shown}");
}

#[test]
fn a_missing_ca_bundle_is_an_error_naming_the_path() {
    let path = std::env::temp_dir().join("switchyard-no-such-bundle.pem");
    let err = HttpProvider::new(ProviderConfig::default().ca_bundle(&path)).expect_err("no such file");
    assert!(err.is_ca_bundle());
    assert!(err.to_string().contains(&path.display().to_string()), "{err}");
}

#[test]
fn a_ca_bundle_without_certificates_is_refused() {
    let path = std::env::temp_dir().join(format!("switchyard-empty-bundle-{}.pem", std::process::id()));
    std::fs::write(&path, "not a certificate\n").expect("write temp file");
    let err = HttpProvider::new(ProviderConfig::default().ca_bundle(&path)).expect_err("nothing to trust");
    let _ = std::fs::remove_file(&path);
    assert!(err.is_ca_bundle());
    assert!(err.to_string().contains("no certificate"), "{err}");
}

#[test]
fn a_ca_bundle_adds_its_roots() {
    let path = std::env::temp_dir().join(format!("switchyard-test-ca-{}.pem", std::process::id()));
    std::fs::write(&path, TEST_CA).expect("write temp file");
    let built = HttpProvider::new(ProviderConfig::default().ca_bundle(&path));
    let _ = std::fs::remove_file(&path);
    built.expect("a valid bundle builds");
}
