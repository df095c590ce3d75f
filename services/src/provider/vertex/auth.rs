//! Google OAuth2 access tokens for Vertex AI deployments, from `gcp_auth`: a service-account key
//! (`vertex_credentials`: a file path or the key's JSON text; the JWT-bearer grant at the key's
//! `token_uri`) or Application Default Credentials (`GOOGLE_APPLICATION_CREDENTIALS`, gcloud's
//! file, the metadata server). One token source per distinct credential, kept for the
//! provider's life and keyed by a SHA-256 digest of the credential (the map holds no copy of it).
//! A token is reused until `gcp_auth` deems it expired (20 s before its end); one refresh at a
//! time per credential, so concurrent attempts wait for it instead of each asking.

use std::{collections::HashMap, fmt, sync::Arc};

use gcp_auth::{CustomServiceAccount, TokenProvider};
use parking_lot::Mutex;
use sha2::{Digest, Sha256};
use switchyard_layers::Deployment;
use tokio::sync::{Mutex as AsyncMutex, OnceCell};

use super::{AccessToken, param};

/// The OAuth2 scope of Vertex AI calls.
const SCOPES: &[&str] = &["https://www.googleapis.com/auth/cloud-platform"];

/// The token sources of one provider, by credential.
#[derive(Default)]
pub(crate) struct Tokens {
    sources: Mutex<HashMap<[u8; 32], Arc<Source>>>,
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokens").field("credentials", &self.sources.lock().len()).finish()
    }
}

/// One credential's token source and its last token.
#[derive(Default)]
struct Source {
    /// Made on first use (ADC discovery is async and may probe the metadata server); a failure is
    /// not kept, so the next attempt tries again.
    provider: OnceCell<Arc<dyn TokenProvider>>,
    last: Mutex<Option<Arc<gcp_auth::Token>>>,
    /// Held while a token is fetched: the attempts that find none wait, then reuse it.
    refresh: AsyncMutex<()>,
}

impl Source {
    fn fresh(&self) -> Option<Arc<gcp_auth::Token>> {
        self.last.lock().clone().filter(|t| !t.has_expired())
    }
}

impl Tokens {
    /// A valid access token for `d`: the cached one, else a new one from its credential.
    pub(crate) async fn access_token(&self, d: &Deployment) -> Result<AccessToken, String> {
        let key = param(d, "vertex_credentials");
        let digest: [u8; 32] = match key {
            Some(key) => Sha256::new().chain_update(b"key\0").chain_update(key).finalize().into(),
            None => Sha256::digest(b"adc\0").into(),
        };
        let source = self.sources.lock().entry(digest).or_default().clone();
        let token = match source.fresh() {
            Some(token) => token,
            None => {
                let _refreshing = source.refresh.lock().await;
                match source.fresh() {
                    Some(token) => token,
                    None => {
                        let provider = source.provider.get_or_try_init(|| token_provider(key)).await?;
                        let token = provider.token(SCOPES).await.map_err(|e| chain(&e))?;
                        *source.last.lock() = Some(token.clone());
                        token
                    }
                }
            }
        };
        Ok(AccessToken(Arc::from(token.as_str())))
    }
}

/// The token source of a service-account key (a path, or JSON text when it opens with `{`), else
/// Application Default Credentials.
async fn token_provider(key: Option<&str>) -> Result<Arc<dyn TokenProvider>, String> {
    let account = match key {
        Some(json) if json.starts_with('{') => CustomServiceAccount::from_json(json),
        Some(path) => CustomServiceAccount::from_file(path),
        None => return gcp_auth::provider().await.map_err(|e| chain(&e)),
    };
    let account =
        account.map_err(|e| format!("`vertex_credentials` is not a usable service-account key: {}", chain(&e)))?;
    Ok(Arc::new(account))
}

/// An error and its sources, one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        source = cause.source();
    }
    out
}
