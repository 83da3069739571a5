//! A parser for the Prometheus text exposition format (0.0.4), as vLLM, SGLang and
//! llama-server serve it.
//!
//! Handles `# HELP` / `# TYPE`, samples with or without labels and timestamps, label values
//! with `\\`, `\"` and `\n` escapes, `+Inf` / `-Inf` / `NaN`, and metric names containing `:`
//! (vLLM's `vllm:` prefix). Samples named `<family>_total`, `_bucket`, `_sum`, `_count` or
//! `_created` are attached to the family their `# TYPE` line declared. Written here because the
//! `prometheus-parse` crate's name pattern (`\w+`) rejects the colon that every vLLM metric has.

use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricType {
    Counter,
    Gauge,
    Histogram,
    Summary,
    Untyped,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The sample's own name (`vllm:num_preemptions_total`, `…_bucket`).
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    pub name: String,
    pub kind: MetricType,
    pub help: String,
    pub samples: Vec<Sample>,
}

/// A parsed scrape, by family name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scrape {
    pub families: BTreeMap<String, Family>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

fn parse_value(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ => s.parse().ok(),
    }
}

/// Splits `name{labels} value [ts]` into its parts.
fn sample(line: &str) -> Result<Sample, String> {
    let mut chars = line.char_indices().peekable();
    match chars.peek() {
        Some((_, c)) if is_name_start(*c) => {}
        _ => return Err("a sample must start with a metric name".into()),
    }
    let end = line.find(|c: char| !is_name_char(c)).unwrap_or(line.len());
    let name = line[..end].to_string();
    let mut rest = &line[end..];
    let mut labels = BTreeMap::new();
    if let Some(r) = rest.strip_prefix('{') {
        let mut r = r;
        loop {
            r = r.trim_start_matches([' ', ',']);
            if let Some(after) = r.strip_prefix('}') {
                rest = after;
                break;
            }
            let eq = r.find('=').ok_or("a label needs `=`")?;
            let key = r[..eq].trim().to_string();
            if key.is_empty() || !key.chars().all(is_name_char) {
                return Err(format!("bad label name `{key}`"));
            }
            let v = r[eq + 1..]
                .trim_start()
                .strip_prefix('"')
                .ok_or("a label value must be quoted")?;
            let mut value = String::new();
            let mut it = v.char_indices();
            let close = loop {
                match it.next() {
                    Some((i, '"')) => break i,
                    Some((_, '\\')) => match it.next() {
                        Some((_, 'n')) => value.push('\n'),
                        Some((_, c)) => value.push(c),
                        None => return Err("unterminated escape in a label value".into()),
                    },
                    Some((_, c)) => value.push(c),
                    None => return Err("unterminated label value".into()),
                }
            };
            labels.insert(key, value);
            r = &v[close + 1..];
        }
    }
    let mut parts = rest.split_whitespace();
    let v = parts.next().ok_or("a sample needs a value")?;
    let value = parse_value(v).ok_or_else(|| format!("`{v}` is not a number"))?;
    Ok(Sample {
        name,
        labels,
        value,
    })
}

pub fn parse(text: &str) -> Result<Scrape, ParseError> {
    let mut scrape = Scrape::default();
    let mut kinds: BTreeMap<String, MetricType> = BTreeMap::new();
    for (i, raw) in text.lines().enumerate() {
        let err = |message: String| ParseError {
            line: i + 1,
            message,
        };
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(c) = line.strip_prefix('#') {
            let c = c.trim_start();
            let mut words = c.splitn(3, char::is_whitespace);
            match (words.next(), words.next(), words.next()) {
                (Some("TYPE"), Some(name), Some(kind)) => {
                    let kind = match kind.trim() {
                        "counter" => MetricType::Counter,
                        "gauge" => MetricType::Gauge,
                        "histogram" => MetricType::Histogram,
                        "summary" => MetricType::Summary,
                        "untyped" | "unknown" => MetricType::Untyped,
                        other => return Err(err(format!("unknown metric type `{other}`"))),
                    };
                    kinds.insert(name.to_string(), kind);
                    let f = scrape
                        .families
                        .entry(name.to_string())
                        .or_insert_with(|| Family {
                            name: name.to_string(),
                            kind,
                            help: String::new(),
                            samples: vec![],
                        });
                    f.kind = kind;
                }
                (Some("HELP"), Some(name), help) => {
                    let f = scrape
                        .families
                        .entry(name.to_string())
                        .or_insert_with(|| Family {
                            name: name.to_string(),
                            kind: MetricType::Untyped,
                            help: String::new(),
                            samples: vec![],
                        });
                    f.help = help.unwrap_or("").to_string();
                }
                _ => {} // other comments
            }
            continue;
        }
        let s = sample(line).map_err(err)?;
        let family = ["_total", "_bucket", "_sum", "_count", "_created"]
            .iter()
            .find_map(|suf| {
                s.name
                    .strip_suffix(suf)
                    .filter(|base| kinds.contains_key(*base))
                    .map(str::to_string)
            })
            .unwrap_or_else(|| s.name.clone());
        let kind = kinds.get(&family).copied().unwrap_or(MetricType::Untyped);
        scrape
            .families
            .entry(family.clone())
            .or_insert_with(|| Family {
                name: family,
                kind,
                help: String::new(),
                samples: vec![],
            })
            .samples
            .push(s);
    }
    Ok(scrape)
}

/// A histogram family summed over its label sets.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    /// (upper bound, cumulative count), ascending.
    pub buckets: Vec<(f64, f64)>,
    pub sum: f64,
    pub count: f64,
}

impl Scrape {
    /// Sum of a counter's or gauge's samples over all label sets (`_created` excluded);
    /// `None` for histograms and summaries (see [`Scrape::histogram`]).
    pub fn value(&self, family: &str) -> Option<f64> {
        let f = self.families.get(family)?;
        if matches!(f.kind, MetricType::Histogram | MetricType::Summary) {
            return None;
        }
        let vals: Vec<f64> = f
            .samples
            .iter()
            .filter(|s| !s.name.ends_with("_created"))
            .map(|s| s.value)
            .collect();
        (!vals.is_empty()).then(|| vals.iter().sum())
    }

    /// Sum of a gauge's or counter's samples whose label `key` is `value`.
    pub fn value_where(&self, family: &str, key: &str, value: &str) -> Option<f64> {
        let f = self.families.get(family)?;
        let vals: Vec<f64> = f
            .samples
            .iter()
            .filter(|s| !s.name.ends_with("_created"))
            .filter(|s| s.labels.get(key).is_some_and(|v| v == value))
            .map(|s| s.value)
            .collect();
        (!vals.is_empty()).then(|| vals.iter().sum())
    }

    pub fn histogram(&self, family: &str) -> Option<Histogram> {
        let f = self.families.get(family)?;
        let mut buckets: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
        let (mut sum, mut count) = (0.0, 0.0);
        for s in &f.samples {
            if s.name.ends_with("_bucket") {
                let le = s.labels.get("le").and_then(|v| parse_value(v))?;
                // Order floats by their bit pattern (all bounds are ≥ 0 or +Inf).
                buckets.entry(le.to_bits()).or_insert((le, 0.0)).1 += s.value;
            } else if s.name.ends_with("_sum") {
                sum += s.value;
            } else if s.name.ends_with("_count") {
                count += s.value;
            }
        }
        let mut b: Vec<(f64, f64)> = buckets.into_values().collect();
        b.sort_by(|x, y| x.0.total_cmp(&y.0));
        Some(Histogram {
            buckets: b,
            sum,
            count,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"# HELP vllm:num_preemptions Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions counter
vllm:num_preemptions_total{engine="0",model_name="m"} 3
vllm:num_preemptions_total{engine="1",model_name="m"} 4
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{model_name="a \"quoted\" \\ name\n"} 0.25 1700000000000
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 2
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 5
vllm:time_to_first_token_seconds_sum{model_name="m"} 1.5
vllm:time_to_first_token_seconds_count{model_name="m"} 5
llamacpp:prompt_tokens_total 12
"#;

    #[test]
    fn parses_vllm_style_families() {
        let s = parse(TEXT).unwrap();
        assert_eq!(s.value("vllm:num_preemptions"), Some(7.0));
        assert_eq!(s.families["vllm:num_preemptions"].kind, MetricType::Counter);
        let g = &s.families["vllm:kv_cache_usage_perc"].samples[0];
        assert_eq!(g.labels["model_name"], "a \"quoted\" \\ name\n");
        assert_eq!(g.value, 0.25);
        let h = s.histogram("vllm:time_to_first_token_seconds").unwrap();
        assert_eq!(h.buckets, vec![(0.1, 2.0), (f64::INFINITY, 5.0)]);
        assert_eq!((h.sum, h.count), (1.5, 5.0));
        assert_eq!(
            s.value("llamacpp:prompt_tokens_total"),
            Some(12.0),
            "untyped samples keep their name"
        );
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse("ok 1\nbad{x=1} 2\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(parse("m{a=\"x\"} notanumber").is_err());
        assert!(parse("# TYPE m sideways").is_err());
    }
}
