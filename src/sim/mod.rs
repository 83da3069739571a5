//! `bench sim`: an embedded, simulated LLM serving engine — the default target when no
//! endpoint is given, and the test bench for the harness.
//!
//! **It is a model, not a measurement.** Figures from it show the *direction and rough size* of
//! each optimization's effect under a stated cost model; they are not measurements of real
//! hardware, and nothing here should be quoted as what a GPU does.
//!
//! What it models ([`engine`]): continuous batching with `max_num_seqs` and a per-step token
//! budget; prefill-first scheduling or chunked prefill; a block KV cache with admission control,
//! preemption by recomputation and an LRU prefix cache; step cost as the larger of compute
//! (prefill-dominated) and memory traffic (decode-dominated); weight quantization (fewer bytes,
//! a dequantization overhead, more KV room); KV quantization; speculative decoding with a
//! draft whose acceptance falls when it is quantized (a step's accepted tokens streamed in one
//! chunk); tensor parallelism with all-reduce cost; a reasoning model's leading reasoning
//! tokens.
//! Options and profiles are in [`profile`]. Effects and conflicts are not written in anywhere:
//! they follow from the shared resources (compute, bandwidth, KV blocks, the token budget).
//!
//! What it leaves out: real kernels and their shapes, attention variants (FlashAttention is a
//! constant `mfu`), CUDA graphs, sampling cost, detokenization, network and PCIe transfers,
//! PD disaggregation, pipeline/expert parallelism and memory fragmentation. What it answers
//! at temperature 0 is a seeded model of answer quality under quantization ([`answer`]). Its
//! tokenizer is one token per word ([`tokenize`]).
//!
//! The HTTP surface ([`server`]) speaks the OpenAI API with vLLM's metric names, so the same
//! client and scraper work against it and a real vLLM; [`virtual_time`] runs the same engine
//! without a clock for tests.

pub mod answer;
pub mod engine;
pub mod http;
pub mod kv;
pub mod profile;
pub mod prom;
pub mod tokenize;
pub mod virtual_time;

pub use profile::{Quant, SimOptions};

#[cfg(test)]
mod tests;
