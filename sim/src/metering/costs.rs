//! Every instruction cost the simulator charges, as the replica defines it.
//!
//! Update this file when the replica changes. Sources, in `dfinity/ic`
//! (`docs/replica-costs.md` has the commits and line numbers):
//! - [INS] `rs/embedders/src/wasm_utils/instrumentation.rs`, `instruction_to_cost`;
//! - [CPX] `rs/embedders/src/wasmtime_embedder/system_api_complexity.rs`, `overhead`;
//! - [LNK] `rs/embedders/src/wasmtime_embedder/linker.rs` (which calls also
//!   charge per byte, and by what factor);
//! - [REP] `rs/embedders/src/wasm_utils/system_api_replacements.rs` (stable
//!   memory, which the replica runs as Wasm, not as system calls);
//! - [SCF] `rs/config/src/subnet_config.rs`; [LOG] the canister log's
//!   `MAX_ALLOWED_CANISTER_LOG_BUFFER_SIZE` (crate `ic_types`).

use wasmparser::Operator;

/// What a Wasm instruction costs when its basic block is entered
/// ([INS] `instruction_to_cost`). `memory64`: loads and stores cost 2
/// instead of 1 in a module with 64-bit memory.
pub fn instruction(op: &Operator, memory64: bool) -> u64 {
    use Operator::*;
    let memory_access = if memory64 { 2 } else { 1 };
    match op {
        // Structure only.
        Block { .. } | Else | End | Loop { .. } => 0,
        I32DivS | I32DivU | I32RemS | I32RemU | I64DivS | I64DivU | I64RemS | I64RemU => 10,
        F32Add | F32Sub | F32Mul | F32Ceil | F32Floor | F32Trunc | F32Nearest | F64Add | F64Sub | F64Mul
        | F64Ceil | F64Floor | F64Trunc | F64Nearest | F32Copysign => 2,
        F32Div | F64Copysign => 3,
        F64Div | F32Sqrt => 5,
        F64Sqrt => 8,
        F32Min | F32Max | F64Min | F64Max => 18,
        F32Eq | F32Ne | F32Lt | F32Gt | F32Le | F32Ge | F64Eq | F64Ne | F64Lt | F64Gt | F64Le | F64Ge => 3,
        F32ConvertI32S | F32ConvertI64S | F64ConvertI32S | F64ConvertI64S => 3,
        F32ConvertI32U | F32ConvertI64U | F64ConvertI32U | F64ConvertI64U => 16,
        I32TruncF32S | I32TruncF32U | I32TruncF64S | I32TruncF64U | I64TruncF32S | I64TruncF32U
        | I64TruncF64S | I64TruncF64U | I32TruncSatF32S | I32TruncSatF32U | I32TruncSatF64S
        | I32TruncSatF64U | I64TruncSatF32S | I64TruncSatF32U | I64TruncSatF64S | I64TruncSatF64U => 20,
        I32Load { .. }
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
        | I32Store { .. }
        | I64Store { .. }
        | F32Store { .. }
        | F64Store { .. }
        | I32Store8 { .. }
        | I32Store16 { .. }
        | I64Store8 { .. }
        | I64Store16 { .. }
        | I64Store32 { .. } => memory_access,
        GlobalGet { .. } | GlobalSet { .. } => 2,
        TableGet { .. } | TableSet { .. } => 5,
        MemoryGrow { .. } | TableGrow { .. } => 300,
        MemorySize { .. } => 20,
        TableSize { .. } => 100,
        // Plus the size operand, charged when the instruction runs.
        MemoryFill { .. }
        | MemoryCopy { .. }
        | MemoryInit { .. }
        | TableFill { .. }
        | TableCopy { .. }
        | TableInit { .. } => BULK_MEMORY,
        DataDrop { .. } | ElemDrop { .. } => 300,
        Call { .. } => 5,
        CallIndirect { .. } => 10,
        ReturnCall { .. } => 3,
        ReturnCallIndirect { .. } => 60,
        If { .. } | Br { .. } | BrIf { .. } | BrTable { .. } => 2,
        RefIsNull => 5,
        RefFunc { .. } => 130,
        // Constants, integer arithmetic and compares, locals, `select`,
        // conversions, `return`, `drop`, `nop`, `unreachable`, and
        // everything the replica does not list (its default). SIMD, which
        // the replica charges 1 to 14 per operation ([INS] lines 460-699),
        // never gets here: validation refuses it (wasmi runs none).
        _ => 1,
    }
}

/// The static part of a bulk memory instruction; its size operand (bytes,
/// or table elements) is added when it runs.
pub const BULK_MEMORY: u64 = 100;

/// Cost of the entry block of every function: "even empty functions should
/// consume at least some fuel" ([INS] `injections`).
pub const FUNCTION_ENTRY: u64 = 1;

/// Which arguments of a system call count as bytes, and at what rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PerByte {
    /// Nothing beyond the overhead.
    None,
    /// `factor` x the argument at this index.
    Arg { index: usize, factor: u64 },
    /// The sum of two arguments (`call_new`: callee and method name).
    Args { indices: [usize; 2] },
}

/// The replica's charge for one system call: a fixed overhead plus a
/// per-byte charge, both taken before the call does its work ([LNK]
/// `charge_for_cpu`, `charge_for_cpu_and_mem`).
#[derive(Clone, Copy, Debug)]
pub struct SystemApiCost {
    pub name: &'static str,
    pub overhead: u64,
    pub per_byte: PerByte,
}

impl SystemApiCost {
    /// The instructions a call with these arguments costs; arguments are
    /// the call's parameters as unsigned numbers.
    pub fn charge(&self, args: &[u64]) -> u64 {
        let bytes = match self.per_byte {
            PerByte::None => 0,
            PerByte::Arg { index, factor } => args[index].saturating_mul(factor),
            PerByte::Args { indices: [a, b] } => args[a].saturating_add(args[b]),
        };
        self.overhead.saturating_add(bytes)
    }
}

/// Per-byte rate of calls that move data to another canister or the
/// network ([LNK] `BYTE_TRANSMISSION_COST_FACTOR`).
pub const TRANSMISSION: u64 = 50;

const fn cost(name: &'static str, overhead: u64, per_byte: PerByte) -> SystemApiCost {
    SystemApiCost { name, overhead, per_byte }
}
const fn size_at(index: usize) -> PerByte {
    PerByte::Arg { index, factor: 1 }
}
const fn sent_at(index: usize) -> PerByte {
    PerByte::Arg { index, factor: TRANSMISSION }
}
const NONE: PerByte = PerByte::None;

/// Every `ic0` function the simulator provides, on an application subnet
/// ([CPX] `overhead::new` for the overheads, [LNK] for the per-byte part).
/// The replica charges 1 instruction per byte copied
/// (`get_num_instructions_from_bytes`).
pub const SYSTEM_API: &[SystemApiCost] = &[
    cost("msg_arg_data_size", 500, NONE),
    cost("msg_arg_data_copy", 500, size_at(2)),
    cost("msg_caller_size", 500, NONE),
    cost("msg_caller_copy", 500, size_at(2)),
    cost("msg_method_name_size", 500, NONE),
    cost("msg_method_name_copy", 500, size_at(2)),
    cost("accept_message", 500, NONE),
    cost("msg_reject_code", 500, NONE),
    cost("msg_reject_msg_size", 500, NONE),
    cost("msg_reject_msg_copy", 500, size_at(2)),
    cost("msg_deadline", 500, NONE),
    cost("msg_reply_data_append", 500, sent_at(1)),
    cost("msg_reply", 500, NONE),
    cost("msg_reject", 500, sent_at(1)),
    cost("msg_cycles_available128", 500, NONE),
    cost("msg_cycles_refunded128", 500, NONE),
    cost("msg_cycles_accept128", 500, NONE),
    cost("canister_self_size", 500, NONE),
    cost("canister_self_copy", 500, size_at(2)),
    cost("canister_cycle_balance128", 500, NONE),
    cost("canister_liquid_cycle_balance128", 500, NONE),
    cost("canister_status", 500, NONE),
    cost("canister_version", 500, NONE),
    cost("is_controller", 1_000, size_at(1)),
    cost("in_replicated_execution", 500, NONE),
    // Linked only with the environment-variables feature ([LNK]).
    cost("env_var_count", 500, NONE),
    cost("env_var_name_size", 500, NONE),
    cost("env_var_name_copy", 500, size_at(3)),
    // The name's bytes are not charged.
    cost("env_var_name_exists", 500, NONE),
    cost("env_var_value_size", 500, NONE),
    cost("env_var_value_copy", 500, size_at(4)),
    // Callee and method name bytes.
    cost("call_new", 1_500, PerByte::Args { indices: [1, 3] }),
    cost("call_on_cleanup", 500, NONE),
    cost("call_data_append", 500, sent_at(1)),
    cost("call_with_best_effort_response", 500, NONE),
    cost("call_cycles_add128", 500, NONE),
    cost("call_perform", 5_000, NONE),
    cost("cost_call", 500, NONE),
    cost("cost_create_canister", 500, NONE),
    cost("cost_http_request", 500, NONE),
    cost("cost_http_request_v2", 10_000, size_at(1)),
    cost("cost_sign_with_ecdsa", 500, size_at(1)),
    cost("cost_sign_with_schnorr", 500, size_at(1)),
    cost("cost_vetkd_derive_key", 500, size_at(1)),
    cost("certified_data_set", 500, size_at(1)),
    cost("data_certificate_present", 500, NONE),
    cost("data_certificate_size", 500, NONE),
    cost("data_certificate_copy", 500, size_at(2)),
    cost("root_key_size", 500, NONE),
    cost("root_key_copy", 500, size_at(2)),
    cost("subnet_self_size", 500, NONE),
    cost("subnet_self_copy", 500, size_at(2)),
    cost("subnet_self_node_count", 500, NONE),
    cost("msg_caller_info_data_size", 500, NONE),
    cost("msg_caller_info_data_copy", 500, size_at(2)),
    cost("msg_caller_info_signer_size", 500, NONE),
    cost("msg_caller_info_signer_copy", 500, size_at(2)),
    cost("cycles_burn128", 500, NONE),
    // The replica charges nothing for it ([LNK]).
    cost("mint_cycles128", 0, NONE),
    cost("mint_cycles", 0, NONE),
    // The older cycles API, for wasm32 modules.
    cost("msg_cycles_available", 500, NONE),
    cost("msg_cycles_refunded", 500, NONE),
    cost("msg_cycles_accept", 500, NONE),
    cost("canister_cycle_balance", 500, NONE),
    cost("call_cycles_add", 500, NONE),
    cost("time", 500, NONE),
    cost("global_timer_set", 500, NONE),
    cost("performance_counter", 200, NONE),
    // Plus the canister-log charge ([`logging`]); the message bytes
    // themselves only where printing is enabled, which it is not on
    // application subnets (debug print rate limiting is on by default).
    cost("debug_print", 100, NONE),
    // Plus the canister-log charge.
    cost("trap", 500, size_at(1)),
    // The replica runs stable memory as Wasm-native replacements ([REP]):
    // `stable64_size` is charged only its `call`; `grow` 100; read and write
    // 20 plus their length; a write also [`DIRTY_PAGE`] per page it dirties.
    cost("stable64_size", 0, NONE),
    cost("stable64_grow", 100, NONE),
    cost("stable64_read", 20, size_at(2)),
    cost("stable64_write", 20, size_at(2)),
    // The 32-bit API runs as the same replacements: `stable_size` 20.
    cost("stable_size", 20, NONE),
    cost("stable_grow", 100, NONE),
    cost("stable_read", 20, size_at(2)),
    cost("stable_write", 20, size_at(2)),
];

/// The cost of `name`, if the table has it.
pub fn system_api(name: &str) -> Option<&'static SystemApiCost> {
    SYSTEM_API.iter().find(|c| c.name == name)
}

/// Charged per 4 KiB OS page a message dirties for the first time
/// ([SCF] `DEFAULT_DIRTY_PAGE_OVERHEAD`, application subnets).
pub const DIRTY_PAGE: u64 = 1_000;
pub const OS_PAGE_SIZE: u64 = 4096;

/// A canister log holds at most this many bytes
/// ([LOG] `MAX_ALLOWED_CANISTER_LOG_BUFFER_SIZE`).
pub const LOG_CAPACITY: u64 = 4 * 1024;

/// What `debug_print` and `trap` pay for a `len`-byte message when the
/// message's log has `remaining` bytes free (each execution logs into a
/// fresh buffer of [`LOG_CAPACITY`] bytes): twice the bytes stored (one record in,
/// the oldest out) plus the transmission rate on what is sent
/// ([LNK] `logging_charge_bytes`).
pub fn logging(len: u64, remaining: u64) -> u64 {
    2 * len.min(LOG_CAPACITY) + TRANSMISSION * len.min(remaining)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_listed_once() {
        let mut names: Vec<_> = SYSTEM_API.iter().map(|c| c.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), SYSTEM_API.len());
    }

    #[test]
    fn charges_add_the_per_byte_part() {
        let append = system_api("msg_reply_data_append").unwrap();
        assert_eq!(append.charge(&[0, 10]), 500 + 50 * 10);
        let call_new = system_api("call_new").unwrap();
        assert_eq!(call_new.charge(&[0, 10, 0, 4, 0, 0, 0, 0]), 1_500 + 14);
        assert_eq!(system_api("call_perform").unwrap().charge(&[]), 5_000);
        assert_eq!(logging(100, 4096), 200 + 5_000);
        assert_eq!(logging(10_000, 0), 2 * 4096);
    }
}
