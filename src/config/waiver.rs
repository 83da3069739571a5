//! Accepted trade-offs: a gate file's `[[waiver]]` tables, each naming the metric, the change
//! (a var, or `var=value`), the reason, the owner and the expiry date, all required — read
//! from the same file as the thresholds (`--gate`, else `ci/gate.toml`), each field checked
//! with the file and the waiver's number named.
//!
//! ```toml
//! [[waiver]]
//! metric = "ttft.p95"
//! change = "prefix_cache=on"
//! reason = "prefix caching trades TTFT p95 for throughput at this load (PR 123)"
//! owner = "alice"
//! expires = "2027-01-31"
//! ```

use crate::error::BenchError;
use crate::model::comparison::Waiver;
use crate::model::metric::Metric;
use std::path::Path;

/// The waivers of the gate file a compare reads (`file`, else `ci/gate.toml` when present).
pub fn for_compare(file: Option<&Path>) -> Result<Vec<Waiver>, BenchError> {
    let default = Path::new("ci/gate.toml");
    let Some(path) = file.or_else(|| default.exists().then_some(default)) else {
        return Ok(Vec::new());
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| BenchError::usage(format!("cannot read gate file {}: {e}", path.display())))?;
    let v: toml::Table = toml::from_str(&text)
        .map_err(|e| BenchError::usage(format!("{}: {}", path.display(), e.message())))?;
    parse(&v, path)
}

/// The `[[waiver]]` tables of a parsed gate file.
pub fn parse(file: &toml::Table, path: &Path) -> Result<Vec<Waiver>, BenchError> {
    let Some(w) = file.get("waiver") else {
        return Ok(Vec::new());
    };
    let list = w.as_array().ok_or_else(|| {
        BenchError::usage(format!(
            "{}: waiver must be an array of tables, written [[waiver]]",
            path.display()
        ))
    })?;
    list.iter()
        .enumerate()
        .map(|(i, t)| one(t, i + 1, path))
        .collect()
}

fn one(t: &toml::Value, n: usize, path: &Path) -> Result<Waiver, BenchError> {
    let at = |m: String| BenchError::usage(format!("{}: waiver {n}: {m}", path.display()));
    let t = t
        .as_table()
        .ok_or_else(|| at("must be a table, written [[waiver]]".into()))?;
    if let Some(k) = t
        .keys()
        .find(|k| !["metric", "change", "reason", "owner", "expires"].contains(&k.as_str()))
    {
        return Err(at(format!(
            "unknown field `{k}`; a waiver has metric, change, reason, owner and expires"
        )));
    }
    let field = |k: &str, example: &str| -> Result<String, BenchError> {
        t.get(k)
            .and_then(|v| v.as_str())
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .ok_or_else(|| at(format!("`{k}` is required, a string like {example}")))
    };
    let metric = field("metric", "\"ttft.p95\"")?;
    metric
        .parse::<Metric>()
        .map_err(|m| at(format!("`metric` = \"{metric}\": {m}")))?;
    let expires = field("expires", "\"2027-01-31\"")?;
    Ok(Waiver {
        change: field("change", "\"prefix_cache\" or \"prefix_cache=on\"")?,
        reason: field("reason", "\"trades TTFT p95 for throughput (PR 123)\"")?,
        owner: field("owner", "\"alice\"")?,
        expires: chrono::NaiveDate::parse_from_str(&expires, "%Y-%m-%d").map_err(|_| {
            at(format!(
                "`expires` = \"{expires}\": write a date like \"2027-01-31\""
            ))
        })?,
        metric,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<Waiver>, String> {
        let v: toml::Table = toml::from_str(text).unwrap();
        parse(&v, Path::new("gate.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn a_waiver_reads_with_every_field() {
        let w = read("[[waiver]]\nmetric = \"ttft.p95\"\nchange = \"prefix_cache=on\"\nreason = \"r\"\nowner = \"o\"\nexpires = \"2027-01-31\"\n").unwrap();
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].expires.to_string(), "2027-01-31");
    }

    #[test]
    fn a_bad_waiver_names_the_file_the_waiver_and_the_field() {
        let base = "[[waiver]]\nchange = \"c\"\nreason = \"r\"\nowner = \"o\"\n";
        let e = read(&format!(
            "{base}metric = \"ttft.p95\"\nexpires = \"31/01/2027\"\n"
        ));
        assert!(e
            .unwrap_err()
            .contains("gate.toml: waiver 1: `expires` = \"31/01/2027\""));
        let e = read(&format!(
            "{base}metric = \"tfft.p95\"\nexpires = \"2027-01-31\"\n"
        ));
        assert!(e.unwrap_err().contains("waiver 1: `metric` = \"tfft.p95\""));
        let e = read("[[waiver]]\nmetric = \"ttft.p95\"\n");
        assert!(e.unwrap_err().contains("`expires` is required"));
        let e = read(&format!(
            "{base}metric = \"ttft.p95\"\nexpires = \"2027-01-31\"\nuntil = 1\n"
        ));
        assert!(e.unwrap_err().contains("unknown field `until`"));
    }
}
