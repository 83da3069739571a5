//! Every HTML page type in a real headless browser. Each page is made by the bench binary
//! against the embedded simulator (a run, a conversation run, a compare, a sweep, a stack
//! factorial, a baseline, a history), then Debian's Chromium renders it: a screenshot that
//! is not blank, and — measured in the page by a small script added to a copy of it — no SVG
//! text smaller than 12 px at the default width and none reaching outside its plot.
//! `.ci/run` installs Chromium when it is missing and, where apt-get can install it, sets
//! `BENCH_REQUIRE_BROWSER`: then a missing browser fails the test. Elsewhere the browser half
//! says so and skips (the pages are still made and checked for structure).

use std::path::{Path, PathBuf};
use std::process::Command;

fn chromium() -> Option<String> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .find(|p| Path::new(p).exists())
        .map(|p| p.to_string())
}

fn bench(args: &[&str]) -> std::process::Output {
    let o = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.code().is_some_and(|c| c <= 1),
        "bench {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

const SCENARIO: &str = "name = \"rep\"\nseed = 3\n[workload]\ntype = \"synthetic\"\ninput_tokens = 16\noutput_tokens = 8\n[load]\nconcurrency = 2\nrequests = 30\n[slo]\nttft_ms = 50\ntpot_ms = 5\n[sim]\nbandwidth_gbs = 30000\ntflops = 12100\nstep_overhead_ms = 0.2\n";

const CONVERSATION: &str = "name = \"conv\"\nseed = 5\n[request]\nignore_eos = true\n[workload]\ntype = \"conversation\"\nturns = { dist = \"uniform\", min = 2, max = 4 }\nsystem_tokens = 64\nuser_tokens = 16\noutput_tokens = 8\nthink_time_ms = 5\n[load]\nconcurrency = 4\nsessions = 8\n[sim]\nbandwidth_gbs = 30000\ntflops = 12100\nstep_overhead_ms = 0.2\n";

/// Makes every page type under `dir`; returns (name, path) of each.
fn pages(dir: &Path) -> Vec<(&'static str, PathBuf)> {
    let p = |s: &str| dir.join(s).to_str().unwrap().to_string();
    std::fs::write(dir.join("s.toml"), SCENARIO).unwrap();
    std::fs::write(dir.join("c.toml"), CONVERSATION).unwrap();
    bench(&["run", &p("s.toml"), "--out", &p("run"), "-q"]);
    bench(&["report", &p("run")]);
    bench(&["run", &p("c.toml"), "--out", &p("conv"), "-q"]);
    bench(&["report", &p("conv")]);
    bench(&[
        "baseline",
        &p("s.toml"),
        "--repeat",
        "3",
        "--baselines",
        &p("b"),
        "-q",
    ]);
    let base = std::fs::read_dir(dir.join("b/rep"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    bench(&[
        "report",
        base.to_str().unwrap(),
        "--out",
        &p("baseline.html"),
    ]);
    bench(&[
        "compare",
        &p("s.toml"),
        "--baselines",
        &p("b"),
        "--repeat",
        "3",
        "--opt",
        "step_overhead_ms=0.3",
        "--html",
        &p("compare.html"),
        "--json",
        &p("hist/c1.json"),
        "-q",
    ]);
    bench(&[
        "compare",
        &p("s.toml"),
        "--baselines",
        &p("b"),
        "--repeat",
        "3",
        "--html",
        &p("compare-aa.html"),
        "--json",
        &p("hist/c2.json"),
        "-q",
    ]);
    bench(&[
        "sweep",
        &p("s.toml"),
        "--rates",
        "20,60,120",
        "--out",
        &p("sweep"),
        "-q",
    ]);
    bench(&[
        "stack",
        &p("s.toml"),
        "--try",
        "step_overhead_ms=0.1",
        "--try",
        "bandwidth_gbs=60000",
        "--repeat",
        "2",
        "--out",
        &p("stack"),
        "--html",
        &p("stack.html"),
        "-q",
    ]);
    for i in 3..=8 {
        std::fs::copy(
            dir.join("hist/c2.json"),
            dir.join(format!("hist/c{i}.json")),
        )
        .unwrap();
    }
    bench(&["history", &p("hist"), "--html", &p("history.html")]);
    vec![
        ("run", dir.join("run/report.html")),
        ("conversation", dir.join("conv/report.html")),
        ("baseline", dir.join("baseline.html")),
        ("compare", dir.join("compare.html")),
        ("compare (nothing changed)", dir.join("compare-aa.html")),
        ("sweep", dir.join("sweep/report.html")),
        ("stack", dir.join("stack.html")),
        ("history", dir.join("history.html")),
    ]
}

/// Added to a copy of a page: measures every SVG text element against its SVG's box, at
/// the SVG's rendered scale, and writes the findings into the page as JSON.
const MEASURE: &str = r#"<script>
(function () {
  var out = { svgs: 0, texts: 0, small: [], outside: [] };
  document.querySelectorAll('svg').forEach(function (svg) {
    out.svgs++;
    var box = svg.getBoundingClientRect();
    var vb = svg.viewBox && svg.viewBox.baseVal;
    var scale = vb && vb.width ? box.width / vb.width : 1;
    svg.querySelectorAll('text').forEach(function (t) {
      if (!t.textContent.trim()) return;
      out.texts++;
      var px = parseFloat(getComputedStyle(t).fontSize) * scale;
      if (px < 11.99) out.small.push(t.textContent.trim() + ' (' + px.toFixed(1) + ' px)');
      var b = t.getBoundingClientRect();
      if (b.left < box.left - 0.5 || b.right > box.right + 0.5 || b.top < box.top - 0.5 || b.bottom > box.bottom + 0.5)
        out.outside.push(t.textContent.trim());
    });
  });
  var pre = document.createElement('pre');
  pre.id = 'bench-measure';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"#;

fn chrome(browser: &str, dir: &Path, extra: &[String], page: &Path) -> std::process::Output {
    let o = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--window-size=1400,1000",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "chromium failed on {}: {}",
        page.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

#[test]
fn every_page_renders_readably_in_headless_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let pages = pages(dir.path());
    for (name, page) in &pages {
        let html = std::fs::read_to_string(page).unwrap();
        assert!(html.contains("<svg"), "{name}: no chart");
        assert!(
            html.contains("class=\"config\""),
            "{name}: no configuration block"
        );
        for external in ["<script", "src=\"http", "href=\"http", "<link"] {
            assert!(!html.contains(external), "{name}: {external}");
        }
    }
    let Some(browser) = chromium() else {
        assert!(
            std::env::var_os("BENCH_REQUIRE_BROWSER").is_none(),
            "Chromium is not installed, and BENCH_REQUIRE_BROWSER says this machine must render the pages (.ci/run sets it where apt-get can install Debian's chromium package)"
        );
        println!("skipped the browser: Chromium is not installed here (.ci/run installs Debian's chromium package when it can)");
        return;
    };
    for (name, page) in &pages {
        let shot = dir.path().join("shot.png");
        chrome(
            &browser,
            dir.path(),
            &[format!("--screenshot={}", shot.display())],
            page,
        );
        let png = std::fs::read(&shot).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{name}");
        assert!(
            png.len() > 20_000,
            "{name}: a blank screenshot ({} bytes)",
            png.len()
        );

        let measured = dir.path().join("measured.html");
        let html = std::fs::read_to_string(page).unwrap();
        std::fs::write(
            &measured,
            html.replace("</body>", &format!("{MEASURE}</body>")),
        )
        .unwrap();
        let dom = chrome(&browser, dir.path(), &["--dump-dom".into()], &measured);
        let dom = String::from_utf8_lossy(&dom.stdout);
        let json = dom
            .split("<pre id=\"bench-measure\">")
            .nth(1)
            .and_then(|s| s.split("</pre>").next())
            .unwrap_or_else(|| panic!("{name}: the measuring script did not run"))
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&");
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        println!("{name}: {v}");
        assert!(v["texts"].as_u64().unwrap() > 10, "{name}: {v}");
        assert_eq!(
            v["small"],
            serde_json::json!([]),
            "{name}: text under 12 px"
        );
        assert_eq!(
            v["outside"],
            serde_json::json!([]),
            "{name}: text outside its plot"
        );
    }
}
