//! Canisters this project did not write, as a user's tools build or
//! install them: the Candid UI and proxy canisters that icp-cli embeds in
//! its binary and installs on every local network, and the example's twin
//! in Motoko (`examples/motoko`), built by the Motoko compiler.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;
use wasmparser::{Parser, Payload};

use crate::{read, wasm_target_dir, workspace_root};

/// The magic and version every wasm module starts with.
const WASM_HEADER: &[u8] = b"\0asm\x01\0\0\0";

/// The `icp` binary that `scripts/setup.sh` installs.
pub fn icp_cli_binary() -> PathBuf {
    workspace_root().join(".tools/bin/icp")
}

/// DFINITY's Candid UI canister as icp-cli 1.5.0 embeds it: it certifies
/// its assets (`certified_data_set` in `canister_init`) and serves them
/// from `http_request`.
pub fn candid_ui() -> Result<Vec<u8>> {
    icp_cli_canister("canister_query did_to_js")
}

/// The proxy canister icp-cli installs beside it, which forwards calls
/// (`canister_update proxy`).
pub fn proxy() -> Result<Vec<u8>> {
    icp_cli_canister("canister_update proxy")
}

/// `examples/motoko/<name>.mo` (`caller` or `callee`) as the Motoko
/// compiler builds it by default: see [`motoko_source`].
pub fn motoko(name: &str) -> Result<Vec<u8>> {
    motoko_source(&workspace_root().join("examples/motoko").join(format!("{name}.mo")))
}

/// The Motoko canister at `source` as the Motoko compiler builds it by
/// default, a wasm64 module: moc from npm's `motoko`, which
/// `scripts/setup.sh` installs, run with node.
pub fn motoko_source(source: &Path) -> Result<Vec<u8>> {
    let root = workspace_root();
    let name = source.file_stem().context("a Motoko source file")?.to_string_lossy();
    let out_dir = wasm_target_dir().join("motoko");
    std::fs::create_dir_all(&out_dir).with_context(|| format!("cannot create {}", out_dir.display()))?;
    let out = out_dir.join(format!("{name}.wasm"));
    let output = Command::new("node")
        .arg(root.join("examples/motoko/build.js"))
        .arg(source)
        .arg(&out)
        .env("NODE_PATH", root.join(".tools/node_modules"))
        .output()
        .context("cannot run node, which runs the Motoko compiler (apt-get install nodejs)")?;
    if !output.status.success() {
        bail!(
            "the Motoko compiler refused {}: {}",
            source.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    read(&out)
}

/// The module embedded in the `icp` binary that exports `export`.
fn icp_cli_canister(export: &str) -> Result<Vec<u8>> {
    let path = icp_cli_binary();
    let binary = std::fs::read(&path)
        .with_context(|| format!("cannot read {} (scripts/setup.sh installs it)", path.display()))?;
    let found: Vec<&[u8]> = modules_embedded_in(&binary).into_iter().filter(|m| exports(m, export)).collect();
    match found.as_slice() {
        [module] => Ok(module.to_vec()),
        [] => bail!("{} embeds no wasm module exporting `{export}`", path.display()),
        _ => bail!("{} embeds {} wasm modules exporting `{export}`", path.display(), found.len()),
    }
}

/// The valid wasm modules in `binary`, in the order they appear. A module
/// ends where its sections do: the longest run of sections from a header
/// that validates.
pub fn modules_embedded_in(binary: &[u8]) -> Vec<&[u8]> {
    let starts = binary.windows(WASM_HEADER.len()).enumerate().filter(|(_, w)| *w == WASM_HEADER);
    starts.filter_map(|(start, _)| module_at(&binary[start..])).collect()
}

fn module_at(bytes: &[u8]) -> Option<&[u8]> {
    let mut ends = vec![];
    let mut at = WASM_HEADER.len();
    // A section: its id (0 to 13), its size as LEB128, its content.
    while let Some(&id) = bytes.get(at) {
        let Some((size, size_len)) = (id <= 13).then(|| leb128_u32(&bytes[at + 1..])).flatten() else {
            break;
        };
        let end = at + 1 + size_len + size as usize;
        if end > bytes.len() {
            break;
        }
        ends.push(end);
        at = end;
    }
    ends.into_iter().rev().map(|end| &bytes[..end]).find(|module| wasmparser::validate(module).is_ok())
}

fn leb128_u32(bytes: &[u8]) -> Option<(u32, usize)> {
    let mut value = 0u32;
    for (i, &byte) in bytes.iter().take(5).enumerate() {
        value |= u32::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

fn exports(module: &[u8], name: &str) -> bool {
    Parser::new(0).parse_all(module).any(|payload| match payload {
        Ok(Payload::ExportSection(exports)) => exports.into_iter().any(|e| e.is_ok_and(|e| e.name == name)),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_are_found_with_their_ends_among_other_bytes() {
        let a = wat::parse_str(r#"(module (func (export "a")))"#).unwrap();
        let b = wat::parse_str(r#"(module (memory 1) (func (export "b")))"#).unwrap();
        let binary = [b"prefix".as_slice(), &a, &b, b"\x05\xff trailing", WASM_HEADER].concat();
        assert_eq!(modules_embedded_in(&binary), vec![a.as_slice(), b.as_slice()]);
        assert!(exports(&b, "b") && !exports(&b, "a"));
    }
}
