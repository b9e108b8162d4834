//! Helpers that several test modules share.

pub mod big_module;
pub mod goals;
pub mod scenarios;

use std::path::Path;
use std::process::Command;

/// Runs `tests/<dir>/<script>` with node, the npm package file `package`
/// (installed by `scripts/setup.sh` under .tools) named in the variable
/// `package.0`; what the script printed, as JSON.
pub fn node(dir: &str, script: &str, package: (&str, &str), args: &[&str]) -> serde_json::Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let installed = root.join(".tools/node_modules").join(package.1);
    assert!(
        installed.exists(),
        "{} is not installed: run scripts/setup.sh (scripts/test.sh does)",
        package.1
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join(dir).join(script);
    let output = Command::new("node").arg(&script).args(args).env(package.0, installed).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{}: {stderr}", script.display());
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stdout)))
}
