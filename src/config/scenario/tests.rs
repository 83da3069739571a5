//! Scenario validation: file, line, column and field in every error.

use super::*;
use crate::config::values::parse_duration;
use crate::model::scenario::*;

const GOOD: &str = r#"
name = "t"
api = "completions"

[workload]
type = "synthetic"
input_tokens = { dist = "uniform", min = 10, max = 20 }
output_tokens = 8

[load]
rate = 5.0
arrival = "gamma"
burstiness = 0.5
requests = 10
"#;

fn err(text: &str) -> String {
    parse(text, Path::new("x.toml")).unwrap_err().to_string()
}

#[test]
fn good_scenario_parses() {
    let s = parse(GOOD, Path::new("x.toml")).unwrap();
    assert_eq!(s.api, Api::Completions);
    assert!(matches!(s.load.mode, LoadMode::Open { burstiness, .. } if burstiness == 0.5));
    assert_eq!(s.seed, 42);
    assert!(s.request.ignore_eos);
}

#[test]
fn unknown_field_names_file_line_and_field() {
    let e = err(&GOOD.replace("requests = 10", "requests = 10\nreqests = 3"));
    assert!(
        e.starts_with("x.toml:15:1: field `load.reqests`: unknown field"),
        "{e}"
    );
    assert!(e.contains("reqests"), "{e}");
}

#[test]
fn body_vars_must_be_plain_fields_outside_the_traffic() {
    let with = |list: &str| {
        GOOD.replace(
            "[workload]",
            &format!("[request]\nbody_vars = {list}\n\n[workload]"),
        )
    };
    let ok = parse(&with(r#"["cache_prompt"]"#), Path::new("x.toml")).unwrap();
    assert_eq!(ok.request.body_vars, ["cache_prompt"]);
    let e = err(&with(r#"["max_tokens"]"#));
    assert!(
        e.starts_with("x.toml:6:13: field `request.body_vars`: `max_tokens` shapes the traffic"),
        "{e}"
    );
    assert!(err(&with(r#"["a", "a"]"#)).contains("listed twice"));
    assert!(err(&with(r#"[""]"#)).contains("not a field name"));
    // Before the fix these passed and were sent as JSON keys no engine reads.
    for bad in [
        r#"["cache prompt"]"#,
        r#"["a\"b"]"#,
        r#"["1st"]"#,
        r#"["x.y"]"#,
    ] {
        assert!(err(&with(bad)).contains("not a field name"), "{bad}");
    }
}

#[test]
fn bad_value_points_at_the_value() {
    let e = err(&GOOD.replace("rate = 5.0", "rate = -1.0"));
    assert!(
        e.starts_with("x.toml:11:8: field `load.rate`: must be a positive"),
        "{e}"
    );
    let e = err(&GOOD.replace("min = 10, max = 20", "min = 10, max = 2"));
    assert!(
        e.contains(":7:") && e.contains("input_tokens") && e.contains("below min"),
        "{e}"
    );
}

#[test]
fn cross_field_rules() {
    let e = err(&GOOD.replace("rate = 5.0", "rate = 5.0\nconcurrency = 3"));
    assert!(
        e.contains("load.concurrency") && e.contains("not both"),
        "{e}"
    );
    let e = err(&GOOD.replace("output_tokens = 8", "output_tokens = 8\nprefixes = 3"));
    assert!(
        e.contains("x.toml:9:12") && e.contains("workload.prefixes"),
        "{e}"
    );
    let e = err(&GOOD.replace("output_tokens = 8\n", ""));
    assert!(
        e.contains("workload.output_tokens") && e.contains("request.max_tokens"),
        "{e}"
    );
    let e = err(&GOOD.replace("arrival = \"gamma\"", "arrival = \"poisson\""));
    assert!(e.contains("load.burstiness"), "{e}");
    let e = err(&GOOD.replace("requests = 10", ""));
    assert!(e.contains("duration"), "{e}");
}

#[test]
fn a_ramp_is_checked_and_is_part_of_the_traffic() {
    let ramped = GOOD.replace(
        "requests = 10",
        "requests = 10\nramp = { from = 1, over = \"10s\", shape = \"exponential\" }",
    );
    let s = parse(&ramped, Path::new("x.toml")).unwrap();
    assert_eq!(
        s.load.ramp,
        Some(Ramp {
            from: 1.0,
            over_s: 10.0,
            shape: RampShape::Exponential
        })
    );
    let plain = parse(GOOD, Path::new("x.toml")).unwrap();
    assert_ne!(s.traffic_hash(), plain.traffic_hash());
    let e = err(&GOOD.replace(
        "requests = 10",
        "requests = 10\nramp = { from = 9, over = \"10s\" }",
    ));
    assert!(
        e.contains("x.toml:15:8") && e.contains("load.ramp") && e.contains("below the target 5"),
        "{e}"
    );
    let e = err(&GOOD.replace(
        "requests = 10",
        "requests = 10\nramp = { from = 1, over = \"soon\" }",
    ));
    assert!(e.contains("load.ramp") && e.contains("`over`"), "{e}");
    let closed = "name = \"c\"\n[workload]\ntype = \"synthetic\"\ninput_tokens = 4\noutput_tokens = 4\n[load]\nconcurrency = 8\nrequests = 9\nramp = { from = 1.5, over = \"5s\" }\n";
    let e = err(closed);
    assert!(e.contains("load.ramp") && e.contains("whole number"), "{e}");
}

#[test]
fn sim_table_is_checked_at_load_and_kept_out_of_the_hash() {
    let with = format!("{GOOD}\n[sim]\nprofile = \"h100-8b\"\nquant = \"int8\"\nspec = 3\n");
    let s = parse(&with, Path::new("x.toml")).unwrap();
    assert_eq!(s.sim[0], ("profile".to_string(), "h100-8b".to_string()));
    assert!(s.sim.contains(&("spec".to_string(), "3".to_string())));
    let plain = parse(GOOD, Path::new("x.toml")).unwrap();
    assert_eq!(s.traffic_hash(), plain.traffic_hash());
    let e = err(&format!("{GOOD}\n[sim]\nquant = \"int3\"\n"));
    assert!(
        e.contains("x.toml:17:9: field `sim.quant`") && e.contains("int4"),
        "{e}"
    );
}

#[test]
fn hash_ignores_endpoint_but_not_load() {
    let a = parse(GOOD, Path::new("x.toml")).unwrap();
    let mut b = a.clone();
    b.endpoint = Some("http://127.0.0.1:1/v1".into());
    assert_eq!(a.traffic_hash(), b.traffic_hash());
    b.load.requests = Some(11);
    assert_ne!(a.traffic_hash(), b.traffic_hash());
}

#[test]
fn durations() {
    assert_eq!(parse_duration("90s").unwrap(), 90.0);
    assert_eq!(parse_duration("1m 30s").unwrap(), 90.0);
    assert_eq!(parse_duration("2.5").unwrap(), 2.5);
    assert!(parse_duration("soon").is_err());
}

#[test]
fn a_name_that_escapes_results_is_refused_at_its_line() {
    // A name is a directory under results/ and baselines/: `../../x` wrote outside them.
    for bad in ["../../x", "/etc/x", "a/b", ".hidden", "", "x y"] {
        let e = err(&GOOD.replace("name = \"t\"", &format!("name = \"{bad}\"")));
        assert!(e.starts_with("x.toml:2:8: field `name`"), "{bad}: {e}");
    }
    assert!(parse(
        &GOOD.replace("name = \"t\"", "name = \"chat-short_2.v1\""),
        Path::new("x.toml")
    )
    .is_ok());
}

#[test]
fn values_that_crashed_or_exhausted_a_run_are_refused_with_their_range() {
    // Each was accepted by validate, then panicked (exit 101), hid a panic, or tried to
    // allocate without bound once the run started.
    let cases: &[(&str, &str, &str)] = &[
        ("rate = 5.0", "rate = 5e-324", "load.rate"),
        (
            "requests = 10",
            "requests = 10\nduration = \"18446744073709551615s\"",
            "load.duration",
        ),
        (
            "requests = 10",
            "requests = 18446744073709551615",
            "load.requests",
        ),
        (
            "input_tokens = { dist = \"uniform\", min = 10, max = 20 }",
            "input_tokens = 1000000000",
            "workload.input_tokens",
        ),
        (
            "input_tokens = { dist = \"uniform\", min = 10, max = 20 }",
            "input_tokens = { dist = \"lognormal\", mean = 1e308, stddev = 1 }",
            "workload.input_tokens",
        ),
        (
            "[workload]",
            "[request]\ntimeout_s = 1e308\n\n[workload]",
            "request.timeout_s",
        ),
        (
            "arrival = \"gamma\"",
            "arrival = \"gamma\"\nmax_concurrency = 1000000000",
            "load.max_concurrency",
        ),
    ];
    for (from, to, field) in cases {
        let e = err(&GOOD.replace(from, to));
        assert!(
            e.contains(&format!("field `{field}`")) && e.starts_with("x.toml:"),
            "{to}: {e}"
        );
        assert!(
            e.contains("between") || e.contains("at most") || e.contains("not a duration"),
            "{to}: {e}"
        );
    }
    let closed = GOOD.replace(
        "rate = 5.0\narrival = \"gamma\"\nburstiness = 0.5",
        "concurrency = 1000000000",
    );
    assert!(
        err(&closed).contains("field `load.concurrency`: must be at least 1 and at most 100000")
    );
    let shared = "name = \"t\"\n[workload]\ntype = \"shared_prefix\"\nprefixes = 1000000000\nprefix_tokens = 8\nsuffix_tokens = 4\noutput_tokens = 4\n[load]\nconcurrency = 1\nrequests = 1\n";
    assert!(
        err(shared).contains("field `workload.prefixes`: must be at least 1 and at most 100000")
    );
}

#[test]
fn a_file_that_is_not_utf8_names_the_line_of_the_bad_byte() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("latin1.toml");
    // "café" in Latin-1 on line 2: before the fix, "stream did not contain valid UTF-8".
    std::fs::write(&p, b"name = \"t\"\ndescription = \"caf\xE9\"\n").unwrap();
    let e = load(&p).unwrap_err().to_string();
    assert!(e.contains("latin1.toml:2:19"), "{e}");
    assert!(e.contains("0xE9 is not UTF-8"), "{e}");
}

const CONVERSATION: &str = r#"
name = "c"

[workload]
type = "conversation"
turns = { dist = "uniform", min = 2, max = 5 }
user_tokens = 50
output_tokens = 20
think_time_ms = 100

[load]
concurrency = 2
sessions = 6
"#;

#[test]
fn conversations_count_sessions_and_their_errors_name_the_field() {
    let s = parse(CONVERSATION, Path::new("x.toml")).unwrap();
    assert!(s.workload.is_conversation());
    assert_eq!(s.load.requests, Some(6));
    for (from, to, want) in [
        (
            "sessions = 6",
            "requests = 6",
            "x.toml:13:12: field `load.requests`: a conversation run counts sessions",
        ),
        (
            "turns = { dist = \"uniform\", min = 2, max = 5 }\n",
            "",
            "field `workload.turns`: is required",
        ),
        (
            "max = 5 }",
            "max = 5000 }",
            "x.toml:6:9: field `workload.turns`: can draw up to 5000, but must stay within 1..=999",
        ),
        (
            "user_tokens = 50\n",
            "",
            "field `workload.user_tokens`: is required for type = \"conversation\" without a ShareGPT `path`",
        ),
        (
            "think_time_ms = 100",
            "think_time_ms = 5000000",
            "x.toml:9:17: field `workload.think_time_ms`: a token count must be between 1 and 2000000",
        ),
        (
            "think_time_ms = 100",
            "prefixes = 3",
            "field `workload.prefixes`: is not used by type = \"conversation\"",
        ),
        (
            "think_time_ms = 100",
            "format = \"sharegpt\"",
            "field `workload.format`: applies only with a ShareGPT `path`",
        ),
    ] {
        let e = err(&CONVERSATION.replace(from, to));
        assert!(e.contains(want), "{e}\nwant: {want}");
    }
    let e = err(&CONVERSATION.replace("name = \"c\"", "name = \"c\"\napi = \"completions\""));
    assert!(e.contains("needs api = \"chat\""), "{e}");
    let e = err(&GOOD.replace("requests = 10", "sessions = 10"));
    assert!(
        e.contains("field `load.sessions`: applies only to [workload] type = \"conversation\""),
        "{e}"
    );
}

#[test]
fn sharegpt_conversations_replace_the_synthetic_lengths() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("chats.json"),
        r#"[{"conversations": [{"from": "human", "value": "hi there"}, {"from": "gpt", "value": "hello to you"},
            {"from": "human", "value": "and again"}, {"from": "gpt", "value": "yes"}]}]"#,
    )
    .unwrap();
    let text = CONVERSATION.replace(
        "user_tokens = 50\noutput_tokens = 20\n",
        "path = \"chats.json\"\nformat = \"sharegpt\"\n",
    );
    let path = dir.path().join("c.toml");
    let s = parse(&text, &path).unwrap();
    let d = s.dataset.as_ref().unwrap();
    assert_eq!(
        d.entries[0].turns,
        vec![("hi there".to_string(), 3), ("and again".to_string(), 1)]
    );
    let g =
        crate::plan::conversation::Sessions::new(&s.workload, s.seed, s.dataset.clone()).unwrap();
    // The conversation's own two turns cap the drawn 2–5.
    let session = g.session(0, false);
    assert_eq!(session.turns.len(), 2);
    assert_eq!(
        (session.turns[1].user.as_str(), session.turns[1].max_tokens),
        ("and again", 1)
    );
    assert_eq!(session.line, Some(1));
    let e = parse(
        &text.replace(
            "path = \"chats.json\"",
            "path = \"chats.json\"\nuser_tokens = 5",
        ),
        &path,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("is not used with a ShareGPT `path`"), "{e}");
}
