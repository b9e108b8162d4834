//! Validating a canister module as the replica does before it instruments
//! one (`rs/embedders/src/wasm_utils/validation.rs` and `decoding.rs`):
//! the same checks in the same order, with the replica's limits and its
//! messages, which reach the user as `Canister's Wasm module is not valid:
//! <message>`.
//!
//! One difference: the simulator runs no SIMD, so a module with SIMD
//! instructions is refused with a message that says so.

use std::collections::{BTreeMap, BTreeSet};
use wasmparser::{
    CompositeInnerType, ConstExpr, DataKind, ExternalKind, FuncType, Operator, Parser, Payload, TypeRef,
    ValType, Validator, WasmFeatures,
};

use crate::module::WasmError;
use crate::module::is_memory64;
use crate::system_api::ic0;

mod function_body;
use function_body::check_body;

/// `wasm_max_size`: the largest module, uncompressed.
pub const MAX_WASM_SIZE: usize = 100 << 20;
/// `MAX_CODE_SECTION_SIZE_IN_BYTES`.
pub const MAX_CODE_SECTION_SIZE: u32 = 10 << 20;
/// `MAX_GLOBALS`.
pub const MAX_GLOBALS: usize = 1000;
/// `MAX_FUNCTIONS`.
pub const MAX_FUNCTIONS: usize = 50_000;
/// `MAX_NUMBER_EXPORTED_FUNCTIONS`: update, query and composite query methods.
pub const MAX_EXPORTED_METHODS: usize = 1000;
/// `MAX_SUM_EXPORTED_FUNCTION_NAME_LENGTHS`.
pub const MAX_SUM_METHOD_NAME_LENGTHS: usize = 20_000;
/// `WASM_FUNCTION_SIZE_LIMIT`: instructions in one function.
pub const MAX_FUNCTION_SIZE: usize = 1_000_000;
/// `WASM_FUNCTION_COMPLEXITY_LIMIT`: one function's instructions, weighted
/// by [`complexity`].
pub const MAX_FUNCTION_COMPLEXITY: u64 = 1_000_000;
/// `MAX_CUSTOM_SECTIONS`: `icp:` sections.
pub const MAX_CUSTOM_SECTIONS: usize = 16;
/// `MAX_CUSTOM_SECTIONS_SIZE`: their names and contents together.
pub const MAX_CUSTOM_SECTIONS_SIZE: usize = 1 << 20;

/// Export names the replica's instrumentation uses (`RESERVED_SYMBOLS`).
const RESERVED_SYMBOLS: [&str; 6] = [
    "canister counter_instructions",
    "canister_start",
    "canister counter_dirty_pages",
    "canister counter_accessed_pages",
    "stable_memory",
    "stable_bytemap_memory",
];

/// The `canister_` exports other than methods that the IC calls.
const SYSTEM_METHODS: [&str; 7] = [
    "canister_init",
    "canister_pre_upgrade",
    "canister_post_upgrade",
    "canister_inspect_message",
    "canister_heartbeat",
    "canister_global_timer",
    "canister_on_low_wasm_memory",
];

const METHOD_PREFIXES: [&str; 3] = ["canister_update ", "canister_query ", "canister_composite_query "];

/// The proposals the replica enables (`wasmtime_validation_config`): bulk
/// memory, reference types, SIMD and tail calls; not relaxed SIMD, GC,
/// function references, multi-memory, extended constants, threads or
/// exceptions.
fn features() -> WasmFeatures {
    WasmFeatures::MUTABLE_GLOBAL
        | WasmFeatures::SATURATING_FLOAT_TO_INT
        | WasmFeatures::SIGN_EXTENSION
        | WasmFeatures::MULTI_VALUE
        | WasmFeatures::BULK_MEMORY
        | WasmFeatures::REFERENCE_TYPES
        // funcref and externref at all (wasmparser counts them as MVP).
        | WasmFeatures::GC_TYPES
        | WasmFeatures::SIMD
        | WasmFeatures::TAIL_CALL
        | WasmFeatures::FLOATS
        | WasmFeatures::MEMORY64
}

fn not_valid(message: impl Into<String>) -> WasmError {
    WasmError::NotValid(message.into())
}

/// Checks `wasm` as the replica checks a module at install.
pub fn validate(wasm: &[u8]) -> Result<(), WasmError> {
    if wasm.len() > MAX_WASM_SIZE {
        return Err(WasmError::TooLarge { size: wasm.len(), allowed: MAX_WASM_SIZE });
    }
    check_code_section_size(wasm)?;
    Validator::new_with_features(features()).validate_all(wasm).map_err(|e| {
        not_valid(format!(
            "Wasmtime failed to validate wasm module wasmtime::Module::validate() failed with {e}"
        ))
    })?;
    // wasmi runs no SIMD as the simulator builds it.
    if Validator::new_with_features(features() - WasmFeatures::SIMD).validate_all(wasm).is_err() {
        return Err(WasmError::Simd);
    }
    // Imports come before memories, but their signatures depend on the memory.
    let mut module = Parsed { memory64: is_memory64(wasm), ..Parsed::default() };
    for payload in Parser::new(0).parse_all(wasm) {
        module.read(payload.map_err(|e| not_valid(format!("Failed to decode wasm module: {e}")))?)?;
    }
    module.check()
}

fn check_code_section_size(wasm: &[u8]) -> Result<(), WasmError> {
    for payload in Parser::new(0).parse_all(wasm) {
        match payload {
            Ok(Payload::CodeSectionStart { size, .. }) if size > MAX_CODE_SECTION_SIZE => {
                return Err(not_valid(format!(
                    "Wasm module code section size of {size} exceeds the maximum allowed size of \
                     {MAX_CODE_SECTION_SIZE}."
                )));
            }
            Ok(Payload::CodeSectionStart { .. }) => return Ok(()),
            Ok(_) => {}
            Err(e) => {
                return Err(not_valid(format!(
                    "Failed to decode wasm module: Error finding code section: {e}"
                )));
            }
        }
    }
    Ok(())
}

/// The replica's checks after wasmparser's, in the order it makes them: a
/// module with several faults is refused for the first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Check {
    Imports,
    Exports,
    Data,
    Globals,
    Functions,
    Code,
    CustomSections,
}

/// What the checks after wasmparser's need, gathered in one pass.
#[derive(Default)]
struct Parsed {
    /// The first fault each check found.
    faults: BTreeMap<Check, WasmError>,
    /// Bodies read so far: the index the replica names a function by.
    bodies: usize,
    types: Vec<Option<FuncType>>,
    /// The type index of every function, imported ones first.
    functions: Vec<u32>,
    imported_functions: usize,
    memory64: bool,
    exports: Vec<(String, ExternalKind, u32)>,
    globals: usize,
    /// `icp:` custom sections: names seen, and names and contents' total size.
    custom_sections: BTreeSet<String>,
    custom_sections_size: usize,
}

impl Parsed {
    fn fault(&mut self, check: Check, result: Result<(), WasmError>) {
        if let Err(e) = result {
            self.faults.entry(check).or_insert(e);
        }
    }

    fn read(&mut self, payload: Payload<'_>) -> Result<(), WasmError> {
        let decode =
            |e: wasmparser::BinaryReaderError| not_valid(format!("Failed to decode wasm module: {e}"));
        match payload {
            Payload::TypeSection(reader) => {
                for group in reader {
                    for ty in group.map_err(decode)?.into_types() {
                        self.types.push(match ty.composite_type.inner {
                            CompositeInnerType::Func(f) => Some(f),
                            _ => None,
                        });
                    }
                }
            }
            Payload::ImportSection(reader) => {
                for import in reader {
                    let result = self.import(import.map_err(decode)?);
                    self.fault(Check::Imports, result);
                }
            }
            Payload::FunctionSection(reader) => {
                for ty in reader {
                    self.functions.push(ty.map_err(decode)?);
                }
            }
            Payload::GlobalSection(reader) => {
                for global in reader {
                    let ty = global.map_err(decode)?.ty.content_type;
                    if !matches!(
                        ty,
                        ValType::I32 | ValType::I64 | ValType::F32 | ValType::F64 | ValType::V128
                    ) {
                        let message = format!(
                            "Wasm module has an invalid global section. Unsupported global type: {ty}"
                        );
                        self.fault(Check::Globals, Err(not_valid(message)));
                    }
                    self.globals += 1;
                }
            }
            Payload::ExportSection(reader) => {
                for export in reader {
                    let export = export.map_err(decode)?;
                    self.exports.push((export.name.to_string(), export.kind, export.index));
                }
            }
            Payload::DataSection(reader) => {
                for data in reader {
                    if let DataKind::Active { offset_expr, .. } = data.map_err(decode)?.kind {
                        self.fault(Check::Data, check_data_offset(&offset_expr, self.memory64));
                    }
                }
            }
            Payload::CodeSectionEntry(body) => {
                let result = check_body(self.bodies, &body);
                self.fault(Check::Code, result);
                self.bodies += 1;
            }
            Payload::CustomSection(section) => {
                let result = self.custom_section(section.name(), section.data().len());
                self.fault(Check::CustomSections, result);
            }
            _ => {}
        }
        Ok(())
    }

    fn import(&mut self, import: wasmparser::Import<'_>) -> Result<(), WasmError> {
        let invalid =
            |message: String| not_valid(format!("Wasm module has an invalid import section. {message}"));
        let (module, name) = (import.module, import.name);
        match import.ty {
            TypeRef::Func(index) => {
                let function = ic0::function(name).filter(|f| !(f.wasm32_only && self.memory64));
                let Some(function) = function else {
                    return Err(invalid(format!(
                        "Module imports function '{name}' from '{module}' that is not exported by the runtime."
                    )));
                };
                if module != "ic0" {
                    return Err(invalid(format!(
                        "Module imports function {name:?} from {module:?}, expected to be imported from one of \
                         [\"ic0\"] instead."
                    )));
                }
                let ty = self.types.get(index as usize).cloned().flatten();
                let ty = ty.ok_or_else(|| {
                    invalid(format!("Function import doesn't have a function type. Type found: {index}"))
                })?;
                let (params, results) = function.signature(self.memory64);
                check_signature(&format!("ic0.{name}"), &params, &results, &ty)?;
                self.functions.push(index);
                self.imported_functions += 1;
            }
            TypeRef::Table(_) if name == "table" && module == "env" => {}
            TypeRef::Table(_) => {
                return Err(invalid("Only tables imported from env.table are allowed.".into()));
            }
            TypeRef::Memory(_) if name == "memory" && module == "env" => {}
            TypeRef::Memory(_) => {
                return Err(invalid("Only memory imported from env.memory is allowed.".into()));
            }
            TypeRef::Global(_) => return Err(invalid("Importing globals is not allowed.".into())),
            TypeRef::Tag(_) => return Err(invalid("Importing tags is not allowed.".into())),
        }
        Ok(())
    }

    fn custom_section(&mut self, name: &str, size: usize) -> Result<(), WasmError> {
        let Some(scoped) = name.strip_prefix("icp:") else {
            return Ok(());
        };
        let invalid =
            |message: String| not_valid(format!("Wasm module has an invalid custom section. {message}"));
        if scoped == "public" || scoped == "private" {
            return Err(invalid(
                "'icp:' section names must have a space after the public/private scope".into(),
            ));
        }
        if !scoped.starts_with("public ") && !scoped.starts_with("private ") {
            return Err(invalid(format!(
                "Invalid custom section: Custom section '{name}' has no public/private scope defined."
            )));
        }
        if self.custom_sections.contains(name) {
            return Err(invalid(format!("Invalid custom section: name {name} already exists")));
        }
        self.custom_sections_size += size + name.len();
        if self.custom_sections_size > MAX_CUSTOM_SECTIONS_SIZE {
            return Err(invalid(format!(
                "Invalid custom sections: total size of the custom sections exceeds the maximum allowed: size {} \
                 bytes, allowed {MAX_CUSTOM_SECTIONS_SIZE} bytes",
                self.custom_sections_size
            )));
        }
        self.custom_sections.insert(name.to_string());
        if self.custom_sections.len() > MAX_CUSTOM_SECTIONS {
            return Err(not_valid(format!(
                "Wasm module defined {} custom sections which exceeds the maximum number allowed \
                 {MAX_CUSTOM_SECTIONS}.",
                self.custom_sections.len()
            )));
        }
        Ok(())
    }

    /// The checks on the module as a whole; then the first fault, in the
    /// replica's order.
    fn check(mut self) -> Result<(), WasmError> {
        let exports = self.check_exports();
        self.fault(Check::Exports, exports);
        if self.globals > MAX_GLOBALS {
            let message = format!(
                "Wasm module defined {} globals which exceeds the maximum number allowed {MAX_GLOBALS}.",
                self.globals
            );
            self.fault(Check::Globals, Err(not_valid(message)));
        }
        let defined = self.functions.len() - self.imported_functions;
        if defined > MAX_FUNCTIONS {
            let message = format!(
                "Wasm module defined {defined} functions which exceeds the maximum number allowed {MAX_FUNCTIONS}."
            );
            self.fault(Check::Functions, Err(not_valid(message)));
        }
        self.faults.into_values().next().map_or(Ok(()), Err)
    }

    fn check_exports(&self) -> Result<(), WasmError> {
        let invalid =
            |message: String| not_valid(format!("Wasm module has an invalid export section. {message}"));
        let mut methods = BTreeMap::<&str, &str>::new();
        let mut name_lengths = 0;
        for (name, kind, index) in &self.exports {
            if RESERVED_SYMBOLS.contains(&name.as_str()) {
                return Err(invalid(format!("Exporting reserved symbol {name} not allowed.")));
            }
            if *kind != ExternalKind::Func {
                continue;
            }
            let method =
                METHOD_PREFIXES.iter().find_map(|prefix| Some((*prefix, name.strip_prefix(prefix)?)));
            if let Some((prefix, method)) = method {
                // wasmparser refuses the same name exported twice.
                if methods.insert(method, prefix).is_some_and(|other| other != prefix) {
                    return Err(not_valid(format!(
                        "Duplicate function '{method}' exported multiple times with different call types: update, \
                         query, or composite_query."
                    )));
                }
                name_lengths += method.len();
            } else if name.starts_with("canister_") && !SYSTEM_METHODS.contains(&name.as_str()) {
                return Err(invalid(format!(
                    "Exporting reserved function '{name}' with \"canister_\" prefix"
                )));
            } else if !name.starts_with("canister_") {
                continue;
            }
            let ty = self
                .functions
                .get(*index as usize)
                .and_then(|&t| self.types.get(t as usize).cloned().flatten());
            if let Some(ty) = ty {
                check_signature(name, &[], &[], &ty)?;
            }
        }
        if methods.len() > MAX_EXPORTED_METHODS {
            return Err(invalid(format!(
                "The number of exported functions called `canister_update <name>`, `canister_query <name>`, or \
                 `canister_composite_query <name>` is {} which exceeds {MAX_EXPORTED_METHODS}.",
                methods.len()
            )));
        }
        if name_lengths > MAX_SUM_METHOD_NAME_LENGTHS {
            return Err(invalid(format!(
                "The sum of `<name>` lengths in exported functions called `canister_update <name>`, `canister_query \
                 <name>`, or `canister_composite_query <name>` is {name_lengths} which exceeds the allowed limit of \
                 {MAX_SUM_METHOD_NAME_LENGTHS}."
            )));
        }
        Ok(())
    }
}

fn check_signature(
    name: &str,
    params: &[ValType],
    results: &[ValType],
    ty: &FuncType,
) -> Result<(), WasmError> {
    let invalid =
        |message: String| not_valid(format!("Wasm module has an invalid function signature. {message}"));
    if ty.params() != params {
        return Err(invalid(format!(
            "Expected input params {params:?} for '{name}', got {:?}.",
            ty.params()
        )));
    }
    if ty.results() != results {
        return Err(invalid(format!(
            "Expected return type {results:?} for '{name}', got {:?}.",
            ty.results()
        )));
    }
    Ok(())
}

fn check_data_offset(offset: &ConstExpr<'_>, memory64: bool) -> Result<(), WasmError> {
    let mut ops = offset.get_operators_reader();
    let first = ops.read().ok();
    let end = ops.read().ok();
    match (first, end, memory64) {
        (Some(Operator::I32Const { .. }), Some(Operator::End), false)
        | (Some(Operator::I64Const { .. }), Some(Operator::End), true) => Ok(()),
        (first, ..) => Err(not_valid(format!(
            "Wasm module has an invalid data section. Invalid offset expression in data segment for {}bit \
             memory: {first:?}",
            if memory64 { 64 } else { 32 }
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(wat: &str) -> String {
        let wasm = wat::parse_str(wat).unwrap();
        validate(&wasm).expect_err(wat).to_string()
    }

    #[test]
    fn each_check_refuses_with_the_replicas_message() {
        let globals = "(global i32 (i32.const 0))".repeat(MAX_GLOBALS + 1);
        let sections = (0..=MAX_CUSTOM_SECTIONS)
            .map(|i| format!("(@custom \"icp:public s{i}\" \"\")"))
            .collect::<String>();
        let cases = [
            (
                r#"(module (import "ic0" "nope" (func)))"#.to_string(),
                "Wasm module has an invalid import section. Module imports function 'nope' from 'ic0' that is not \
                 exported by the runtime.",
            ),
            (
                r#"(module (import "env" "msg_reply" (func)))"#.into(),
                "Module imports function \"msg_reply\" from \"env\", expected to be imported from one of [\"ic0\"] \
                 instead.",
            ),
            (
                r#"(module (import "ic0" "msg_reply" (func (param i32))))"#.into(),
                "Wasm module has an invalid function signature. Expected input params [] for 'ic0.msg_reply', got \
                 [I32].",
            ),
            (r#"(module (import "ic0" "g" (global i32)))"#.into(), "Importing globals is not allowed."),
            (
                r#"(module (func (export "canister_start")))"#.into(),
                "Wasm module has an invalid export section. Exporting reserved symbol canister_start not allowed.",
            ),
            (
                r#"(module (func (export "canister_foo")))"#.into(),
                "Exporting reserved function 'canister_foo' with \"canister_\" prefix",
            ),
            (
                r#"(module (func (export "canister_update x")) (func (export "canister_query x")))"#.into(),
                "Duplicate function 'x' exported multiple times with different call types: update, query, or \
                 composite_query.",
            ),
            (
                r#"(module (func (export "canister_update f") (param i32)))"#.into(),
                "Expected input params [] for 'canister_update f', got [I32].",
            ),
            (
                "(module (global (mut externref) (ref.null extern)))".into(),
                "Wasm module has an invalid global section. Unsupported global type: externref",
            ),
            (
                format!("(module {globals})"),
                "Wasm module defined 1001 globals which exceeds the maximum number allowed 1000.",
            ),
            (
                "(module (table 1 funcref) (func (table.set (i32.const 0) (ref.null func))))".into(),
                "Wasm module contains a function at index 0 with unsupported instruction table.set.",
            ),
            (
                r#"(module (@custom "icp:public" ""))"#.into(),
                "'icp:' section names must have a space after the public/private scope",
            ),
            (
                r#"(module (@custom "icp:other x" ""))"#.into(),
                "Custom section 'icp:other x' has no public/private scope defined.",
            ),
            (
                format!("(module {sections})"),
                "Wasm module defined 17 custom sections which exceeds the maximum number allowed 16.",
            ),
            (
                r#"(module (import "ic0" "msg_arg_data_copy" (func (param i32 i32 i32))) (memory i64 1))"#
                    .into(),
                "Wasm module has an invalid function signature. Expected input params [I64, I64, I64] for \
                 'ic0.msg_arg_data_copy', got [I32, I32, I32].",
            ),
            (
                r#"(module (import "ic0" "stable_size" (func (result i32))) (memory i64 1))"#.into(),
                "Module imports function 'stable_size' from 'ic0' that is not exported by the runtime.",
            ),
            (
                format!("(module (func {}))", "(loop)".repeat(20_001)),
                "Wasm module contains a function at index 0 with complexity 1020052 which exceeds the maximum \
                 complexity allowed 1000000.",
            ),
            ("(module (memory 1 1 shared))".into(), "Wasmtime failed to validate wasm module"),
            ("(module (func (drop (v128.const i64x2 0 0))))".into(), "the simulator does not run SIMD"),
        ];
        for (wat, expected) in cases {
            let refusal = refusal(&wat);
            assert!(refusal.starts_with("Canister's Wasm module is not valid: "), "{refusal}");
            assert!(refusal.contains(expected), "{wat}:\n{refusal}\nexpected: {expected}");
        }
    }

    #[test]
    fn a_module_with_several_faults_is_refused_for_the_first_the_replica_checks() {
        // An export fault, then a global one: the replica checks exports first.
        let refusal =
            refusal(r#"(module (global (mut externref) (ref.null extern)) (func (export "canister_x")))"#);
        assert!(refusal.contains("Exporting reserved function 'canister_x'"), "{refusal}");
    }

    #[test]
    fn canister_modules_pass() {
        for wat in
            [include_str!("../../tests/fixtures/callee.wat"), include_str!("../../tests/fixtures/probe.wat")]
        {
            validate(&wat::parse_str(wat).unwrap()).unwrap();
        }
    }
}
