//! How a round's instruction budget is shared between the scheduler threads
//! (the replica's `execute_canisters_in_inner_round`): every thread may use
//! the whole budget, a canister runs on one thread. The budgets are set from
//! a measured message, so the tests hold whatever a message counts.

use crate::common::*;
use candid::Principal;
use sim::{RoundLimits, Sim, SimConfig};

/// Loop iterations of each `burn` message: its instructions outweigh the
/// per-execution overhead.
const BURN: u32 = 500_000;
/// Messages queued on each busy canister: more than a round can run.
const QUEUED: u64 = 40;

fn burn_arg() -> Vec<u8> {
    BURN.to_le_bytes().to_vec()
}

/// What one `burn` message costs a thread: its instructions and the
/// per-execution overhead.
fn message_cost() -> u64 {
    let mut sim = Sim::builder().with_subnet().build();
    let callee = install(&mut sim, 0, CALLEE);
    sim.update_call(callee, controller(), "burn", burn_arg()).unwrap();
    let instructions = sim.stats(callee).unwrap().instructions;
    assert!(instructions > 0, "a burn message executes instructions");
    instructions + RoundLimits::default().overhead_per_execution
}

/// Round limits with a budget of about 10 `burn` messages per thread.
fn limits(cores: usize) -> RoundLimits {
    let budget = 10 * message_cost();
    RoundLimits {
        max_instructions_per_round: budget,
        max_instructions_per_slice: 1, // so a thread's budget is exactly `budget`
        scheduler_cores: cores,
        ..RoundLimits::default()
    }
}

/// `canisters` callees on one subnet with `cores` threads, each with
/// `QUEUED` burn messages; after one tick, the burns each executed, in the
/// order the scheduler deals them (canister-id order).
fn one_busy_round(cores: usize, canisters: usize) -> Vec<u64> {
    let config = SimConfig { round_limits: limits(cores), ..SimConfig::default() };
    let mut sim = Sim::builder().with_config(config).with_subnet().build();
    let mut ids: Vec<Principal> = (0..canisters).map(|_| install(&mut sim, 0, CALLEE)).collect();
    ids.sort();
    for &id in &ids {
        for _ in 0..QUEUED {
            sim.submit_call(id, controller(), "burn", burn_arg()).unwrap();
        }
    }
    sim.tick();
    ids.iter().map(|&id| sim.stats(id).unwrap().executions_of("burn")).collect()
}

/// Burns one busy canister alone executes in a round; the budget binds.
fn alone() -> u64 {
    let [n] = one_busy_round(4, 1)[..] else { unreachable!() };
    assert!(n > 1 && n < QUEUED, "the budget must bind: {n} of {QUEUED} ran");
    n
}

#[test]
fn four_busy_canisters_on_four_threads_run_four_times_what_one_runs_alone() {
    let n = alone();
    assert_eq!(one_busy_round(4, 4), vec![n; 4], "each canister has a thread's whole budget");
}

#[test]
fn on_one_thread_busy_canisters_share_one_budget() {
    let n = alone();
    let ran = one_busy_round(1, 4);
    assert_eq!(ran.iter().sum::<u64>(), n, "one budget for the subnet: {ran:?}");
    assert_eq!(ran[0], n, "the first canister runs until the budget is spent");
}

#[test]
fn one_canister_gets_one_threads_budget_however_many_threads() {
    let n = alone();
    for cores in [1, 2, 4, 16] {
        assert_eq!(one_busy_round(cores, 1), vec![n], "{cores} threads");
    }
    // It stops at the first message that starts within the budget and ends
    // past it.
    let budget = limits(4).max_instructions_per_round;
    let cost = message_cost();
    assert!(n * cost >= budget && (n - 1) * cost < budget, "{n} messages of {cost} for {budget}");
}

#[test]
fn canisters_are_dealt_to_threads_round_robin() {
    let n = alone();
    // The fifth canister shares the first one's thread, whose budget the
    // first one spends.
    assert_eq!(one_busy_round(4, 5), vec![n, n, n, n, 0]);
    assert_eq!(one_busy_round(2, 3), vec![n, n, 0]);
}

#[test]
fn an_iteration_costs_the_round_what_its_busiest_thread_used() {
    // A probe pings a callee on its subnet while four canisters burn two
    // messages each (a fifth of a thread's budget); the ping and its reply
    // run in the round's second and third iterations if budget is left.
    let completes_in_one_round = |cores| {
        let config = SimConfig { round_limits: limits(cores), ..SimConfig::default() };
        let mut w = world_with(Sim::builder().with_config(config), 1, 1, 0);
        for _ in 0..4 {
            let busy = install(&mut w.sim, 0, CALLEE);
            for _ in 0..2 {
                w.sim.submit_call(busy, controller(), "burn", burn_arg()).unwrap();
            }
        }
        submit_fan_out(&mut w.sim, w.probe, &[record(w.callees[0], 1, Method::Ping, false)]);
        w.sim.tick();
        probe_state(&mut w.sim, w.probe).replies == 1
    };
    assert!(completes_in_one_round(4), "the busiest thread used at most two canisters' share");
    assert!(!completes_in_one_round(1), "on one thread the burns used the whole budget");
}

#[test]
fn the_default_is_four_threads() {
    assert_eq!(RoundLimits::default().scheduler_cores, 4);
}
