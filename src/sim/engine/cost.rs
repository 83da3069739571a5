//! The cost model: how long a step of the engine takes.
//!
//! **Cost** of a step with T token positions: matmuls 2·P·T FLOPs (P parameters) plus
//! attention 4·L·H·context per position, over `tflops·mfu·tp` (× a dequantization factor);
//! memory: weight bytes (P × bytes/weight ÷ tp) plus the KV bytes of every context read, over
//! `bandwidth·bw_eff`. The step takes the larger of the two (prefill is compute-bound, decode
//! memory-bound), plus a fixed overhead, plus with `tp > 1` two ring all-reduces per layer of
//! the step's activations over `link_gbs` (and, with quantized weights, a de/re-quantization
//! penalty on compute), plus with speculation k draft passes of the draft model.

use super::{Engine, GB};
use crate::sim::profile::Quant;

impl Engine {
    /// Duration of a step (see the module header for the model).
    pub(super) fn cost(&self, work: &[(usize, u32, bool)]) -> f64 {
        let o = &self.opts;
        let tp = o.tp as f64;
        let params = o.params_b * GB;
        let mut positions = 0f64;
        let mut attn_flops = 0f64;
        let mut kv_read = 0f64;
        let mut decodes = 0f64;
        for &(i, n, is_decode) in work {
            let s = &self.running[i];
            let n = n as f64;
            positions += n;
            let ctx_before = if is_decode {
                s.context() as f64
            } else {
                s.computed as f64
            };
            // Each position attends to everything before it.
            attn_flops += 4.0 * o.layers as f64 * o.hidden as f64 * n * (ctx_before + n / 2.0);
            kv_read += (ctx_before + n) * self.kv_bytes_per_token;
            if is_decode {
                decodes += 1.0;
            }
        }
        let mut compute_eff = o.tflops * 1e12 * o.mfu * tp;
        if o.quant != Quant::None && o.tp > 1 {
            // Quantize-then-shard partly conflicts: de/re-quantization around all-reduce and
            // small per-device tiles cost matmul efficiency.
            compute_eff /= 1.0 + 0.08 * tp.log2();
        }
        let compute =
            (2.0 * params * positions * o.quant.compute_overhead() + attn_flops) / compute_eff;
        let memory =
            (params * o.quant.bytes() / tp + kv_read / tp) / (o.bandwidth_gbs * GB * o.bw_eff);
        let mut t = compute.max(memory) + o.step_overhead_ms / 1000.0;
        if o.tp > 1 {
            let bytes = positions * o.hidden as f64 * 2.0;
            let per_allreduce = 2.0 * (tp - 1.0) / tp * bytes / (o.link_gbs * GB) + 5e-6;
            t += 2.0 * o.layers as f64 * per_allreduce;
        }
        if o.spec > 0 && decodes > 0.0 {
            let draft_params = params * o.draft_ratio;
            let draft_mem =
                draft_params * o.draft_quant().bytes() / tp / (o.bandwidth_gbs * GB * o.bw_eff);
            let draft_compute = 2.0 * draft_params * decodes / compute_eff;
            t += o.spec as f64 * draft_mem.max(draft_compute);
        }
        t
    }
}
