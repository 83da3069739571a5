//! Metric identity: which number a name means, parsed in one place.
//!
//! A latency metric is a [`Latency`] (what is timed) and a [`Quantile`] (which order statistic
//! of it); the gate also judges run-level figures ([`Metric::OutputThroughput`], …). Names are
//! written `ttft.p95`, `output_throughput`, `error_rate`; [`Metric::from_str`] is the only
//! parser, and a name it does not know is an error that lists the ones it does — never a
//! fallback to some other metric.
//!
//! Definitions (`docs/measurement.md` maps peers' names onto them) are in
//! [`Latency::definition`]; every latency is in µs when recorded and in ms when reported.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A per-request (or per-gap) latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Latency {
    /// Intended send → first chunk carrying generated text (reasoning or answer).
    Ttft,
    /// (E2E − TTFT) / (output_tokens − 1), requests with more than one output token.
    Tpot,
    /// Every gap between consecutive chunks carrying generated text.
    Itl,
    /// Per token: a chunk of k tokens after a gap g counts k values g / k.
    ItlToken,
    /// Intended send → first chunk carrying answer (non-reasoning) text.
    Ttfo,
    /// (E2E − TTFO) / (answer tokens − 1): the answer's pace after the reasoning.
    AnswerTpot,
    /// Intended send → last chunk carrying generated text.
    E2e,
    /// Actual send − intended send − queue: the client's own lateness.
    SendLag,
    /// Waiting for a `max_concurrency` slot.
    Queue,
    /// The server's own prefill time for the request, as its reply reported it.
    Prefill,
    /// TTFT − the server's prefill: its queue, the network and the client.
    TtftRest,
    /// Intended send → first chunk of a tool call.
    ToolCall,
    /// Intended send → last chunk of a tool call: its arguments complete.
    ToolArgs,
}

impl Latency {
    /// In the order reports show them.
    pub const ALL: [Latency; 13] = [
        Latency::Ttft,
        Latency::Tpot,
        Latency::Itl,
        Latency::ItlToken,
        Latency::E2e,
        Latency::Ttfo,
        Latency::AnswerTpot,
        Latency::Prefill,
        Latency::TtftRest,
        Latency::ToolCall,
        Latency::ToolArgs,
        Latency::SendLag,
        Latency::Queue,
    ];

    /// The latencies the gate can judge: they have one value per request, so requests are
    /// the unit a bootstrap resamples. (ITL gaps of one stream are not independent.)
    pub const GATED: [Latency; 9] = [
        Latency::Ttft,
        Latency::Tpot,
        Latency::E2e,
        Latency::Ttfo,
        Latency::AnswerTpot,
        Latency::Prefill,
        Latency::TtftRest,
        Latency::ToolCall,
        Latency::ToolArgs,
    ];

    /// Reported only for a run whose streams carried reasoning: without any, TTFO is TTFT
    /// and the answer's TPOT is TPOT.
    pub fn reasoning_only(self) -> bool {
        matches!(self, Latency::Ttfo | Latency::AnswerTpot)
    }

    /// Read from the server's own clock on its reply: reported only for a run whose replies
    /// carried one.
    pub fn server_reported(self) -> bool {
        matches!(self, Latency::Prefill | Latency::TtftRest)
    }

    /// Some successful requests may have no value (one output token has no TPOT, a reply
    /// without the server's clock no prefill), so a histogram may hold fewer values than
    /// there were successful requests.
    pub fn partial(self) -> bool {
        self == Latency::Tpot || self.reasoning_only() || self.server_reported() || self.tool_only()
    }

    /// Timed on tool calls: reported only for a run whose replies called a tool.
    pub fn tool_only(self) -> bool {
        matches!(self, Latency::ToolCall | Latency::ToolArgs)
    }

    /// Timed on a stream's tokens: none of these exists for an unstreamed answer
    /// (embeddings), whose only latency is its E2E.
    pub fn token_timed(self) -> bool {
        matches!(
            self,
            Latency::Ttft
                | Latency::Tpot
                | Latency::Itl
                | Latency::ItlToken
                | Latency::Ttfo
                | Latency::AnswerTpot
                | Latency::TtftRest
                | Latency::ToolCall
                | Latency::ToolArgs
        )
    }

    /// One value per gap of a stream, not per request: kept as a run-level histogram.
    pub fn per_gap(self) -> bool {
        matches!(self, Latency::Itl | Latency::ItlToken)
    }

    pub fn name(self) -> &'static str {
        match self {
            Latency::Ttft => "ttft",
            Latency::Tpot => "tpot",
            Latency::Itl => "itl",
            Latency::ItlToken => "itl_token",
            Latency::Ttfo => "ttfo",
            Latency::AnswerTpot => "answer_tpot",
            Latency::E2e => "e2e",
            Latency::SendLag => "send_lag",
            Latency::Queue => "queue",
            Latency::Prefill => "prefill",
            Latency::TtftRest => "ttft_rest",
            Latency::ToolCall => "tool_call",
            Latency::ToolArgs => "tool_args",
        }
    }

    /// The histogram's key in `run.json` (`ttft_us`): values are recorded in µs.
    pub fn hist_key(self) -> &'static str {
        match self {
            Latency::Ttft => "ttft_us",
            Latency::Tpot => "tpot_us",
            Latency::Itl => "itl_us",
            Latency::ItlToken => "itl_token_us",
            Latency::Ttfo => "ttfo_us",
            Latency::AnswerTpot => "answer_tpot_us",
            Latency::E2e => "e2e_us",
            Latency::SendLag => "send_lag_us",
            Latency::Queue => "queue_us",
            Latency::Prefill => "prefill_us",
            Latency::TtftRest => "ttft_rest_us",
            Latency::ToolCall => "tool_call_us",
            Latency::ToolArgs => "tool_args_us",
        }
    }

    pub fn definition(self) -> &'static str {
        match self {
            Latency::Ttft => {
                "intended send → first chunk with generated text (reasoning or answer)"
            }
            Latency::Tpot => "(e2e − ttft) / (output_tokens − 1), requests with > 1 output token",
            Latency::Itl => "gap between consecutive chunks with generated text (per chunk)",
            Latency::ItlToken => {
                "per token: a chunk of k tokens after a gap g counts k values g / k"
            }
            Latency::Ttfo => "intended send → first chunk with answer (non-reasoning) text",
            Latency::AnswerTpot => {
                "(e2e − ttfo) / (answer tokens − 1), answer tokens = output − reasoning tokens"
            }
            Latency::E2e => "intended send → last chunk with generated text",
            Latency::SendLag => "actual send − intended send − queue (client lateness)",
            Latency::Queue => "wait for a max_concurrency slot",
            Latency::Prefill => {
                "server's own prefill time from its reply (llama.cpp timings.prompt_ms, vLLM metrics.time_to_first_token_ms)"
            }
            Latency::TtftRest => {
                "ttft − server prefill: server queue + network + client, replies with the server's clock"
            }
            Latency::ToolCall => "intended send → first chunk of a tool call (delta.tool_calls)",
            Latency::ToolArgs => {
                "intended send → last chunk of a tool call: its arguments complete"
            }
        }
    }

    fn from_name(s: &str) -> Option<Latency> {
        Latency::ALL.into_iter().find(|l| l.name() == s)
    }
}

impl fmt::Display for Latency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// A quantile level p in (0, 1), written `p95`, `p99.9`.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Quantile(f64);

impl Quantile {
    pub const P50: Quantile = Quantile(0.5);
    pub const P90: Quantile = Quantile(0.9);
    pub const P95: Quantile = Quantile(0.95);

    /// `None` unless 0 < p < 1.
    pub fn new(p: f64) -> Option<Quantile> {
        (p > 0.0 && p < 1.0).then_some(Quantile(p))
    }

    /// The level as a fraction (0.95).
    pub fn p(self) -> f64 {
        self.0
    }

    /// `p95`, `p99.9`, `p50`.
    pub fn label(self) -> String {
        let x = self.0 * 100.0;
        if (x - x.round()).abs() < 1e-9 {
            format!("p{}", x.round() as u64)
        } else {
            format!("p{}", (x * 1e6).round() / 1e6)
        }
    }

    /// Parses `p95` / `p99.9`.
    pub fn parse(s: &str) -> Option<Quantile> {
        let pct: f64 = s.strip_prefix('p')?.parse().ok()?;
        Quantile::new(pct / 100.0)
    }
}

impl fmt::Display for Quantile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.label())
    }
}

/// Which turns of a conversation a latency is taken over: written `turn2` (that turn) or
/// `turn2+` (that turn and every later one), after an `@` (`ttft.p50@turn2+`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Turns {
    /// 1-based.
    pub from: u32,
    /// Only turn `from`, not the ones after it.
    pub exact: bool,
}

impl Turns {
    pub fn contains(self, turn: u32) -> bool {
        turn == self.from || (!self.exact && turn > self.from)
    }

    /// `turn2`, `turn2+`.
    pub fn label(self) -> String {
        format!("turn{}{}", self.from, if self.exact { "" } else { "+" })
    }

    pub fn parse(s: &str) -> Option<Turns> {
        let n = s.strip_prefix("turn")?;
        let (n, exact) = match n.strip_suffix('+') {
            Some(n) => (n, false),
            None => (n, true),
        };
        let from: u32 = n.parse().ok().filter(|f| *f >= 1)?;
        Some(Turns { from, exact })
    }
}

/// A figure the gate (and `bench stack`) can judge.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metric {
    /// A quantile of one of [`Latency::GATED`].
    Latency(Latency, Quantile),
    /// A quantile of one of [`Latency::GATED`] over some turns of a conversation run.
    TurnLatency(Latency, Quantile, Turns),
    /// Output tokens / measured window (tok/s).
    OutputThroughput,
    /// Successful requests / measured window (req/s).
    RequestThroughput,
    /// Requests meeting every SLO / measured window (req/s).
    Goodput,
    /// Errors / measured requests sent.
    ErrorRate,
    /// Labelled quality items answered right, % (the quality pass).
    Accuracy,
    /// Quality items whose answer is the baseline's, % (the quality pass).
    Agreement,
    /// The GPU node's energy over the run / output tokens (J/token; dcgm-exporter).
    JoulesPerToken,
    /// The GPU node's mean power over the run (W; dcgm-exporter).
    GpuPower,
}

/// The names a user can write, for error messages.
const KNOWN_METRICS: &str = "ttft|tpot|e2e|ttfo|answer_tpot|prefill|ttft_rest|tool_call|tool_args.pNN (e.g. ttft.p95, e2e.p99.9; a conversation's turns with @turnN or @turnN+, e.g. ttft.p50@turn2+), output_throughput, request_throughput, goodput, error_rate, accuracy, agreement, joules_per_token or gpu_power";

impl Metric {
    /// The latency, quantile and turns of a latency metric.
    pub fn latency(self) -> Option<(Latency, Quantile, Option<Turns>)> {
        match self {
            Metric::Latency(l, q) => Some((l, q, None)),
            Metric::TurnLatency(l, q, t) => Some((l, q, Some(t))),
            _ => None,
        }
    }

    pub fn lower_is_better(self) -> bool {
        !matches!(
            self,
            Metric::OutputThroughput
                | Metric::RequestThroughput
                | Metric::Goodput
                | Metric::Accuracy
                | Metric::Agreement
        )
    }

    /// Judged from the quality pass's answers, item by item, not from the runs' timings.
    pub fn is_quality(self) -> bool {
        matches!(self, Metric::Accuracy | Metric::Agreement)
    }

    /// The unit its values are reported in.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::Latency(..) | Metric::TurnLatency(..) => "ms",
            Metric::OutputThroughput => "tok/s",
            Metric::RequestThroughput | Metric::Goodput => "req/s",
            Metric::ErrorRate | Metric::Accuracy | Metric::Agreement => "%",
            Metric::JoulesPerToken => "J/tok",
            Metric::GpuPower => "W",
        }
    }

    /// A change in it is read in percentage points (error rate, accuracy, agreement) rather
    /// than percent.
    pub fn in_points(self) -> bool {
        matches!(
            self,
            Metric::ErrorRate | Metric::Accuracy | Metric::Agreement
        )
    }
}

impl FromStr for Metric {
    type Err = String;

    fn from_str(key: &str) -> Result<Metric, String> {
        let unknown = || format!("unknown gate metric `{key}`; use {KNOWN_METRICS}");
        Ok(match key {
            "output_throughput" => Metric::OutputThroughput,
            "request_throughput" => Metric::RequestThroughput,
            "goodput" => Metric::Goodput,
            "error_rate" => Metric::ErrorRate,
            "accuracy" => Metric::Accuracy,
            "agreement" => Metric::Agreement,
            "joules_per_token" => Metric::JoulesPerToken,
            "gpu_power" => Metric::GpuPower,
            _ => {
                let (key, turns) = match key.split_once('@') {
                    Some((k, t)) => (
                        k,
                        Some(Turns::parse(t).ok_or_else(|| {
                            format!("`{key}@{t}`: `{t}` is not a turn scope; write @turnN (that turn) or @turnN+ (it and later ones), N ≥ 1")
                        })?),
                    ),
                    None => (key, None),
                };
                let (name, q) = key.split_once('.').ok_or_else(unknown)?;
                let latency = Latency::from_name(name).ok_or_else(unknown)?;
                if !Latency::GATED.contains(&latency) {
                    return Err(format!(
                        "`{key}`: {latency} is reported but not judged ({} has no single value per request); use {KNOWN_METRICS}",
                        latency
                    ));
                }
                let q = Quantile::parse(q).ok_or_else(unknown)?;
                match turns {
                    Some(t) => Metric::TurnLatency(latency, q, t),
                    None => Metric::Latency(latency, q),
                }
            }
        })
    }
}

impl Metric {
    /// The name it is written with (`ttft.p95`, `error_rate`).
    pub fn key(self) -> String {
        match self {
            Metric::Latency(l, q) => format!("{}.{}", l.name(), q.label()),
            Metric::TurnLatency(l, q, t) => format!("{}.{}@{}", l.name(), q.label(), t.label()),
            Metric::OutputThroughput => "output_throughput".into(),
            Metric::RequestThroughput => "request_throughput".into(),
            Metric::Goodput => "goodput".into(),
            Metric::ErrorRate => "error_rate".into(),
            Metric::Accuracy => "accuracy".into(),
            Metric::Agreement => "agreement".into(),
            Metric::JoulesPerToken => "joules_per_token".into(),
            Metric::GpuPower => "gpu_power".into(),
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.key())
    }
}

impl Serialize for Metric {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Metric {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_errors() {
        for key in [
            "ttft.p95",
            "ttft.p50@turn2+",
            "e2e.p99.9@turn1",
            "tpot.p50",
            "e2e.p99.9",
            "ttfo.p50",
            "answer_tpot.p95@turn2+",
            "output_throughput",
            "error_rate",
        ] {
            let m: Metric = key.parse().unwrap();
            assert_eq!(m.to_string(), key);
        }
        assert_eq!(
            "e2e.p90".parse::<Metric>().unwrap(),
            Metric::Latency(Latency::E2e, Quantile::P90)
        );
        // A typo must not become some other metric.
        for bad in [
            "ttfb.p95",
            "ttft",
            "ttft.95",
            "ttft.p100",
            "ttft.p0",
            "tpot.pxx",
            "ttft@turn2",
        ] {
            let e = bad.parse::<Metric>().unwrap_err();
            assert!(
                e.contains("unknown gate metric") && e.contains("ttft.p95"),
                "{e}"
            );
        }
        for per_gap in ["itl.p95", "itl_token.p50"] {
            assert!(per_gap
                .parse::<Metric>()
                .unwrap_err()
                .contains("not judged"));
        }
        assert_eq!(
            "ttft.p50@turn2+".parse::<Metric>().unwrap(),
            Metric::TurnLatency(
                Latency::Ttft,
                Quantile::P50,
                Turns {
                    from: 2,
                    exact: false
                }
            )
        );
        for bad in ["ttft.p50@turn0", "ttft.p50@2", "ttft.p50@turnx+"] {
            let e = bad.parse::<Metric>().unwrap_err();
            assert!(e.contains("turn scope"), "{e}");
        }
        let t = Turns::parse("turn3").unwrap();
        assert!(t.contains(3) && !t.contains(4));
        let t = Turns::parse("turn3+").unwrap();
        assert!(t.contains(3) && t.contains(9) && !t.contains(2));
        assert_eq!(Latency::from_name("send_lag"), Some(Latency::SendLag));
        assert_eq!(Latency::from_name("ttfb"), None);
    }
}
