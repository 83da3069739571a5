//! Stage two of scenario parsing: values and cross-field rules, with positions.
//!
//! serde errors carry a byte span (from `toml`) and a field path (from `serde_path_to_error`);
//! our own checks use the spans kept in [`super::raw`]. Both become
//! [`ScenarioError::Invalid`] with a 1-based line and column.

use super::raw::{RawLengths, RawLoad, RawRequest, RawScenario, RawSlo, RawWorkload};
use super::*;
use crate::error::{BenchError, ScenarioError};
use std::ops::Range;
use toml::Spanned;

/// Where errors point: the file's name and text.
struct Ctx<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Ctx<'_> {
    fn at(&self, span: Range<usize>, field: &str, message: impl Into<String>) -> ScenarioError {
        let (line, column) = line_col(self.text, span.start);
        ScenarioError::Invalid {
            path: self.path.to_path_buf(),
            line,
            column,
            field: (!field.is_empty()).then(|| field.to_string()),
            message: message.into(),
        }
    }
}

/// 1-based line and column (in characters) of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

pub(super) fn parse(text: &str, path: &Path) -> Result<Scenario, ScenarioError> {
    let ctx = Ctx { path, text };
    let de = toml::Deserializer::parse(text).map_err(|e| toml_error(&ctx, &e, String::new()))?;
    let raw: RawScenario = serde_path_to_error::deserialize(de).map_err(|e| {
        let field = e
            .path()
            .iter()
            .map(|s| s.to_string())
            .filter(|s| !s.starts_with("$__") && s != "?")
            .collect::<Vec<_>>()
            .join(".");
        toml_error(&ctx, e.inner(), field)
    })?;
    build(&ctx, raw)
}

fn toml_error(ctx: &Ctx, e: &toml::de::Error, field: String) -> ScenarioError {
    let span = e.span().unwrap_or(0..0);
    ctx.at(span, &field, e.message().trim().to_string())
}

fn build(ctx: &Ctx, raw: RawScenario) -> Result<Scenario, ScenarioError> {
    if raw.name.get_ref().trim().is_empty() {
        return Err(ctx.at(raw.name.span(), "name", "must not be empty"));
    }
    let base_dir = ctx.path.parent().unwrap_or(Path::new("."));
    let request = request(ctx, raw.request)?;
    let salt = match &raw.workload.get_ref().salt {
        Some(s) if raw.workload.get_ref().kind == WorkloadKind::Dataset => {
            return Err(ctx.at(
                s.span(),
                "workload.salt",
                "is not used by type = \"dataset\" (dataset prompts are sent as written)",
            ))
        }
        Some(s) => *s.get_ref(),
        None => Salt::PerRun,
    };
    let (workload, dataset) = workload(ctx, raw.workload, &request, base_dir)?;
    let load = load(ctx, raw.load)?;
    let slo = slo(ctx, raw.slo)?;
    if let (Api::Completions, Some(d)) = (raw.api, &dataset) {
        if let Some(line) = d.first_messages_line() {
            return Err(ScenarioError::Invalid {
                path: d.path.clone(),
                line,
                column: 1,
                field: None,
                message:
                    "a `messages` line needs api = \"chat\" (the completions API takes `prompt`)"
                        .into(),
            });
        }
    }
    if let Some(ep) = &raw.endpoint {
        check_endpoint(ep.get_ref()).map_err(|m| ctx.at(ep.span(), "endpoint", m))?;
    }
    let sim = sim_table(ctx, raw.sim)?;
    let mut gate = Vec::new();
    for (k, v) in raw.gate.unwrap_or_default() {
        crate::gate::parse_threshold(&k, v.get_ref())
            .map_err(|m| ctx.at(v.span(), &format!("gate.{k}"), m))?;
        gate.push((k, v.into_inner()));
    }
    let mut server_metrics = ServerMetricsCfg::default();
    if let Some(sm) = raw.server_metrics {
        if let Some(u) = &sm.url {
            check_endpoint(u.get_ref()).map_err(|m| ctx.at(u.span(), "server_metrics.url", m))?;
        }
        server_metrics.url = sm.url.map(Spanned::into_inner);
        server_metrics.interval_s =
            positive_secs(ctx, &sm.interval_s, "server_metrics.interval_s", 2.0)?;
        server_metrics.enabled = sm.enabled.unwrap_or(true);
    }
    Ok(Scenario {
        sim,
        gate,
        server_metrics,
        name: raw.name.into_inner(),
        description: raw.description,
        api: raw.api,
        model: raw.model,
        endpoint: raw.endpoint.map(Spanned::into_inner),
        api_key_env: raw.api_key_env,
        seed: raw.seed.unwrap_or(42),
        request,
        workload,
        salt,
        load,
        slo,
        source: ctx.path.to_path_buf(),
        dataset,
    })
}

/// Checks `[sim]` against the simulator's options now, so a typo fails at load time.
fn sim_table(
    ctx: &Ctx,
    t: Option<std::collections::BTreeMap<String, Spanned<toml::Value>>>,
) -> Result<Vec<(String, String)>, ScenarioError> {
    let Some(t) = t else { return Ok(Vec::new()) };
    let mut entries: Vec<(String, Spanned<toml::Value>)> = t.into_iter().collect();
    // The profile resets every other option, so it goes first.
    entries.sort_by_key(|(k, _)| k != "profile");
    let mut opts =
        crate::sim::SimOptions::profile("small-gpu").map_err(|m| ctx.at(0..0, "sim", m))?;
    let mut out = Vec::new();
    for (k, v) in entries {
        let text = match v.get_ref() {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => if *b { "on" } else { "off" }.to_string(),
            _ => {
                return Err(ctx.at(
                    v.span(),
                    &format!("sim.{k}"),
                    "must be a string, number or boolean",
                ))
            }
        };
        opts.set(&k, &text)
            .map_err(|m| ctx.at(v.span(), &format!("sim.{k}"), m))?;
        out.push((k, text));
    }
    Ok(out)
}

fn positive_secs(
    ctx: &Ctx,
    v: &Option<Spanned<f64>>,
    field: &str,
    default: f64,
) -> Result<f64, ScenarioError> {
    match v {
        None => Ok(default),
        Some(s) if s.get_ref().is_finite() && *s.get_ref() > 0.0 => Ok(*s.get_ref()),
        Some(s) => Err(ctx.at(
            s.span(),
            field,
            format!("must be a positive number of seconds (got {})", s.get_ref()),
        )),
    }
}

/// Request-body fields that define the traffic (what is asked, how much, streamed how); they
/// cannot be `request.body_vars`, or a "one-variable change" could change the workload.
const TRAFFIC_FIELDS: &[&str] = &[
    "model",
    "messages",
    "prompt",
    "stream",
    "stream_options",
    "max_tokens",
    "max_completion_tokens",
    "min_tokens",
    "ignore_eos",
    "n",
];

fn request(ctx: &Ctx, r: RawRequest) -> Result<RequestParams, ScenarioError> {
    if let Some(m) = &r.max_tokens {
        if *m.get_ref() == 0 {
            return Err(ctx.at(m.span(), "request.max_tokens", "must be at least 1"));
        }
    }
    if let Some(t) = &r.temperature {
        let t_val = *t.get_ref();
        if !(t_val.is_finite() && t_val >= 0.0) {
            return Err(ctx.at(
                t.span(),
                "request.temperature",
                format!("must be ≥ 0 (got {t_val})"),
            ));
        }
    }
    let timeout_s = positive_secs(ctx, &r.timeout_s, "request.timeout_s", 600.0)?;
    let first_token_timeout_s = positive_secs(
        ctx,
        &r.first_token_timeout_s,
        "request.first_token_timeout_s",
        timeout_s,
    )?;
    if first_token_timeout_s > timeout_s {
        let span = r
            .first_token_timeout_s
            .as_ref()
            .map(|s| s.span())
            .unwrap_or(0..0);
        return Err(ctx.at(
            span,
            "request.first_token_timeout_s",
            format!("is longer than request.timeout_s ({timeout_s} s)"),
        ));
    }
    let body_vars = match r.body_vars {
        None => Vec::new(),
        Some(b) => {
            let span = b.span();
            let names = b.into_inner();
            for (i, n) in names.iter().enumerate() {
                let why = if n.trim().is_empty() || n.contains('=') {
                    Some(format!("`{n}` is not a field name"))
                } else if TRAFFIC_FIELDS.contains(&n.as_str()) {
                    Some(format!(
                        "`{n}` shapes the traffic itself and cannot be a var; change the scenario instead"
                    ))
                } else if names[..i].contains(n) {
                    Some(format!("`{n}` is listed twice"))
                } else {
                    None
                };
                if let Some(why) = why {
                    return Err(ctx.at(span, "request.body_vars", why));
                }
            }
            names
        }
    };
    Ok(RequestParams {
        max_tokens: r.max_tokens.map(Spanned::into_inner),
        temperature: r.temperature.map(Spanned::into_inner),
        ignore_eos: r.ignore_eos.unwrap_or(true),
        timeout_s,
        first_token_timeout_s,
        extra: r.extra.unwrap_or_default(),
        body_vars,
    })
}

fn workload(
    ctx: &Ctx,
    w: Spanned<RawWorkload>,
    request: &RequestParams,
    base_dir: &Path,
) -> Result<(Workload, Option<Arc<Dataset>>), ScenarioError> {
    let span = w.span();
    let w = w.into_inner();
    let kind = w.kind;
    let kind_name = serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    // Fields that belong to other workload types are errors, not silently ignored.
    let allowed: &[&str] = match kind {
        WorkloadKind::Synthetic => &["input_tokens", "output_tokens"],
        WorkloadKind::SharedPrefix => &[
            "prefixes",
            "prefix_tokens",
            "suffix_tokens",
            "output_tokens",
        ],
        WorkloadKind::LongShortMix => &["long_fraction", "short", "long"],
        WorkloadKind::Dataset => &["path", "order", "output_tokens"],
    };
    let present: [(&str, Option<Range<usize>>); 10] = [
        ("input_tokens", w.input_tokens.as_ref().map(|s| s.span())),
        ("output_tokens", w.output_tokens.as_ref().map(|s| s.span())),
        ("prefixes", w.prefixes.as_ref().map(|s| s.span())),
        ("prefix_tokens", w.prefix_tokens.as_ref().map(|s| s.span())),
        ("suffix_tokens", w.suffix_tokens.as_ref().map(|s| s.span())),
        ("long_fraction", w.long_fraction.as_ref().map(|s| s.span())),
        ("short", w.short.as_ref().map(|s| s.span())),
        ("long", w.long.as_ref().map(|s| s.span())),
        ("path", w.path.as_ref().map(|s| s.span())),
        ("order", w.order.as_ref().map(|s| s.span())),
    ];
    for (name, sp) in &present {
        if let Some(sp) = sp {
            if !allowed.contains(name) {
                return Err(ctx.at(
                    sp.clone(),
                    &format!("workload.{name}"),
                    format!(
                        "is not used by type = \"{kind_name}\" (it takes {})",
                        allowed.join(", ")
                    ),
                ));
            }
        }
    }
    let missing = |name: &str| {
        ctx.at(
            span.clone(),
            &format!("workload.{name}"),
            format!("is required for type = \"{kind_name}\""),
        )
    };
    // Output length: the workload's own distribution, else request.max_tokens.
    let output = |o: Option<Spanned<LengthDist>>| -> Result<LengthDist, ScenarioError> {
        match (o, request.max_tokens) {
            (Some(d), _) => Ok(d.into_inner()),
            (None, Some(m)) => Ok(LengthDist::Fixed { value: m }),
            (None, None) => Err(ctx.at(
                span.clone(),
                "workload.output_tokens",
                "is required unless request.max_tokens is set",
            )),
        }
    };
    let w_out = match kind {
        WorkloadKind::Synthetic => Workload::Synthetic {
            input_tokens: w
                .input_tokens
                .ok_or_else(|| missing("input_tokens"))?
                .into_inner(),
            output_tokens: output(w.output_tokens)?,
        },
        WorkloadKind::SharedPrefix => {
            let prefixes = w.prefixes.ok_or_else(|| missing("prefixes"))?;
            if *prefixes.get_ref() == 0 {
                return Err(ctx.at(prefixes.span(), "workload.prefixes", "must be at least 1"));
            }
            let prefix_tokens = w.prefix_tokens.ok_or_else(|| missing("prefix_tokens"))?;
            if *prefix_tokens.get_ref() == 0 {
                return Err(ctx.at(
                    prefix_tokens.span(),
                    "workload.prefix_tokens",
                    "must be at least 1",
                ));
            }
            Workload::SharedPrefix {
                prefixes: prefixes.into_inner(),
                prefix_tokens: prefix_tokens.into_inner(),
                suffix_tokens: w
                    .suffix_tokens
                    .ok_or_else(|| missing("suffix_tokens"))?
                    .into_inner(),
                output_tokens: output(w.output_tokens)?,
            }
        }
        WorkloadKind::LongShortMix => {
            let f = w.long_fraction.ok_or_else(|| missing("long_fraction"))?;
            let fv = *f.get_ref();
            if !(0.0..=1.0).contains(&fv) {
                return Err(ctx.at(
                    f.span(),
                    "workload.long_fraction",
                    format!("must be between 0 and 1 (got {fv})"),
                ));
            }
            let lengths = |l: RawLengths| Lengths {
                input_tokens: l.input_tokens,
                output_tokens: l.output_tokens,
            };
            Workload::LongShortMix {
                long_fraction: fv,
                short: lengths(w.short.ok_or_else(|| missing("short"))?.into_inner()),
                long: lengths(w.long.ok_or_else(|| missing("long"))?.into_inner()),
            }
        }
        WorkloadKind::Dataset => {
            let p = w.path.ok_or_else(|| missing("path"))?;
            let resolved = base_dir.join(p.get_ref());
            let dataset = Dataset::load(&resolved).map_err(|e| match e {
                ScenarioError::Read { source, .. } => ctx.at(
                    p.span(),
                    "workload.path",
                    format!("cannot read {}: {source}", resolved.display()),
                ),
                other => other,
            })?;
            let output_tokens = match (w.output_tokens, request.max_tokens) {
                (Some(d), _) => d.into_inner(),
                (None, Some(m)) => LengthDist::Fixed { value: m },
                (None, None) if dataset.all_have_output_tokens() => LengthDist::Fixed { value: 1 },
                (None, None) => {
                    return Err(ctx.at(span, "workload.output_tokens", "is required: some dataset lines have no output_tokens and request.max_tokens is not set"))
                }
            };
            let sha256 = dataset.sha256.clone();
            return Ok((
                Workload::Dataset {
                    path: p.into_inner(),
                    sha256,
                    order: w.order.map(Spanned::into_inner).unwrap_or_default(),
                    output_tokens,
                },
                Some(Arc::new(dataset)),
            ));
        }
    };
    Ok((w_out, None))
}

fn load(ctx: &Ctx, l: Spanned<RawLoad>) -> Result<LoadSpec, ScenarioError> {
    let span = l.span();
    let l = l.into_inner();
    let mode = match (&l.concurrency, &l.rate) {
        (Some(c), Some(_)) => {
            return Err(ctx.at(c.span(), "load.concurrency", "set either `concurrency` (closed loop) or `rate` (open loop), not both; use `max_concurrency` to cap an open loop"))
        }
        (None, None) => return Err(ctx.at(span, "load", "needs `concurrency = N` (closed loop) or `rate = R` requests/s (open loop)")),
        (Some(c), None) => {
            for (name, sp) in [
                ("arrival", l.arrival.as_ref().map(|s| s.span())),
                ("burstiness", l.burstiness.as_ref().map(|s| s.span())),
                ("max_concurrency", l.max_concurrency.as_ref().map(|s| s.span())),
            ] {
                if let Some(sp) = sp {
                    return Err(ctx.at(sp, &format!("load.{name}"), "applies only to open-loop load (`rate`)"));
                }
            }
            check_concurrency(*c.get_ref()).map_err(|m| ctx.at(c.span(), "load.concurrency", m))?;
            LoadMode::Closed { concurrency: *c.get_ref() }
        }
        (None, Some(r)) => {
            check_rate(*r.get_ref()).map_err(|m| ctx.at(r.span(), "load.rate", m))?;
            let arrival = l.arrival.as_ref().map(|a| *a.get_ref()).unwrap_or_default();
            let burstiness = match &l.burstiness {
                None => 1.0,
                Some(b) => {
                    if arrival != Arrival::Gamma {
                        return Err(ctx.at(b.span(), "load.burstiness", "applies only with arrival = \"gamma\""));
                    }
                    let v = *b.get_ref();
                    if !(v.is_finite() && v > 0.0) {
                        return Err(ctx.at(b.span(), "load.burstiness", format!("must be > 0 (got {v})")));
                    }
                    v
                }
            };
            if let Some(m) = &l.max_concurrency {
                check_concurrency(*m.get_ref()).map_err(|msg| ctx.at(m.span(), "load.max_concurrency", msg))?;
            }
            LoadMode::Open {
                rate_rps: *r.get_ref(),
                arrival,
                burstiness,
                max_concurrency: l.max_concurrency.as_ref().map(|m| *m.get_ref()),
            }
        }
    };
    let duration_s = match &l.duration {
        None => None,
        Some(d) => {
            Some(parse_duration(d.get_ref()).map_err(|m| ctx.at(d.span(), "load.duration", m))?)
        }
    };
    if let Some(r) = &l.requests {
        if *r.get_ref() == 0 {
            return Err(ctx.at(r.span(), "load.requests", "must be at least 1"));
        }
    }
    let requests = l.requests.map(Spanned::into_inner);
    if requests.is_none() && duration_s.is_none() {
        return Err(ctx.at(
            span,
            "load",
            "needs `requests = N` and/or `duration = \"60s\"` to bound the run",
        ));
    }
    Ok(LoadSpec {
        mode,
        requests,
        duration_s,
        warmup: l.warmup.unwrap_or(0),
    })
}

fn slo(ctx: &Ctx, s: RawSlo) -> Result<Slo, ScenarioError> {
    let one = |v: Option<Spanned<f64>>, name: &str| -> Result<Option<f64>, ScenarioError> {
        match v {
            None => Ok(None),
            Some(x) if x.get_ref().is_finite() && *x.get_ref() > 0.0 => Ok(Some(x.into_inner())),
            Some(x) => Err(ctx.at(
                x.span(),
                &format!("slo.{name}"),
                format!(
                    "must be a positive number of milliseconds (got {})",
                    x.get_ref()
                ),
            )),
        }
    };
    Ok(Slo {
        ttft_ms: one(s.ttft_ms, "ttft_ms")?,
        tpot_ms: one(s.tpot_ms, "tpot_ms")?,
        e2e_ms: one(s.e2e_ms, "e2e_ms")?,
    })
}

fn check_rate(r: f64) -> Result<(), String> {
    if r.is_finite() && r > 0.0 {
        Ok(())
    } else {
        Err(format!(
            "must be a positive number of requests per second (got {r})"
        ))
    }
}

fn check_concurrency(c: u32) -> Result<(), String> {
    if c == 0 {
        Err("must be at least 1".into())
    } else {
        Ok(())
    }
}

fn check_endpoint(e: &str) -> Result<(), String> {
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

/// Command-line overrides of scenario fields; each is checked like the field it replaces, and
/// its errors name the flag.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub endpoint: Option<String>,
    pub model: Option<String>,
    pub api_key_env: Option<String>,
    pub seed: Option<u64>,
    pub requests: Option<u64>,
    pub duration: Option<String>,
    pub rate: Option<f64>,
    pub concurrency: Option<u32>,
    pub max_concurrency: Option<u32>,
    pub warmup: Option<u64>,
}

impl Overrides {
    pub fn apply(&self, s: &mut Scenario) -> Result<(), BenchError> {
        let flag = |f: &str, m: String| BenchError::usage(format!("{f}: {m}"));
        if let Some(e) = &self.endpoint {
            check_endpoint(e).map_err(|m| flag("--endpoint", m))?;
            s.endpoint = Some(e.clone());
        }
        if let Some(m) = &self.model {
            s.model = Some(m.clone());
        }
        if let Some(k) = &self.api_key_env {
            s.api_key_env = Some(k.clone());
        }
        if let Some(seed) = self.seed {
            s.seed = seed;
        }
        if let Some(r) = self.requests {
            if r == 0 {
                return Err(flag("--requests", "must be at least 1".into()));
            }
            s.load.requests = Some(r);
        }
        if let Some(d) = &self.duration {
            s.load.duration_s = Some(parse_duration(d).map_err(|m| flag("--duration", m))?);
        }
        if let Some(w) = self.warmup {
            s.load.warmup = w;
        }
        if self.rate.is_some() && self.concurrency.is_some() {
            return Err(BenchError::usage(
                "--rate and --concurrency are exclusive: pick open loop or closed loop",
            ));
        }
        if let Some(c) = self.concurrency {
            check_concurrency(c).map_err(|m| flag("--concurrency", m))?;
            s.load.mode = LoadMode::Closed { concurrency: c };
        }
        if let Some(r) = self.rate {
            check_rate(r).map_err(|m| flag("--rate", m))?;
            s.load.mode = match &s.load.mode {
                LoadMode::Open {
                    arrival,
                    burstiness,
                    max_concurrency,
                    ..
                } => LoadMode::Open {
                    rate_rps: r,
                    arrival: *arrival,
                    burstiness: *burstiness,
                    max_concurrency: *max_concurrency,
                },
                LoadMode::Closed { .. } => LoadMode::Open {
                    rate_rps: r,
                    arrival: Arrival::Poisson,
                    burstiness: 1.0,
                    max_concurrency: None,
                },
            };
        }
        if let Some(m) = self.max_concurrency {
            check_concurrency(m).map_err(|msg| flag("--max-concurrency", msg))?;
            match &mut s.load.mode {
                LoadMode::Open { max_concurrency, .. } => *max_concurrency = Some(m),
                LoadMode::Closed { .. } => {
                    return Err(BenchError::usage("--max-concurrency applies only to open-loop load (a scenario with `rate`, or --rate)"))
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
name = "t"
api = "completions"

[workload]
type = "synthetic"
input_tokens = { dist = "uniform", min = 10, max = 20 }
output_tokens = 8

[load]
rate = 5.0
arrival = "gamma"
burstiness = 0.5
requests = 10
"#;

    fn err(text: &str) -> String {
        Scenario::parse(text, Path::new("x.toml"))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn good_scenario_parses() {
        let s = Scenario::parse(GOOD, Path::new("x.toml")).unwrap();
        assert_eq!(s.api, Api::Completions);
        assert!(matches!(s.load.mode, LoadMode::Open { burstiness, .. } if burstiness == 0.5));
        assert_eq!(s.seed, 42);
        assert!(s.request.ignore_eos);
    }

    #[test]
    fn unknown_field_names_file_line_and_field() {
        let e = err(&GOOD.replace("requests = 10", "requests = 10\nreqests = 3"));
        assert!(
            e.starts_with("x.toml:15:1: field `load.reqests`: unknown field"),
            "{e}"
        );
        assert!(e.contains("reqests"), "{e}");
    }

    #[test]
    fn body_vars_must_be_plain_fields_outside_the_traffic() {
        let with = |list: &str| {
            GOOD.replace(
                "[workload]",
                &format!("[request]\nbody_vars = {list}\n\n[workload]"),
            )
        };
        let ok = Scenario::parse(&with(r#"["cache_prompt"]"#), Path::new("x.toml")).unwrap();
        assert_eq!(ok.request.body_vars, ["cache_prompt"]);
        let e = err(&with(r#"["max_tokens"]"#));
        assert!(
            e.starts_with(
                "x.toml:6:13: field `request.body_vars`: `max_tokens` shapes the traffic"
            ),
            "{e}"
        );
        assert!(err(&with(r#"["a", "a"]"#)).contains("listed twice"));
        assert!(err(&with(r#"[""]"#)).contains("not a field name"));
    }

    #[test]
    fn bad_value_points_at_the_value() {
        let e = err(&GOOD.replace("rate = 5.0", "rate = -1.0"));
        assert!(
            e.starts_with("x.toml:11:8: field `load.rate`: must be a positive"),
            "{e}"
        );
        let e = err(&GOOD.replace("min = 10, max = 20", "min = 10, max = 2"));
        assert!(
            e.contains(":7:") && e.contains("input_tokens") && e.contains("below min"),
            "{e}"
        );
    }

    #[test]
    fn cross_field_rules() {
        let e = err(&GOOD.replace("rate = 5.0", "rate = 5.0\nconcurrency = 3"));
        assert!(
            e.contains("load.concurrency") && e.contains("not both"),
            "{e}"
        );
        let e = err(&GOOD.replace("output_tokens = 8", "output_tokens = 8\nprefixes = 3"));
        assert!(
            e.contains("x.toml:9:12") && e.contains("workload.prefixes"),
            "{e}"
        );
        let e = err(&GOOD.replace("output_tokens = 8\n", ""));
        assert!(
            e.contains("workload.output_tokens") && e.contains("request.max_tokens"),
            "{e}"
        );
        let e = err(&GOOD.replace("arrival = \"gamma\"", "arrival = \"poisson\""));
        assert!(e.contains("load.burstiness"), "{e}");
        let e = err(&GOOD.replace("requests = 10", ""));
        assert!(e.contains("duration"), "{e}");
    }

    #[test]
    fn sim_table_is_checked_at_load_and_kept_out_of_the_hash() {
        let with = format!("{GOOD}\n[sim]\nprofile = \"h100-8b\"\nquant = \"int8\"\nspec = 3\n");
        let s = Scenario::parse(&with, Path::new("x.toml")).unwrap();
        assert_eq!(s.sim[0], ("profile".to_string(), "h100-8b".to_string()));
        assert!(s.sim.contains(&("spec".to_string(), "3".to_string())));
        let plain = Scenario::parse(GOOD, Path::new("x.toml")).unwrap();
        assert_eq!(s.traffic_hash(), plain.traffic_hash());
        let e = err(&format!("{GOOD}\n[sim]\nquant = \"int3\"\n"));
        assert!(
            e.contains("x.toml:17:9: field `sim.quant`") && e.contains("int4"),
            "{e}"
        );
    }

    #[test]
    fn hash_ignores_endpoint_but_not_load() {
        let a = Scenario::parse(GOOD, Path::new("x.toml")).unwrap();
        let mut b = a.clone();
        b.endpoint = Some("http://127.0.0.1:1/v1".into());
        assert_eq!(a.traffic_hash(), b.traffic_hash());
        b.load.requests = Some(11);
        assert_ne!(a.traffic_hash(), b.traffic_hash());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s").unwrap(), 90.0);
        assert_eq!(parse_duration("1m 30s").unwrap(), 90.0);
        assert_eq!(parse_duration("2.5").unwrap(), 2.5);
        assert!(parse_duration("soon").is_err());
    }
}
