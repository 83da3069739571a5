//! Checks shared by scenario fields and the command-line flags that override them, so a
//! value means the same and fails the same way wherever it is given.

pub fn check_rate(r: f64) -> Result<(), String> {
    if r.is_finite() && r > 0.0 {
        Ok(())
    } else {
        Err(format!(
            "must be a positive number of requests per second (got {r})"
        ))
    }
}

pub fn check_concurrency(c: u32) -> Result<(), String> {
    if c == 0 {
        Err("must be at least 1".into())
    } else {
        Ok(())
    }
}

pub fn check_endpoint(e: &str) -> Result<(), String> {
    let url = url::Url::parse(e).map_err(|err| {
        format!("`{e}` is not a URL ({err}); write it like http://127.0.0.1:8000/v1")
    })?;
    match url.scheme() {
        "http" | "https" => Ok(()),
        s => Err(format!(
            "scheme `{s}` is not supported; use http:// or https://"
        )),
    }
}

/// Seconds from "90s", "5m", "1h 30m" (humantime) or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<f64, String> {
    let secs = match s.trim().parse::<f64>() {
        Ok(v) => v,
        Err(_) => humantime::parse_duration(s.trim())
            .map_err(|e| format!("`{s}` is not a duration ({e}); write it like \"90s\" or \"5m\""))?
            .as_secs_f64(),
    };
    if secs.is_finite() && secs > 0.0 {
        Ok(secs)
    } else {
        Err(format!("must be positive (got `{s}`)"))
    }
}
