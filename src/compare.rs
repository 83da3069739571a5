//! `bench baseline` and `bench compare`: record a baseline, then judge a candidate against it
//! one variable at a time.
//!
//! Comparability first: the candidate's scenario hash must equal the baseline's (same traffic),
//! and its `vars` may differ in at most one key (the change under test) — none is an A/A check,
//! more than one is refused unless `--allow-multi`, which marks every result unattributable.
//! Then [`crate::gate::evaluate`] decides each metric.

use crate::app::{default_out_dir, run_and_write, RunSetup};
use crate::baseline::{self, Baseline};
use crate::cli::{BaselineArgs, CompareArgs};
use crate::error::BenchError;
use crate::export::compare as render;
use crate::gate::{self, GateConfig, Row};
use crate::result::RunResult;
use crate::stats::verdict::Verdict;
use crate::{EXIT_ERROR, EXIT_OK, EXIT_REGRESSION};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

pub const COMPARE_SCHEMA: u32 = 1;

/// One var that differs: `(key, baseline value, candidate value)`; a missing var is `∅`.
pub type VarDiff = (String, String, String);

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Comparison {
    pub schema_version: u32,
    pub scenario_name: String,
    pub scenario_hash: String,
    /// Store name, or the path of the run given with `--against`.
    pub baseline: String,
    pub baseline_repetitions: usize,
    pub candidate_run: String,
    pub diffs: Vec<VarDiff>,
    /// `prefix_cache: off → on`, `none (A/A)`, or the list when several differ.
    pub change: String,
    /// False when more than one var differs (`--allow-multi`).
    pub attributable: bool,
    pub alpha: f64,
    pub rows: Vec<Row>,
    /// What the server's own metrics say changed ("prefix hit rate 0 % → 61 %").
    #[serde(default)]
    pub server_effects: Vec<String>,
    pub regressed: bool,
    pub created_at: DateTime<Utc>,
}

/// Server-side figures of the candidate, beside the baseline's where it has them.
pub fn server_effects(base: &Baseline, cand: &RunResult) -> Vec<String> {
    use crate::servermetrics::ServerMetrics;
    let Some(c) = &cand.server_metrics else {
        return Vec::new();
    };
    let b: Option<&ServerMetrics> = base
        .repetitions
        .first()
        .and_then(|r| r.server_metrics.as_ref());
    type Get = fn(&ServerMetrics) -> Option<f64>;
    type Fmt = fn(f64) -> String;
    let figures: [(&str, Get, Fmt); 5] = [
        (
            "prefix hit rate",
            |m| m.prefix_cache_hit_rate,
            |v| format!("{:.0} %", v * 100.0),
        ),
        (
            "acceptance",
            |m| m.spec_acceptance_rate,
            |v| format!("{v:.2}"),
        ),
        ("preemptions", |m| m.preemptions, |v| format!("{v:.0}")),
        (
            "queue time mean",
            |m| m.queue_time_mean_s,
            |v| format!("{:.1} ms", v * 1e3),
        ),
        (
            "KV peak",
            |m| m.kv_usage_peak,
            |v| format!("{:.0} %", v * 100.0),
        ),
    ];
    figures
        .iter()
        .filter_map(|(name, get, fmt)| {
            let cv = get(c)?;
            Some(match b.and_then(get) {
                Some(bv) if fmt(bv) != fmt(cv) => format!("{name} {} → {}", fmt(bv), fmt(cv)),
                _ => format!("{name} {}", fmt(cv)),
            })
        })
        .collect()
}

pub fn diff_vars(base: &BTreeMap<String, String>, cand: &BTreeMap<String, String>) -> Vec<VarDiff> {
    let mut keys: Vec<&String> = base.keys().chain(cand.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|k| {
            let (b, c) = (base.get(k), cand.get(k));
            (b != c).then(|| {
                (
                    k.clone(),
                    b.cloned().unwrap_or_else(|| "∅".into()),
                    c.cloned().unwrap_or_else(|| "∅".into()),
                )
            })
        })
        .collect()
}

pub fn describe_change(diffs: &[VarDiff]) -> String {
    match diffs {
        [] => "none (A/A)".into(),
        d => d
            .iter()
            .map(|(k, a, b)| format!("{k}: {a} → {b}"))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// Builds the comparison, refusing what is not comparable.
pub fn compare(
    base: &Baseline,
    cand: &RunResult,
    allow_multi: bool,
    cfg: &GateConfig,
) -> Result<Comparison, BenchError> {
    if base.scenario_hash != cand.scenario_hash {
        return Err(BenchError::usage(format!(
            "not comparable: the candidate's scenario hash {} differs from the baseline's {} — the traffic (workload, load, request parameters, seed or SLOs) changed; record a new baseline",
            short(&cand.scenario_hash),
            short(&base.scenario_hash)
        )));
    }
    let diffs = diff_vars(&base.vars, &cand.vars);
    if diffs.len() > 1 && !allow_multi {
        return Err(BenchError::usage(format!(
            "more than one variable changed ({}); change one at a time, or pass --allow-multi (results are then unattributable)",
            describe_change(&diffs)
        )));
    }
    let rows = gate::evaluate(&base.repetitions, cand, cfg);
    Ok(Comparison {
        schema_version: COMPARE_SCHEMA,
        scenario_name: cand.scenario_name.clone(),
        scenario_hash: cand.scenario_hash.clone(),
        baseline: base.name.clone(),
        baseline_repetitions: base.repetitions.len(),
        candidate_run: cand.run_id.clone(),
        change: describe_change(&diffs),
        attributable: diffs.len() <= 1,
        diffs,
        alpha: cfg.alpha,
        regressed: rows.iter().any(|r| r.verdict == Verdict::Regressed),
        server_effects: server_effects(base, cand),
        rows,
        created_at: Utc::now(),
    })
}

fn short(h: &str) -> &str {
    &h[..h.len().min(12)]
}

pub async fn baseline_command(args: BaselineArgs) -> Result<u8, BenchError> {
    if args.list {
        let all = baseline::list(&args.baselines);
        if all.is_empty() {
            crate::out!("no baselines under {}", args.baselines.display());
        }
        for (scenario, name, path) in all {
            match Baseline::load(&path) {
                Ok(b) => crate::out!(
                    "{scenario}/{name}: {} repetitions, created {} on {}, {} vars",
                    b.repetitions.len(),
                    b.environment.created_at.format("%Y-%m-%d %H:%M UTC"),
                    b.environment.host,
                    b.vars.len()
                ),
                Err(e) => crate::out!("{scenario}/{name}: unreadable — {e}"),
            }
        }
        return Ok(EXIT_OK);
    }
    let scenario_file = args
        .scenario
        .clone()
        .ok_or_else(|| BenchError::usage("a scenario file is required"))?;
    let setup = RunSetup::from_args(&scenario_file, &args.opts)?;
    let path = baseline::path(
        &args.baselines,
        &setup.scenario.name,
        args.show.as_deref().unwrap_or(&args.name),
    );
    if args.show.is_some() {
        let b = Baseline::load(&path)?;
        crate::out_text!("{}", render::baseline_summary(&b));
        return Ok(EXIT_OK);
    }
    if args.repeat == 0 {
        return Err(BenchError::usage("--repeat must be at least 1"));
    }
    if path.exists() && !args.force {
        return Err(BenchError::usage(format!(
            "{} exists; pass --force to replace it or --name to keep both",
            path.display()
        )));
    }
    let mut reps = Vec::new();
    let stem = setup
        .opts_out()
        .unwrap_or_else(|| default_out_dir(&format!("{}-baseline", setup.scenario.name)));
    for i in 1..=args.repeat {
        eprintln!("baseline {}: repetition {i} of {}", args.name, args.repeat);
        let run = run_and_write(&setup, &stem.join(format!("rep{i}")), false).await?;
        if !run.complete {
            return Ok(EXIT_ERROR);
        }
        reps.push(run);
    }
    let b = Baseline::new(&args.name, reps)?;
    b.save(&path, args.force)?;
    crate::out_text!("{}", render::baseline_summary(&b));
    crate::out!(
        "wrote {} (run directories under {})",
        path.display(),
        stem.display()
    );
    Ok(EXIT_OK)
}

/// `[gate]` thresholds: the file given (or `ci/gate.toml` when present), then the scenario's.
fn gate_layers(
    file: Option<&Path>,
    scenario: &[(String, String)],
) -> Result<Vec<Vec<(String, String)>>, BenchError> {
    let default = Path::new("ci/gate.toml");
    let path = file.or_else(|| default.exists().then_some(default));
    let mut layers = Vec::new();
    if let Some(p) = path {
        let text = std::fs::read_to_string(p).map_err(|e| {
            BenchError::usage(format!("cannot read gate file {}: {e}", p.display()))
        })?;
        let v: toml::Table = toml::from_str(&text)
            .map_err(|e| BenchError::usage(format!("{}: {}", p.display(), e.message())))?;
        let mut layer = Vec::new();
        if let Some(g) = v.get("gate") {
            let t = g.as_table().ok_or_else(|| {
                BenchError::usage(format!("{}: [gate] must be a table", p.display()))
            })?;
            for (k, v) in t {
                let s = v.as_str().ok_or_else(|| {
                    BenchError::usage(format!(
                        "{}: gate.{k} must be a string like \"10%\"",
                        p.display()
                    ))
                })?;
                layer.push((k.clone(), s.to_string()));
            }
        }
        layers.push(layer);
    }
    layers.push(scenario.to_vec());
    Ok(layers)
}

pub async fn compare_command(args: CompareArgs) -> Result<u8, BenchError> {
    if !(args.alpha > 0.0 && args.alpha < 0.5) {
        return Err(BenchError::usage("--alpha must be between 0 and 0.5"));
    }
    let setup = RunSetup::from_args(&args.scenario, &args.opts)?;
    let layers = gate_layers(args.gate.as_deref(), &setup.scenario.gate)?;
    let refs: Vec<&[(String, String)]> = layers.iter().map(|l| l.as_slice()).collect();
    let thresholds = gate::thresholds(&refs).map_err(BenchError::Usage)?;
    let cfg = GateConfig {
        thresholds,
        alpha: args.alpha,
        replicates: 1000,
        seed: setup.scenario.seed,
    };
    let base = match &args.against {
        Some(p) => Baseline::from_run(p, RunResult::load(p)?)?,
        None => Baseline::load(&baseline::path(
            &args.baselines,
            &setup.scenario.name,
            &args.name,
        ))?,
    };
    let cand = match &args.candidate {
        Some(p) => {
            if !args.opts.opts.is_empty() || args.opts.endpoint.is_some() {
                eprintln!("warning: --candidate given: --opt/--endpoint are ignored (the stored run is judged as it is)");
            }
            RunResult::load(p)?
        }
        None => {
            let out = setup
                .opts_out()
                .unwrap_or_else(|| default_out_dir(&setup.scenario.name));
            let run = run_and_write(&setup, &out, false).await?;
            if !run.complete {
                return Ok(EXIT_ERROR);
            }
            eprintln!("candidate run written to {}", out.display());
            run
        }
    };
    let c = compare(&base, &cand, args.allow_multi, &cfg)?;
    crate::out_text!("{}", render::table(&c));
    let md = render::markdown(&c);
    if let Some(p) = &args.markdown {
        crate::export::write_atomic(p, md.as_bytes())?;
    }
    if let Ok(summary) = std::env::var("GITHUB_STEP_SUMMARY") {
        if !summary.is_empty() {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&summary)
                .map_err(|source| BenchError::Write {
                    path: summary.clone().into(),
                    source,
                })?;
            let _ = f.write_all(md.as_bytes());
        }
    }
    if let Some(p) = &args.html {
        crate::export::write_atomic(
            p,
            crate::report::compare_report(&c, Some((&base.repetitions, &cand))).as_bytes(),
        )?;
    }
    if let Some(p) = &args.json {
        let json = serde_json::to_vec_pretty(&c).map_err(|e| BenchError::Runtime(e.to_string()))?;
        crate::export::write_atomic(p, &json)?;
    }
    if let Some(p) = &args.record {
        let owner = args.owner.clone().unwrap_or_else(default_owner);
        render::append_record(p, &c, &owner, args.note.as_deref().unwrap_or(""))?;
        crate::out!("record rows appended to {}", p.display());
    }
    Ok(if c.regressed {
        EXIT_REGRESSION
    } else {
        EXIT_OK
    })
}

fn default_owner() -> String {
    std::process::Command::new("git")
        .args(["config", "user.name"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("USER").ok())
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::tests::run;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn cfg() -> GateConfig {
        GateConfig {
            thresholds: gate::thresholds(&[]).unwrap(),
            alpha: 0.05,
            replicates: 500,
            seed: 1,
        }
    }

    fn vars(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn one_variable_at_a_time() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut reps: Vec<RunResult> = (0..3).map(|_| run(300, 40.0, 0.0, &mut rng)).collect();
        for r in &mut reps {
            r.vars = vars(&[("prefix_cache", "off"), ("engine", "x")]);
        }
        let base = Baseline::new("main", reps).unwrap();
        let mut cand = run(300, 40.0, 0.0, &mut rng);
        cand.vars = vars(&[("prefix_cache", "off"), ("engine", "x")]);
        let c = compare(&base, &cand, false, &cfg()).unwrap();
        assert_eq!(c.change, "none (A/A)");
        cand.vars.insert("prefix_cache".into(), "on".into());
        let c = compare(&base, &cand, false, &cfg()).unwrap();
        assert_eq!(c.change, "prefix_cache: off → on");
        assert!(c.attributable);
        cand.vars.insert("quant".into(), "int4".into());
        let e = compare(&base, &cand, false, &cfg())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("more than one variable changed") && e.contains("quant: ∅ → int4"),
            "{e}"
        );
        let c = compare(&base, &cand, true, &cfg()).unwrap();
        assert!(!c.attributable);
        let rows = crate::export::compare::record_rows(&c, "me", "");
        assert!(rows.iter().all(|r| r[3].starts_with("unattributable: ")));
        cand.scenario_hash = "other".into();
        assert!(compare(&base, &cand, true, &cfg())
            .unwrap_err()
            .to_string()
            .contains("not comparable"));
    }

    #[test]
    fn record_appends_under_one_header_and_refuses_foreign_csv() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let base = Baseline::new(
            "main",
            (0..2).map(|_| run(200, 40.0, 0.0, &mut rng)).collect(),
        )
        .unwrap();
        let cand = run(200, 60.0, 0.0, &mut rng);
        let c = compare(&base, &cand, false, &cfg()).unwrap();
        assert!(c.regressed);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("records.csv");
        crate::export::compare::append_record(&p, &c, "=cmd", "first").unwrap();
        crate::export::compare::append_record(&p, &c, "me", "second").unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.matches("date,owner,scenario").count(), 1);
        assert_eq!(text.lines().count(), 1 + 2 * c.rows.len());
        assert!(text.contains("'=cmd"), "owner cells are formula-escaped");
        let ttft = text.lines().find(|l| l.contains(",ttft.p50,")).unwrap();
        assert!(ttft.contains(",regressed,"));
        assert!(
            text.contains("ttft.p95 +"),
            "side effects name the other regressed metrics"
        );
        std::fs::write(&p, "a,b\n1,2\n").unwrap();
        assert!(crate::export::compare::append_record(&p, &c, "me", "").is_err());
    }

    #[test]
    fn corrupt_or_foreign_baselines_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("b.json");
        for (text, expect) in [
            ("{not json", "not valid JSON"),
            (
                "{\"kind\": \"bench-baseline\", \"schema_version\": 99}",
                "schema_version",
            ),
            ("{\"schema_version\": 1}", "not a bench baseline"),
        ] {
            std::fs::write(&p, text).unwrap();
            let e = Baseline::load(&p).unwrap_err().to_string();
            assert!(e.contains(expect), "{e}");
        }
        assert!(Baseline::load(&dir.path().join("missing.json"))
            .unwrap_err()
            .to_string()
            .contains("bench baseline SCENARIO"));
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let b = Baseline::new("main", vec![run(10, 1.0, 0.0, &mut rng)]).unwrap();
        b.save(&p, true).unwrap();
        assert_eq!(Baseline::load(&p).unwrap().repetitions.len(), 1);
        assert!(b
            .save(&p, false)
            .unwrap_err()
            .to_string()
            .contains("--force"));
    }
}
