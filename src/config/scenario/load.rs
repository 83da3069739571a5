//! `[load]`: open or closed loop, and what bounds the run.

use super::raw::RawLoad;
use super::Ctx;
use crate::config::values::{
    check_concurrency, check_rate, check_requests, check_warmup, in_range, limits, parse_duration,
};
use crate::error::ScenarioError;
use crate::model::scenario::*;
use toml::Spanned;

pub(super) fn load(ctx: &Ctx, l: Spanned<RawLoad>) -> Result<LoadSpec, ScenarioError> {
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
        check_requests(*r.get_ref()).map_err(|m| ctx.at(r.span(), "load.requests", m))?;
    }
    if let Some(w) = &l.warmup {
        check_warmup(*w.get_ref()).map_err(|m| ctx.at(w.span(), "load.warmup", m))?;
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
        warmup: l.warmup.map_or(0, Spanned::into_inner),
    })
}
