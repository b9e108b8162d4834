//! Recursions whose frames differ in shape, as canisters: the update
//! method `recurse` takes a depth (a little-endian u32) and recurses that
//! many frames deep, replying with an i64 that every frame contributed to;
//! the query `calls` answers how many `recurse` calls committed (an i64).
//! Shared by `tests/it/system_api.rs` (the simulator) and
//! `examples/stack_depth.rs` (the replica's engine beside the simulator).
#![allow(dead_code)] // Each includer uses its own part.

use std::fmt::Write;

/// What each frame of the recursion keeps.
#[derive(Clone, Copy, Debug)]
pub enum Frame {
    /// Only its counter (the parameter); nothing is live across the call.
    Counter,
    /// This many i64 locals, each set before the call and read after it.
    I64Locals(usize),
    /// This many i32 temporaries on the operand stack under the call,
    /// consumed after it.
    I32Operands(usize),
}

pub struct Shape {
    pub name: &'static str,
    pub frame: Frame,
}

pub const SHAPES: [Shape; 4] = [
    Shape { name: "(a) counter only", frame: Frame::Counter },
    Shape { name: "(b) 8 i64 locals live", frame: Frame::I64Locals(8) },
    Shape { name: "(c) 64 i64 locals live", frame: Frame::I64Locals(64) },
    Shape { name: "(d) 32 i32 operands live", frame: Frame::I32Operands(32) },
];

/// Whether the module is as written, or as the replica's instrumentation
/// would compile it (see [`canister`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metering {
    /// As written: what a canister installs, and what the simulator
    /// instruments itself.
    None,
    /// With the code the replica's instrumentation pass
    /// (`rs/embedders/src/wasm_utils/instrumentation.rs` in dfinity/ic,
    /// `inject_metering`) puts in these functions: at each function's entry
    /// a charge to an i64 counter global and a check that calls an imported
    /// `out_of_instructions` when the counter is negative; at each other
    /// block's entry a charge. The charges are placeholders: what matters for
    /// the stack is the code, not the count.
    Replica,
}

/// The canister of `shape`, in WAT.
pub fn canister(shape: &Shape, metering: Metering) -> String {
    let replica = metering == Metering::Replica;
    // Charge `cost` at a block's entry; at a function's, check the counter too.
    let charge = |cost: u32, function_entry: bool| -> String {
        if !replica {
            return String::new();
        }
        let mut code = format!("global.get $counter i64.const {cost} i64.sub global.set $counter\n");
        if function_entry {
            code.push_str("global.get $counter i64.const 0 i64.lt_s if call $out_of_instructions end\n");
        }
        code
    };

    let mut locals = String::new();
    let mut before = String::new();
    let mut after = String::new();
    match shape.frame {
        Frame::Counter => after.push_str("i64.const 1 i64.add\n"),
        Frame::I64Locals(n) => {
            for i in 0..n {
                write!(locals, "(local $l{i} i64) ").unwrap();
                // A distinct value per local, so none is a copy of another.
                let salt = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(i as u64 + 1) as i64;
                writeln!(before, "local.get $n i64.extend_i32_u i64.const {salt} i64.xor local.set $l{i}")
                    .unwrap();
                writeln!(after, "local.get $l{i} i64.add").unwrap();
            }
        }
        Frame::I32Operands(n) => {
            for i in 0..n {
                writeln!(before, "local.get $n i32.const {} i32.xor", i + 1).unwrap();
            }
            after.push_str("i32.wrap_i64\n");
            after.push_str(&"i32.add\n".repeat(n));
            after.push_str("i64.extend_i32_u\n");
        }
    }

    let imports = if replica {
        "(import \"__\" \"out_of_instructions\" (func $out_of_instructions))\n\
         (global $counter (mut i64) (i64.const 0x3fff_ffff_ffff_ffff))"
    } else {
        ""
    };
    let rec_entry = charge(3, true);
    let base = charge(1, false);
    let step = charge(4, false);
    let update_entry = charge(10, true);
    format!(
        r#"(module
  (import "ic0" "msg_arg_data_copy" (func $arg_copy (param i32 i32 i32)))
  (import "ic0" "msg_reply_data_append" (func $reply_append (param i32 i32)))
  (import "ic0" "msg_reply" (func $reply))
  {imports}
  (memory (export "memory") 1)
  (global $calls (mut i64) (i64.const 0))
  (func $rec (param $n i32) (result i64) {locals}
    {rec_entry}
    local.get $n
    i32.eqz
    if (result i64)
      {base}
      i64.const 0
    else
      {step}
      {before}
      local.get $n
      i32.const 1
      i32.sub
      call $rec
      {after}
    end)
  (func (export "canister_update recurse")
    {update_entry}
    (global.set $calls (i64.add (global.get $calls) (i64.const 1)))
    (call $arg_copy (i32.const 0) (i32.const 0) (i32.const 4))
    (i64.store (i32.const 8) (call $rec (i32.load (i32.const 0))))
    (call $reply_append (i32.const 8) (i32.const 8))
    (call $reply))
  (func (export "canister_query calls")
    (i64.store (i32.const 8) (global.get $calls))
    (call $reply_append (i32.const 8) (i32.const 8))
    (call $reply)))
"#
    )
}
