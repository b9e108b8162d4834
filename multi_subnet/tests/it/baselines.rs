//! `sweep --compare` against a saved baseline: equal figures pass, a
//! perturbed one fails with one line, wall times are never gated.

use std::path::Path;
use std::process::Command;

fn sweep(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_multi_subnet"))
        .args([
            "sweep",
            "--engine",
            "sim",
            "--calls",
            "10,100",
            "--strategies",
            "parallel,bounded",
            "--k",
            "10",
        ])
        .args(["--topologies", "cross-subnet"])
        .args(args)
        .output()
        .unwrap()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_perturbed_baseline_figure_fails_the_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = dir.path().join("baseline.json");
    let saved = sweep(&["--save-baseline", path(&baseline)]);
    assert!(saved.status.success(), "{}", String::from_utf8_lossy(&saved.stderr));

    let same = sweep(&["--compare", path(&baseline)]);
    assert!(same.status.success(), "{}", String::from_utf8_lossy(&same.stderr));
    assert!(String::from_utf8_lossy(&same.stdout).contains("every deterministic figure equals the baseline"));

    // Wall times are shown, never gated.
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&baseline).unwrap()).unwrap();
    json["runs"][0]["wall_ms"] = serde_json::json!(123456.0);
    std::fs::write(&baseline, json.to_string()).unwrap();
    assert!(sweep(&["--compare", path(&baseline)]).status.success());

    // One deterministic figure off by 10%.
    let rounds = json["runs"][1]["rounds"].as_u64().unwrap();
    json["runs"][1]["rounds"] = serde_json::json!(rounds * 10);
    std::fs::write(&baseline, json.to_string()).unwrap();
    let changed = sweep(&["--compare", path(&baseline), "--noise-threshold", "5"]);
    assert!(!changed.status.success());
    let stderr = String::from_utf8_lossy(&changed.stderr);
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains("beyond the noise threshold"), "{stderr}");
    assert!(String::from_utf8_lossy(&changed.stdout).contains("rounds"), "the change is shown");
}

#[test]
fn a_missing_baseline_is_one_readable_line() {
    let out = sweep(&["--compare", "/nonexistent/baseline.json"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("cannot read the baseline"), "{stderr}");
}
