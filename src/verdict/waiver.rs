//! Accepted trade-offs applied to a finished comparison: a row the gate judged regressed
//! whose metric and change a waiver names reads `accepted` while the waiver is valid (its
//! expiry day included) — counted and named in the headline, written to the record and the
//! history with the waiver's reason, owner and date, and no longer failing the compare. A
//! waiver that has expired accepts nothing: the row stays regressed and says when it expired.
//! The statistics and the sequential stop never see waivers; they decide what regressed, and
//! a waiver only says which regressions were chosen.

use crate::model::comparison::{Comparison, Verdict, Waiver};
use crate::model::metric::Metric;

/// Applies `waivers` to `c` as of `today`.
pub fn apply(c: &mut Comparison, waivers: &[Waiver], today: chrono::NaiveDate) {
    for r in c
        .rows
        .iter_mut()
        .filter(|r| r.verdict == Verdict::Regressed)
    {
        let mine: Vec<&Waiver> = waivers
            .iter()
            .filter(|w| w.metric.parse::<Metric>() == Ok(r.metric) && w.covers(&c.diffs))
            .collect();
        if let Some(w) = mine.iter().find(|w| w.expires >= today) {
            r.verdict = Verdict::Accepted;
            r.reason = format!(
                "accepted: {} — a trade-off waived by {} (expires {}): {}",
                r.reason, w.owner, w.expires, w.reason
            );
            r.waiver = Some((*w).clone());
        } else if let Some(w) = mine.first() {
            r.reason += &format!(
                " — its waiver by {} expired on {} ({}): renew it in the gate file, or fix the regression",
                w.owner, w.expires, w.reason
            );
            r.waiver = Some((*w).clone());
        }
    }
    c.regressed = c.rows.iter().any(|r| r.verdict == Verdict::Regressed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::comparison::VarChange;

    fn waiver(metric: &str, change: &str, expires: &str) -> Waiver {
        Waiver {
            metric: metric.into(),
            change: change.into(),
            reason: "TTFT for throughput".into(),
            owner: "alice".into(),
            expires: expires.parse().unwrap(),
        }
    }

    /// A comparison whose ttft.p95 regressed under `prefix_cache: off → on`.
    fn regressed() -> Comparison {
        let mut c = crate::testkit::comparison();
        c.diffs = vec![VarChange {
            key: "prefix_cache".into(),
            baseline: Some("off".into()),
            candidate: Some("on".into()),
        }];
        for r in &mut c.rows {
            r.verdict = match r.metric.to_string().as_str() {
                "ttft.p95" => Verdict::Regressed,
                _ => Verdict::NoChange,
            };
        }
        c.regressed = true;
        c
    }

    fn today() -> chrono::NaiveDate {
        "2026-12-07".parse().unwrap()
    }

    #[test]
    fn a_valid_waiver_accepts_the_regression_it_names() {
        let mut c = regressed();
        apply(
            &mut c,
            &[waiver("ttft.p95", "prefix_cache=on", "2026-12-07")],
            today(),
        );
        let r = c
            .rows
            .iter()
            .find(|r| r.verdict == Verdict::Accepted)
            .unwrap();
        assert_eq!(r.metric.to_string(), "ttft.p95");
        assert!(r
            .reason
            .contains("waived by alice (expires 2026-12-07): TTFT for throughput"));
        assert!(!c.regressed && !c.fails());
        assert_eq!(c.accepted().len(), 1);
    }

    #[test]
    fn an_expired_waiver_accepts_nothing_and_says_when_it_expired() {
        let mut c = regressed();
        apply(
            &mut c,
            &[waiver("ttft.p95", "prefix_cache", "2026-12-06")],
            today(),
        );
        let r = c
            .rows
            .iter()
            .find(|r| r.metric.to_string() == "ttft.p95")
            .unwrap();
        assert_eq!(r.verdict, Verdict::Regressed);
        assert!(r.reason.contains("expired on 2026-12-06"), "{}", r.reason);
        assert!(c.regressed);
    }

    #[test]
    fn a_waiver_of_another_metric_or_change_accepts_nothing() {
        for w in [
            waiver("tpot.p95", "prefix_cache", "2099-01-01"),
            waiver("ttft.p95", "quant", "2099-01-01"),
            waiver("ttft.p95", "prefix_cache=off", "2099-01-01"),
        ] {
            let mut c = regressed();
            apply(&mut c, &[w], today());
            assert!(c.regressed && c.accepted().is_empty());
        }
    }
}
