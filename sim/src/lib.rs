//! A deterministic model of Internet Computer message routing that executes
//! real canister wasm (on wasmi), counting instructions as the replica does.
//!
//! What it models: subnets that run in rounds (ascending subnet-id byte
//! order, each round within a budget per scheduler thread); per (caller, callee)
//! pair queues with 500 request slots, held until the response is
//! consumed; call contexts that answer exactly once, and callbacks; the
//! whole `ic0` system API, for wasm32 and wasm64 modules, with the
//! replica's contexts, limits and messages, and its 5 MiB stack; rollback
//! of a trapping message (linear memory, globals,
//! stable memory, cycles, its calls and its reply); bounded-wait calls and
//! their deadlines, the global timer, time that moves per tick; cycles as a
//! 13-node application subnet prices them; per-canister statistics; the
//! replica's instruction metering (each module is instrumented with the
//! replica's per-instruction costs, and every system call charges its
//! overhead and per-byte fee: `metering/costs.rs` is the table).
//!
//! A module is validated as the replica validates it, with its limits and
//! messages (`validation`); its start function runs as `canister_start`,
//! metered. Whatever a module does, the process survives it: execution is
//! bounded by the instruction limit, and memory by a host-memory budget
//! ([`SimConfig::host_memory_budget`]) past which growth traps as on a full
//! subnet and an install is refused.
//!
//! What it does not: it is neither PocketIC nor the replica. It runs no
//! SIMD (such modules are refused with a message); there is
//! no deterministic time slicing, no storage or ingress fees, no
//! per-canister memory limits beyond wasm32's 4 GiB and wasm64's 6 GiB (payload limits are the
//! replica's: a call over 10 MiB traps
//! in `call_data_append`, one over 2 MiB to another subnet is rejected with
//! `CANISTER_ERROR`, a reply over 2 MiB traps), no dropping of best-effort
//! messages under load, no scheduling priorities, composite queries or
//! management canister calls (heartbeats run once a round). `docs/simulator.md` has the details.
//!
//! ```
//! use candid::Principal;
//! use sim::Sim;
//!
//! let wasm = wat::parse_str(
//!     r#"(module
//!         (import "ic0" "msg_reply_data_append" (func $append (param i32 i32)))
//!         (import "ic0" "msg_reply" (func $reply))
//!         (memory 1)
//!         (data (i32.const 0) "hello")
//!         (func (export "canister_update greet")
//!             (call $append (i32.const 0) (i32.const 5))
//!             (call $reply)))"#,
//! )
//! .unwrap();
//! let mut sim = Sim::builder().with_subnet().build();
//! let controller = Principal::anonymous();
//! let canister = sim.create_canister(0, vec![controller]).unwrap();
//! sim.install_canister(canister, &wasm, vec![], controller).unwrap();
//!
//! let message = sim.submit_call(canister, controller, "greet", vec![]).unwrap();
//! assert_eq!(sim.ingress_status(message), None, "inducted at the next round");
//! sim.tick();
//! assert_eq!(sim.ingress_status(message), Some(Ok(b"hello".to_vec())));
//! assert_eq!(sim.stats(canister).unwrap().executions_of("greet"), 1);
//! ```

pub mod bench;
mod canister;
mod code;
mod cycles;
mod error;
mod host_memory;
mod message;
mod metering;
mod module;
mod persist;
mod sim;
mod stable;
mod stats;
mod system_api;
mod validation;

pub use cycles::{CANISTER_CREATION_FEE, THRESHOLD_SIGNATURE_FEE, http_request_fee};
pub use error::{RestoreError, SaveError, SimError};
pub use host_memory::{DEFAULT_HOST_MEMORY_BUDGET, HostMemory, OverBudget};
pub use message::{ErrorCode, MessageId, Reject, RejectCode};
pub use module::is_memory64;
pub use persist::SavedSim;
pub use sim::{
    Action, Event, Faults, IC_ROOT_KEY, IDS_PER_SUBNET, INSTRUCTION_OVERHEAD_PER_QUERY_CALL, IdRanges,
    MAINNET_XNET_LATENCY_ROUNDS, MAX_QUERY_CALL_DEPTH, MAX_QUERY_CALL_GRAPH_INSTRUCTIONS, ONE_SECOND_NS,
    OutsideCall, Outstanding, RoundLimits, Settings, Sim, SimBuilder, SimConfig, Stall, TrapRate, Traps,
    UPDATE_CALL_ROUND_LIMIT, canister_id, canister_number,
};
pub use stats::{CallsFrom, CallsTo, CanisterStats, MAX_CALLEES_APART, RejectCounts};
pub use system_api::{CYCLES_MINTING_CANISTER, LogRecord};
