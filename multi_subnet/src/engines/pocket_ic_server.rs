//! Finding a PocketIC server without downloading one. The pocket-ic crate
//! downloads its server when none is found, and panics when it cannot; the
//! harness checks first and explains instead.

use semver::{Version, VersionReq};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use wait_timeout::ChildExt;

/// The server versions the pocket-ic client crate accepts.
pub const ACCEPTED_VERSIONS: &str = ">=16.0.0, <17";

/// How long a candidate binary may take to print its version.
const VERSION_TIMEOUT: Duration = Duration::from_secs(5);

/// A server binary that answered `--version` with an accepted version.
#[derive(Clone, Debug)]
pub struct PocketIcServer {
    pub path: PathBuf,
    pub version: Version,
    /// Whether it is this project's simulator behind PocketIC's REST API
    /// (`pocket-ic-sim`, which says so on stderr of `--version`), not
    /// PocketIC.
    pub simulator: bool,
}

impl std::fmt::Display for PocketIcServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (version, path) = (&self.version, self.path.display());
        match self.simulator {
            true => {
                write!(f, "{} (serving PocketIC server {version}'s API; {path})", sim_server::DESCRIPTION)
            }
            false => write!(f, "PocketIC server {version} ({path})"),
        }
    }
}

/// Where the pocket-ic crate caches the server it downloads.
pub fn cached_server_path() -> PathBuf {
    std::env::temp_dir()
        .join(format!("pocket-ic-server-{}", pocket_ic::LATEST_SERVER_VERSION))
        .join("pocket-ic")
}

/// The server named by `POCKET_IC_BIN`, else the crate's cached one.
/// The error is one sentence that says how to fix it.
pub fn find() -> Result<PocketIcServer, String> {
    let how_to_fix =
        format!("get a PocketIC server {ACCEPTED_VERSIONS} and run with POCKET_IC_BIN=/path/to/pocket-ic");
    match std::env::var_os("POCKET_IC_BIN") {
        Some(path) => {
            let path = PathBuf::from(path);
            check(&path).map_err(|why| format!("POCKET_IC_BIN={}: {why}; {how_to_fix}", path.display()))
        }
        None => {
            let cached = cached_server_path();
            if !cached.exists() {
                return Err(format!(
                    "no PocketIC server: POCKET_IC_BIN is not set and none is cached at {}; {how_to_fix}",
                    cached.display()
                ));
            }
            check(&cached)
                .map_err(|why| format!("cached PocketIC server {}: {why}; {how_to_fix}", cached.display()))
        }
    }
}

/// Runs `path --version` (bounded in time) and checks the answer.
fn check(path: &Path) -> Result<PocketIcServer, String> {
    if !path.is_file() {
        return Err("no such file".into());
    }
    let mut child = Command::new(path)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run it ({e})"))?;
    let status = match child.wait_timeout(VERSION_TIMEOUT) {
        Ok(Some(status)) => status,
        Ok(None) | Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("it did not answer --version within {} s", VERSION_TIMEOUT.as_secs()));
        }
    };
    let (mut stdout, mut stderr) = (String::new(), String::new());
    if let Some(mut out) = child.stdout.take() {
        let _ = out.read_to_string(&mut stdout);
    }
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut stderr);
    }
    if !status.success() {
        return Err(format!("`--version` failed ({status})"));
    }
    let version = parse_version_line(stdout.trim())?;
    let simulator = stderr.trim() == sim_server::DESCRIPTION;
    Ok(PocketIcServer { path: path.to_path_buf(), version, simulator })
}

/// Accepts `pocket-ic-server <version>` with a version in [`ACCEPTED_VERSIONS`].
fn parse_version_line(line: &str) -> Result<Version, String> {
    let not_a_server = || format!("it is not a PocketIC server (`--version` printed {line:?})");
    let version = line.strip_prefix("pocket-ic-server ").ok_or_else(not_a_server)?;
    let version = Version::parse(version).map_err(|_| not_a_server())?;
    let accepted = VersionReq::parse(ACCEPTED_VERSIONS).expect("valid requirement");
    if !accepted.matches(&version) {
        return Err(format!("its version {version} is not {ACCEPTED_VERSIONS}"));
    }
    Ok(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_16_x_servers() {
        assert_eq!(parse_version_line("pocket-ic-server 16.1.0").unwrap(), Version::new(16, 1, 0));
        assert_eq!(parse_version_line("pocket-ic-server 16.0.0").unwrap(), Version::new(16, 0, 0));
    }

    #[test]
    fn rejects_other_versions_and_other_programs() {
        assert!(parse_version_line("pocket-ic-server 15.0.1").unwrap_err().contains("15.0.1"));
        assert!(parse_version_line("pocket-ic-server 17.0.0").unwrap_err().contains("17.0.0"));
        assert!(parse_version_line("hello").unwrap_err().contains("not a PocketIC server"));
        assert!(parse_version_line("").unwrap_err().contains("not a PocketIC server"));
    }

    #[test]
    fn the_simulator_behind_the_api_is_named_as_such_in_reports() {
        let server =
            |simulator| PocketIcServer { path: "/bin/x".into(), version: Version::new(16, 1, 0), simulator };
        assert_eq!(server(false).to_string(), "PocketIC server 16.1.0 (/bin/x)");
        let simulator = server(true).to_string();
        assert!(simulator.starts_with(sim_server::DESCRIPTION), "{simulator}");
        assert!(simulator.contains("PocketIC server 16.1.0's API"), "{simulator}");
    }
}
