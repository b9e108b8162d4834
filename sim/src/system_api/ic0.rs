//! The functions of the IC's `ic0` system API and their signatures, as the
//! interface specification lists them and the replica links them: every
//! pointer and size is the spec's `I`, an `i32` in a module with 32-bit
//! memory and an `i64` in one with 64-bit memory; a few functions exist
//! for wasm32 modules only. A module may import these and only these, with
//! exactly these signatures (validation refuses the rest, as the replica
//! does), and the simulator links every one of them.

use wasmparser::ValType;

/// A parameter's or result's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    I32,
    I64,
    /// The spec's `I`: `i32` for wasm32 modules, `i64` for wasm64 ones.
    I,
}

use Ty::{I, I32, I64};

impl Ty {
    pub fn val_type(self, memory64: bool) -> ValType {
        match self {
            I32 => ValType::I32,
            I64 => ValType::I64,
            I if memory64 => ValType::I64,
            I => ValType::I32,
        }
    }
}

/// One function of the system API.
#[derive(Clone, Copy, Debug)]
pub struct Function {
    pub name: &'static str,
    pub params: &'static [Ty],
    pub results: &'static [Ty],
    /// Only a module with 32-bit memory may import it.
    pub wasm32_only: bool,
}

impl Function {
    /// Its parameter and result types in a module with 64-bit memory or not.
    pub fn signature(&self, memory64: bool) -> (Vec<ValType>, Vec<ValType>) {
        let types = |tys: &[Ty]| tys.iter().map(|t| t.val_type(memory64)).collect();
        (types(self.params), types(self.results))
    }
}

const fn f(name: &'static str, params: &'static [Ty], results: &'static [Ty]) -> Function {
    Function { name, params, results, wasm32_only: false }
}

const fn wasm32_only(name: &'static str, params: &'static [Ty], results: &'static [Ty]) -> Function {
    Function { name, params, results, wasm32_only: true }
}

/// In the specification's order.
pub const IC0: &[Function] = &[
    f("msg_arg_data_size", &[], &[I]),
    f("msg_arg_data_copy", &[I, I, I], &[]),
    f("msg_caller_size", &[], &[I]),
    f("msg_caller_copy", &[I, I, I], &[]),
    f("msg_caller_info_data_size", &[], &[I]),
    f("msg_caller_info_data_copy", &[I, I, I], &[]),
    f("msg_caller_info_signer_size", &[], &[I]),
    f("msg_caller_info_signer_copy", &[I, I, I], &[]),
    f("msg_reject_code", &[], &[I32]),
    f("msg_reject_msg_size", &[], &[I]),
    f("msg_reject_msg_copy", &[I, I, I], &[]),
    f("msg_deadline", &[], &[I64]),
    f("msg_reply_data_append", &[I, I], &[]),
    f("msg_reply", &[], &[]),
    f("msg_reject", &[I, I], &[]),
    f("msg_cycles_available128", &[I], &[]),
    f("msg_cycles_refunded128", &[I], &[]),
    f("msg_cycles_accept128", &[I64, I64, I], &[]),
    f("cycles_burn128", &[I64, I64, I], &[]),
    f("canister_self_size", &[], &[I]),
    f("canister_self_copy", &[I, I, I], &[]),
    f("canister_cycle_balance128", &[I], &[]),
    f("canister_liquid_cycle_balance128", &[I], &[]),
    f("canister_status", &[], &[I32]),
    f("canister_version", &[], &[I64]),
    f("subnet_self_size", &[], &[I]),
    f("subnet_self_copy", &[I, I, I], &[]),
    f("subnet_self_node_count", &[], &[I32]),
    f("msg_method_name_size", &[], &[I]),
    f("msg_method_name_copy", &[I, I, I], &[]),
    f("accept_message", &[], &[]),
    f("call_new", &[I, I, I, I, I, I, I, I], &[]),
    f("call_on_cleanup", &[I, I], &[]),
    f("call_data_append", &[I, I], &[]),
    f("call_with_best_effort_response", &[I32], &[]),
    f("call_cycles_add128", &[I64, I64], &[]),
    f("call_perform", &[], &[I32]),
    f("stable64_size", &[], &[I64]),
    f("stable64_grow", &[I64], &[I64]),
    f("stable64_write", &[I64, I64, I64], &[]),
    f("stable64_read", &[I64, I64, I64], &[]),
    f("root_key_size", &[], &[I]),
    f("root_key_copy", &[I, I, I], &[]),
    f("certified_data_set", &[I, I], &[]),
    f("data_certificate_present", &[], &[I32]),
    f("data_certificate_size", &[], &[I]),
    f("data_certificate_copy", &[I, I, I], &[]),
    f("time", &[], &[I64]),
    f("global_timer_set", &[I64], &[I64]),
    f("performance_counter", &[I32], &[I64]),
    f("is_controller", &[I, I], &[I32]),
    f("in_replicated_execution", &[], &[I32]),
    f("cost_call", &[I64, I64, I], &[]),
    f("cost_create_canister", &[I], &[]),
    f("cost_http_request", &[I64, I64, I], &[]),
    f("cost_http_request_v2", &[I, I, I], &[]),
    f("cost_sign_with_ecdsa", &[I, I, I32, I], &[I32]),
    f("cost_sign_with_schnorr", &[I, I, I32, I], &[I32]),
    f("cost_vetkd_derive_key", &[I, I, I32, I], &[I32]),
    f("env_var_count", &[], &[I]),
    f("env_var_name_size", &[I], &[I]),
    f("env_var_name_copy", &[I, I, I, I], &[]),
    f("env_var_name_exists", &[I, I], &[I32]),
    f("env_var_value_size", &[I, I], &[I]),
    f("env_var_value_copy", &[I, I, I, I, I], &[]),
    f("debug_print", &[I, I], &[]),
    f("trap", &[I, I], &[]),
    // The spec leaves them out (only the cycles minting canister may call
    // them); the replica links them.
    f("mint_cycles128", &[I64, I64, I], &[]),
    f("mint_cycles", &[I64], &[I64]),
    // The spec's older API, which the replica still links for wasm32.
    wasm32_only("msg_cycles_available", &[], &[I64]),
    wasm32_only("msg_cycles_refunded", &[], &[I64]),
    wasm32_only("msg_cycles_accept", &[I64], &[I64]),
    wasm32_only("canister_cycle_balance", &[], &[I64]),
    wasm32_only("call_cycles_add", &[I64], &[]),
    wasm32_only("stable_size", &[], &[I32]),
    wasm32_only("stable_grow", &[I32], &[I32]),
    wasm32_only("stable_write", &[I32, I32, I32], &[]),
    wasm32_only("stable_read", &[I32, I32, I32], &[]),
];

/// The function `name`, if the system API has it.
pub fn function(name: &str) -> Option<&'static Function> {
    IC0.iter().find(|f| f.name == name)
}
