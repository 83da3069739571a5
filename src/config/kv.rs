//! `KEY=VALUE` on the command line — `--var`, `--opt`, `--param`, `--try`, `--base` — read by
//! one parser, so every flag trims, splits and complains the same way.

use crate::error::BenchError;
use std::collections::BTreeMap;

/// One `KEY=VALUE` of `flag`; keys and values are trimmed and the key must not be empty.
pub fn pair(flag: &str, text: &str) -> Result<(String, String), BenchError> {
    let (k, v) = text.split_once('=').ok_or_else(|| {
        BenchError::usage(format!(
            "{flag} `{text}`: write it as KEY=VALUE, e.g. {flag} prefix_cache=on"
        ))
    })?;
    let k = k.trim();
    if k.is_empty() {
        return Err(BenchError::usage(format!(
            "{flag} `{text}`: the key is empty"
        )));
    }
    Ok((k.to_string(), v.trim().to_string()))
}

/// Every item of a repeatable flag, in order.
pub fn pairs(flag: &str, items: &[String]) -> Result<Vec<(String, String)>, BenchError> {
    items.iter().map(|i| pair(flag, i)).collect()
}

/// A comma-separated list of pairs in one value (`--base quant=none,spec=off`); empty items
/// are skipped.
pub fn list(flag: &str, text: &str) -> Result<Vec<(String, String)>, BenchError> {
    text.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| pair(flag, p))
        .collect()
}

/// Pairs as a map, refusing a key given twice.
pub fn unique(flag: &str, items: &[String]) -> Result<BTreeMap<String, String>, BenchError> {
    let mut out = BTreeMap::new();
    for (k, v) in pairs(flag, items)? {
        if out.contains_key(&k) {
            return Err(BenchError::usage(format!("{flag} {k} is given twice")));
        }
        out.insert(k, v);
    }
    Ok(out)
}

/// A flag's value as a request-body value: JSON where it parses (false, 5, 0.9, "x"), else
/// the text as a string.
pub fn body_value(v: &str) -> serde_json::Value {
    serde_json::from_str(v).unwrap_or_else(|_| serde_json::Value::String(v.to_string()))
}

/// A comma-separated list of numbers (`--rates 1,2,4`).
pub fn numbers<T: std::str::FromStr>(flag: &str, text: &str) -> Result<Vec<T>, BenchError> {
    text.split(',')
        .map(|x| {
            x.trim()
                .parse::<T>()
                .map_err(|_| BenchError::usage(format!("{flag}: `{x}` is not a number")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_trim_and_refuse_what_is_not_a_pair() {
        assert_eq!(
            pair("--var", " quant = int8 ").unwrap(),
            ("quant".into(), "int8".into())
        );
        let e = pair("--var", "quant").unwrap_err().to_string();
        assert!(e.contains("--var `quant`: write it as KEY=VALUE"), "{e}");
        assert!(pair("--opt", "=3")
            .unwrap_err()
            .to_string()
            .contains("empty"));
        let dup = unique("--var", &["a=1".into(), "a=2".into()]).unwrap_err();
        assert!(dup.to_string().contains("--var a is given twice"));
        assert_eq!(list("--base", "a=1,,b=2").unwrap().len(), 2);
        assert_eq!(body_value("false"), serde_json::json!(false));
        assert_eq!(body_value("abc"), serde_json::json!("abc"));
        assert_eq!(numbers::<f64>("--rates", "1, 2.5").unwrap(), vec![1.0, 2.5]);
        assert!(numbers::<u32>("--concurrencies", "1,x").is_err());
    }
}
