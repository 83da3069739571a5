//! Where requests go and as whom: the endpoint's base URL, the API and model, and the API key
//! — which never leaves this type except as a bearer header, and is redacted from any text,
//! as are the endpoint's own credentials (its password, the `Basic` header made of it, and
//! its query values), since a server may echo any of them in an error.

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
    /// Everything secret in the endpoint: the password, `base64(user:password)` as a Basic
    /// header carries it, and the query's values.
    url_secrets: Vec<String>,
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
        let base = normalize_base(endpoint)?;
        Ok(Target {
            url_secrets: url_secrets(&Url::parse(endpoint).unwrap_or_else(|_| base.clone())),
            base,
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

    /// A string that came from the server (a model id, a version), fit to print and store:
    /// the secrets redacted (a server may echo the bearer token anywhere) and control
    /// characters, ESC sequences included, shown as `\u{..}` escapes instead of reaching a
    /// terminal.
    pub fn scrub(&self, s: &str) -> String {
        crate::model::escape::printable(&self.redact(s))
    }

    /// `s` without the API key or the endpoint's credentials: see [`redact`].
    pub(crate) fn redact(&self, s: &str) -> String {
        self.api_key
            .iter()
            .chain(&self.url_secrets)
            .fold(s.to_string(), |t, k| redact(&t, k))
    }
}

/// The secrets a URL carries: its password (decoded), the Basic credential made of it, and
/// the values of its query (`?api_key=…`, `?token=…`) of 4 characters or more.
fn url_secrets(u: &Url) -> Vec<String> {
    use base64::Engine;
    let decode = |s: &str| {
        url::form_urlencoded::parse(s.as_bytes())
            .map(|(k, v)| format!("{k}{v}"))
            .collect::<String>()
    };
    let mut out = Vec::new();
    if let Some(pw) = u.password() {
        let pw = decode(pw);
        let user = decode(u.username());
        out.push(base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pw}")));
        out.push(pw);
    }
    out.extend(u.query_pairs().map(|(_, v)| v.into_owned()));
    out.retain(|s| s.chars().count() >= 4);
    out
}

/// Shortest run of the key's characters that counts as a fragment of it.
const FRAGMENT: usize = 8;

/// `text` with the secret `key` replaced by `<redacted>`: the whole key, and every run of
/// [`FRAGMENT`] or more consecutive characters of it (a server that echoes half a key, or a
/// cut that falls inside one, must not leave a usable prefix). A key shorter than that is
/// redacted where it appears whole.
pub fn redact(text: &str, key: &str) -> String {
    if key.is_empty() {
        return text.to_string();
    }
    let text = text.replace(key, "<redacted>");
    let k: Vec<char> = key.chars().collect();
    if k.len() < FRAGMENT {
        return text;
    }
    let grams: std::collections::HashSet<&[char]> = k.windows(FRAGMENT).collect();
    let t: Vec<char> = text.chars().collect();
    let mut hidden = vec![false; t.len()];
    for (i, w) in t.windows(FRAGMENT).enumerate() {
        if grams.contains(w) {
            hidden[i..i + FRAGMENT].iter_mut().for_each(|h| *h = true);
        }
    }
    let mut out = String::with_capacity(text.len());
    for (i, c) in t.iter().enumerate() {
        match (hidden[i], i > 0 && hidden[i - 1]) {
            (true, false) => out.push_str("<redacted>"),
            (true, true) => {}
            (false, _) => out.push(*c),
        }
    }
    out
}

/// A URL as it may be written to a result or a log: no user, password, query or fragment
/// (where credentials travel); text that is not a URL is kept as it is.
pub fn public(url: &str) -> String {
    Url::parse(url).map_or_else(|_| url.to_string(), |u| public_url(&u))
}

/// `http://h:p` and `http://h:p/` mean `http://h:p/v1/`; any other path is kept.
fn normalize_base(endpoint: &str) -> Result<Url, BenchError> {
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

pub(crate) fn public_url(u: &Url) -> String {
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
        assert_eq!(t.redact("bad key sk-1"), "bad key <redacted>");
        assert!(Target::new("ftp://h", Api::Chat, "m".into(), None).is_err());
    }

    #[test]
    fn a_key_echoed_near_a_cut_leaves_no_fragment() {
        let key = "sk-TESTSECRET-0123456789abcdef";
        // Echoed whole, echoed in part, and cut in the middle.
        let text = format!(
            "invalid key {key}; you sent sk-TESTSECRET-0123 and {}",
            &key[..12]
        );
        let out = redact(&text, key);
        assert!(!out.contains("TESTSEC") && !out.contains("0123"), "{out}");
        assert_eq!(out.matches("<redacted>").count(), 3, "{out}");
        // Seven characters of the key are not a fragment; ordinary words survive.
        assert_eq!(redact("sk-TEST ok", key), "sk-TEST ok");
        assert_eq!(public("http://u:pw@h:1/v1?api_key=q#f"), "http://h:1/v1");
        assert_eq!(public("not a url"), "not a url");
    }

    #[test]
    fn the_endpoints_own_credentials_are_redacted_too() {
        let t = Target::new(
            "http://user:PW-1234@h/v1?api_key=QSECRET",
            Api::Chat,
            "m".into(),
            None,
        )
        .unwrap();
        // base64("user:PW-1234") — what a Basic header carries.
        let echoed = "denied: Basic dXNlcjpQVy0xMjM0 (PW-1234) for QSECRET";
        let out = t.redact(echoed);
        assert!(
            !out.contains("dXNlcjpQVy0xMjM0")
                && !out.contains("PW-1234")
                && !out.contains("QSECRET"),
            "{out}"
        );
    }
}
