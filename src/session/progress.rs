//! The live progress line on a terminal: requests done, and TTFT/TPOT medians over the last
//! 200 successful requests (the same type-7 estimator as every reported figure). Hidden when
//! stderr is not a terminal, under CI, or with `--quiet`.

use crate::metrics::quantile::Sample;
use crate::model::record::RequestRecord;
use std::collections::VecDeque;
use std::time::Duration;

pub struct Progress {
    bar: indicatif::ProgressBar,
    /// (TTFT µs, TPOT µs) of recent successful requests.
    recent: VecDeque<(u64, Option<f64>)>,
    errors: u64,
}

const WINDOW: usize = 200;

impl Progress {
    /// A bar over `total` requests (a spinner when unbounded), or a hidden one.
    pub fn new(show: bool, total: Option<u64>) -> Progress {
        let bar = if !show {
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
            recent: VecDeque::new(),
            errors: 0,
        }
    }

    /// Counts one finished request; every 5th redraws the medians.
    pub fn record(&mut self, r: &RequestRecord) {
        self.bar.inc(1);
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
        if self.bar.is_hidden() || !self.bar.position().is_multiple_of(5) {
            return;
        }
        let ttft = Sample::from_values(self.recent.iter().map(|x| x.0 as f64)).quantile(0.5);
        let tpot = Sample::from_values(self.recent.iter().filter_map(|x| x.1)).quantile(0.5);
        self.bar.set_message(format!(
            "TTFT p50 {} · TPOT p50 {} (last {}) · errors {}",
            ttft.map_or("—".into(), |v| format!("{:.1} ms", v / 1000.0)),
            tpot.map_or("—".into(), |v| format!("{:.2} ms", v / 1000.0)),
            self.recent.len(),
            self.errors
        ));
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
