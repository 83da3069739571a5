//! Live progress: requests done, and TTFT/TPOT medians over the last 200 successful requests
//! (the same type-7 estimator as every reported figure). On a terminal, a redrawn bar; where
//! stderr is a file or a CI log, a plain line every [`LINE_EVERY`] (a bar's redraws would be
//! noise there, and silence for minutes looks like a hang); nothing with `--quiet`.

use crate::metrics::quantile::Sample;
use crate::model::record::RequestRecord;
use std::collections::VecDeque;
use std::time::Duration;

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Show {
    Nothing,
    Bar,
    /// A line on stderr at most this often, when a request finishes.
    Lines(Duration),
}

/// The plain lines' period.
pub const LINE_EVERY: Duration = Duration::from_secs(10);

pub struct Progress {
    bar: indicatif::ProgressBar,
    /// Plain lines: their period, when the run started and the last line was written.
    lines: Option<(Duration, std::time::Instant, std::time::Instant)>,
    total: Option<u64>,
    done: u64,
    /// (TTFT µs, TPOT µs) of recent successful requests.
    recent: VecDeque<(u64, Option<f64>)>,
    errors: u64,
}

const WINDOW: usize = 200;

impl Progress {
    /// A bar over `total` requests (a spinner when unbounded), or a hidden one.
    pub fn new(show: Show, total: Option<u64>) -> Progress {
        let now = std::time::Instant::now();
        let lines = match show {
            // The first finished request writes one at once: the log shows the run started.
            Show::Lines(every) => Some((every, now, now.checked_sub(every).unwrap_or(now))),
            _ => None,
        };
        let bar = if show != Show::Bar {
            indicatif::ProgressBar::hidden()
        } else {
            let bar = match total {
                Some(t) => indicatif::ProgressBar::new(t),
                None => indicatif::ProgressBar::new_spinner(),
            };
            let style = indicatif::ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {pos}/{len} requests {per_sec} {msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
            bar.set_style(style);
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        };
        Progress {
            bar,
            lines,
            total,
            done: 0,
            recent: VecDeque::new(),
            errors: 0,
        }
    }

    /// Counts one finished request; every 5th redraws the medians.
    pub fn record(&mut self, r: &RequestRecord) {
        self.bar.inc(1);
        self.done += 1;
        if r.outcome.is_ok() {
            if let Some(t) = r.ttft_us {
                self.recent.push_back((t, r.tpot_us));
                if self.recent.len() > WINDOW {
                    self.recent.pop_front();
                }
            }
        } else {
            self.errors += 1;
        }
        if self.lines.is_some() {
            if let Some(line) = self.due_line() {
                crate::say!("{line}");
            }
            return;
        }
        if self.bar.is_hidden() || !self.bar.position().is_multiple_of(5) {
            return;
        }
        let m = self.medians();
        self.bar.set_message(m);
    }

    /// The plain line, when one is due (its period has passed since the last).
    fn due_line(&mut self) -> Option<String> {
        let (every, start, last) = self.lines.as_mut()?;
        if last.elapsed() < *every {
            return None;
        }
        *last = std::time::Instant::now();
        let of = self.total.map_or(String::new(), |t| format!("/{t}"));
        let elapsed = start.elapsed().as_secs_f64();
        let done = self.done;
        Some(format!(
            "progress: {done}{of} requests in {elapsed:.0} s · {}",
            self.medians()
        ))
    }

    /// `TTFT p50 … · TPOT p50 … (last n) · errors n`.
    fn medians(&self) -> String {
        let ttft = Sample::from_values(self.recent.iter().map(|x| x.0 as f64)).quantile(0.5);
        let tpot = Sample::from_values(self.recent.iter().filter_map(|x| x.1)).quantile(0.5);
        format!(
            "TTFT p50 {} · TPOT p50 {} (last {}) · errors {}",
            ttft.map_or("—".into(), |v| format!("{:.1} ms", v / 1000.0)),
            tpot.map_or("—".into(), |v| format!("{:.2} ms", v / 1000.0)),
            self.recent.len(),
            self.errors
        )
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::record::Outcome;
    use crate::testkit::record;

    #[test]
    fn without_a_terminal_progress_is_a_plain_line_per_period() {
        let mut p = Progress::new(Show::Lines(Duration::ZERO), Some(4));
        let r = RequestRecord {
            ttft_us: Some(20_000),
            ..record(0, Outcome::Ok)
        };
        p.record(&r);
        let line = p.due_line().unwrap();
        assert!(
            line.starts_with("progress: 1/4 requests in 0 s · TTFT p50 20.0 ms"),
            "{line}"
        );
        let mut slow = Progress::new(Show::Lines(Duration::from_secs(3600)), None);
        slow.record(&r);
        assert_eq!(slow.due_line(), None, "not due before its period");
        assert!(Progress::new(Show::Nothing, None).due_line().is_none());
    }
}
