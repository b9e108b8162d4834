//! Loading a canister module the way the replica does.
//!
//! The replica's instrumentation exports the function table (callbacks are
//! table indices) and the mutable globals (part of the state a trap must
//! roll back). rustc exports neither, so the export section is rewritten at
//! load time. It also exports the start function as `canister_start` and
//! removes the start section, so that instantiating runs no code: the
//! start function runs at install, metered, as a message of its own.

use std::collections::BTreeMap;
use std::ops::Range;
use wasm_encoder::reencode::{self, Error as ReencodeError, Reencode};
use wasm_encoder::{
    Encode, EntityType, ExportKind, ExportSection, ImportSection, SectionId, TypeSection, ValType,
};
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
    /// Refused by [`crate::validation`], with the replica's message.
    #[error("Canister's Wasm module is not valid: {0}")]
    NotValid(String),
    #[error("Wasm module size of {size} exceeds the maximum allowed size of {allowed}.")]
    TooLarge { size: usize, allowed: usize },
    #[error(
        "Canister's Wasm module is not valid: the simulator does not run SIMD instructions (the replica does)"
    )]
    Simd,
}

fn malformed(e: wasmparser::BinaryReaderError) -> WasmError {
    WasmError::Malformed(e.to_string())
}

/// What the start function is exported as (validation refuses the name in a module).
pub const START_EXPORT: &str = "canister_start";
/// The names the rewritten module exports its internals under.
pub const MEMORY_EXPORT: &str = "__sim_memory";
pub const TABLE_EXPORT: &str = "__sim_table";
/// The instruction counter (the replica exports it as `canister counter_instructions`).
pub const COUNTER_EXPORT: &str = "__sim_instruction_counter";
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
const START_SECTION_ID: u8 = 8;
const MEMORY_SECTION_ID: u8 = 5;

/// Rewrites the export section of a module (already instrumented by
/// [`crate::metering`]); `counter` is the instruction counter's global,
/// exported as [`COUNTER_EXPORT`] and kept out of the state globals (it is
/// set before every message, not part of the canister's state).
pub fn rewrite(wasm: &[u8], counter: Option<u32>) -> Result<RewrittenModule, WasmError> {
    let mut imported_globals = 0u32;
    let mut has_memory = false;
    let mut has_table = false;
    let mut mutable_globals = vec![];
    let mut exports = ExportSection::new();
    let mut function_exports = vec![];
    let mut start = None;
    let mut memories = None;
    for payload in Parser::new(0).parse_all(wasm) {
        match payload.map_err(|e| WasmError::Invalid(e.to_string()))? {
            Payload::StartSection { func, .. } => start = Some(func),
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
            Payload::MemorySection(reader) => {
                has_memory |= reader.count() > 0;
                memories = capped_memories(reader)?;
            }
            Payload::TableSection(reader) => has_table |= reader.count() > 0,
            Payload::GlobalSection(reader) => {
                for (i, global) in reader.into_iter().enumerate() {
                    let index = imported_globals + i as u32;
                    if global.map_err(malformed)?.ty.mutable && Some(index) != counter {
                        mutable_globals.push(index);
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
    if let Some(func) = start {
        exports.export(START_EXPORT, ExportKind::Func, func);
        function_exports.push(START_EXPORT.to_string());
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
    if let Some(index) = counter {
        exports.export(COUNTER_EXPORT, ExportKind::Global, index);
    }
    let mut contents = vec![];
    exports.encode(&mut contents);
    // `ExportSection::encode` writes the section's size first: drop it.
    let (_, size_len) = leb_u32(&contents).ok_or(WasmError::TruncatedSectionHeader)?;
    let mut replaced = BTreeMap::from([(EXPORT_SECTION_ID, contents[size_len..].to_vec())]);
    replaced.extend(memories.map(|memories| (MEMORY_SECTION_ID, memories)));
    let wasm = splice(wasm, replaced)?;
    let wasm = without_section(&wasm, START_SECTION_ID)?;
    Ok(RewrittenModule { wasm, mutable_globals, has_memory, has_table, function_exports })
}

/// The most a wasm64 module's memory may hold: 6 GiB
/// (`MAX_WASM64_MEMORY_IN_BYTES`; a wasm32 memory stops at 4 GiB by itself).
pub const MAX_WASM64_MEMORY_BYTES: u64 = 6 << 30;

/// The memory section's contents with every 64-bit memory's maximum capped
/// at [`MAX_WASM64_MEMORY_BYTES`], as the replica's instrumentation caps
/// it (so that `memory.grow` past it returns -1); `None` if none needs it.
fn capped_memories(reader: wasmparser::MemorySectionReader<'_>) -> Result<Option<Vec<u8>>, WasmError> {
    let cap = MAX_WASM64_MEMORY_BYTES / WASM_PAGE_SIZE;
    let mut section = wasm_encoder::MemorySection::new();
    let mut capped = false;
    for memory in reader {
        let memory = memory.map_err(malformed)?;
        let maximum = if memory.memory64 {
            let max = memory.maximum.map_or(cap, |max| max.min(cap));
            capped |= memory.maximum != Some(max);
            Some(max)
        } else {
            memory.maximum
        };
        section.memory(wasm_encoder::MemoryType {
            minimum: memory.initial,
            maximum,
            memory64: memory.memory64,
            shared: memory.shared,
            page_size_log2: memory.page_size_log2,
        });
    }
    if !capped {
        return Ok(None);
    }
    let mut contents = vec![];
    section.encode(&mut contents);
    let (_, size_len) = leb_u32(&contents).ok_or(WasmError::TruncatedSectionHeader)?;
    Ok(Some(contents[size_len..].to_vec()))
}

/// A wasm page.
const WASM_PAGE_SIZE: u64 = 64 * 1024;

/// Whether the module's memory is 64-bit (wasm64), as the replica decides
/// it: by its first memory, imported or defined. A module without memory,
/// or one that does not parse, is wasm32.
pub fn is_memory64(wasm: &[u8]) -> bool {
    for payload in Parser::new(0).parse_all(wasm) {
        match payload {
            Ok(Payload::ImportSection(reader)) => {
                for import in reader.into_iter().flatten() {
                    if let TypeRef::Memory(memory) = import.ty {
                        return memory.memory64;
                    }
                }
            }
            Ok(Payload::MemorySection(reader)) => {
                return reader.into_iter().flatten().next().is_some_and(|m| m.memory64);
            }
            Ok(Payload::CodeSectionStart { .. }) | Err(_) => return false,
            Ok(_) => {}
        }
    }
    false
}

/// What `memory.grow` becomes a call to in an instrumented module: a host
/// function, `(param I) (result I)` (`I` the memory's address type), that grows the memory as the
/// instruction does. wasmi 2 keeps a host stack frame for every
/// `memory.grow` a message executes until the message ends, so a loop of
/// them overflowed the host's stack; a host call keeps none. (The replica's
/// instrumentation also routes `memory.grow` through a function of its own.)
pub const GROW_IMPORT: (&str, &str) = ("sim", "memory_grow");

/// `wasm` with [`GROW_IMPORT`] imported after its other functions, and that
/// import's index, if it executes `memory.grow`; every function the module
/// defines moves up by one index.
pub fn import_memory_grow(wasm: &[u8]) -> Result<Option<(Vec<u8>, u32)>, WasmError> {
    let (mut types, mut imported, mut grows) = (0, 0, false);
    for payload in Parser::new(0).parse_all(wasm) {
        match payload.map_err(|e| WasmError::Invalid(e.to_string()))? {
            Payload::TypeSection(reader) => {
                for group in reader {
                    types += group.map_err(malformed)?.types().len() as u32;
                }
            }
            Payload::ImportSection(reader) => {
                for import in reader {
                    if let TypeRef::Func(_) = import.map_err(malformed)?.ty {
                        imported += 1;
                    }
                }
            }
            Payload::CodeSectionEntry(body) => {
                let mut ops = body.get_operators_reader().map_err(malformed)?;
                while !grows && !ops.eof() {
                    grows = matches!(ops.read().map_err(malformed)?, wasmparser::Operator::MemoryGrow { .. });
                }
            }
            _ => {}
        }
    }
    if !grows {
        return Ok(None);
    }
    let address = if is_memory64(wasm) { ValType::I64 } else { ValType::I32 };
    let mut shift = ImportGrow { imported, grow_type: types, address, import_added: false };
    let mut module = wasm_encoder::Module::new();
    shift
        .parse_core_module(&mut module, Parser::new(0), wasm)
        .map_err(|e| WasmError::Invalid(format!("adding the memory.grow import: {e}")))?;
    Ok(Some((module.finish(), imported)))
}

/// Re-encodes a module with [`GROW_IMPORT`] after its function imports.
struct ImportGrow {
    /// Functions the module imports.
    imported: u32,
    /// The index the import's type gets: after the module's types.
    grow_type: u32,
    /// The memory's address type, which `memory.grow` takes and returns.
    address: ValType,
    import_added: bool,
}

impl ImportGrow {
    fn add_import(&mut self, imports: &mut ImportSection) {
        imports.import(GROW_IMPORT.0, GROW_IMPORT.1, EntityType::Function(self.grow_type));
        self.import_added = true;
    }
}

impl Reencode for ImportGrow {
    type Error = std::convert::Infallible;

    fn function_index(&mut self, function: u32) -> u32 {
        if function >= self.imported { function + 1 } else { function }
    }

    fn parse_type_section(
        &mut self,
        types: &mut TypeSection,
        section: wasmparser::TypeSectionReader<'_>,
    ) -> Result<(), ReencodeError<Self::Error>> {
        reencode::utils::parse_type_section(self, types, section)?;
        types.ty().function([self.address], [self.address]);
        Ok(())
    }

    fn parse_import_section(
        &mut self,
        imports: &mut ImportSection,
        section: wasmparser::ImportSectionReader<'_>,
    ) -> Result<(), ReencodeError<Self::Error>> {
        reencode::utils::parse_import_section(self, imports, section)?;
        self.add_import(imports);
        Ok(())
    }

    /// A module that imports nothing gets an import section after its types.
    fn intersperse_section_hook(
        &mut self,
        module: &mut wasm_encoder::Module,
        _after: Option<SectionId>,
        before: Option<SectionId>,
    ) -> Result<(), ReencodeError<Self::Error>> {
        let past_imports = !matches!(before, Some(SectionId::Custom | SectionId::Type | SectionId::Import));
        if past_imports && !self.import_added {
            let mut imports = ImportSection::new();
            self.add_import(&mut imports);
            module.section(&imports);
        }
        Ok(())
    }
}

/// Section ids in the order a module must have them (custom sections, id
/// 0, may stand anywhere).
const SECTION_ORDER: [u8; 13] = [1, 2, 3, 4, 5, 13, 6, 7, 8, 9, 12, 10, 11];

fn rank(id: u8) -> usize {
    SECTION_ORDER.iter().position(|&i| i == id).unwrap_or(usize::MAX)
}

/// Copies `wasm` with the contents (what follows the size) of some sections
/// replaced: `replaced` maps a section id to its new contents. A section the
/// module lacks is inserted where it belongs.
pub(crate) fn splice(wasm: &[u8], mut replaced: BTreeMap<u8, Vec<u8>>) -> Result<Vec<u8>, WasmError> {
    fn put(out: &mut Vec<u8>, id: u8, contents: &[u8]) {
        out.push(id);
        (contents.len() as u32).encode(out);
        out.extend_from_slice(contents);
    }
    let mut out = wasm[..8].to_vec();
    for (id, range) in sections(wasm)? {
        if id != 0 {
            let earlier: Vec<u8> = replaced.keys().copied().filter(|&new| rank(new) < rank(id)).collect();
            for new in earlier {
                put(&mut out, new, &replaced.remove(&new).expect("listed"));
            }
        }
        match replaced.remove(&id) {
            Some(contents) if id != 0 => put(&mut out, id, &contents),
            _ => out.extend_from_slice(&wasm[range]),
        }
    }
    let mut rest: Vec<(u8, Vec<u8>)> = replaced.into_iter().collect();
    rest.sort_by_key(|(id, _)| rank(*id));
    for (id, contents) in rest {
        put(&mut out, id, &contents);
    }
    Ok(out)
}

/// Copies `wasm` without its section `id`.
fn without_section(wasm: &[u8], id: u8) -> Result<Vec<u8>, WasmError> {
    let mut out = wasm[..8].to_vec();
    for (section, range) in sections(wasm)? {
        if section != id {
            out.extend_from_slice(&wasm[range]);
        }
    }
    Ok(out)
}

/// The contents of each section of `wasm` (what follows the size), by id.
pub(crate) fn section_contents(wasm: &[u8]) -> Result<BTreeMap<u8, &[u8]>, WasmError> {
    let mut contents = BTreeMap::new();
    for (id, range) in sections(wasm)? {
        let (_, read) = leb_u32(&wasm[range.start + 1..]).ok_or(WasmError::TruncatedSectionHeader)?;
        contents.insert(id, &wasm[range.start + 1 + read..range.end]);
    }
    Ok(contents)
}

/// A vector section's contents (count, then entries) with `entry` appended;
/// `None` is a section the module lacks.
pub(crate) fn append_entry(contents: Option<&[u8]>, entry: &[u8]) -> Result<Vec<u8>, WasmError> {
    let (count, entries) = match contents {
        Some(c) => {
            let (count, read) = leb_u32(c).ok_or(WasmError::TruncatedSectionHeader)?;
            (count, &c[read..])
        }
        None => (0, &[][..]),
    };
    let mut out = vec![];
    (count + 1).encode(&mut out);
    out.extend_from_slice(entries);
    out.extend_from_slice(entry);
    Ok(out)
}

/// The sections of a module: id and byte range (header included).
fn sections(wasm: &[u8]) -> Result<Vec<(u8, Range<usize>)>, WasmError> {
    if wasm.len() < 8 {
        return Err(WasmError::Invalid("shorter than a wasm header".into()));
    }
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
        let m = rewrite(&wasm, None).unwrap();
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
        let m = rewrite(&wasm, None).unwrap();
        wasmparser::validate(&m.wasm).unwrap();
        assert!(m.has_memory && !m.has_table);
    }

    #[test]
    fn the_start_function_becomes_canister_start() {
        let wasm =
            wat::parse_str("(module (memory 1) (func $s) (start $s) (export \"f\" (func $s)))").unwrap();
        let m = rewrite(&wasm, None).unwrap();
        wasmparser::validate(&m.wasm).unwrap();
        assert_eq!(m.function_exports, vec!["f", START_EXPORT]);
        let start =
            Parser::new(0).parse_all(&m.wasm).any(|p| matches!(p.unwrap(), Payload::StartSection { .. }));
        assert!(!start, "the start section is gone");
    }

    #[test]
    fn memory_grow_gets_an_import_after_the_others() {
        let with_imports = r#"(module
            (import "ic0" "trap" (func (param i32 i32)))
            (memory 1)
            (func $f (drop (memory.grow (i32.const 1))))
            (func (export "canister_update g") (call $f)))"#;
        let without =
            r#"(module (memory 1) (func (export "canister_update g") (drop (memory.grow (i32.const 1)))))"#;
        for (wat, imported, exported) in [(with_imports, 1, 3), (without, 0, 1)] {
            let (wasm, index) = import_memory_grow(&wat::parse_str(wat).unwrap()).unwrap().unwrap();
            wasmparser::validate(&wasm).unwrap();
            assert_eq!(index, imported, "after the module's own imports");
            let mut imports = vec![];
            let mut export = None;
            for payload in Parser::new(0).parse_all(&wasm) {
                match payload.unwrap() {
                    Payload::ImportSection(r) => {
                        imports.extend(r.into_iter().map(|i| i.unwrap().name.to_string()))
                    }
                    Payload::ExportSection(r) => export = r.into_iter().next().map(|e| e.unwrap().index),
                    _ => {}
                }
            }
            assert_eq!(imports.last().map(String::as_str), Some(GROW_IMPORT.1));
            assert_eq!(export, Some(exported), "the defined functions moved up by one");
        }
        let no_grow = wat::parse_str("(module (memory 1) (func))").unwrap();
        assert!(import_memory_grow(&no_grow).unwrap().is_none());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(rewrite(b"\0asm\x01\0\0\0\x07\xff", None).is_err());
        assert!(rewrite(b"not wasm at all", None).is_err());
    }
}
