//! The engine model: a continuous-batching scheduler over a KV block cache, and a cost model
//! that turns each step's batch into a duration. Time is a number you pass in (seconds), so the
//! same engine runs behind HTTP in real time and inside tests in virtual time.
//!
//! **Scheduling** (per step). Without chunked prefill (vLLM's classic policy) prefills go
//! first: if waiting requests can be admitted, the step prefills their whole prompts and no
//! decode runs, so one long prompt stalls every running stream. With `chunked_prefill` every
//! step runs all decodes first, then prefill chunks — at most `long_prefill_threshold` tokens
//! of any one prompt, running prompts before new ones — until `max_num_batched_tokens` is used.
//! Admission is FIFO, bounded by `max_num_seqs` and by free KV blocks; a request whose prompt
//! prefix is resident in the prefix cache skips those tokens. When a decode needs a block and
//! none is free, the most recently admitted sequence is preempted: its blocks are freed and it
//! is recomputed from scratch later (`num_preemptions`).
//!
//! **Cost** of a step: the larger of compute and memory time, plus overheads ([`cost`]).
//!
//! **Speculative decoding** (`spec = k`): each decoding sequence verifies k draft tokens in one
//! step (k + 1 positions); each draft token is accepted with probability α (`spec_alpha` × the
//! draft precision's fidelity) until the first rejection, and one more token always comes from
//! the target, so a step yields 1 … k + 1 tokens, (1 − α^(k+1)) / (1 − α) on average.
//! Verification positions use the same token budget and compute as everything else, which is
//! why the gain shrinks as the batch grows.

mod cost;

use super::kv::{block_hashes, KvCache};
use super::profile::SimOptions;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

/// A request as the engine sees it.
#[derive(Debug, Clone)]
pub struct NewRequest {
    pub id: u64,
    pub tokens: Vec<u64>,
    /// Output tokens to generate.
    pub output_tokens: u32,
    pub arrival: f64,
}

#[derive(Debug)]
struct Seq {
    id: u64,
    prompt_len: u32,
    hashes: Vec<u64>,
    output_tokens: u32,
    generated: u32,
    /// Positions whose KV exists.
    computed: u32,
    /// The (re)computation of the context is done; the sequence decodes.
    prefilled: bool,
    /// Cached blocks referenced (a prefix of `hashes`).
    cached_held: usize,
    private_blocks: u64,
    arrival: f64,
    admitted_at: Option<f64>,
    first_token_at: Option<f64>,
    /// Prompt tokens the prefix cache served at the first admission.
    cached: u32,
}

impl Seq {
    fn context(&self) -> u32 {
        self.prompt_len + self.generated
    }
    fn prefilling(&self) -> bool {
        !self.prefilled
    }
}

/// Tokens produced for one request in one step.
#[derive(Debug, Clone, PartialEq)]
pub struct Emit {
    pub id: u64,
    pub tokens: u32,
    pub first: bool,
    pub finished: bool,
    /// With the first tokens: when the request was first scheduled — what a server reports
    /// as its own clock.
    pub admitted: Option<Admitted>,
}

/// A request's first scheduling.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Admitted {
    /// When (engine clock, s).
    pub at: f64,
    /// Waiting since its arrival, s.
    pub queued_s: f64,
    /// Prompt tokens its prefix cache served.
    pub cached: u32,
}

#[derive(Debug, Clone, Default)]
pub struct StepOutcome {
    pub duration_s: f64,
    pub emitted: Vec<Emit>,
    pub prefill_tokens: u64,
    pub decode_seqs: u64,
}

/// Server-side observations, as Prometheus histograms would hold them.
#[derive(Debug, Clone, Default)]
pub struct Observations {
    pub queue_time_s: Vec<f64>,
    pub prefill_time_s: Vec<f64>,
    pub ttft_s: Vec<f64>,
    pub e2e_s: Vec<f64>,
    /// First token → last token of each finished request.
    pub decode_time_s: Vec<f64>,
}

#[derive(Debug, Clone, Default)]
pub struct Counters {
    pub prompt_tokens: u64,
    pub generation_tokens: u64,
    pub preemptions: u64,
    pub prefix_queries: u64,
    pub prefix_hits: u64,
    pub spec_draft_tokens: u64,
    pub spec_accepted_tokens: u64,
    pub requests_finished: u64,
}

pub struct Engine {
    pub opts: SimOptions,
    kv: KvCache,
    waiting: VecDeque<Seq>,
    running: Vec<Seq>,
    rng: ChaCha8Rng,
    pub counters: Counters,
    /// Observations not yet collected by the caller (drained by [`Engine::take_observations`]).
    obs: Observations,
    kv_bytes_per_token: f64,
    pub kv_capacity_tokens: u64,
    long_prefill_threshold: u32,
}

pub(crate) const GB: f64 = 1e9;

impl Engine {
    pub fn new(opts: SimOptions) -> Result<Engine, String> {
        let kv_bytes_per_token = 2.0
            * opts.layers as f64
            * opts.kv_heads as f64
            * opts.head_dim as f64
            * opts.kv_quant.bytes();
        let tp = opts.tp as f64;
        let weights_per_device = opts.params_b * GB * opts.quant.bytes() / tp;
        let draft_per_device = if opts.spec > 0 {
            opts.params_b * opts.draft_ratio * GB * opts.draft_quant().bytes() / tp
        } else {
            0.0
        };
        // 1 GB per device for activations and the CUDA context, as engines reserve.
        let kv_room = opts.memory_gb * GB * opts.gpu_memory_utilization
            - weights_per_device
            - draft_per_device
            - GB;
        let computed_capacity = if kv_room > 0.0 {
            (kv_room * tp / kv_bytes_per_token) as u64
        } else {
            0
        };
        let kv_capacity_tokens = if opts.kv_capacity_tokens > 0 {
            opts.kv_capacity_tokens
        } else {
            computed_capacity
        };
        if kv_capacity_tokens < opts.block_size as u64 {
            return Err(format!(
                "out of memory: {:.1} GB of weights per device leave no room for the KV cache in {:.0} GB × {:.2}; quantize (quant=int8|int4), raise tp, or lower the model size",
                (weights_per_device + draft_per_device) / GB,
                opts.memory_gb,
                opts.gpu_memory_utilization
            ));
        }
        let blocks = kv_capacity_tokens / opts.block_size as u64;
        Ok(Engine {
            rng: ChaCha8Rng::seed_from_u64(opts.seed),
            kv: KvCache::new(blocks),
            waiting: VecDeque::new(),
            running: Vec::new(),
            counters: Counters::default(),
            obs: Observations::default(),
            kv_bytes_per_token,
            kv_capacity_tokens: blocks * opts.block_size as u64,
            long_prefill_threshold: (opts.max_num_batched_tokens / 4).max(opts.block_size),
            opts,
        })
    }

    /// Queues a request; refuses one that could never run.
    pub fn add(&mut self, r: NewRequest) -> Result<(), String> {
        let total = r.tokens.len() as u64 + r.output_tokens as u64;
        if r.tokens.len() as u64 > self.opts.max_model_len as u64 {
            return Err(format!(
                "the prompt has {} tokens, more than max_model_len {}",
                r.tokens.len(),
                self.opts.max_model_len
            ));
        }
        if self.blocks_for(total.min(u32::MAX as u64) as u32) + 1 > self.kv.total_blocks {
            return Err(format!(
                "prompt + output ({total} tokens) exceed the KV cache ({} tokens)",
                self.kv_capacity_tokens
            ));
        }
        let hashes = if self.opts.prefix_cache {
            block_hashes(&r.tokens, self.opts.block_size as usize)
        } else {
            Vec::new()
        };
        self.waiting.push_back(Seq {
            id: r.id,
            prompt_len: r.tokens.len().max(1) as u32,
            hashes,
            output_tokens: r.output_tokens.max(1),
            generated: 0,
            computed: 0,
            prefilled: false,
            cached_held: 0,
            private_blocks: 0,
            arrival: r.arrival,
            admitted_at: None,
            first_token_at: None,
            cached: 0,
        });
        Ok(())
    }

    /// Empties the prefix cache of every block no running request holds.
    pub fn reset_prefix_cache(&mut self) -> usize {
        self.kv.reset()
    }

    /// Removes a request (client went away); frees its blocks.
    pub fn abort(&mut self, id: u64) {
        if let Some(i) = self.running.iter().position(|s| s.id == id) {
            let s = self.running.remove(i);
            self.release(&s);
        }
        self.waiting.retain(|s| s.id != id);
    }

    pub fn has_work(&self) -> bool {
        !self.waiting.is_empty() || !self.running.is_empty()
    }

    pub fn num_running(&self) -> usize {
        self.running.len()
    }

    pub fn num_waiting(&self) -> usize {
        self.waiting.len()
    }

    pub fn kv_usage(&self) -> f64 {
        self.kv.usage()
    }

    pub fn take_observations(&mut self) -> Observations {
        std::mem::take(&mut self.obs)
    }

    fn release(&mut self, s: &Seq) {
        self.kv.release(&s.hashes[..s.cached_held]);
        self.kv.free(s.private_blocks);
    }

    fn blocks_for(&self, tokens: u32) -> u64 {
        (tokens as u64).div_ceil(self.opts.block_size as u64)
    }

    /// Makes sure `s` holds blocks for `tokens` positions; false if the cache is full.
    fn grow(kv: &mut KvCache, bs: u32, s: &mut Seq, tokens: u32) -> bool {
        let need = (tokens as u64).div_ceil(bs as u64);
        let held = s.cached_held as u64 + s.private_blocks;
        if need <= held {
            return true;
        }
        if kv.allocate(need - held) {
            s.private_blocks += need - held;
            true
        } else {
            false
        }
    }

    /// Preempts the most recently admitted running sequence (recompute later).
    fn preempt_last(&mut self) -> Option<u64> {
        let mut s = self.running.pop()?;
        self.release(&s);
        s.computed = 0;
        s.prefilled = false;
        s.cached_held = 0;
        s.private_blocks = 0;
        self.counters.preemptions += 1;
        let id = s.id;
        self.waiting.push_front(s);
        Some(id)
    }

    /// Tries to admit the head of the waiting queue for a first chunk of at most `max_chunk`
    /// tokens; returns the chunk scheduled.
    fn admit_head(&mut self, max_chunk: u32, now: f64) -> Option<u32> {
        let bs = self.opts.block_size;
        let s = self.waiting.front_mut()?;
        let mut hit_blocks = 0;
        if self.opts.prefix_cache && s.computed == 0 {
            hit_blocks = self.kv.lookup(&s.hashes);
            // The last prompt token is always computed, to produce the first output.
            let max_hit = ((s.context() - 1) / bs) as usize;
            hit_blocks = hit_blocks.min(max_hit);
        }
        let start = hit_blocks as u32 * bs;
        let chunk = (s.context() - start).min(max_chunk);
        let need_blocks = self
            .blocks_for(start + chunk)
            .saturating_sub(hit_blocks as u64);
        // Reserve a block of headroom for decode growth, so admission does not trigger an
        // immediate preemption.
        if self.kv.available() < need_blocks + 1 {
            return None;
        }
        let mut s = self.waiting.pop_front()?;
        if s.generated == 0 && s.admitted_at.is_none() {
            self.counters.prefix_queries += s.prompt_len as u64;
            self.counters.prefix_hits += start as u64;
            s.cached = start;
        }
        self.kv.acquire(&s.hashes[..hit_blocks]);
        s.cached_held = hit_blocks;
        s.computed = start;
        if !Self::grow(&mut self.kv, bs, &mut s, start + chunk) {
            // Cannot happen (checked above); put it back rather than lose it.
            self.kv.release(&s.hashes[..hit_blocks]);
            s.cached_held = 0;
            s.computed = 0;
            self.waiting.push_front(s);
            return None;
        }
        if s.admitted_at.is_none() {
            s.admitted_at = Some(now);
            self.obs.queue_time_s.push((now - s.arrival).max(0.0));
        }
        self.running.push(s);
        Some(chunk)
    }

    /// Runs one step starting at `now`. Call only when [`has_work`](Self::has_work).
    pub fn step(&mut self, now: f64) -> StepOutcome {
        let work = self.schedule(now);
        if work.is_empty() && !self.running.is_empty() {
            // Every running sequence is stuck mid-prefill for want of blocks: free some.
            self.preempt_last();
        }
        if work.is_empty() {
            // Nothing could run this step: idle one overhead period so time still advances.
            return StepOutcome {
                duration_s: self.opts.step_overhead_ms.max(1.0) / 1000.0,
                ..Default::default()
            };
        }

        let duration_s = self.cost(&work);
        let end = now + duration_s;
        let mut out = StepOutcome {
            duration_s,
            ..Default::default()
        };
        self.apply(&work, end, &mut out);
        if self.opts.prefix_cache {
            self.cache_prompts();
        }
        self.retire(end);
        out
    }

    /// This step's work — (index into `running`, positions, is a decode) — under the token
    /// budget: whole waiting prompts first without chunked prefill, else every running
    /// sequence's decode (preempting the newest when the KV cache is full), then prompt
    /// chunks of running and newly admitted sequences.
    fn schedule(&mut self, now: f64) -> Vec<(usize, u32, bool)> {
        let bs = self.opts.block_size;
        let max_seqs = self.opts.max_num_seqs as usize;
        let spec_k = self.opts.spec;
        let mut work: Vec<(usize, u32, bool)> = Vec::new();
        let mut budget = self.opts.max_num_batched_tokens;

        if !self.opts.chunked_prefill {
            // Prefill-first: whole prompts, no decodes in the same step.
            let prefill_budget = budget.max(self.opts.max_model_len);
            let mut used = 0u32;
            while self.running.len() < max_seqs {
                let Some(front) = self.waiting.front() else {
                    break;
                };
                let remaining = front.context() - front.computed;
                if used > 0 && used + remaining > prefill_budget {
                    break;
                }
                match self.admit_head(u32::MAX, now) {
                    Some(chunk) => {
                        used += chunk;
                        work.push((self.running.len() - 1, chunk, false));
                    }
                    None => break,
                }
            }
        }
        if work.is_empty() {
            // Decodes (all running sequences past their prefill).
            let mut i = 0;
            while i < self.running.len() {
                if self.running[i].prefilling() {
                    i += 1;
                    continue;
                }
                let positions = if spec_k > 0 { spec_k + 1 } else { 1 };
                let target = self.running[i].context() + positions;
                let ok = {
                    let s = &mut self.running[i];
                    Self::grow(&mut self.kv, bs, s, target)
                };
                if ok {
                    work.push((i, positions, true));
                    budget = budget.saturating_sub(positions);
                    i += 1;
                } else {
                    // Free room by preempting the newest sequence (possibly this one).
                    let victim_is_self = i == self.running.len() - 1;
                    self.preempt_last();
                    work.retain(|(j, _, _)| *j < self.running.len());
                    if victim_is_self {
                        break;
                    }
                }
            }
            if self.opts.chunked_prefill {
                // Running prompts first, then new ones, each chunk capped.
                let cap = self.long_prefill_threshold;
                for i in 0..self.running.len() {
                    if budget == 0 {
                        break;
                    }
                    let s = &self.running[i];
                    if !s.prefilling() {
                        continue;
                    }
                    let chunk = (s.context() - s.computed).min(budget).min(cap);
                    let target = s.computed + chunk;
                    if Self::grow(&mut self.kv, bs, &mut self.running[i], target) {
                        work.push((i, chunk, false));
                        budget -= chunk;
                    }
                }
                while budget > 0 && self.running.len() < max_seqs && !self.waiting.is_empty() {
                    match self.admit_head(budget.min(cap), now) {
                        Some(chunk) => {
                            work.push((self.running.len() - 1, chunk, false));
                            budget -= chunk;
                        }
                        None => break,
                    }
                }
            }
        }
        work
    }

    /// Runs the step's work ending at `end`: speculative acceptance drawn per decode, prefill
    /// positions computed, tokens emitted and first tokens observed.
    fn apply(&mut self, work: &[(usize, u32, bool)], end: f64, out: &mut StepOutcome) {
        let spec_k = self.opts.spec;
        let alpha =
            (self.opts.spec_alpha * self.opts.draft_quant().draft_fidelity()).clamp(0.0, 1.0);
        for &(i, positions, is_decode) in work {
            let s = &mut self.running[i];
            let mut emitted = 0;
            if is_decode {
                out.decode_seqs += 1;
                let mut n = 1;
                if spec_k > 0 {
                    let mut accepted = 0;
                    while accepted < spec_k && self.rng.random_bool(alpha) {
                        accepted += 1;
                    }
                    self.counters.spec_draft_tokens += spec_k as u64;
                    self.counters.spec_accepted_tokens += accepted as u64;
                    n = accepted + 1;
                }
                emitted = n.min(s.output_tokens - s.generated);
                // Every position fed has KV now; the newest token is fed next step.
                s.computed = s.context() + emitted - 1;
            } else {
                out.prefill_tokens += positions as u64;
                s.computed += positions;
                if s.computed >= s.context() {
                    s.prefilled = true;
                    // The prefill's last position yields the next token (the first one, or
                    // the next after a recompute).
                    if s.generated < s.output_tokens {
                        emitted = 1;
                    }
                }
            }
            if emitted > 0 {
                let first = s.generated == 0;
                s.generated += emitted;
                if first {
                    s.first_token_at = Some(end);
                    if let Some(a) = s.admitted_at {
                        self.obs.prefill_time_s.push((end - a).max(0.0));
                    }
                    self.obs.ttft_s.push((end - s.arrival).max(0.0));
                    self.counters.prompt_tokens += s.prompt_len as u64;
                }
                self.counters.generation_tokens += emitted as u64;
                out.emitted.push(Emit {
                    id: s.id,
                    tokens: emitted,
                    first,
                    finished: s.generated >= s.output_tokens,
                    admitted: first.then_some(s.admitted_at).flatten().map(|a| Admitted {
                        at: a,
                        queued_s: (a - s.arrival).max(0.0),
                        cached: s.cached,
                    }),
                });
            }
        }
    }

    /// Caches the full prompt blocks of sequences whose prefill just completed.
    fn cache_prompts(&mut self) {
        for s in self.running.iter_mut() {
            if !s.prefilling() && s.cached_held < s.hashes.len() {
                for h in &s.hashes[s.cached_held..] {
                    self.kv.promote(*h);
                }
                s.private_blocks = s
                    .private_blocks
                    .saturating_sub((s.hashes.len() - s.cached_held) as u64);
                s.cached_held = s.hashes.len();
            }
        }
    }

    /// Retires finished sequences, observing their end-to-end and decode times.
    fn retire(&mut self, end: f64) {
        let mut i = 0;
        while i < self.running.len() {
            if self.running[i].generated >= self.running[i].output_tokens {
                let s = self.running.remove(i);
                self.release(&s);
                self.counters.requests_finished += 1;
                self.obs.e2e_s.push((end - s.arrival).max(0.0));
                if let Some(f) = s.first_token_at {
                    self.obs.decode_time_s.push((end - f).max(0.0));
                }
            } else {
                i += 1;
            }
        }
    }

    /// Output length for a request: `max_tokens`, or with EOS allowed a seeded natural length
    /// (exponential with mean `eos_mean_tokens`) capped by `max_tokens`.
    pub fn output_length(&mut self, max_tokens: u32, ignore_eos: bool) -> u32 {
        if ignore_eos {
            return max_tokens.max(1);
        }
        let u: f64 = self.rng.random::<f64>().max(1e-12);
        let natural = (-u.ln() * self.opts.eos_mean_tokens as f64).ceil().max(1.0) as u32;
        natural.min(max_tokens.max(1))
    }
}
