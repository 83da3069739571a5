//! `[workload]`: which generator and its lengths; fields of another type are errors.

use super::raw::{RawLengths, RawWorkload};
use super::Ctx;
use crate::config::values::{in_range_u64, limits};
use crate::error::ScenarioError;
use crate::model::dataset::Dataset;
use crate::model::scenario::*;
use crate::model::trace::Trace;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use toml::Spanned;

/// The workload, with the dataset or trace file it names (loaded and checked).
pub(super) type Loaded = (Workload, Option<Arc<Dataset>>, Option<Arc<Trace>>);

pub(super) fn workload(
    ctx: &Ctx,
    w: Spanned<RawWorkload>,
    request: &RequestParams,
    base_dir: &Path,
) -> Result<Loaded, ScenarioError> {
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
        WorkloadKind::Dataset => &["path", "order", "format", "output_tokens"],
        WorkloadKind::Trace => &["path", "time_scale", "block_tokens", "columns", "max_rate"],
        WorkloadKind::Conversation => &[
            "turns",
            "user_tokens",
            "output_tokens",
            "think_time_ms",
            "system_tokens",
            "path",
            "format",
        ],
    };
    unused_fields(ctx, &w, allowed, &kind_name)?;
    let f = Fields {
        ctx,
        span: span.clone(),
        kind_name,
        request,
    };
    let missing = |name: &str| f.missing(name);
    let output = |o| f.output(o);
    let w_out = match kind {
        WorkloadKind::Conversation => return conversation(ctx, span, w, request, base_dir),
        WorkloadKind::Synthetic => Workload::Synthetic {
            input_tokens: w
                .input_tokens
                .ok_or_else(|| missing("input_tokens"))?
                .into_inner(),
            output_tokens: output(w.output_tokens)?,
        },
        WorkloadKind::SharedPrefix => {
            let prefixes = w.prefixes.ok_or_else(|| missing("prefixes"))?;
            in_range_u64(*prefixes.get_ref() as u64, 1, limits::PREFIXES_MAX as u64)
                .map_err(|m| ctx.at(prefixes.span(), "workload.prefixes", m))?;
            let prefix_tokens = w.prefix_tokens.ok_or_else(|| missing("prefix_tokens"))?;
            in_range_u64(
                *prefix_tokens.get_ref() as u64,
                1,
                limits::TOKENS_MAX as u64,
            )
            .map_err(|m| ctx.at(prefix_tokens.span(), "workload.prefix_tokens", m))?;
            // Every prefix's text is built before the run: bound all of it.
            let total = *prefixes.get_ref() as u64 * *prefix_tokens.get_ref() as u64;
            if total > limits::PREFIX_TOKENS_TOTAL_MAX {
                return Err(ctx.at(
                    prefixes.span(),
                    "workload.prefixes",
                    format!(
                        "{} prefixes of {} tokens are {total} tokens of shared text; at most {} fit in a plan",
                        prefixes.get_ref(),
                        prefix_tokens.get_ref(),
                        limits::PREFIX_TOKENS_TOTAL_MAX
                    ),
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
        WorkloadKind::Dataset => return dataset(&f, w, base_dir),
        WorkloadKind::Trace => return trace(&f, w, base_dir),
    };
    Ok((w_out, None, None))
}

/// What every workload type's fields are checked with: the error for a missing field and the
/// output length (the workload's own distribution, else `request.max_tokens`).
struct Fields<'a> {
    ctx: &'a Ctx<'a>,
    span: Range<usize>,
    kind_name: String,
    request: &'a RequestParams,
}

impl Fields<'_> {
    fn missing(&self, name: &str) -> ScenarioError {
        self.ctx.at(
            self.span.clone(),
            &format!("workload.{name}"),
            format!("is required for type = \"{}\"", self.kind_name),
        )
    }

    fn output(&self, o: Option<Spanned<LengthDist>>) -> Result<LengthDist, ScenarioError> {
        match (o, self.request.max_tokens) {
            (Some(d), _) => Ok(d.into_inner()),
            (None, Some(m)) => Ok(LengthDist::Fixed { value: m }),
            (None, None) => Err(self.ctx.at(
                self.span.clone(),
                "workload.output_tokens",
                "is required unless request.max_tokens is set",
            )),
        }
    }
}

/// Fields that belong to other workload types are errors, not silently ignored.
fn unused_fields(
    ctx: &Ctx,
    w: &RawWorkload,
    allowed: &[&str],
    kind_name: &str,
) -> Result<(), ScenarioError> {
    let present: [(&str, Option<Range<usize>>); 19] = [
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
        ("format", w.format.as_ref().map(|s| s.span())),
        ("time_scale", w.time_scale.as_ref().map(|s| s.span())),
        ("block_tokens", w.block_tokens.as_ref().map(|s| s.span())),
        ("columns", w.columns.as_ref().map(|s| s.span())),
        ("max_rate", w.max_rate.as_ref().map(|s| s.span())),
        ("turns", w.turns.as_ref().map(|s| s.span())),
        ("user_tokens", w.user_tokens.as_ref().map(|s| s.span())),
        ("think_time_ms", w.think_time_ms.as_ref().map(|s| s.span())),
        ("system_tokens", w.system_tokens.as_ref().map(|s| s.span())),
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
    Ok(())
}

/// `type = "dataset"`: a JSONL or ShareGPT file of prompts, loaded and hashed.
fn dataset(f: &Fields, w: RawWorkload, base_dir: &Path) -> Result<Loaded, ScenarioError> {
    let ctx = f.ctx;
    let missing = |name: &str| f.missing(name);
    let request = f.request;
    let p = w.path.ok_or_else(|| missing("path"))?;
    let resolved = base_dir.join(p.get_ref());
    let format = w.format.map(Spanned::into_inner).unwrap_or_default();
    let dataset = crate::config::dataset::load(&resolved, format)
        .map_err(|e| unreadable(ctx, &p, &resolved, e))?;
    let output_tokens = match (w.output_tokens, request.max_tokens) {
            (Some(d), _) => d.into_inner(),
            (None, Some(m)) => LengthDist::Fixed { value: m },
            (None, None) if dataset.all_have_output_tokens() => LengthDist::Fixed { value: 1 },
            (None, None) => {
                return Err(ctx.at(f.span.clone(), "workload.output_tokens", "is required: some dataset lines have no output_tokens and request.max_tokens is not set"))
            }
        };
    let sha256 = dataset.sha256.clone();
    Ok((
        Workload::Dataset {
            path: p.into_inner(),
            sha256,
            order: w.order.map(Spanned::into_inner).unwrap_or_default(),
            output_tokens,
            format,
        },
        Some(Arc::new(dataset)),
        None,
    ))
}

/// `type = "trace"`: a timestamped request log replayed at its own times (`time_scale`).
fn trace(f: &Fields, w: RawWorkload, base_dir: &Path) -> Result<Loaded, ScenarioError> {
    let ctx = f.ctx;
    let missing = |name: &str| f.missing(name);
    let p = w.path.ok_or_else(|| missing("path"))?;
    let resolved = base_dir.join(p.get_ref());
    let columns = match w.columns {
        None => None,
        Some(c) => {
            let sp = c.span();
            let c = c.into_inner();
            let unit = c.unit.unwrap_or_else(|| "ms".into());
            if unit != "ms" && unit != "s" {
                return Err(ctx.at(
                    sp,
                    "workload.columns.unit",
                    format!("must be \"ms\" or \"s\" (got \"{unit}\")"),
                ));
            }
            Some(TraceColumns {
                timestamp: c.timestamp,
                input: c.input,
                output: c.output,
                unit,
            })
        }
    };
    let trace = crate::config::trace::load(&resolved, columns.as_ref())
        .map_err(|e| unreadable(ctx, &p, &resolved, e))?;
    let time_scale = match w.time_scale {
        None => 1.0,
        Some(t) => {
            crate::config::values::in_range(*t.get_ref(), limits::TIME_SCALE, "")
                .map_err(|m| ctx.at(t.span(), "workload.time_scale", m))?;
            t.into_inner()
        }
    };
    let block_tokens = match w.block_tokens {
        None => 512,
        Some(b) => {
            let (lo, hi) = limits::BLOCK_TOKENS;
            in_range_u64(*b.get_ref() as u64, lo, hi)
                .map_err(|m| ctx.at(b.span(), "workload.block_tokens", m))?;
            b.into_inner()
        }
    };
    let max_rate = match w.max_rate {
        None => None,
        Some(m) => {
            crate::config::values::check_rate(*m.get_ref())
                .map_err(|msg| ctx.at(m.span(), "workload.max_rate", msg))?;
            let peak = trace.peak_rate(time_scale);
            if peak > *m.get_ref() {
                return Err(ctx.at(
                        m.span(),
                        "workload.max_rate",
                        format!(
                            "the replay would send {peak} requests within one second (time_scale {time_scale}), above max_rate {}; raise time_scale or max_rate",
                            m.get_ref()
                        ),
                    ));
            }
            Some(m.into_inner())
        }
    };
    Ok((
        Workload::Trace {
            path: p.into_inner(),
            sha256: trace.sha256.clone(),
            time_scale,
            block_tokens,
            columns,
            max_rate,
        },
        None,
        Some(Arc::new(trace)),
    ))
}

/// `type = "conversation"`: synthetic sessions, or ShareGPT conversations (`path`, `format =
/// "sharegpt"`) whose human turns and reply lengths replace `user_tokens` and `output_tokens`.
fn conversation(
    ctx: &Ctx,
    span: Range<usize>,
    w: RawWorkload,
    request: &RequestParams,
    base_dir: &Path,
) -> Result<Loaded, ScenarioError> {
    let turns = w.turns.ok_or_else(|| {
        ctx.at(
            span.clone(),
            "workload.turns",
            "is required for type = \"conversation\" (turns per session, e.g. `turns = { dist = \"uniform\", min = 2, max = 8 }`)",
        )
    })?;
    let (lo, hi) = limits::TURNS;
    check_dist_max(&turns, lo, hi).map_err(|m| ctx.at(turns.span(), "workload.turns", m))?;
    let system_tokens = match w.system_tokens {
        None => 0,
        Some(t) => {
            in_range_u64(*t.get_ref() as u64, 0, limits::TOKENS_MAX as u64)
                .map_err(|m| ctx.at(t.span(), "workload.system_tokens", m))?;
            t.into_inner()
        }
    };
    if let Some(t) = &w.think_time_ms {
        let (lo, hi) = limits::THINK_TIME_MS;
        check_dist_max(t, lo, hi).map_err(|m| ctx.at(t.span(), "workload.think_time_ms", m))?;
    }
    let think_time_ms = w.think_time_ms.map(Spanned::into_inner);
    let (path, sha256, dataset, user_tokens, output_tokens) = match w.path {
        Some(p) => {
            let format = w.format.map(Spanned::into_inner).unwrap_or_default();
            if format != DatasetFormat::Sharegpt {
                return Err(ctx.at(
                    p.span(),
                    "workload.format",
                    "a conversation's `path` must be ShareGPT conversations: set format = \"sharegpt\"",
                ));
            }
            ctx.refuse(
                "workload",
                &[
                    ("user_tokens", w.user_tokens.as_ref().map(|s| s.span())),
                    ("output_tokens", w.output_tokens.as_ref().map(|s| s.span())),
                ],
                "is not used with a ShareGPT `path`: the recorded turns and replies set the lengths",
            )?;
            let resolved = base_dir.join(p.get_ref());
            let d = crate::config::dataset::load(&resolved, format)
                .map_err(|e| unreadable(ctx, &p, &resolved, e))?;
            let sha = d.sha256.clone();
            let one = LengthDist::Fixed { value: 1 };
            (
                Some(p.into_inner()),
                Some(sha),
                Some(Arc::new(d)),
                one.clone(),
                one,
            )
        }
        None => {
            if let Some(f) = &w.format {
                return Err(ctx.at(
                    f.span(),
                    "workload.format",
                    "applies only with a ShareGPT `path`",
                ));
            }
            let user = w.user_tokens.ok_or_else(|| {
                ctx.at(
                    span.clone(),
                    "workload.user_tokens",
                    "is required for type = \"conversation\" without a ShareGPT `path` (words of each new user message)",
                )
            })?;
            let output = match (w.output_tokens, request.max_tokens) {
                (Some(d), _) => d.into_inner(),
                (None, Some(m)) => LengthDist::Fixed { value: m },
                (None, None) => {
                    return Err(ctx.at(
                        span,
                        "workload.output_tokens",
                        "is required unless request.max_tokens is set",
                    ))
                }
            };
            check_history(ctx, &turns, system_tokens, &user, &output)?;
            (None, None, None, user.into_inner(), output)
        }
    };
    Ok((
        Workload::Conversation {
            turns: turns.into_inner(),
            user_tokens,
            output_tokens,
            think_time_ms,
            system_tokens,
            path,
            sha256,
        },
        dataset,
        None,
    ))
}

/// A conversation's longest history (system + every turn's message and reply) is the next
/// turn's prompt, so it must stay within a prompt's bound; it is also held in memory.
fn check_history(
    ctx: &Ctx,
    turns: &Spanned<LengthDist>,
    system_tokens: u32,
    user: &Spanned<LengthDist>,
    output: &LengthDist,
) -> Result<(), ScenarioError> {
    let turns_max = dist_max(turns.get_ref());
    let history = (system_tokens as u64).saturating_add(
        turns_max.saturating_mul(dist_max(user.get_ref()).saturating_add(dist_max(output))),
    );
    let most = crate::config::values::limits::HISTORY_TOKENS_MAX;
    if history > most {
        return Err(ctx.at(
            user.span(),
            "workload.user_tokens",
            format!(
                "a session can grow to {history} tokens of history (system + {turns_max} turns × (message + reply)), over the {most} any prompt may have — the history is the next turn's prompt, and held in memory; give fewer turns or shorter messages"
            ),
        ));
    }
    Ok(())
}

/// A distribution's largest possible draw.
fn dist_max(d: &LengthDist) -> u64 {
    (match d {
        LengthDist::Fixed { value } => *value,
        LengthDist::Uniform { max, .. }
        | LengthDist::Normal { max, .. }
        | LengthDist::LogNormal { max, .. } => *max,
    }) as u64
}

/// A distribution's largest possible draw must lie in `lo..=hi` (turns, think times).
fn check_dist_max(d: &Spanned<LengthDist>, lo: u64, hi: u64) -> Result<(), String> {
    let max = dist_max(d.get_ref());
    if (lo..=hi).contains(&max) {
        Ok(())
    } else {
        Err(format!(
            "can draw up to {max}, but must stay within {lo}..={hi} (give a `max`)"
        ))
    }
}

/// A data file that cannot be read is an error at `workload.path` in the scenario; any other
/// error already names the data file's own line.
fn unreadable(ctx: &Ctx, p: &Spanned<String>, resolved: &Path, e: ScenarioError) -> ScenarioError {
    match e {
        ScenarioError::Read { source, .. } => ctx.at(
            p.span(),
            "workload.path",
            format!("cannot read {}: {source}", resolved.display()),
        ),
        other => other,
    }
}
