//! [`HttpsTransport`]: the default transport, hyper-util's pooled client over rustls (ring,
//! webpki roots plus an optional CA bundle), HTTP/1.1 and HTTP/2, with an optional HTTP proxy.

use std::{
    fmt, io,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use base64::{Engine as _, engine::general_purpose::STANDARD as BASE64};
use bytes::Bytes;
use futures_util::future::BoxFuture;
use http::{HeaderValue, Uri, header, uri::Scheme};
use http_body_util::Full;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::{
    client::legacy::{
        Client, Error, ResponseFuture,
        connect::{Connected, Connection, HttpConnector, proxy::Tunnel},
    },
    rt::{TokioExecutor, TokioIo, TokioTimer},
};
use rustls::RootCertStore;
use rustls_pki_types::{CertificateDer, pem::PemObject};
use switchyard_layers::BoxError;
use tokio::net::TcpStream;
use tower_service::Service;

use super::{ProviderConfig, ProviderError};

/// How long an idle pooled connection is kept.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// TCP keep-alive probes on upstream connections (long streams through NATs and proxies).
const TCP_KEEPALIVE: Duration = Duration::from_secs(60);

/// The default transport of an [`HttpProvider`](super::HttpProvider): hyper-util's legacy
/// `Client` (pooled, always ready, cheap to clone) over rustls with the ring provider, trusting
/// the webpki roots plus [`ProviderConfig::ca_bundle`], speaking HTTP/1.1 or HTTP/2 (ALPN), and
/// sending through [`ProviderConfig::proxy`] when set.
#[derive(Clone)]
pub struct HttpsTransport {
    client: Client<HttpsConnector<EgressConnector>, Full<Bytes>>,
    /// `Proxy-Authorization` for `http://` targets sent to the proxy in absolute form.
    proxy_auth: Option<HeaderValue>,
}

impl fmt::Debug for HttpsTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpsTransport").field("proxy_auth", &self.proxy_auth.is_some()).finish_non_exhaustive()
    }
}

impl HttpsTransport {
    /// Builds the client from `config`'s egress options (CA bundle, proxy, connect timeout).
    pub fn new(config: &ProviderConfig) -> Result<Self, ProviderError> {
        let proxy = config.proxy.as_ref().map(Proxy::parse).transpose()?;
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_keepalive(Some(TCP_KEEPALIVE));
        http.set_connect_timeout(Some(config.connect_timeout));
        let proxy_auth = proxy.as_ref().and_then(|p| p.auth.clone());
        let egress = EgressConnector { http, proxy: proxy.map(Arc::new) };
        let https = HttpsConnectorBuilder::new()
            .with_tls_config(tls_config(config)?)
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .wrap_connector(egress);
        let client = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            .build(https);
        Ok(Self { client, proxy_auth })
    }
}

impl Service<http::Request<Full<Bytes>>> for HttpsTransport {
    type Response = http::Response<hyper::body::Incoming>;
    type Error = Error;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: http::Request<Full<Bytes>>) -> ResponseFuture {
        if let Some(auth) = &self.proxy_auth
            && req.uri().scheme() == Some(&Scheme::HTTP)
        {
            req.headers_mut().insert(header::PROXY_AUTHORIZATION, auth.clone());
        }
        self.client.request(req)
    }
}

/// rustls with the ring provider, the webpki roots, and the CA bundle's certificates.
fn tls_config(config: &ProviderConfig) -> Result<rustls::ClientConfig, ProviderError> {
    let mut roots = RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = &config.ca_bundle {
        let certs = CertificateDer::pem_file_iter(path)
            .map_err(|e| ProviderError::ca_bundle(path.clone(), "cannot be read").with_source(e))?;
        let mut added = 0usize;
        for cert in certs {
            let cert = cert.map_err(|e| ProviderError::ca_bundle(path.clone(), "is not valid PEM").with_source(e))?;
            roots
                .add(cert)
                .map_err(|e| ProviderError::ca_bundle(path.clone(), "holds an unusable certificate").with_source(e))?;
            added += 1;
        }
        if added == 0 {
            return Err(ProviderError::ca_bundle(path.clone(), "holds no certificate"));
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ProviderError::tls("no usable protocol version").with_source(e))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// The proxy, without credentials in its URI.
#[derive(Debug)]
struct Proxy {
    uri: Uri,
    auth: Option<HeaderValue>,
}

impl Proxy {
    fn parse(uri: &Uri) -> Result<Self, ProviderError> {
        match uri.scheme_str() {
            Some("http") => {}
            Some(_) => return Err(ProviderError::proxy(uri, "only http:// proxies are supported")),
            None => return Err(ProviderError::proxy(uri, "needs a scheme (http://host:port)")),
        }
        let authority = uri.authority().ok_or_else(|| ProviderError::proxy(uri, "has no host"))?;
        let (userinfo, host) = match authority.as_str().rsplit_once('@') {
            Some((user, host)) => (Some(user), host),
            None => (None, authority.as_str()),
        };
        let clean = Uri::builder()
            .scheme(Scheme::HTTP)
            .authority(host)
            .path_and_query("/")
            .build()
            .map_err(|e| ProviderError::proxy(uri, "is not a valid URI").with_source(e))?;
        let auth = match userinfo {
            None => None,
            Some(user) => {
                let mut value = HeaderValue::try_from(format!("Basic {}", BASE64.encode(user.as_bytes())))
                    .map_err(|e| ProviderError::proxy(uri, "has invalid credentials").with_source(e))?;
                value.set_sensitive(true);
                Some(value)
            }
        };
        Ok(Self { uri: clean, auth })
    }
}

/// Opens TCP connections: directly, to the proxy (for `http://` targets, marked as proxied so
/// the client sends absolute-form requests), or through a `CONNECT` tunnel (for `https://`
/// targets; TLS then runs end to end inside the tunnel).
#[derive(Clone)]
struct EgressConnector {
    http: HttpConnector,
    proxy: Option<Arc<Proxy>>,
}

impl Service<Uri> for EgressConnector {
    type Response = EgressStream;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<EgressStream, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.http.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let mut http = self.http.clone();
        let proxy = self.proxy.clone();
        Box::pin(async move {
            let Some(proxy) = proxy else {
                return Ok(EgressStream { io: http.call(dst).await?, proxied: false });
            };
            if dst.scheme() == Some(&Scheme::HTTPS) {
                let mut tunnel = Tunnel::new(proxy.uri.clone(), http);
                if let Some(auth) = &proxy.auth {
                    tunnel = tunnel.with_auth(auth.clone());
                }
                Ok(EgressStream { io: tunnel.call(dst).await?, proxied: false })
            } else {
                Ok(EgressStream { io: http.call(proxy.uri.clone()).await?, proxied: true })
            }
        })
    }
}

/// A TCP connection that knows whether it leads to a proxy.
struct EgressStream {
    io: TokioIo<TcpStream>,
    proxied: bool,
}

impl Connection for EgressStream {
    fn connected(&self) -> Connected {
        self.io.connected().proxy(self.proxied)
    }
}

impl Read for EgressStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: ReadBufCursor<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl Write for EgressStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_credentials_become_basic_auth_and_leave_the_uri() {
        let p = Proxy::parse(&"http://user:pa55@proxy.internal:3128".parse().expect("uri")).expect("valid proxy");
        assert_eq!(p.uri.to_string(), "http://proxy.internal:3128/");
        assert_eq!(p.auth.as_ref().map(|v| v.as_bytes()), Some(&b"Basic dXNlcjpwYTU1"[..]));
        let err = Proxy::parse(&"https://user:pa55@proxy:443".parse().expect("uri")).expect_err("https proxy");
        assert!(err.is_proxy());
        assert!(!err.to_string().contains("pa55"));
    }
}
