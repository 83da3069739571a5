//! The top-level checks: request parameters, `[sim]`, `[gate]`, `[server_metrics]`, SLOs,
//! and the assembly of the typed scenario.

use super::raw::{RawRequest, RawScenario, RawSlo};
use super::Ctx;
use crate::config::values::{check_endpoint, in_range, in_range_u64, limits};
use crate::error::ScenarioError;
use crate::model::scenario::*;
use std::path::Path;
use toml::Spanned;

pub(super) fn build(ctx: &Ctx, raw: RawScenario) -> Result<Scenario, ScenarioError> {
    if raw.name.get_ref().trim().is_empty() {
        return Err(ctx.at(raw.name.span(), "name", "must not be empty"));
    }
    check_name(raw.name.get_ref()).map_err(|m| ctx.at(raw.name.span(), "name", m))?;
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
    let (workload, dataset, trace) =
        super::workload::workload(ctx, raw.workload, &request, base_dir)?;
    let time_scale = match &workload {
        Workload::Trace { time_scale, .. } => *time_scale,
        _ => 1.0,
    };
    let load = super::load::load(
        ctx,
        raw.load,
        trace.as_deref().map(|t| (t, time_scale)),
        workload.is_conversation(),
    )?;
    if workload.is_conversation() && !raw.api.takes_messages() {
        return Err(ctx.at(
            0..0,
            "api",
            "a conversation workload sends chat history: it needs api = \"chat\"",
        ));
    }
    let documents = request.extra.get("documents");
    let listed = documents
        .and_then(|d| d.as_array())
        .is_some_and(|d| !d.is_empty() && d.iter().all(|x| x.is_string()));
    if raw.api == Api::Rerank && !listed {
        return Err(ctx.at(
            0..0,
            "request.extra.documents",
            "api = \"rerank\" ranks documents against the prompt, and has none: list them under [request.extra], e.g. documents = [\"first passage\", \"second passage\"]",
        ));
    }
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
        crate::config::thresholds::parse_threshold(&k, v.get_ref())
            .map_err(|m| ctx.at(v.span(), &format!("gate.{k}"), m))?;
        gate.push((k, v.into_inner()));
    }
    let mut server_metrics = ServerMetricsCfg::default();
    if let Some(sm) = raw.server_metrics {
        if let Some(u) = &sm.url {
            check_endpoint(u.get_ref()).map_err(|m| ctx.at(u.span(), "server_metrics.url", m))?;
        }
        server_metrics.url = sm.url.map(Spanned::into_inner);
        if let Some(u) = &sm.gpu_url {
            check_endpoint(u.get_ref())
                .map_err(|m| ctx.at(u.span(), "server_metrics.gpu_url", m))?;
        }
        server_metrics.gpu_url = sm.gpu_url.map(Spanned::into_inner);
        server_metrics.interval_s =
            positive_secs(ctx, &sm.interval_s, "server_metrics.interval_s", 2.0)?;
        server_metrics.enabled = sm.enabled.unwrap_or(true);
    }
    let (quality, quality_set) = match raw.quality {
        Some(q) => {
            let (spec, set) = quality(ctx, q, base_dir)?;
            (Some(spec), Some(std::sync::Arc::new(set)))
        }
        None => (None, None),
    };
    Ok(Scenario {
        sim,
        gate,
        quality,
        quality_set,
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
        trace,
    })
}

/// `[quality]`: the set loaded (a file relative to the scenario, or `builtin`).
fn quality(
    ctx: &Ctx,
    q: super::raw::RawQuality,
    base_dir: &Path,
) -> Result<(QualitySpec, crate::model::quality::QualitySet), ScenarioError> {
    use crate::config::quality::{builtin, load, Format};
    let format = match &q.format {
        Some(f) => Some(Format::parse(f.get_ref()).ok_or_else(|| {
            ctx.at(
                f.span(),
                "quality.format",
                "is jsonl, mmlu or gsm8k (or leave it out: it is told from the file)",
            )
        })?),
        None => None,
    };
    let int = |v: &Spanned<u32>, field: &str, hi: u64| {
        in_range_u64(u64::from(*v.get_ref()), 1, hi)
            .map(|_| *v.get_ref())
            .map_err(|m| ctx.at(v.span(), field, m))
    };
    let max_tokens = match &q.max_tokens {
        Some(m) => Some(int(m, "quality.max_tokens", 100_000)?),
        None => None,
    };
    let items = match &q.items {
        Some(n) => {
            Some(int(n, "quality.items", crate::config::quality::MAX_ITEMS as u64)? as usize)
        }
        None => None,
    };
    let set = match q.set.get_ref().as_str() {
        "builtin" => {
            if let Some(f) = &q.format {
                return Err(ctx.at(
                    f.span(),
                    "quality.format",
                    "the builtin set has its own format; leave it out",
                ));
            }
            builtin(max_tokens, items)
        }
        "" => return Err(ctx.at(q.set.span(), "quality.set", "name a file or `builtin`")),
        file => load(&base_dir.join(file), format, max_tokens, items)?,
    };
    let spec = QualitySpec {
        set: q.set.into_inner(),
        format: q.format.map(Spanned::into_inner),
        max_tokens: set.max_tokens,
        items: items.map(|n| n as u32),
    };
    Ok((spec, set))
}

/// A scenario's name becomes a directory under `results/` and `baselines/`, so it must be one
/// plain path component: letters, digits, `.`, `_`, `-`, starting with a letter or digit (no
/// `..`, no `/`, no absolute path), at most 100 characters.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = name.len() <= 100
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a plain name: it names directories under results/ and baselines/, so use letters, digits, '.', '_' and '-' (starting with a letter or digit, at most 100 characters)"
        ))
    }
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

pub(super) fn positive_secs(
    ctx: &Ctx,
    v: &Option<Spanned<f64>>,
    field: &str,
    default: f64,
) -> Result<f64, ScenarioError> {
    match v {
        None => Ok(default),
        Some(s) => in_range(*s.get_ref(), limits::TIMEOUT_S, " s")
            .map(|_| *s.get_ref())
            .map_err(|m| ctx.at(s.span(), field, m)),
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

/// A top-level request-body field as engines name them (`cache_prompt`, `top-k`).
fn is_field_name(n: &str) -> bool {
    let mut c = n.chars();
    n.len() <= 64
        && c.next()
            .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_' || x == '-')
}

fn request(ctx: &Ctx, r: RawRequest) -> Result<RequestParams, ScenarioError> {
    if let Some(m) = &r.max_tokens {
        in_range_u64(*m.get_ref() as u64, 1, limits::TOKENS_MAX as u64)
            .map_err(|e| ctx.at(m.span(), "request.max_tokens", e))?;
    }
    if let Some(t) = &r.temperature {
        in_range(*t.get_ref(), limits::TEMPERATURE, "")
            .map_err(|m| ctx.at(t.span(), "request.temperature", m))?;
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
                let why = if !is_field_name(n) {
                    Some(format!(
                        "`{n}` is not a field name: a request-body field is a letter or `_`, then letters, digits, `_` or `-` (at most 64)"
                    ))
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
        extra: match r.extra {
            Some(t) => {
                let span = t.span();
                extra_json(t.into_inner())
                    .map_err(|(key, m)| ctx.at(span, &format!("request.extra.{key}"), m))?
            }
            None => Default::default(),
        },
        body_vars,
    })
}

/// `[request.extra]` as the JSON merged into every request body; a float JSON cannot carry
/// (nan, ±inf) is an error naming its key, not a `null` sent unseen.
fn extra_json(
    t: toml::Table,
) -> Result<serde_json::Map<String, serde_json::Value>, (String, String)> {
    fn conv(key: &str, v: toml::Value) -> Result<serde_json::Value, (String, String)> {
        use serde_json::Value as J;
        Ok(match v {
            toml::Value::Float(f) => serde_json::Number::from_f64(f)
                .map(J::Number)
                .ok_or_else(|| {
                    (
                        key.to_string(),
                        format!("{f} is not a number a request body can carry (JSON has no nan or infinity)"),
                    )
                })?,
            toml::Value::Integer(i) => J::from(i),
            toml::Value::String(s) => J::String(s),
            toml::Value::Boolean(b) => J::Bool(b),
            toml::Value::Datetime(d) => J::String(d.to_string()),
            toml::Value::Array(a) => J::Array(
                a.into_iter()
                    .map(|x| conv(key, x))
                    .collect::<Result<_, _>>()?,
            ),
            toml::Value::Table(t) => J::Object(
                t.into_iter()
                    .map(|(k, x)| {
                        let j = conv(&format!("{key}.{k}"), x)?;
                        Ok::<_, (String, String)>((k, j))
                    })
                    .collect::<Result<_, _>>()?,
            ),
        })
    }
    t.into_iter()
        .map(|(k, v)| {
            let j = conv(&k, v)?;
            Ok((k, j))
        })
        .collect()
}

fn slo(ctx: &Ctx, s: RawSlo) -> Result<Slo, ScenarioError> {
    let one = |v: Option<Spanned<f64>>, name: &str| -> Result<Option<f64>, ScenarioError> {
        match v {
            None => Ok(None),
            Some(x) => in_range(*x.get_ref(), limits::SLO_MS, " ms")
                .map(|_| Some(*x.get_ref()))
                .map_err(|m| ctx.at(x.span(), &format!("slo.{name}"), m)),
        }
    };
    Ok(Slo {
        ttft_ms: one(s.ttft_ms, "ttft_ms")?,
        tpot_ms: one(s.tpot_ms, "tpot_ms")?,
        e2e_ms: one(s.e2e_ms, "e2e_ms")?,
    })
}
