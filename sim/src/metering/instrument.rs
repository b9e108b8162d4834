//! The instrumentation pass: a module rewritten to count its instructions
//! the way the replica's `rs/embedders/src/wasm_utils/instrumentation.rs`
//! rewrites it (`injections`, `inject_metering`).
//!
//! A mutable i64 global, the counter, is set to the message's limit before
//! each execution and counts down. Each basic block subtracts the summed
//! cost of its instructions when it is entered, so code that is skipped is
//! never charged; function entries and loop headers then check that the
//! counter is not negative. Bulk memory instructions also subtract their
//! size operand, through an added function. Host functions charge the same
//! counter ([`crate::system_api`]).
//!
//! One difference: the replica calls an imported `out_of_instructions`
//! when the counter is negative. Adding an import would renumber every
//! function of the module, so the check executes `unreachable` instead, and
//! the simulator tells the two traps apart by the counter, which is
//! negative only past the limit.

use wasm_encoder::{BlockType, Encode, Function, Instruction, ValType};
use wasmparser::{FunctionBody, Operator, Parser, Payload, TypeRef};

use super::costs;
use crate::module::{WasmError, append_entry, section_contents, splice};

/// A module that counts its instructions in global `counter`.
pub struct Instrumented {
    pub wasm: Vec<u8>,
    pub counter: u32,
}

const TYPE_SECTION: u8 = 1;
const FUNCTION_SECTION: u8 = 3;
const GLOBAL_SECTION: u8 = 6;
const CODE_SECTION: u8 = 10;

/// Adds the counter, the bulk-memory helper and the charges to `wasm`.
pub fn instrument(wasm: &[u8]) -> Result<Instrumented, WasmError> {
    let module = Scan::of(wasm)?;
    let counter = module.imported_globals + module.defined_globals;
    let helper = module.imported_functions + module.defined_functions;
    let rules = Rules { counter, helper, memory64: module.memory64 };

    let mut code = vec![];
    (module.bodies.len() as u32 + 1).encode(&mut code);
    for body in &module.bodies {
        rules.meter(wasm, body)?.as_slice().encode(&mut code);
    }
    rules.helper_body().encode(&mut code);

    let sections = section_contents(wasm)?;
    let section = |id| sections.get(&id).copied();
    // (func (param i64) (result i64))
    let helper_type = [0x60, 1, 0x7e, 1, 0x7e];
    let mut function_entry = vec![];
    module.types.encode(&mut function_entry);
    // (global (mut i64) (i64.const i64::MAX)): a start function, which runs
    // at instantiation before any limit is set, is not limited.
    let mut global_entry = vec![0x7e, 1];
    Instruction::I64Const(i64::MAX).encode(&mut global_entry);
    Instruction::End.encode(&mut global_entry);
    let replaced = [
        (TYPE_SECTION, append_entry(section(TYPE_SECTION), &helper_type)?),
        (FUNCTION_SECTION, append_entry(section(FUNCTION_SECTION), &function_entry)?),
        (GLOBAL_SECTION, append_entry(section(GLOBAL_SECTION), &global_entry)?),
        (CODE_SECTION, code),
    ];
    Ok(Instrumented { wasm: splice(wasm, replaced.into_iter().collect())?, counter })
}

/// What the pass needs to know about a module.
#[derive(Default)]
struct Scan<'a> {
    types: u32,
    imported_functions: u32,
    imported_globals: u32,
    defined_functions: u32,
    defined_globals: u32,
    memory64: bool,
    bodies: Vec<FunctionBody<'a>>,
}

impl<'a> Scan<'a> {
    fn of(wasm: &'a [u8]) -> Result<Self, WasmError> {
        let invalid = |e: wasmparser::BinaryReaderError| WasmError::Invalid(e.to_string());
        let mut scan = Scan::default();
        let mut memories = vec![];
        for payload in Parser::new(0).parse_all(wasm) {
            match payload.map_err(invalid)? {
                Payload::TypeSection(reader) => {
                    for group in reader {
                        scan.types += group.map_err(invalid)?.types().len() as u32;
                    }
                }
                Payload::ImportSection(reader) => {
                    for import in reader {
                        match import.map_err(invalid)?.ty {
                            TypeRef::Func(_) => scan.imported_functions += 1,
                            TypeRef::Global(_) => scan.imported_globals += 1,
                            TypeRef::Memory(m) => memories.push(m.memory64),
                            _ => {}
                        }
                    }
                }
                Payload::FunctionSection(reader) => scan.defined_functions = reader.count(),
                Payload::GlobalSection(reader) => scan.defined_globals = reader.count(),
                Payload::MemorySection(reader) => {
                    for memory in reader {
                        memories.push(memory.map_err(invalid)?.memory64);
                    }
                }
                Payload::CodeSectionEntry(body) => scan.bodies.push(body),
                _ => {}
            }
        }
        scan.memory64 = memories.first().copied().unwrap_or(false);
        Ok(scan)
    }
}

/// Where a charge goes: before the instruction at `before`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Point {
    before: usize,
    charge: Charge,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Charge {
    /// A basic block's summed cost; a re-entrant block (function entry, loop
    /// body) also checks the counter.
    Block { cost: u64, reentrant: bool },
    /// The size operand on top of the stack (i64 if `wide`).
    Size { wide: bool },
}

/// Where each block of `ops` starts and what it costs ([INS] `injections`):
/// a block ends at (and includes) `loop`, `if`, `else`, `br`, `br_if`,
/// `br_table`, `end`, `return`, `unreachable` and the tail calls.
fn points(ops: &[Operator], memory64: bool) -> Vec<Point> {
    use Operator::*;
    let mut points = vec![];
    let mut block = Point { before: 0, charge: Charge::Block { cost: costs::FUNCTION_ENTRY, reentrant: true } };
    for (i, op) in ops.iter().enumerate() {
        if let Charge::Block { cost, .. } = &mut block.charge {
            *cost += costs::instruction(op, memory64);
        }
        let next_reentrant = match op {
            Loop { .. } => Some(true),
            If { .. } | Else | Br { .. } | BrIf { .. } | BrTable { .. } | End | Return | Unreachable
            | ReturnCall { .. } | ReturnCallIndirect { .. } => Some(false),
            MemoryFill { .. } | MemoryCopy { .. } | TableFill { .. } | TableCopy { .. } => {
                points.push(Point { before: i, charge: Charge::Size { wide: memory64 } });
                None
            }
            // Their size operand is an i32 even with 64-bit memory.
            MemoryInit { .. } | TableInit { .. } => {
                points.push(Point { before: i, charge: Charge::Size { wide: false } });
                None
            }
            _ => None,
        };
        if let Some(reentrant) = next_reentrant {
            points.push(block);
            block = Point { before: i + 1, charge: Charge::Block { cost: 0, reentrant } };
        }
    }
    // Stable: a size charge goes before the block charge at the same place,
    // as in the replica.
    points.sort_by_key(|p| p.before);
    // Blocks that cost nothing need no code, unless they check the counter.
    points.retain(|p| p.before < ops.len() && p.charge != Charge::Block { cost: 0, reentrant: false });
    points
}

/// The globals and functions the injected code uses.
struct Rules {
    counter: u32,
    helper: u32,
    memory64: bool,
}

impl Rules {
    /// `body` with its charges, unsized: its locals as they were, then its
    /// instructions, copied byte for byte, with the charges between them.
    fn meter(&self, wasm: &[u8], body: &FunctionBody) -> Result<Vec<u8>, WasmError> {
        let invalid = |e: wasmparser::BinaryReaderError| WasmError::Invalid(e.to_string());
        let mut reader = body.get_operators_reader().map_err(invalid)?;
        let locals = &wasm[body.range().start..reader.original_position()];
        let mut ops = vec![];
        let mut starts = vec![];
        while !reader.eof() {
            let (op, start) = reader.read_with_offset().map_err(invalid)?;
            ops.push(op);
            starts.push(start);
        }
        starts.push(body.range().end);
        let mut bytes = locals.to_vec();
        let mut points = points(&ops, self.memory64).into_iter().peekable();
        for i in 0..ops.len() {
            while let Some(point) = points.next_if(|p| p.before == i) {
                self.charge(point.charge, &mut bytes);
            }
            bytes.extend_from_slice(&wasm[starts[i]..starts[i + 1]]);
        }
        Ok(bytes)
    }

    fn charge(&self, charge: Charge, out: &mut Vec<u8>) {
        use Instruction as I;
        let code: Vec<Instruction> = match charge {
            Charge::Block { cost, reentrant } => {
                let mut code = vec![
                    I::GlobalGet(self.counter),
                    I::I64Const(cost as i64),
                    I::I64Sub,
                    I::GlobalSet(self.counter),
                ];
                if reentrant {
                    code.extend(self.trap_if_negative());
                }
                code
            }
            Charge::Size { wide: true } => vec![I::Call(self.helper)],
            Charge::Size { wide: false } => vec![I::I64ExtendI32U, I::Call(self.helper), I::I32WrapI64],
        };
        for instruction in code {
            instruction.encode(out);
        }
    }

    fn trap_if_negative(&self) -> [Instruction<'static>; 6] {
        use Instruction as I;
        [I::GlobalGet(self.counter), I::I64Const(0), I::I64LtS, I::If(BlockType::Empty), I::Unreachable, I::End]
    }

    /// `(func (param $size i64) (result i64))`: subtracts `$size` from the
    /// counter (stopping at `i64::MIN`), traps if it is negative, and
    /// returns `$size`. Not metered itself, as in the replica.
    fn helper_body(&self) -> Function {
        use Instruction as I;
        let mut f = Function::new([(1, ValType::I64)]);
        for instruction in [
            I::GlobalGet(self.counter),
            I::LocalGet(0),
            I::I64Sub,
            I::LocalTee(1),
            I::GlobalGet(self.counter),
            // Subtracting a non-negative size gave more: it wrapped.
            I::I64GtS,
            I::If(BlockType::Result(ValType::I64)),
            I::I64Const(i64::MIN),
            I::Else,
            I::LocalGet(1),
            I::End,
            I::GlobalSet(self.counter),
        ] {
            f.instruction(&instruction);
        }
        for instruction in self.trap_if_negative() {
            f.instruction(&instruction);
        }
        f.instruction(&I::LocalGet(0));
        f.instruction(&I::End);
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instrumented(wat: &str) -> Instrumented {
        let m = instrument(&wat::parse_str(wat).unwrap()).unwrap();
        wasmparser::validate(&m.wasm).unwrap();
        m
    }

    #[test]
    fn adds_the_sections_a_module_lacks() {
        // No type, function, global or code section to append to.
        let m = instrumented("(module (memory 1))");
        assert_eq!(m.counter, 0);
    }

    #[test]
    fn the_counter_follows_imported_and_defined_globals() {
        let m = instrumented(
            r#"(module
                (import "ic0" "g" (global i32))
                (global (mut i32) (i32.const 0))
                (global i64 (i64.const 0))
                (memory i64 1)
                (func (export "f") (memory.fill (i64.const 0) (i32.const 0) (i64.const 8)))
                (func $s)
                (start $s))"#,
        );
        assert_eq!(m.counter, 3);
    }

    #[test]
    fn blocks_that_cost_nothing_get_no_code_but_loop_headers_do() {
        let ops = [Operator::Block { blockty: wasmparser::BlockType::Empty }, Operator::End, Operator::End];
        assert_eq!(points_of(&ops), [(0, 1, true)]);
        let ops = [Operator::Loop { blockty: wasmparser::BlockType::Empty }, Operator::End, Operator::End];
        assert_eq!(points_of(&ops), [(0, 1, true), (1, 0, true)]);
    }

    fn points_of(ops: &[Operator]) -> Vec<(usize, u64, bool)> {
        points(ops, false)
            .into_iter()
            .map(|p| match p.charge {
                Charge::Block { cost, reentrant } => (p.before, cost, reentrant),
                Charge::Size { .. } => (p.before, u64::MAX, false),
            })
            .collect()
    }
}
