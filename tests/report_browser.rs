//! The HTML report in a real headless browser: Debian's Chromium renders it to a screenshot
//! without errors. `.ci/run` installs Chromium when it is missing; if it could not be
//! installed this test says so and skips.

use std::process::Command;

fn chromium() -> Option<String> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .find(|p| std::path::Path::new(p).exists())
        .map(|p| p.to_string())
}

#[test]
fn report_renders_in_headless_chromium() {
    let dir = tempfile::tempdir().unwrap();
    // A real run against the embedded simulator, then its report.
    let scenario = dir.path().join("s.toml");
    std::fs::write(
        &scenario,
        "name = \"rep\"\n[workload]\ntype = \"synthetic\"\ninput_tokens = 16\noutput_tokens = 8\n[load]\nconcurrency = 2\nrequests = 30\n[slo]\nttft_ms = 50\n[sim]\nbandwidth_gbs = 30000\ntflops = 12100\nstep_overhead_ms = 0.2\n",
    )
    .unwrap();
    let out = dir.path().join("run");
    let bench = env!("CARGO_BIN_EXE_bench");
    assert!(Command::new(bench)
        .args([
            "run",
            scenario.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "-q"
        ])
        .status()
        .unwrap()
        .success());
    let o = Command::new(bench)
        .args(["report", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html_path = out.join("report.html");
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(html.contains("<svg") && html.contains("TTFT CDF"));

    let Some(browser) = chromium() else {
        println!("skipped: Chromium is not installed here (.ci/run installs Debian's chromium package when it can)");
        return;
    };
    let shot = dir.path().join("shot.png");
    let profile = dir.path().join("profile");
    let status = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1400,1800")
        .arg(format!("file://{}", html_path.display()))
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&status.stderr)
    );
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(
        png.len() > 20_000,
        "a page with charts is not a blank screenshot ({} bytes)",
        png.len()
    );
}
