//! Plan → records: the [`runner`] releases each planned request at its intended time and
//! collects exactly one record per request sent; the [`client`] sends it to an
//! OpenAI-compatible server and times its stream. TTFT is measured in
//! [`client`] (`Progress::events`: the first chunk carrying generated text, timed from the
//! request's *intended* send), not on the first byte the server sends.

pub mod client;
pub mod runner;
