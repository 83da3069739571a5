//! Who and what a record names: the owner of an optimization record's rows and the commit
//! under test, read from the environment CI sets, else from git.

/// The commit under test, as CI names it, else `git rev-parse HEAD` here; `None` outside
/// a repository.
pub fn revision() -> Option<String> {
    ["BENCH_REVISION", "GITHUB_SHA", "CI_COMMIT_SHA"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.trim().is_empty()))
        .or_else(|| {
            std::process::Command::new("git")
                .args(["rev-parse", "HEAD"])
                .stderr(std::process::Stdio::null())
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        })
        .filter(|s| !s.is_empty())
}

/// `git config user.name`, else `$USER`, else "unknown".
pub fn owner() -> String {
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
