//! Loading a canister module the way the replica does.
//!
//! The replica's instrumentation exports the function table (callbacks are
//! table indices) and the mutable globals (part of the state a trap must
//! roll back). rustc exports neither, so the export section is rewritten at
//! load time.

use std::ops::Range;
use wasm_encoder::{Encode, ExportKind, ExportSection};
use wasmparser::{ExternalKind, Parser, Payload, TypeRef};

/// Why a module does not load.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WasmError {
    #[error("invalid wasm module: {0}")]
    Invalid(String),
    /// A section's entries do not parse.
    #[error("{0}")]
    Malformed(String),
    #[error("truncated section header")]
    TruncatedSectionHeader,
    #[error("truncated section")]
    TruncatedSection,
    #[error("the module has no memory")]
    NoMemory,
    #[error("import {module}.{name} is not from ic0: a canister may only import ic0")]
    ForeignImport { module: String, name: String },
    #[error("import {module}.{name} is not a function")]
    NotAFunction { module: String, name: String },
    /// The linker refused a definition.
    #[error("{0}")]
    Link(String),
    #[error("cannot instantiate the module: {0}")]
    Instantiate(String),
}

fn malformed(e: wasmparser::BinaryReaderError) -> WasmError {
    WasmError::Malformed(e.to_string())
}

/// The names the rewritten module exports its internals under.
pub const MEMORY_EXPORT: &str = "__sim_memory";
pub const TABLE_EXPORT: &str = "__sim_table";
pub fn global_export(index: u32) -> String {
    format!("__sim_global_{index}")
}

/// A module with the extra exports, and what it exports.
pub struct RewrittenModule {
    pub wasm: Vec<u8>,
    /// The mutable globals it defines, by global index.
    pub mutable_globals: Vec<u32>,
    pub has_memory: bool,
    pub has_table: bool,
    /// The original export names of functions (`canister_update ping`, ...).
    pub function_exports: Vec<String>,
}

const EXPORT_SECTION_ID: u8 = 7;
/// Sections that come after the export section in a valid module.
const AFTER_EXPORT: [u8; 5] = [8, 9, 12, 10, 11];

pub fn rewrite(wasm: &[u8]) -> Result<RewrittenModule, WasmError> {
    let mut imported_globals = 0u32;
    let mut has_memory = false;
    let mut has_table = false;
    let mut mutable_globals = vec![];
    let mut exports = ExportSection::new();
    let mut function_exports = vec![];
    for payload in Parser::new(0).parse_all(wasm) {
        match payload.map_err(|e| WasmError::Invalid(e.to_string()))? {
            Payload::ImportSection(reader) => {
                for import in reader {
                    match import.map_err(malformed)?.ty {
                        TypeRef::Global(_) => imported_globals += 1,
                        TypeRef::Memory(_) => has_memory = true,
                        TypeRef::Table(_) => has_table = true,
                        _ => {}
                    }
                }
            }
            Payload::MemorySection(reader) => has_memory |= reader.count() > 0,
            Payload::TableSection(reader) => has_table |= reader.count() > 0,
            Payload::GlobalSection(reader) => {
                for (i, global) in reader.into_iter().enumerate() {
                    if global.map_err(malformed)?.ty.mutable {
                        mutable_globals.push(imported_globals + i as u32);
                    }
                }
            }
            Payload::ExportSection(reader) => {
                for export in reader {
                    let export = export.map_err(malformed)?;
                    let kind = match export.kind {
                        ExternalKind::Func => {
                            function_exports.push(export.name.to_string());
                            ExportKind::Func
                        }
                        ExternalKind::Table => ExportKind::Table,
                        ExternalKind::Memory => ExportKind::Memory,
                        ExternalKind::Global => ExportKind::Global,
                        ExternalKind::Tag => ExportKind::Tag,
                    };
                    exports.export(export.name, kind, export.index);
                }
            }
            _ => {}
        }
    }
    if has_memory {
        exports.export(MEMORY_EXPORT, ExportKind::Memory, 0);
    }
    if has_table {
        exports.export(TABLE_EXPORT, ExportKind::Table, 0);
    }
    for &index in &mutable_globals {
        exports.export(&global_export(index), ExportKind::Global, index);
    }
    let wasm = replace_export_section(wasm, &exports)?;
    Ok(RewrittenModule { wasm, mutable_globals, has_memory, has_table, function_exports })
}

/// Copies every section as it is, but puts `exports` where the export
/// section is (or belongs, if there was none).
fn replace_export_section(wasm: &[u8], exports: &ExportSection) -> Result<Vec<u8>, WasmError> {
    let mut encoded = vec![EXPORT_SECTION_ID];
    exports.encode(&mut encoded);
    let mut out = wasm[..8].to_vec();
    let mut placed = false;
    for (id, range) in sections(wasm)? {
        if id == EXPORT_SECTION_ID || (!placed && AFTER_EXPORT.contains(&id)) {
            if !placed {
                out.extend_from_slice(&encoded);
                placed = true;
            }
            if id == EXPORT_SECTION_ID {
                continue;
            }
        }
        out.extend_from_slice(&wasm[range]);
    }
    if !placed {
        out.extend_from_slice(&encoded);
    }
    Ok(out)
}

/// The sections of a module: id and byte range (header included).
fn sections(wasm: &[u8]) -> Result<Vec<(u8, Range<usize>)>, WasmError> {
    let mut sections = vec![];
    let mut pos = 8;
    while pos < wasm.len() {
        let start = pos;
        let id = wasm[pos];
        pos += 1;
        let (size, read) = leb_u32(&wasm[pos..]).ok_or(WasmError::TruncatedSectionHeader)?;
        pos += read + size as usize;
        if pos > wasm.len() {
            return Err(WasmError::TruncatedSection);
        }
        sections.push((id, start..pos));
    }
    Ok(sections)
}

fn leb_u32(bytes: &[u8]) -> Option<(u32, usize)> {
    let mut value = 0u32;
    for (i, &b) in bytes.iter().take(5).enumerate() {
        value |= u32::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exports_table_memory_and_mutable_globals_only() {
        let wasm = wat::parse_str(
            r#"(module
                (memory 1)
                (table 2 funcref)
                (global $sp (mut i32) (i32.const 1024))
                (global $k i32 (i32.const 7))
                (global $g (mut i64) (i64.const 0))
                (func $f)
                (elem (i32.const 0) $f)
                (export "canister_update f" (func $f)))"#,
        )
        .unwrap();
        let m = rewrite(&wasm).unwrap();
        assert_eq!(m.mutable_globals, vec![0, 2]);
        assert!(m.has_memory && m.has_table);
        assert_eq!(m.function_exports, vec!["canister_update f"]);
        let names: Vec<String> = Parser::new(0)
            .parse_all(&m.wasm)
            .filter_map(|p| match p.unwrap() {
                Payload::ExportSection(r) => {
                    Some(r.into_iter().map(|e| e.unwrap().name.to_string()).collect::<Vec<_>>())
                }
                _ => None,
            })
            .flatten()
            .collect();
        assert_eq!(
            names,
            ["canister_update f", MEMORY_EXPORT, TABLE_EXPORT, "__sim_global_0", "__sim_global_2"]
        );
        wasmparser::validate(&m.wasm).unwrap();
    }

    #[test]
    fn adds_an_export_section_where_none_was() {
        let wasm = wat::parse_str("(module (memory 1) (func) (data (i32.const 0) \"x\"))").unwrap();
        let m = rewrite(&wasm).unwrap();
        wasmparser::validate(&m.wasm).unwrap();
        assert!(m.has_memory && !m.has_table);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(rewrite(b"\0asm\x01\0\0\0\x07\xff").is_err());
        assert!(rewrite(b"not wasm at all").is_err());
    }
}
