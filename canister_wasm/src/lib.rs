//! The project's canister wasm, as the harness and the tests need it: taken
//! from `CALLER_WASM` / `CALLEE_WASM` when set, otherwise built from this
//! workspace for wasm32 into a target dir of its own (`target/wasm`), so the
//! build never contends with the native build that is running us. And
//! canisters from elsewhere ([`elsewhere`]), which the tests run to show
//! that the simulator runs what the IC runs.

pub mod elsewhere;

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// A canister of this workspace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Canister {
    Caller,
    Callee,
}

impl Canister {
    pub const ALL: [Canister; 2] = [Canister::Caller, Canister::Callee];

    /// The cargo package, and the file name of its wasm.
    pub fn package(self) -> &'static str {
        match self {
            Canister::Caller => "caller",
            Canister::Callee => "callee",
        }
    }

    /// The environment variable that overrides where its wasm comes from.
    pub fn override_var(self) -> &'static str {
        match self {
            Canister::Caller => "CALLER_WASM",
            Canister::Callee => "CALLEE_WASM",
        }
    }

    /// The candid interface kept in the repository.
    pub fn did_file(self) -> PathBuf {
        workspace_root().join(format!("src/{0}/{0}.did", self.package()))
    }
}

/// The caller and callee modules.
pub struct CanisterWasms {
    pub caller: Vec<u8>,
    pub callee: Vec<u8>,
}

/// Loads both modules, building whatever no override names.
pub fn caller_and_callee() -> Result<CanisterWasms> {
    if Canister::ALL.iter().any(|c| std::env::var_os(c.override_var()).is_none()) {
        build()?;
    }
    let [caller, callee] = Canister::ALL.map(built_or_overridden);
    Ok(CanisterWasms { caller: read(&caller?)?, callee: read(&callee?)? })
}

/// Where a canister's wasm is: the override if set (it must exist), else
/// the freshly built module.
pub fn wasm_path(canister: Canister) -> Result<PathBuf> {
    if std::env::var_os(canister.override_var()).is_none() {
        build()?;
    }
    built_or_overridden(canister)
}

fn built_or_overridden(canister: Canister) -> Result<PathBuf> {
    let Some(path) = std::env::var_os(canister.override_var()) else {
        return Ok(built_path(canister));
    };
    let path = PathBuf::from(path);
    if !path.is_file() {
        bail!("{}={} is not a file", canister.override_var(), path.display());
    }
    Ok(path)
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read canister wasm {}", path.display()))
}

/// The workspace this crate belongs to.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("canister_wasm lives one level below the workspace root")
        .to_path_buf()
}

/// Where the build puts a canister's wasm.
fn built_path(canister: Canister) -> PathBuf {
    wasm_target_dir().join("wasm32-unknown-unknown/release").join(format!("{}.wasm", canister.package()))
}

/// Where canister builds go; separate from the native target dir.
pub fn wasm_target_dir() -> PathBuf {
    workspace_root().join("target/wasm")
}

const WASM_TARGET: &str = "wasm32-unknown-unknown";

/// Builds both canisters with the release profile, once per process (test
/// binaries ask from many threads). Cargo makes it a no-op when nothing
/// changed.
fn build() -> Result<()> {
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    BUILT.get_or_init(|| build_now().map_err(|e| format!("{e:#}"))).clone().map_err(anyhow::Error::msg)
}

fn build_now() -> Result<()> {
    // Quiet, so that a run prints only its report; say so when a first
    // build will take a while.
    let built = Canister::ALL.iter().all(|&c| built_path(c).is_file());
    if !built {
        eprintln!("building the canisters for {WASM_TARGET} into {} ...", wasm_target_dir().display());
    }
    // One cargo run per canister, as dfx and icp-cli build them: built
    // together, cargo would unify their dependencies' features, and the
    // callee would link the caller's timers (ic-fanout's `jobs`).
    for canister in Canister::ALL {
        cargo_build(&["-p", canister.package()])?;
    }
    Ok(())
}

/// `cargo build` for wasm32 with the release profile into the wasm target dir.
fn cargo_build(what: &[&str]) -> Result<()> {
    let root = workspace_root();
    ensure_wasm_target(&root)?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(&root)
        .args(["build", "--quiet", "--locked", "--release", "--target", WASM_TARGET])
        .args(what)
        .arg("--target-dir")
        .arg(wasm_target_dir())
        .status()
        .context("cannot run cargo to build the canisters")?;
    if !status.success() {
        bail!("building {what:?} for {WASM_TARGET} failed ({status}); see cargo's output above");
    }
    Ok(())
}

/// A test canister of this workspace (`src/<package>`, such as `wallet`),
/// built for wasm32 with the release profile.
pub fn test_canister(package: &str) -> Result<Vec<u8>> {
    cargo_build(&["-p", package])?;
    read(&wasm_target_dir().join(WASM_TARGET).join("release").join(format!("{package}.wasm")))
}

/// An example canister of `ic-fanout` (`fanout/examples/<name>.rs`), built
/// for wasm32 with the release profile and all the crate's features.
pub fn fanout_example(name: &str) -> Result<Vec<u8>> {
    cargo_build(&["-p", "ic-fanout", "--all-features", "--example", name])?;
    read(&wasm_target_dir().join(WASM_TARGET).join("release/examples").join(format!("{name}.wasm")))
}

/// rust-toolchain.toml asks for the wasm32 target, but rustup adds listed
/// targets only when it installs the toolchain; add it if it is missing.
fn ensure_wasm_target(root: &Path) -> Result<()> {
    let libdir = Command::new("rustc")
        .current_dir(root)
        .args(["--print", "target-libdir", "--target", WASM_TARGET])
        .output()
        .context("cannot run rustc")?;
    let libdir = String::from_utf8_lossy(&libdir.stdout).trim().to_string();
    if !libdir.is_empty() && Path::new(&libdir).is_dir() {
        return Ok(());
    }
    let status = Command::new("rustup")
        .current_dir(root)
        .args(["target", "add", WASM_TARGET])
        .status()
        .context("the wasm32 target is missing and rustup cannot be run to add it")?;
    if !status.success() {
        bail!("`rustup target add {WASM_TARGET}` failed ({status})");
    }
    Ok(())
}
