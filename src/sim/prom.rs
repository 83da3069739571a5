//! Prometheus text exposition (format 0.0.4) of the simulator's state, under vLLM's metric
//! names so that scrapers written for vLLM read it unchanged.

use std::fmt::Write;

/// A cumulative histogram with fixed bucket bounds (seconds).
#[derive(Debug, Clone)]
pub struct PromHistogram {
    pub bounds: Vec<f64>,
    pub counts: Vec<u64>,
    pub sum: f64,
    pub count: u64,
}

impl PromHistogram {
    /// vLLM's latency buckets (seconds).
    pub fn latency() -> PromHistogram {
        let bounds = vec![
            0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
            10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
        ];
        PromHistogram {
            counts: vec![0; bounds.len()],
            bounds,
            sum: 0.0,
            count: 0,
        }
    }

    pub fn observe(&mut self, v: f64) {
        for (b, c) in self.bounds.iter().zip(self.counts.iter_mut()) {
            if v <= *b {
                *c += 1;
            }
        }
        self.sum += v;
        self.count += 1;
    }
}

/// Writes metric families; `labels` is the label set every sample carries.
pub struct PromWriter {
    out: String,
    labels: String,
}

impl PromWriter {
    pub fn new(model: &str) -> PromWriter {
        let escaped = model
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n");
        PromWriter {
            out: String::new(),
            labels: format!("model_name=\"{escaped}\""),
        }
    }

    fn head(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.out, "# HELP {name} {help}");
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
    }

    pub fn gauge(&mut self, name: &str, help: &str, v: f64) {
        self.head(name, "gauge", help);
        let _ = writeln!(self.out, "{name}{{{}}} {v}", self.labels);
    }

    /// One gauge family with a sample per value of label `key`.
    pub fn gauge_by(&mut self, name: &str, help: &str, key: &str, values: &[(&str, f64)]) {
        self.head(name, "gauge", help);
        for (label, v) in values {
            let _ = writeln!(self.out, "{name}{{{},{key}=\"{label}\"}} {v}", self.labels);
        }
    }

    /// `name` without `_total`; the sample gets the suffix, as prometheus_client does.
    pub fn counter(&mut self, name: &str, help: &str, v: u64) {
        self.head(name, "counter", help);
        let _ = writeln!(self.out, "{name}_total{{{}}} {v}", self.labels);
    }

    pub fn histogram(&mut self, name: &str, help: &str, h: &PromHistogram) {
        self.head(name, "histogram", help);
        for (b, c) in h.bounds.iter().zip(&h.counts) {
            let _ = writeln!(self.out, "{name}_bucket{{{},le=\"{b}\"}} {c}", self.labels);
        }
        let _ = writeln!(
            self.out,
            "{name}_bucket{{{},le=\"+Inf\"}} {}",
            self.labels, h.count
        );
        let _ = writeln!(self.out, "{name}_sum{{{}}} {}", self.labels, h.sum);
        let _ = writeln!(self.out, "{name}_count{{{}}} {}", self.labels, h.count);
    }

    pub fn finish(self) -> String {
        self.out
    }
}
