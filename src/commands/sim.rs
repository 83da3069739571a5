//! `bench sim`: serve the embedded simulated engine until Ctrl-C.

use crate::cli::SimArgs;
use crate::config::{kv, run::sim_options};
use crate::error::BenchError;
use crate::sim::http::{serve, ServeConfig};
use crate::EXIT_OK;

pub async fn run(args: SimArgs) -> Result<u8, BenchError> {
    let mut layers = vec![("profile".to_string(), args.profile.clone())];
    layers.extend(kv::pairs("--opt", &args.opts)?);
    let cfg = ServeConfig {
        opts: sim_options(0, &[&layers], "--opt")?,
        listen: args.listen,
        model: args.model.clone(),
        truth_log: args.truth_log.clone(),
    };
    let (model, profile) = (args.model, args.profile);
    serve(
        cfg,
        move |addr| {
            crate::say!("bench sim: profile {profile}, model `{model}`, serving http://{addr}/v1 (this is a model of an engine, not a measurement); Ctrl-C stops");
        },
        async {
            let _ = tokio::signal::ctrl_c().await;
        },
    )
    .await?;
    Ok(EXIT_OK)
}
