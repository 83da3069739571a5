//! `bench stack`: how optimizations combine — a factorial of up to 3 changes, or a ladder
//! applying them one at a time.

use crate::analysis::stack::{factorial, ladder, StackPlan};
use crate::cli::StackArgs;
use crate::config::stack::StackConfig;
use crate::error::BenchError;
use crate::output::record::StackContext;
use crate::output::stack::{FactorialReport, LadderReport};
use crate::{output, EXIT_OK, EXIT_REGRESSION};

pub async fn run(args: StackArgs) -> Result<u8, BenchError> {
    let files = super::requested(&args.output, None);
    if args.ladder {
        files.check::<LadderReport>()?;
    } else {
        files.check::<FactorialReport>()?;
    }
    let plan = StackPlan::new(StackConfig::from_args(&args)?)?;
    let owner = args
        .owner
        .clone()
        .unwrap_or_else(crate::config::provenance::owner);
    if args.ladder {
        let l = ladder(&plan, &plan.gate()?).await?;
        crate::out_text!("{}", output::stack::ladder(&l));
        files.write(&LadderReport {
            ladder: &l,
            owner: &owner,
        })?;
        return Ok(if l.regressed() {
            EXIT_REGRESSION
        } else {
            EXIT_OK
        });
    }
    let rows = factorial(&plan).await?;
    crate::out_text!("{}", output::stack::factorial(&rows));
    let date = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let ctx = StackContext {
        scenario: &plan.loaded.name,
        scenario_hash: &plan.loaded.traffic_hash(),
        base: args.base.as_deref().unwrap_or_default(),
        owner: &owner,
        date: &date,
    };
    files.write(&FactorialReport { rows: &rows, ctx })?;
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn ladder_attributes_each_gain_to_its_step_in_order() {
        use crate::testkit::{lognormal_run as run, rng};
        use clap::Parser;
        let dir = tempfile::tempdir().unwrap();
        let mut rng = rng(5);
        // base 100 ms; quant alone 60 ms; quant + prefix cache 30 ms.
        let configs = [
            (100.0, "none", "off"),
            (60.0, "int4", "off"),
            (30.0, "int4", "on"),
        ];
        for (i, (ms, quant, pc)) in configs.iter().enumerate() {
            for rep in 0..2 {
                let mut r = run(600, *ms, 0.0, &mut rng);
                r.scenario_name = "lad".into();
                r.run_id = format!("lad-c{i}r{rep}");
                r.vars = [("quant", *quant), ("prefix_cache", *pc)]
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect();
                let d = dir.path().join(format!("c{i}r{rep}"));
                crate::output::write_run_dir(&d, &r).unwrap();
            }
        }
        let scenario = dir.path().join("lad.toml");
        std::fs::write(&scenario, "name = \"lad\"\n[workload]\ntype = \"synthetic\"\ninput_tokens = 4\noutput_tokens = 1\n[load]\nconcurrency = 1\nrequests = 1\n").unwrap();
        let csv = dir.path().join("ladder.csv");
        let cli = crate::cli::Cli::try_parse_from([
            "bench",
            "stack",
            scenario.to_str().unwrap(),
            "--ladder",
            "--recommended",
            "--repeat",
            "2",
            "--try",
            "prefix_cache=on",
            "--try",
            "quant=int4",
            "--from",
            dir.path().to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
        ])
        .unwrap();
        let crate::cli::Command::Stack(args) = cli.command else {
            panic!()
        };
        let code = super::run(*args).await.unwrap();
        assert_eq!(code, crate::EXIT_OK);
        let text = std::fs::read_to_string(&csv).unwrap();
        let step = |change: &str| {
            text.lines()
                .find(|l| l.contains(change) && l.contains(",ttft.p50,"))
                .unwrap()
                .to_string()
        };
        let s1 = step("quant: none → int4");
        let s2 = step("prefix_cache: off → on");
        assert!(s1.contains(",improved,") && s1.contains("-4"), "{s1}");
        assert!(s2.contains(",improved,") && s2.contains("-5"), "{s2}");
        assert!(
            text.find("quant: none → int4").unwrap() < text.find("prefix_cache: off → on").unwrap(),
            "the recommended order puts quantization first"
        );
    }
}
