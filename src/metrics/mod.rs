//! Records → numbers: the one quantile estimator ([`quantile`]), the run's summary
//! ([`summary`]: counts, tokens, throughput, latency distributions) and what the server's own
//! Prometheus metrics say ([`server`]).

pub mod quantile;
pub mod server;
pub mod summary;
