//! `[load]`: open or closed loop, and what bounds the run.

use super::raw::RawLoad;
use super::Ctx;
use crate::config::values::{
    check_concurrency, check_rate, check_requests, check_warmup, in_range, limits, parse_duration,
};
use crate::error::ScenarioError;
use crate::model::scenario::*;
use crate::model::trace::Trace;
use toml::Spanned;

pub(super) fn load(
    ctx: &Ctx,
    l: Spanned<RawLoad>,
    trace: Option<(&Trace, f64)>,
    conversation: bool,
) -> Result<LoadSpec, ScenarioError> {
    let span = l.span();
    let mut l = l.into_inner();
    // A conversation run is sized in sessions; `requests` would be ambiguous there.
    match (conversation, &l.requests, &l.sessions) {
        (true, Some(r), _) => {
            return Err(ctx.at(
                r.span(),
                "load.requests",
                "a conversation run counts sessions: write `sessions = N` (each runs its turns); `rate` is then new sessions/s and `concurrency` users",
            ))
        }
        (false, _, Some(s)) => {
            return Err(ctx.at(
                s.span(),
                "load.sessions",
                "applies only to [workload] type = \"conversation\"; use `requests`",
            ))
        }
        (true, None, Some(_)) => l.requests = l.sessions.take(),
        _ => {}
    }
    let unit = if conversation { "sessions" } else { "requests" };
    if let Some((t, time_scale)) = trace {
        return trace_load(ctx, span, l, t, time_scale);
    }
    if let Some(a) = l
        .arrival
        .as_ref()
        .filter(|a| *a.get_ref() == Arrival::Trace)
    {
        return Err(ctx.at(
            a.span(),
            "load.arrival",
            "\"trace\" is set by a trace workload ([workload] type = \"trace\"), not here",
        ));
    }
    let mode = match (&l.concurrency, &l.rate) {
        (Some(c), Some(_)) => {
            return Err(ctx.at(c.span(), "load.concurrency", "set either `concurrency` (closed loop) or `rate` (open loop), not both; use `max_concurrency` to cap an open loop"))
        }
        (None, None) => return Err(ctx.at(span, "load", "needs `concurrency = N` (closed loop) or `rate = R` requests/s (open loop)")),
        (Some(c), None) => {
            ctx.refuse(
                "load",
                &[
                    ("arrival", l.arrival.as_ref().map(|s| s.span())),
                    ("burstiness", l.burstiness.as_ref().map(|s| s.span())),
                    ("max_concurrency", l.max_concurrency.as_ref().map(|s| s.span())),
                ],
                "applies only to open-loop load (`rate`)",
            )?;
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
                    in_range(v, limits::BURSTINESS, "").map_err(|m| ctx.at(b.span(), "load.burstiness", m))?;
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
    let duration_s = duration(ctx, &l.duration)?;
    if let Some(r) = &l.requests {
        let field = format!("load.{unit}");
        if *r.get_ref() == 0 {
            return Err(ctx.at(r.span(), &field, "must be at least 1"));
        }
        check_requests(*r.get_ref()).map_err(|m| ctx.at(r.span(), &field, m))?;
    }
    if let Some(w) = &l.warmup {
        check_warmup(*w.get_ref()).map_err(|m| ctx.at(w.span(), "load.warmup", m))?;
    }
    let ramp = match &l.ramp {
        None => None,
        Some(r) => Some(ramp(ctx, r, &mode)?),
    };
    let requests = l.requests.map(Spanned::into_inner);
    if requests.is_none() && duration_s.is_none() {
        return Err(ctx.at(
            span,
            "load",
            format!("needs `{unit} = N` and/or `duration = \"60s\"` to bound the run"),
        ));
    }
    Ok(LoadSpec {
        mode,
        requests,
        duration_s,
        warmup: l.warmup.map_or(0, Spanned::into_inner),
        ramp,
    })
}

/// `[load] duration`, in seconds.
fn duration(ctx: &Ctx, d: &Option<Spanned<String>>) -> Result<Option<f64>, ScenarioError> {
    d.as_ref()
        .map(|d| parse_duration(d.get_ref()).map_err(|m| ctx.at(d.span(), "load.duration", m)))
        .transpose()
}

/// `[load] ramp`: from a positive start (a rate, or a whole concurrency) below the target,
/// over a positive duration.
fn ramp(
    ctx: &Ctx,
    r: &Spanned<super::raw::RawRamp>,
    mode: &LoadMode,
) -> Result<Ramp, ScenarioError> {
    let raw = r.get_ref();
    let bad = |m: String| ctx.at(r.span(), "load.ramp", m);
    let over_s = parse_duration(&raw.over).map_err(|m| bad(format!("`over`: {m}")))?;
    if over_s <= 0.0 {
        return Err(bad(
            "`over` must be a positive duration, e.g. \"30s\"".into()
        ));
    }
    let (to, unit) = match mode {
        LoadMode::Open { rate_rps, .. } => (*rate_rps, "requests/s (the ramp's start rate)"),
        LoadMode::Closed { concurrency } => {
            if raw.from.fract() != 0.0 {
                return Err(bad(format!(
                    "`from` is a concurrency here, a whole number (got {})",
                    raw.from
                )));
            }
            (
                *concurrency as f64,
                "concurrent requests (the ramp's start concurrency)",
            )
        }
    };
    if !(raw.from.is_finite() && raw.from > 0.0 && raw.from < to) {
        return Err(bad(format!(
            "`from` must be above 0 and below the target {to} ({unit}; got {})",
            raw.from
        )));
    }
    Ok(Ramp {
        from: raw.from,
        over_s,
        shape: raw.shape.unwrap_or_default(),
    })
}

/// `[load]` of a trace workload: the trace's timestamps are the schedule, so `rate`,
/// `concurrency`, `arrival` and `burstiness` are errors; `max_concurrency` may cap it;
/// `requests` (default: every row after the warmup rows) and `duration` take the first rows.
fn trace_load(
    ctx: &Ctx,
    span: std::ops::Range<usize>,
    l: RawLoad,
    t: &Trace,
    time_scale: f64,
) -> Result<LoadSpec, ScenarioError> {
    ctx.refuse(
        "load",
        &[
            ("rate", l.rate.as_ref().map(|s| s.span())),
            ("concurrency", l.concurrency.as_ref().map(|s| s.span())),
            ("arrival", l.arrival.as_ref().map(|s| s.span())),
            ("burstiness", l.burstiness.as_ref().map(|s| s.span())),
            ("ramp", l.ramp.as_ref().map(|s| s.span())),
        ],
        "is not used with a trace workload: the trace's timestamps are the schedule (scale them with workload.time_scale)",
    )?;
    if let Some(m) = &l.max_concurrency {
        check_concurrency(*m.get_ref())
            .map_err(|msg| ctx.at(m.span(), "load.max_concurrency", msg))?;
    }
    // A trace with sessions releases units (a session, or a row alone); else rows.
    let rows = t.units.len() as u64;
    let what = if t.has_sessions() {
        "units (sessions and single rows)"
    } else {
        "rows"
    };
    let warmup = l.warmup.as_ref().map_or(0, |w| *w.get_ref());
    if warmup >= rows {
        let sp = l.warmup.as_ref().map_or(span.clone(), |w| w.span());
        return Err(ctx.at(
            sp,
            "load.warmup",
            format!("leaves no request: the trace has {rows} {what}"),
        ));
    }
    let requests = match &l.requests {
        None => rows - warmup,
        Some(r) => {
            let n = *r.get_ref();
            if n == 0 || n + warmup > rows {
                return Err(ctx.at(
                    r.span(),
                    "load.requests",
                    format!(
                        "must be 1 to {} (the trace has {rows} {what}, {warmup} of them warmup)",
                        rows - warmup
                    ),
                ));
            }
            n
        }
    };
    let duration_s = duration(ctx, &l.duration)?;
    let (first, last) = (
        t.unit_start_ms(0),
        t.unit_start_ms((requests + warmup - 1) as usize),
    );
    let span_s = (last - first) / 1000.0 * time_scale;
    let rate_rps = if span_s > 0.0 {
        (requests + warmup - 1) as f64 / span_s
    } else {
        limits::RATE_RPS.1
    };
    Ok(LoadSpec {
        mode: LoadMode::Open {
            rate_rps,
            arrival: Arrival::Trace,
            burstiness: 1.0,
            max_concurrency: l.max_concurrency.as_ref().map(|m| *m.get_ref()),
        },
        requests: Some(requests),
        duration_s,
        warmup,
        ramp: None,
    })
}
