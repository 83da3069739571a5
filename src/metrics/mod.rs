//! Records → numbers: the one quantile estimator ([`quantile`]), the run's summary
//! ([`summary`]: counts, tokens, throughput, latency distributions) and what the server's own
//! Prometheus metrics say ([`server`]) and a GPU node's dcgm-exporter ([`gpu`]), the run in time windows with its steady state
//! ([`windows`], [`slices`], on a bounded [`grid`] of the run's clock), and whether a stored run is whole and self-consistent
//! ([`consistency`]) before the gate takes it as a reference.

pub mod consistency;
pub mod crosscheck;
pub mod gpu;
pub mod grid;
pub mod quality;
pub mod quantile;
pub mod server;
pub mod slices;
pub mod steady;
pub mod summary;
pub mod windows;
