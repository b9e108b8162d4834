//! The instrumentation pass: a module rewritten to count its instructions
//! the way the replica's `rs/embedders/src/wasm_utils/instrumentation.rs`
//! rewrites it (`injections`, `inject_metering`).
//!
//! A mutable i64 global, the counter, is set to the message's limit before
//! each execution and counts down. Each basic block subtracts the summed
//! cost of its instructions when it is entered, so code that is skipped is
//! never charged; loop headers then check that the counter is not negative.
//! Bulk memory instructions also subtract their size operand (a 64-bit one
//! through an added function that stops at `i64::MIN`, as the replica's).
//! Host functions charge the same counter and check it
//! ([`crate::system_api`]), and so does the end of a message
//! ([`crate::code`]). The counts are the replica's; how they are kept
//! differs in three ways, none of which changes the count of a message that
//! does not trap (one that traps may be charged a callee entry it did not
//! reach):
//!
//! - A function that only direct calls reach (not exported, not in a table,
//!   not the start function, never `ref.func`) has the cost of its entry
//!   block charged by its caller, added to the calling block's charge when
//!   the call is the first of its block (nothing before it in the block can
//!   observe the counter), else just before the call. A wasmi call is then
//!   no dearer than without metering.
//! - The replica also checks the counter at every function entry. Without
//!   that check a message past its limit runs a little further (to the next
//!   loop header, system call or its end) before it traps; it traps with
//!   the same error, is charged its limit, and what it did is undone. An
//!   endless recursion overflows wasmi's stack first, as it overflows the
//!   replica's.
//! - The replica calls an imported `out_of_instructions` when the counter is
//!   negative. Adding an import would renumber every function, so the check
//!   executes `unreachable` instead, and the simulator tells the two traps
//!   apart by the counter, which is negative only past the limit.

use std::collections::BTreeSet;
use wasm_encoder::{BlockType, Encode, Function, Instruction, ValType};
use wasmparser::{
    CompositeInnerType, ElementItems, ExternalKind, FunctionBody, Operator, Parser, Payload, TypeRef,
};

use super::costs;
use crate::module::{self, WasmError, append_entry, section_contents, splice};

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
    let (with_import, grow_import) = match module::import_memory_grow(wasm)? {
        Some((wasm, index)) => (wasm, Some(index)),
        None => (wasm.to_vec(), None),
    };
    let wasm = &with_import[..];
    let module = Scan::of(wasm)?;
    let counter = module.imported_globals + module.defined_globals;
    let helper = module.imported_functions + module.function_types.len() as u32;
    let rules = Rules { counter, helper, grow: grow_import };

    let bodies = module.bodies.iter().map(Body::read).collect::<Result<Vec<_>, _>>()?;
    // The entry block cost of each function that only direct calls reach.
    let hoisted: Vec<Option<u64>> = (module.imported_functions..)
        .zip(&bodies)
        .map(|(index, body)| {
            (!module.referenced.contains(&index)).then(|| entry_cost(&body.ops, module.memory64))
        })
        .collect();
    let hoist = |function: u32| {
        let defined = function.checked_sub(module.imported_functions)?;
        hoisted.get(defined as usize).copied().flatten()
    };

    let mut code = vec![];
    (bodies.len() as u32 + 1).encode(&mut code);
    for ((body, own), &ty) in bodies.iter().zip(&hoisted).zip(&module.function_types) {
        let points = points(&body.ops, module.memory64, own.is_some(), &hoist);
        let params = module.params.get(ty as usize).copied().unwrap_or(0);
        rules.meter(wasm, body, &points, params)?.as_slice().encode(&mut code);
    }
    rules.helper_body().encode(&mut code);

    let sections = section_contents(wasm)?;
    let section = |id| sections.get(&id).copied();
    // (func (param i64) (result i64))
    let helper_type = [0x60, 1, 0x7e, 1, 0x7e];
    let mut function_entry = vec![];
    (module.params.len() as u32).encode(&mut function_entry);
    // (global (mut i64) (i64.const 0)): set before every execution; nothing
    // runs at instantiation (the start function is `canister_start`, see
    // `crate::module`).
    let mut global_entry = vec![0x7e, 1];
    Instruction::I64Const(0).encode(&mut global_entry);
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
    /// Parameters of each type (0 for types that are not functions).
    params: Vec<u32>,
    imported_functions: u32,
    imported_globals: u32,
    /// The type of each function the module defines.
    function_types: Vec<u32>,
    defined_globals: u32,
    memory64: bool,
    /// Functions reachable other than by a direct call: exported, in an
    /// element segment, the start function, or taken by `ref.func`.
    referenced: BTreeSet<u32>,
    bodies: Vec<FunctionBody<'a>>,
}

fn invalid(e: wasmparser::BinaryReaderError) -> WasmError {
    WasmError::Invalid(e.to_string())
}

impl<'a> Scan<'a> {
    fn of(wasm: &'a [u8]) -> Result<Self, WasmError> {
        let mut scan = Scan::default();
        let mut memories = vec![];
        for payload in Parser::new(0).parse_all(wasm) {
            match payload.map_err(invalid)? {
                Payload::TypeSection(reader) => {
                    for group in reader {
                        for ty in group.map_err(invalid)?.types() {
                            scan.params.push(match &ty.composite_type.inner {
                                CompositeInnerType::Func(f) => f.params().len() as u32,
                                _ => 0,
                            });
                        }
                    }
                }
                Payload::ImportSection(reader) => {
                    for import in reader {
                        match import.map_err(invalid)?.ty {
                            TypeRef::Func(_) => scan.imported_functions += 1,
                            TypeRef::Global(_) => scan.imported_globals += 1,
                            TypeRef::Memory(m) => memories.push(m),
                            _ => {}
                        }
                    }
                }
                Payload::FunctionSection(reader) => {
                    scan.function_types = reader.into_iter().collect::<Result<_, _>>().map_err(invalid)?;
                }
                Payload::GlobalSection(reader) => {
                    scan.defined_globals = reader.count();
                    for global in reader {
                        scan.add_ref_funcs(global.map_err(invalid)?.init_expr.get_operators_reader())?;
                    }
                }
                Payload::MemorySection(reader) => {
                    for memory in reader {
                        memories.push(memory.map_err(invalid)?);
                    }
                }
                Payload::ExportSection(reader) => {
                    for export in reader {
                        let export = export.map_err(invalid)?;
                        if export.kind == ExternalKind::Func {
                            scan.referenced.insert(export.index);
                        }
                    }
                }
                Payload::StartSection { func, .. } => {
                    scan.referenced.insert(func);
                }
                Payload::ElementSection(reader) => {
                    for element in reader {
                        match element.map_err(invalid)?.items {
                            ElementItems::Functions(functions) => {
                                for f in functions {
                                    scan.referenced.insert(f.map_err(invalid)?);
                                }
                            }
                            ElementItems::Expressions(_, exprs) => {
                                for expr in exprs {
                                    scan.add_ref_funcs(expr.map_err(invalid)?.get_operators_reader())?;
                                }
                            }
                        }
                    }
                }
                Payload::CodeSectionEntry(body) => {
                    scan.add_ref_funcs(body.get_operators_reader().map_err(invalid)?)?;
                    scan.bodies.push(body);
                }
                _ => {}
            }
        }
        scan.memory64 = memories.first().is_some_and(|m| m.memory64);
        Ok(scan)
    }

    fn add_ref_funcs(&mut self, mut reader: wasmparser::OperatorsReader) -> Result<(), WasmError> {
        while !reader.eof() {
            if let Operator::RefFunc { function_index } = reader.read().map_err(invalid)? {
                self.referenced.insert(function_index);
            }
        }
        Ok(())
    }
}

/// A function body, read: its instructions and where each starts.
struct Body<'a> {
    /// The locals declaration, as bytes.
    locals: std::ops::Range<usize>,
    /// How many locals it declares.
    declared: u32,
    ops: Vec<Operator<'a>>,
    /// Where each instruction starts, and where the body ends.
    starts: Vec<usize>,
}

impl<'a> Body<'a> {
    fn read(body: &FunctionBody<'a>) -> Result<Self, WasmError> {
        let mut declared = 0u32;
        for group in body.get_locals_reader().map_err(invalid)? {
            declared = declared.saturating_add(group.map_err(invalid)?.0);
        }
        let mut reader = body.get_operators_reader().map_err(invalid)?;
        let locals = body.range().start..reader.original_position();
        let (mut ops, mut starts) = (vec![], vec![]);
        while !reader.eof() {
            let (op, start) = reader.read_with_offset().map_err(invalid)?;
            ops.push(op);
            starts.push(start);
        }
        starts.push(body.range().end);
        Ok(Self { locals, declared, ops, starts })
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
    /// A basic block's summed cost; a loop body also checks the counter.
    Block { cost: u64, reentrant: bool },
    /// The size operand on top of the stack (i64 if `wide`).
    Size { wide: bool },
    /// Nothing to charge: trap if the counter is negative. Before a tail
    /// call, which leaves the function without passing a loop header or
    /// the end of the message (the replica checks at every function entry).
    Check,
}

/// Whether `op` ends a basic block ([INS] `injections`): the next
/// instruction starts a new one.
fn ends_block(op: &Operator) -> bool {
    use Operator::*;
    matches!(
        op,
        Loop { .. }
            | If { .. }
            | Else
            | Br { .. }
            | BrIf { .. }
            | BrTable { .. }
            | End
            | Return
            | Unreachable
            | ReturnCall { .. }
            | ReturnCallIndirect { .. }
    )
}

/// The cost of a function's entry block.
fn entry_cost(ops: &[Operator], memory64: bool) -> u64 {
    let end = ops.iter().position(ends_block).map_or(ops.len(), |i| i + 1);
    costs::FUNCTION_ENTRY + ops[..end].iter().map(|op| costs::instruction(op, memory64)).sum::<u64>()
}

/// Where each block of `ops` starts and what it costs. `hoisted`: this
/// function's entry block is charged by its callers. `hoist`: the entry
/// cost of a function this one may charge for, if any.
fn points(ops: &[Operator], memory64: bool, hoisted: bool, hoist: &dyn Fn(u32) -> Option<u64>) -> Vec<Point> {
    use Operator::*;
    let mut points = vec![];
    let mut block =
        Point { before: 0, charge: Charge::Block { cost: costs::FUNCTION_ENTRY, reentrant: false } };
    let mut in_entry = true;
    // A call earlier in the block: what it runs may read the counter.
    let mut called = false;
    for (i, op) in ops.iter().enumerate() {
        if let Charge::Block { cost, .. } = &mut block.charge {
            *cost += costs::instruction(op, memory64);
        }
        match op {
            Call { function_index } | ReturnCall { function_index } => {
                if let Some(entry) = hoist(*function_index) {
                    // Not into a block that is itself charged by the callers.
                    let first = !(called || in_entry && hoisted);
                    match &mut block.charge {
                        Charge::Block { cost, .. } if first && matches!(op, Call { .. }) => *cost += entry,
                        _ => points.push(Point {
                            before: i,
                            charge: Charge::Block { cost: entry, reentrant: false },
                        }),
                    }
                }
                called = true;
                if matches!(op, ReturnCall { .. }) {
                    points.push(Point { before: i, charge: Charge::Check });
                }
            }
            CallIndirect { .. } => called = true,
            ReturnCallIndirect { .. } => points.push(Point { before: i, charge: Charge::Check }),
            MemoryFill { .. } | MemoryCopy { .. } | TableFill { .. } | TableCopy { .. } => {
                points.push(Point { before: i, charge: Charge::Size { wide: memory64 } });
            }
            // Their size operand is an i32 even with 64-bit memory.
            MemoryInit { .. } | TableInit { .. } => {
                points.push(Point { before: i, charge: Charge::Size { wide: false } });
            }
            _ => {}
        }
        if ends_block(op) {
            if !(in_entry && hoisted) {
                points.push(block);
            }
            in_entry = false;
            called = false;
            let reentrant = matches!(op, Loop { .. });
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
    /// The imported function `memory.grow` becomes a call to, if any (see
    /// [`crate::module::import_memory_grow`]).
    grow: Option<u32>,
}

impl Rules {
    /// `body` with its charges at `points`, unsized: its locals (plus an
    /// i32 to hold a size operand, if it charges one), then its
    /// instructions, copied byte for byte, with the charges between them.
    fn meter(&self, wasm: &[u8], body: &Body, points: &[Point], params: u32) -> Result<Vec<u8>, WasmError> {
        let locals = &wasm[body.locals.clone()];
        let (mut bytes, size_local) = if points.iter().any(|p| p.charge == Charge::Size { wide: false }) {
            // One more group of locals: (1 x i32).
            (append_entry(Some(locals), &[1, 0x7f])?, params.saturating_add(body.declared))
        } else {
            (locals.to_vec(), u32::MAX)
        };
        let mut points = points.iter().peekable();
        for i in 0..body.ops.len() {
            while let Some(point) = points.next_if(|p| p.before == i) {
                self.charge(point.charge, size_local, &mut bytes);
            }
            match (&body.ops[i], self.grow) {
                (Operator::MemoryGrow { mem: 0 }, Some(grow)) => Instruction::Call(grow).encode(&mut bytes),
                _ => bytes.extend_from_slice(&wasm[body.starts[i]..body.starts[i + 1]]),
            }
        }
        Ok(bytes)
    }

    fn charge(&self, charge: Charge, size_local: u32, out: &mut Vec<u8>) {
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
            Charge::Check => self.trap_if_negative().to_vec(),
            // A 64-bit size may take the counter past i64::MIN: the helper
            // stops there, as the replica's does.
            Charge::Size { wide: true } => vec![I::Call(self.helper)],
            // A 32-bit one cannot, and then a call to the helper costs
            // more than the operation it charges. Like a block, it is not
            // checked here: the next check sees it.
            Charge::Size { wide: false } => vec![
                I::LocalTee(size_local),
                I::GlobalGet(self.counter),
                I::LocalGet(size_local),
                I::I64ExtendI32U,
                I::I64Sub,
                I::GlobalSet(self.counter),
            ],
        };
        for instruction in code {
            instruction.encode(out);
        }
    }

    fn trap_if_negative(&self) -> [Instruction<'static>; 6] {
        use Instruction as I;
        [
            I::GlobalGet(self.counter),
            I::I64Const(0),
            I::I64LtS,
            I::If(BlockType::Empty),
            I::Unreachable,
            I::End,
        ]
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

    fn points_of(ops: &[Operator], hoisted: bool) -> Vec<(usize, u64, bool)> {
        let hoist = |f: u32| (f == 7).then_some(40);
        points(ops, false, hoisted, &hoist)
            .into_iter()
            .map(|p| match p.charge {
                Charge::Block { cost, reentrant } => (p.before, cost, reentrant),
                Charge::Size { .. } => (p.before, u64::MAX, false),
                Charge::Check => (p.before, 0, true),
            })
            .collect()
    }

    #[test]
    fn a_tail_call_checks_the_counter_after_charging_its_callee() {
        let ops = [Operator::ReturnCall { function_index: 7 }, Operator::End];
        // Hoisted itself, so its own entry block is its callers' to charge.
        assert_eq!(points_of(&ops, true), [(0, 40, false), (0, 0, true)]);
        let ops =
            [Operator::I32Const { value: 0 }, Operator::ReturnCallIndirect { type_index: 0, table_index: 0 }];
        let cost = costs::FUNCTION_ENTRY + 1 + 60;
        assert_eq!(points_of(&ops, false), [(0, cost, false), (1, 0, true)]);
    }

    #[test]
    fn blocks_that_cost_nothing_get_no_code_but_loop_headers_do() {
        use wasmparser::BlockType::Empty;
        let ops = [Operator::Block { blockty: Empty }, Operator::End, Operator::End];
        assert_eq!(points_of(&ops, false), [(0, 1, false)]);
        let ops = [Operator::Loop { blockty: Empty }, Operator::End, Operator::End];
        assert_eq!(points_of(&ops, false), [(0, 1, false), (1, 0, true)]);
    }

    #[test]
    fn a_direct_callee_entry_is_charged_in_the_first_calling_block_else_at_the_call() {
        let call = |f| Operator::Call { function_index: f };
        // Function 7 is hoistable (entry cost 40); 3 is not.
        let ops = [call(7), call(7), Operator::Drop, Operator::End];
        assert_eq!(points_of(&ops, false), [(0, 1 + 5 + 40 + 5 + 1, false), (1, 40, false)]);
        let ops = [call(3), call(7), Operator::End];
        assert_eq!(points_of(&ops, false), [(0, 11, false), (1, 40, false)]);
        // A hoisted function's own entry block is charged by its callers:
        // what it calls is charged at the call.
        assert_eq!(points_of(&[call(7), Operator::End], true), [(0, 40, false)]);
    }
}
