//! The files `bench init` writes, as text: the scenario, the gate table (each row gated or
//! turned off by the baseline's plan, with why), and the shipped `ci/gate.sh` and workflow.

use super::{Reference, Setup};
use crate::verdict::forecast::RowPlan;
use std::fmt::Write;
use std::path::Path;

/// `ci/gate.sh`, as this project ships it.
pub const GATE_SCRIPT: &str = include_str!("../../../ci/gate.sh");

/// The shipped workflow (`ci/github/bench-gate.yml`): its version line and its comment
/// switches are the lines [`workflow`] fills in.
const WORKFLOW: &str = include_str!("../../../ci/github/bench-gate.yml");
const VERSION_LINE: &str = "      BENCH_VERSION: \"";
const COMMENT_OFF: &str = "      BENCH_COMMENT: \"false\"";
const PR_READ: &str = "  pull-requests: read";

/// The workflow for a repository: bench pinned to this version; with `comment`, the sticky
/// pull-request comment on (and the permission it needs).
pub fn workflow(comment: bool) -> String {
    let mut out = String::new();
    for line in WORKFLOW.lines() {
        if line.starts_with(VERSION_LINE) {
            out += &format!("{VERSION_LINE}{}\"", env!("CARGO_PKG_VERSION"));
        } else if comment && line == COMMENT_OFF {
            out += "      BENCH_COMMENT: \"true\"";
        } else if comment && line == PR_READ {
            out += "  pull-requests: write";
        } else {
            out += line;
        }
        out.push('\n');
    }
    out
}

/// The scenario: a closed loop of synthetic chat requests of the given shape.
pub fn scenario(s: &Setup, model: Option<&str>) -> String {
    let sh = &s.shape;
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# The scenario the regression gate (ci/gate.sh) runs on every change, written by `bench init`.\n\
         # Shape it like your traffic, then record its baseline again:\n\
         #   bench baseline {} --force\n\
         name = \"{}\"\n\
         description = \"{} chat requests, {} at a time, {}-token prompts, {} tokens out\"\n\
         api = \"chat\"\n\
         seed = 1",
        Path::new("scenarios").join(format!("{}.toml", s.name)).display(),
        s.name,
        sh.requests,
        sh.concurrency,
        sh.input_tokens,
        sh.output_tokens
    );
    match &s.endpoint {
        Some(e) => {
            let _ = writeln!(t, "endpoint = {}", toml_str(e));
        }
        None => t += "# No endpoint: bench's embedded simulator serves the requests.\n",
    }
    if let Some(m) = model {
        let _ = writeln!(t, "model = {}", toml_str(m));
    }
    if let Some(v) = &s.api_key_env {
        let _ = writeln!(t, "api_key_env = {}", toml_str(v));
    }
    let _ = write!(
        t,
        "\n[request]\ntemperature = 0.0\n\
         # Every answer runs to max_tokens, so that runs compare answers of one length.\n\
         ignore_eos = true\nfirst_token_timeout_s = 120\ntimeout_s = 600\n\n\
         [workload]\ntype = \"synthetic\"\ninput_tokens = {}\noutput_tokens = {}\n\n\
         [load]\nconcurrency = {}\nrequests = {}\nwarmup = {}\n\n\
         # Answer quality beside speed (a quantization that changes answers cannot pass on its\n\
         # speed): 400 short questions after each arm's first two runs, judged as accuracy and\n\
         # agreement. Uncomment, then record the baseline again.\n\
         # [quality]\n# set = \"builtin\"\n",
        sh.input_tokens,
        sh.output_tokens,
        sh.concurrency,
        sh.requests,
        sh.concurrency.min(4)
    );
    t
}

/// `ci/gate.toml`: the scenario, how the arms are measured and why, what the server showed,
/// and every planned row — gated at its threshold where the cap settles it, else off, with why.
pub fn gate(s: &Setup, scenario: &Path, rows: &[RowPlan], findings: &[String]) -> String {
    let mut t = String::from(
        "# The regression gate, written by `bench init`: `bash ci/gate.sh` compares every scenario\n\
         # below against its baseline in baselines/ and exits 0 (pass), 1 (regression) or 2 (error).\n#\n\
         # What the baseline's runs showed about the server:\n",
    );
    for f in findings {
        let _ = writeln!(t, "#   - {f}");
    }
    let _ = writeln!(
        t,
        "\nscenarios = [{}]",
        toml_str(&scenario.display().to_string())
    );
    t += &reference(&s.reference);
    t += "\n# Thresholds: \"10%\" (latency quantiles, lower is better), \"-5%\" (throughput, higher is\n\
          # better), \"+0.5pp\" (absolute), \"off\". Each row is gated only where the baseline's plan\n\
          # (`bench compare --plan`) settles it within the cap of 12 runs a side.\n[gate]\n";
    for r in rows {
        let key = format!("\"{}\"", r.metric);
        let (value, why) = match (r.runs, &r.advice) {
            (Some(_), Some(advice)) => (r.threshold.clone(), advice.clone()),
            (Some(n), None) => {
                (
                    r.threshold.clone(),
                    match r.detectable_pct {
                        Some(p) => {
                            format!("settled in ≈ {n} runs a side; 12 runs catch a regression of {p:.0} %")
                        }
                        None => format!("settled in ≈ {n} runs a side"),
                    },
                )
            }
            (None, advice) => (
                "off".to_string(),
                advice.clone().unwrap_or_else(|| "no plan".into()),
            ),
        };
        let _ = writeln!(t, "{:<22} = {:<8} # {why}", key, toml_str(&value));
    }
    t
}

/// The top-level keys saying how ci/gate.sh measures the arms, with why.
fn reference(r: &Reference) -> String {
    match r {
        Reference::Simulator => "# The simulator serves the baseline's configuration as readily as the candidate's: each\n\
             # compare alternates the arms' runs (ABBA), so a busy runner slows both alike.\n\
             interleave = true\n"
            .to_string(),
        Reference::Endpoint(e) => format!(
            "# A second server serves the reference configuration: each compare alternates runs on it\n\
             # with the candidate's (ABBA), so both arms meet the same machine in the same minutes.\n\
             baseline_endpoint = {}\n",
            toml_str(e)
        ),
        Reference::Switch(c) => format!(
            "# The server is switched between the arms by this command ({{arm}}: baseline, candidate),\n\
             # and each compare alternates the arms' runs (ABBA).\n\
             switch = '{c}'\n"
        ),
        Reference::Stored => "# Against the stored baseline only: it measures the machine and server of the day it was\n\
             # recorded, so a drift since reads as a change (on llama-server, quiet A/As 12-23 minutes\n\
             # after recording one failed 2 of 3). Where the job can serve the reference too, set\n\
             # baseline_endpoint = \"URL\" or switch = 'CMD {arm}' to interleave.\n\
             interleave = false\n"
            .to_string(),
    }
}

/// A TOML basic string.
fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::init::Shape;
    use crate::model::metric::Metric;

    fn setup(reference: Reference) -> Setup {
        Setup {
            endpoint: Some("http://127.0.0.1:8000/v1".into()),
            model: None,
            api_key_env: Some("OPENAI_API_KEY".into()),
            reference,
            name: "gate".into(),
            shape: Shape {
                requests: 20,
                concurrency: 4,
                input_tokens: 128,
                output_tokens: 64,
            },
            repeat: 3,
            comment: false,
            force: false,
        }
    }

    fn row(metric: &str, threshold: &str, runs: Option<usize>, advice: Option<&str>) -> RowPlan {
        RowPlan {
            metric: metric.parse::<Metric>().unwrap(),
            threshold: threshold.into(),
            spread: Some(0.03),
            runs,
            detectable_pct: runs.map(|_| 11.4),
            advice: advice.map(String::from),
        }
    }

    /// The shipped workflow is what `bench init` writes without --comment: its version line
    /// is this build's, and each line init fills in is there exactly once.
    #[test]
    fn the_shipped_workflow_is_what_init_writes() {
        assert_eq!(workflow(false), WORKFLOW);
        for line in [COMMENT_OFF, PR_READ] {
            assert_eq!(WORKFLOW.lines().filter(|l| *l == line).count(), 1, "{line}");
        }
        assert_eq!(
            WORKFLOW
                .lines()
                .filter(|l| l.starts_with(VERSION_LINE))
                .count(),
            1
        );
        let on = workflow(true);
        assert!(on.contains("      BENCH_COMMENT: \"true\"\n"), "{on}");
        assert!(on.contains("  pull-requests: write\n"), "{on}");
        assert!(!on.contains(COMMENT_OFF));
    }

    #[test]
    fn the_scenario_is_valid_and_names_the_endpoint_model_and_key_variable() {
        let s = setup(Reference::Stored);
        let text = scenario(&s, Some("Qwen/Qwen3-0.6B"));
        let sc = crate::config::scenario::parse(&text, Path::new("scenarios/gate.toml")).unwrap();
        assert_eq!(sc.name, "gate");
        assert!(text.contains("endpoint = \"http://127.0.0.1:8000/v1\"\n"));
        assert!(text.contains("model = \"Qwen/Qwen3-0.6B\"\n"));
        assert!(text.contains("api_key_env = \"OPENAI_API_KEY\"\n"));
        let sim = Setup {
            endpoint: None,
            ..setup(Reference::Simulator)
        };
        let text = scenario(&sim, None);
        crate::config::scenario::parse(&text, Path::new("scenarios/gate.toml")).unwrap();
        assert!(!text.contains("\nendpoint"), "{text}");
    }

    /// Gated where the plan settles the row, off with the plan's reason elsewhere; the
    /// arms' key as ci/gate.sh reads it; every threshold one the compare accepts.
    #[test]
    fn the_gate_table_gates_what_the_plan_settles() {
        let rows = [
            row("ttft.p50", "10%", Some(5), None),
            row("output_throughput", "-5%", Some(3), None),
            row(
                "ttft.p99",
                "10%",
                None,
                Some("a p99 is judged from 1000 successful requests an arm"),
            ),
        ];
        let findings = ["usage streamed in all 60 requests".to_string()];
        let text = gate(
            &setup(Reference::Endpoint("http://127.0.0.1:8001/v1".into())),
            Path::new("scenarios/gate.toml"),
            &rows,
            &findings,
        );
        insta::assert_snapshot!("init_gate_toml", text);
        let t: toml::Table = toml::from_str(&text).unwrap();
        assert_eq!(
            t["baseline_endpoint"].as_str(),
            Some("http://127.0.0.1:8001/v1")
        );
        let g = t["gate"].as_table().unwrap();
        for (k, v) in g {
            crate::config::thresholds::parse_threshold(k, v.as_str().unwrap()).unwrap();
        }
        assert_eq!(g["ttft.p99"].as_str(), Some("off"));
        assert_eq!(g["output_throughput"].as_str(), Some("-5%"));
        let switch = gate(
            &setup(Reference::Switch("systemctl restart vllm-{arm}".into())),
            Path::new("s.toml"),
            &rows,
            &findings,
        );
        let t: toml::Table = toml::from_str(&switch).unwrap();
        assert_eq!(t["switch"].as_str(), Some("systemctl restart vllm-{arm}"));
        let stored = gate(
            &setup(Reference::Stored),
            Path::new("s.toml"),
            &rows,
            &findings,
        );
        let t: toml::Table = toml::from_str(&stored).unwrap();
        assert_eq!(t["interleave"].as_bool(), Some(false));
    }
}
