//! What the simulator keeps of a canister's history is bounded: after many
//! messages it holds no more than after a few (counted, not timed).

use crate::common::*;
use sim::Sim;

/// Prints its argument with `ic0.debug_print`.
const PRINTER: &str = r#"(module
  (import "ic0" "msg_arg_data_size" (func $size (result i32)))
  (import "ic0" "msg_arg_data_copy" (func $copy (param i32 i32 i32)))
  (import "ic0" "debug_print" (func $print (param i32 i32)))
  (import "ic0" "msg_reply" (func $reply))
  (memory 1)
  (func (export "canister_update print")
    (call $copy (i32.const 0) (i32.const 0) (call $size))
    (call $print (i32.const 0) (call $size))
    (call $reply)))"#;

/// `fan_out`s of 400 pings each, run to the end.
fn fan_outs(w: &mut World, messages: usize) {
    for _ in 0..messages {
        submit_fan_out(&mut w.sim, w.probe, &[record(w.callees[0], 400, Method::Ping, false)]);
        run_until_idle(&mut w.sim);
    }
}

#[test]
fn call_statistics_stay_one_entry_per_method_however_many_calls() {
    let mut w = world(2, 1, 1);
    fan_outs(&mut w, 1);
    let after_one = w.sim.stats(w.probe).unwrap().clone();
    fan_outs(&mut w, 24);
    let after_many = w.sim.stats(w.probe).unwrap();
    assert_eq!(after_many.calls_performed, 25 * 400);
    assert_eq!(after_many.calls_performed_in.len(), after_one.calls_performed_in.len());
    assert_eq!(after_many.calls_performed_in["fan_out"].calls, 25 * 400);
    assert_eq!(after_many.executed.len(), after_one.executed.len());
}

/// Line `i`: 100 bytes, so 40 of them fit in the log's 4 KiB and 41 do not.
fn line(i: usize) -> String {
    format!("{i:0100}")
}

fn print(sim: &mut Sim, printer: candid::Principal, lines: std::ops::Range<usize>) {
    for i in lines {
        sim.update_call(printer, controller(), "print", line(i).into_bytes()).unwrap();
    }
}

#[test]
fn the_debug_log_keeps_the_newest_4_kib() {
    let mut sim = Sim::builder().with_subnet().build();
    let printer = install(&mut sim, 0, PRINTER);
    print(&mut sim, printer, 0..10);
    assert_eq!(sim.debug_log(printer).unwrap(), (0..10).map(line).collect::<Vec<_>>());
    print(&mut sim, printer, 10..1000);
    assert_eq!(sim.debug_log(printer).unwrap(), (960..1000).map(line).collect::<Vec<_>>());
}
