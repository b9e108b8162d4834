//! The replica's checks of one function body: the instructions it refuses,
//! and each body's size and complexity.

use wasmparser::Operator;

use super::{MAX_FUNCTION_COMPLEXITY, MAX_FUNCTION_SIZE, not_valid};
use crate::module::WasmError;

/// The replica's checks of one function body: no instruction that changes a
/// table, and at most [`MAX_FUNCTION_SIZE`] instructions.
pub(super) fn check_body(index: usize, body: &wasmparser::FunctionBody<'_>) -> Result<(), WasmError> {
    let decode = |e: wasmparser::BinaryReaderError| not_valid(format!("Failed to decode wasm module: {e}"));
    let (mut size, mut complexity) = (0, 0u64);
    let mut ops = body.get_operators_reader().map_err(decode)?;
    while !ops.eof() {
        let op = ops.read().map_err(decode)?;
        complexity = complexity.saturating_add(self::complexity(&op));
        let unsupported = match op {
            Operator::TableGrow { .. } => "table.grow",
            Operator::TableSet { .. } => "table.set",
            Operator::TableFill { .. } => "table.fill",
            Operator::TableCopy { .. } => "table.copy",
            Operator::TableInit { .. } => "table.init",
            _ => "",
        };
        if !unsupported.is_empty() {
            return Err(not_valid(format!(
                "Wasm module contains a function at index {index} with unsupported instruction {unsupported}."
            )));
        }
        size += 1;
    }
    if size > MAX_FUNCTION_SIZE {
        return Err(not_valid(format!(
            "Wasm module contains a function at index {index} of size {size} that exceeds the maximum allowed size \
             of {MAX_FUNCTION_SIZE}."
        )));
    }
    if complexity > MAX_FUNCTION_COMPLEXITY {
        return Err(not_valid(format!(
            "Wasm module contains a function at index {index} with complexity {complexity} which exceeds the \
             maximum complexity allowed {MAX_FUNCTION_COMPLEXITY}."
        )));
    }
    Ok(())
}

/// An instruction's weight in a function's complexity, as the replica
/// weighs it (`wasm_function_complexity` in its validation): control flow,
/// calls and `memory.grow` weigh most.
fn complexity(op: &Operator) -> u64 {
    use Operator::*;
    match op {
        Block { .. }
        | Loop { .. }
        | If { .. }
        | Br { .. }
        | BrIf { .. }
        | BrTable { .. }
        | Call { .. }
        | CallIndirect { .. }
        | MemoryGrow { .. } => 50,
        TableGet { .. } => 14,
        RefFunc { .. } => 8,
        RefIsNull => 6,
        I32TruncF32S | I32TruncF32U | I32TruncF64S | I32TruncF64U | I64ExtendI32S | I64ExtendI32U
        | I64TruncF32S | I64TruncF32U | I64TruncF64S | I64TruncF64U | F32ConvertI32S | F32ConvertI32U
        | F32ConvertI64S | F32ConvertI64U | F32DemoteF64 | F64ConvertI32S | F64ConvertI32U
        | F64ConvertI64S | F64ConvertI64U => 5,
        F32Neg | F32Abs | F64Neg | F64Abs | MemoryCopy { .. } => 4,
        F32Copysign
        | F64Copysign
        | F64Eq
        | I32DivS
        | I32DivU
        | I32RemS
        | I32RemU
        | I64DivS
        | I64DivU
        | I64RemS
        | I64RemU
        | MemoryFill { .. }
        | I32Load { .. }
        | I64Load { .. }
        | F32Load { .. }
        | F64Load { .. }
        | I32Load8S { .. }
        | I32Load8U { .. }
        | I32Load16S { .. }
        | I32Load16U { .. }
        | I64Load8S { .. }
        | I64Load8U { .. }
        | I64Load16S { .. }
        | I64Load16U { .. }
        | I64Load32S { .. }
        | I64Load32U { .. }
        | I32TruncSatF32S
        | I32TruncSatF32U
        | I32TruncSatF64S
        | I32TruncSatF64U
        | I64TruncSatF32S
        | I64TruncSatF32U
        | I64TruncSatF64S
        | I64TruncSatF64U => 3,
        GlobalGet { .. }
        | I32Popcnt
        | I64Popcnt
        | Select
        | TypedSelect { .. }
        | MemorySize { .. }
        | I32Store { .. }
        | I64Store { .. }
        | F32Store { .. }
        | F64Store { .. }
        | I32Store8 { .. }
        | I32Store16 { .. }
        | I64Store8 { .. }
        | I64Store16 { .. }
        | I64Store32 { .. }
        | I32Eqz
        | I32Eq
        | I32Ne
        | I32LtS
        | I32LtU
        | I32GtS
        | I32GtU
        | I32LeS
        | I32LeU
        | I32GeS
        | I32GeU
        | I64Eqz
        | I64Eq
        | I64Ne
        | I64LtS
        | I64LtU
        | I64GtS
        | I64GtU
        | I64LeS
        | I64LeU
        | I64GeS
        | I64GeU
        | F32Eq
        | F32Ne
        | F32Lt
        | F32Gt
        | F32Le
        | F32Ge
        | F64Ne
        | F64Lt
        | F64Gt
        | F64Le
        | F64Ge
        | F32Ceil
        | F32Floor
        | F32Sqrt
        | F32Trunc
        | F64Ceil
        | F64Floor
        | F64Sqrt
        | F64Trunc
        | I32ReinterpretF32
        | I64ReinterpretF64
        | F32ReinterpretI32
        | F64ReinterpretI64
        | I32WrapI64
        | I32Extend8S
        | I32Extend16S
        | I64Extend8S
        | I64Extend16S
        | I64Extend32S
        | F64PromoteF32 => 2,
        _ => 1,
    }
}
