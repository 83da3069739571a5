//! Named hardware/model profiles and every option of the simulated engine.
//!
//! A profile is a model shape plus a device. The model shapes are those of the published
//! `config.json` files of Meta's Llama 3.x models (parameters, layers, hidden size, KV heads,
//! head dimension); the device figures are from NVIDIA's data sheets (dense FP16/BF16 tensor
//! throughput without sparsity, memory size and bandwidth, NVLink bandwidth):
//!
//! | profile | model | device |
//! |---|---|---|
//! | `small-gpu` | Llama-3.2-1B: 1.24 B params, 16 layers, hidden 2048, 8 KV heads × 64 | L4: 121 TFLOP/s, 24 GB, 300 GB/s |
//! | `l4-8b` | Llama-3.1-8B: 8.03 B params, 32 layers, hidden 4096, 8 KV heads × 128 | L4 (KV-tight: 16 GB of weights on 24 GB) |
//! | `h100-8b` | Llama-3.1-8B | H100 SXM: 989 TFLOP/s, 80 GB, 3.35 TB/s, NVLink 900 GB/s |
//! | `h100-70b` | Llama-3.1-70B: 70.6 B params, 80 layers, hidden 8192, 8 KV heads × 128; `tp = 4` | 4 × H100 SXM |
//!
//! Efficiencies (`mfu` 0.5 for matmuls, `bw_eff` 0.8 of peak bandwidth, a fixed scheduler
//! overhead per step) are round figures typical of published engine measurements, not
//! measurements of ours. Every value can be overridden with `--opt key=value`.

use serde::Serialize;

/// Weight (or draft) precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Quant {
    None,
    Fp8,
    Int8,
    Int4,
}

impl Quant {
    pub fn parse(s: &str) -> Option<Quant> {
        Some(match s {
            "none" | "fp16" | "bf16" | "off" => Quant::None,
            "fp8" => Quant::Fp8,
            "int8" => Quant::Int8,
            "int4" => Quant::Int4,
            _ => return None,
        })
    }

    /// Bytes per weight.
    pub fn bytes(self) -> f64 {
        match self {
            Quant::None => 2.0,
            Quant::Fp8 | Quant::Int8 => 1.0,
            Quant::Int4 => 0.5,
        }
    }

    /// Multiplier on matmul time for dequantization (weight-only int formats dequantize in the
    /// kernel; FP8 runs natively on Hopper-class tensor cores).
    pub fn compute_overhead(self) -> f64 {
        match self {
            Quant::None | Quant::Fp8 => 1.0,
            Quant::Int8 => 1.05,
            Quant::Int4 => 1.12,
        }
    }

    /// How well a draft model of this precision tracks the FP16 target: multiplies the
    /// per-position acceptance probability. Chosen so that the seed chapter's EAGLE-3 figures
    /// come out in vLLM's acceptance rate (accepted / draft tokens) at k = 3 and the default
    /// α = 0.9: ≈ 0.81 at FP16, 0.77 FP8, 0.69 INT8, and 0.45 (below 0.5) at INT4.
    pub fn draft_fidelity(self) -> f64 {
        match self {
            Quant::None => 1.0,
            Quant::Fp8 => 0.97,
            Quant::Int8 => 0.92,
            Quant::Int4 => 0.72,
        }
    }
}

/// Every knob of the simulated engine. Field names are the `--opt` keys.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimOptions {
    pub profile: String,
    // --- model shape
    pub params_b: f64,
    pub layers: u32,
    pub hidden: u32,
    pub kv_heads: u32,
    pub head_dim: u32,
    // --- device (per GPU)
    pub tflops: f64,
    pub memory_gb: f64,
    pub bandwidth_gbs: f64,
    pub link_gbs: f64,
    pub mfu: f64,
    pub bw_eff: f64,
    pub step_overhead_ms: f64,
    // --- engine
    pub max_num_seqs: u32,
    pub max_num_batched_tokens: u32,
    pub gpu_memory_utilization: f64,
    /// Overrides the KV capacity computed from memory (tokens; 0 = computed).
    pub kv_capacity_tokens: u64,
    pub block_size: u32,
    pub max_model_len: u32,
    // --- optimizations
    pub prefix_cache: bool,
    pub chunked_prefill: bool,
    pub quant: Quant,
    /// KV cache precision (`none` = FP16, `fp8` halves the bytes per token).
    pub kv_quant: Quant,
    /// Draft length k; 0 = speculative decoding off.
    pub spec: u32,
    /// Probability that an FP16 draft's token is accepted at each position (the reported
    /// acceptance rate, accepted / draft tokens, is (α + α² + … + α^k) / k).
    pub spec_alpha: f64,
    /// Draft model size relative to the target.
    pub draft_ratio: f64,
    /// `same`: the draft is quantized like the target; `none`: kept in FP16.
    pub draft_quant_same: bool,
    pub tp: u32,
    // --- behaviour
    pub seed: u64,
    /// Natural output length (mean, tokens) when a request does not ask `ignore_eos`.
    pub eos_mean_tokens: u32,
    /// A reasoning model: the first this many tokens of every answer are reasoning, streamed
    /// as `delta.reasoning_content` (chat) and counted in
    /// `usage.completion_tokens_details.reasoning_tokens`; 0 = off.
    pub reasoning_tokens: u32,
    /// Share of greedy answers that come out otherwise than the model's own, drawn afresh for
    /// every request (an engine whose numerics vary run to run, e.g. with its batch); 0 =
    /// deterministic.
    pub answer_flip: f64,
    // --- faults (rates are per request, 0–1)
    pub fault_500: f64,
    pub fault_429: f64,
    pub fault_503: f64,
    pub fault_stall: f64,
    pub stall_ms: f64,
    pub fault_disconnect: f64,
    pub fault_malformed: f64,
    pub header_delay_ms: f64,
    /// The server's own per-request clock on each reply: `none`, `llama.cpp` (`timings` on
    /// the last chunk) or `vllm` (`metrics` on the usage chunk, as with
    /// `--enable-per-request-metrics`); with either, usage says the cached prompt tokens.
    pub reply_clock: String,
}

const PROFILES: &[&str] = &["small-gpu", "l4-8b", "h100-8b", "h100-70b"];

const L4: (f64, f64, f64, f64) = (121.0, 24.0, 300.0, 64.0); // TFLOP/s, GB, GB/s, PCIe GB/s
const H100: (f64, f64, f64, f64) = (989.0, 80.0, 3350.0, 900.0);

impl SimOptions {
    pub fn profile(name: &str) -> Result<SimOptions, String> {
        let (params_b, layers, hidden, kv_heads, head_dim, dev, tp) = match name {
            "small-gpu" => (1.24, 16, 2048, 8, 64, L4, 1),
            "l4-8b" => (8.03, 32, 4096, 8, 128, L4, 1),
            "h100-8b" => (8.03, 32, 4096, 8, 128, H100, 1),
            "h100-70b" => (70.6, 80, 8192, 8, 128, H100, 4),
            other => {
                return Err(format!(
                    "unknown simulator profile `{other}`; choose from: {}",
                    PROFILES.join(", ")
                ))
            }
        };
        Ok(SimOptions {
            profile: name.to_string(),
            params_b,
            layers,
            hidden,
            kv_heads,
            head_dim,
            tflops: dev.0,
            memory_gb: dev.1,
            bandwidth_gbs: dev.2,
            link_gbs: dev.3,
            mfu: 0.5,
            bw_eff: 0.8,
            step_overhead_ms: 1.0,
            max_num_seqs: 256,
            max_num_batched_tokens: 2048,
            gpu_memory_utilization: 0.9,
            kv_capacity_tokens: 0,
            block_size: 16,
            max_model_len: 32768,
            prefix_cache: false,
            chunked_prefill: false,
            quant: Quant::None,
            kv_quant: Quant::None,
            spec: 0,
            spec_alpha: 0.9,
            draft_ratio: 0.03,
            draft_quant_same: true,
            tp,
            seed: 0,
            eos_mean_tokens: 256,
            reasoning_tokens: 0,
            answer_flip: 0.0,
            fault_500: 0.0,
            fault_429: 0.0,
            fault_503: 0.0,
            fault_stall: 0.0,
            stall_ms: 0.0,
            fault_disconnect: 0.0,
            fault_malformed: 0.0,
            header_delay_ms: 0.0,
            reply_clock: "none".into(),
        })
    }

    /// Applies `key=value`; the error lists the keys when the key is unknown.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let p = Val {
            key,
            v: value.trim(),
        };
        let v = p.v;
        match key {
            "profile" => {
                *self = SimOptions {
                    seed: self.seed,
                    ..SimOptions::profile(v)?
                }
            }
            "params_b" => {
                self.params_b = p.within(p.f("billions of parameters")?, 0.001, 100_000.0)?
            }
            "layers" => self.layers = p.int(1, 10_000)?,
            "hidden" => self.hidden = p.int(1, 1_000_000)?,
            "kv_heads" => self.kv_heads = p.int(1, 100_000)?,
            "head_dim" => self.head_dim = p.int(1, 100_000)?,
            "tflops" => self.tflops = p.within(p.f("TFLOP/s")?, 0.001, 1e6)?,
            "memory_gb" => self.memory_gb = p.within(p.f("GB")?, 0.001, 1e6)?,
            "bandwidth_gbs" => self.bandwidth_gbs = p.within(p.f("GB/s")?, 0.001, 1e6)?,
            "link_gbs" => self.link_gbs = p.within(p.f("GB/s")?, 0.001, 1e6)?,
            "mfu" => self.mfu = p.within(p.rate()?, 0.01, 1.0)?,
            "bw_eff" => self.bw_eff = p.within(p.rate()?, 0.01, 1.0)?,
            "step_overhead_ms" => self.step_overhead_ms = p.ms()?,
            "max_num_seqs" => self.max_num_seqs = p.int(1, 1_000_000)?,
            "max_num_batched_tokens" => self.max_num_batched_tokens = p.int(1, 100_000_000)?,
            "gpu_memory_utilization" => {
                self.gpu_memory_utilization = p.within(p.rate()?, 0.01, 1.0)?
            }
            "kv_capacity_tokens" => self.kv_capacity_tokens = p.u()?,
            "block_size" => self.block_size = p.int(1, 65_536)?,
            "max_model_len" => self.max_model_len = p.int(1, 100_000_000)?,
            "prefix_cache" => self.prefix_cache = p.onoff()?,
            "chunked_prefill" => self.chunked_prefill = p.onoff()?,
            "quant" => self.quant = p.quant()?,
            "kv_quant" => self.kv_quant = p.quant()?,
            "spec" => {
                self.spec = match v {
                    "off" | "0" => 0,
                    "on" => 3,
                    _ => p.int(0, 16)?,
                }
            }
            "spec_alpha" => self.spec_alpha = p.rate()?,
            "draft_ratio" => self.draft_ratio = p.within(p.f("a fraction")?, 0.0001, 1.0)?,
            "draft_quant" => {
                self.draft_quant_same = match v {
                    "same" => true,
                    "none" | "fp16" => false,
                    _ => return Err(format!("`draft_quant` is `same` or `none` (got `{v}`)")),
                }
            }
            "tp" => self.tp = p.int(1, 64)?,
            "seed" => self.seed = p.u()?,
            "eos_mean_tokens" => self.eos_mean_tokens = p.int(1, 2_000_000)?,
            "reasoning_tokens" => self.reasoning_tokens = p.int(0, 2_000_000)?,
            "answer_flip" => self.answer_flip = p.rate()?,
            "fault_500" => self.fault_500 = p.rate()?,
            "fault_429" => self.fault_429 = p.rate()?,
            "fault_503" => self.fault_503 = p.rate()?,
            "fault_stall" => self.fault_stall = p.rate()?,
            "stall_ms" => self.stall_ms = p.ms()?,
            "fault_disconnect" => self.fault_disconnect = p.rate()?,
            "fault_malformed" => self.fault_malformed = p.rate()?,
            "header_delay_ms" => self.header_delay_ms = p.ms()?,
            "reply_clock" => {
                self.reply_clock = match v {
                    "none" | "llama.cpp" | "vllm" => v.to_string(),
                    _ => {
                        return Err(format!(
                            "`reply_clock` is `none`, `llama.cpp` or `vllm` (got `{v}`)"
                        ))
                    }
                }
            }
            other => {
                let keys: Vec<String> = self.entries().into_iter().map(|(k, _)| k).collect();
                return Err(format!(
                    "unknown simulator option `{other}`; options: {}",
                    keys.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// Every option as `(key, value)`, as recorded in a run's `vars`.
    pub fn entries(&self) -> Vec<(String, String)> {
        let v = serde_json::to_value(self).unwrap_or_default();
        let mut out: Vec<(String, String)> = v
            .as_object()
            .map(|o| {
                o.iter()
                    .map(|(k, v)| {
                        let s = match v {
                            serde_json::Value::String(s) => s.clone(),
                            serde_json::Value::Bool(b) => if *b { "on" } else { "off" }.to_string(),
                            other => other.to_string(),
                        };
                        (k.clone(), s)
                    })
                    .collect()
            })
            .unwrap_or_default();
        // Present the draft precision and speculation the way they are set.
        for (k, v) in out.iter_mut() {
            if k == "draft_quant_same" {
                *k = "draft_quant".into();
                *v = if self.draft_quant_same {
                    "same".into()
                } else {
                    "none".into()
                };
            }
            if k == "spec" && self.spec == 0 {
                *v = "off".into();
            }
        }
        out.sort();
        out
    }

    /// What option `key` is in `profile` when nothing sets it: what a run that does not name
    /// it ran with (one recorded before the option existed ran as the default does).
    pub fn default_entry(profile: &str, key: &str) -> Option<String> {
        let o = SimOptions::profile(profile).ok()?;
        o.entries()
            .into_iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// The precision of the draft model.
    pub fn draft_quant(&self) -> Quant {
        if self.draft_quant_same {
            self.quant
        } else {
            Quant::None
        }
    }
}

/// One `key=value` of [`SimOptions::set`], read as the option needs it; every error names the
/// key and what it needs.
struct Val<'a> {
    key: &'a str,
    v: &'a str,
}

impl Val<'_> {
    /// A finite number ≥ 0.
    fn f(&self, what: &str) -> Result<f64, String> {
        let (key, v) = (self.key, self.v);
        v.parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .ok_or_else(|| format!("`{key}` needs {what} (got `{v}`)"))
    }

    fn u(&self) -> Result<u64, String> {
        let (key, v) = (self.key, self.v);
        v.parse::<u64>()
            .map_err(|_| format!("`{key}` needs a whole number (got `{v}`)"))
    }

    /// A whole number within `lo..=hi`: out of range is an error, never silently clamped.
    fn int(&self, lo: u64, hi: u64) -> Result<u32, String> {
        let n = self.u()?;
        if (lo..=hi).contains(&n) {
            Ok(n as u32)
        } else {
            Err(format!(
                "`{}` must be between {lo} and {hi} (got {n})",
                self.key
            ))
        }
    }

    /// Milliseconds, at most a day.
    fn ms(&self) -> Result<f64, String> {
        let x = self.f("milliseconds")?;
        if x <= 86_400_000.0 {
            Ok(x)
        } else {
            Err(format!(
                "`{}` must be at most 86400000 ms, a day (got {x})",
                self.key
            ))
        }
    }

    fn onoff(&self) -> Result<bool, String> {
        match self.v {
            "on" | "true" | "1" | "yes" => Ok(true),
            "off" | "false" | "0" | "no" => Ok(false),
            v => Err(format!("`{}` is on or off (got `{v}`)", self.key)),
        }
    }

    fn rate(&self) -> Result<f64, String> {
        let r = self.f("a rate between 0 and 1")?;
        if r > 1.0 {
            Err(format!(
                "`{}` is a rate between 0 and 1 (got {r})",
                self.key
            ))
        } else {
            Ok(r)
        }
    }

    fn quant(&self) -> Result<Quant, String> {
        Quant::parse(self.v).ok_or_else(|| {
            format!(
                "`{}` is one of none, fp8, int8, int4 (got `{}`)",
                self.key, self.v
            )
        })
    }

    /// A hardware figure or an efficiency within what any device has: outside it, a step
    /// would take years of simulated time (or none).
    fn within(&self, x: f64, lo: f64, hi: f64) -> Result<f64, String> {
        if (lo..=hi).contains(&x) {
            Ok(x)
        } else {
            Err(format!(
                "`{}` must be between {lo} and {hi} (got {})",
                self.key, self.v
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_round_trip_and_errors_list_keys() {
        let mut o = SimOptions::profile("small-gpu").unwrap();
        o.set("quant", "int4").unwrap();
        o.set("prefix_cache", "on").unwrap();
        o.set("spec", "3").unwrap();
        let e = o.entries();
        assert!(e.contains(&("quant".into(), "int4".into())));
        assert!(e.contains(&("prefix_cache".into(), "on".into())));
        assert!(e.contains(&("spec".into(), "3".into())));
        assert!(e.contains(&("draft_quant".into(), "same".into())));
        let err = o.set("qaunt", "int4").unwrap_err();
        assert!(err.contains("unknown simulator option `qaunt`") && err.contains("prefix_cache"));
        assert!(o.set("quant", "int3").is_err());
        assert!(o.set("fault_500", "1.5").is_err());
        assert!(SimOptions::profile("tpu")
            .unwrap_err()
            .contains("small-gpu"));
    }

    #[test]
    fn tp_0_and_other_out_of_range_counts_are_errors_not_clamped() {
        let mut o = SimOptions::profile("small-gpu").unwrap();
        // Before the fix `tp = 0` silently became 1 and `spec = 99` became 16.
        for (k, v, range) in [
            ("tp", "0", "between 1 and 64"),
            ("spec", "99", "between 0 and 16"),
            ("max_num_seqs", "0", "between 1 and"),
            ("block_size", "0", "between 1 and"),
            ("stall_ms", "1e308", "at most 86400000 ms"),
        ] {
            let e = o.set(k, v).unwrap_err();
            assert!(e.contains(range) && e.contains(k), "{k}={v}: {e}");
        }
        assert_eq!(o.tp, 1, "a refused value leaves the option as it was");
    }
}
