//! Where requests go and as whom: the endpoint's base URL, the API and model, and the API key
//! — which never leaves this type except as a bearer header, and is redacted from any text.

use crate::error::BenchError;
use crate::model::scenario::Api;
use url::Url;

/// Where requests go and as whom.
#[derive(Clone)]
pub struct Target {
    /// The base (`…/v1`), as given.
    pub base: Url,
    pub api: Api,
    pub model: String,
    api_key: Option<String>,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("base", &public_url(&self.base))
            .field("api", &self.api)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl Target {
    pub fn new(
        endpoint: &str,
        api: Api,
        model: String,
        api_key: Option<String>,
    ) -> Result<Target, BenchError> {
        Ok(Target {
            base: normalize_base(endpoint)?,
            api,
            model,
            api_key,
        })
    }

    /// The full URL of a route under the base (`chat/completions`, `models`).
    pub fn url(&self, route: &str) -> Url {
        // The base always ends in '/', so join appends.
        self.base.join(route).unwrap_or_else(|_| self.base.clone())
    }

    pub(crate) fn api_key(&self) -> Option<&str> {
        self.api_key.as_deref()
    }

    /// The endpoint as it may be written to results: no user, password, query or fragment.
    pub fn public_endpoint(&self) -> String {
        public_url(&self.base)
    }

    pub(crate) fn redact(&self, s: String) -> String {
        match &self.api_key {
            Some(k) if !k.is_empty() => s.replace(k.as_str(), "<redacted>"),
            _ => s,
        }
    }
}

/// `http://h:p` and `http://h:p/` mean `http://h:p/v1/`; any other path is kept.
pub fn normalize_base(endpoint: &str) -> Result<Url, BenchError> {
    let mut url = Url::parse(endpoint).map_err(|e| {
        BenchError::usage(format!(
            "endpoint `{endpoint}` is not a URL ({e}); write it like http://127.0.0.1:8000/v1"
        ))
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(BenchError::usage(format!(
            "endpoint `{endpoint}`: use http:// or https://"
        )));
    }
    let path = url.path().trim_end_matches('/').to_string();
    let path = if path.is_empty() {
        "/v1".to_string()
    } else {
        path
    };
    url.set_path(&format!("{path}/"));
    Ok(url)
}

fn public_url(u: &Url) -> String {
    let mut u = u.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.set_query(None);
    u.set_fragment(None);
    u.to_string().trim_end_matches('/').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_normalize_and_lose_credentials() {
        let t = Target::new(
            "http://user:secret@h:8000?key=abc",
            Api::Chat,
            "m".into(),
            Some("sk-1".into()),
        )
        .unwrap();
        assert_eq!(
            t.url("chat/completions").as_str(),
            "http://user:secret@h:8000/v1/chat/completions"
        );
        assert_eq!(t.public_endpoint(), "http://h:8000/v1");
        let t2 = Target::new("http://h:8000/openai/v1/", Api::Chat, "m".into(), None).unwrap();
        assert_eq!(
            t2.url("completions").as_str(),
            "http://h:8000/openai/v1/completions"
        );
        assert!(!format!("{t:?}").contains("sk-1"));
        assert_eq!(t.redact("bad key sk-1".into()), "bad key <redacted>");
        assert!(Target::new("ftp://h", Api::Chat, "m".into(), None).is_err());
    }
}
