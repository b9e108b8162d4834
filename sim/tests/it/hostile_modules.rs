//! Modules that used to abort, hang or exhaust the process running the
//! simulator (issue 19), one fixture each in `tests/fixtures/hostile_modules/`:
//! each is now refused at install or trapped as the replica would, with
//! the canister left as it was and the simulator still serving.

use crate::common::*;
use candid::Principal;
use sim::{RejectCode, Sim, SimConfig, SimError};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/hostile_modules/{name}.wat", env!("CARGO_MANIFEST_DIR"));
    wat::parse_file(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// One subnet, `max_instructions` per message, `budget` bytes of host memory.
fn sim(max_instructions: u64, budget: u64) -> Sim {
    let config = SimConfig { max_instructions_per_message: max_instructions, ..SimConfig::default() };
    Sim::builder().with_config(config).with_host_memory_budget(budget).with_subnet().build()
}

fn try_install(sim: &mut Sim, name: &str) -> (Principal, Result<(), SimError>) {
    let id = sim.create_canister(0, vec![controller()]).unwrap();
    let installed = sim.install_canister(id, &fixture(name), vec![], controller());
    (id, installed)
}

/// The canister took no code, and the simulator still installs and runs
/// a good module on it.
fn assert_empty_and_usable(sim: &mut Sim, id: Principal) {
    let reject = sim.update_call(id, controller(), "ping", vec![]).unwrap_err();
    assert!(reject.message.contains("no wasm module"), "{reject}");
    sim.install_canister(id, &wat::parse_str(CALLEE).unwrap(), vec![], controller()).unwrap();
    sim.update_call(id, controller(), "ping", vec![]).unwrap();
}

fn install_refusal(result: Result<(), SimError>) -> String {
    match result {
        Err(e) => e.to_string(),
        Ok(()) => panic!("the module was installed"),
    }
}

#[test]
fn a_start_function_runs_as_canister_start_where_ic0_is_mostly_off_limits() {
    let mut sim = sim(SimConfig::default().max_instructions_per_message, 1 << 30);
    let (id, installed) = try_install(&mut sim, "start_calls_ic0");
    let refusal = install_refusal(installed);
    assert_eq!(
        refusal,
        "canister_start trapped: Canister violated contract: \"ic0_canister_self_size\" cannot be executed in \
         start mode"
    );
    assert_empty_and_usable(&mut sim, id);
}

#[test]
fn rolling_back_a_trap_does_not_run_the_start_function_again() {
    let mut sim = sim(SimConfig::default().max_instructions_per_message, 1 << 30);
    let (id, installed) = try_install(&mut sim, "start_traps_later");
    installed.unwrap();
    let starts = |sim: &mut Sim| u32_at(&sim.query_call(id, controller(), "starts", vec![]).unwrap(), 0);
    assert_eq!(starts(&mut sim), 1);
    for _ in 0..2 {
        let reject = sim.update_call(id, controller(), "go", vec![]).unwrap_err();
        assert_eq!(reject.code(), RejectCode::CanisterError);
        assert!(reject.message.contains("unreachable"), "{reject}");
        assert_eq!(starts(&mut sim), 1, "the start function ran once, at install");
    }
}

#[test]
fn a_funcref_global_is_refused_as_the_replica_refuses_it() {
    let mut sim = sim(SimConfig::default().max_instructions_per_message, 1 << 30);
    let (id, installed) = try_install(&mut sim, "mutable_funcref_global");
    let refusal = install_refusal(installed);
    assert!(
        refusal.contains("Wasm module has an invalid global section. Unsupported global type: funcref"),
        "{refusal}"
    );
    assert_empty_and_usable(&mut sim, id);
}

#[test]
fn a_start_function_that_loops_is_stopped_at_the_instruction_limit() {
    let mut sim = sim(10_000_000, 1 << 30);
    let (id, installed) = try_install(&mut sim, "start_loops");
    let refusal = install_refusal(installed);
    assert!(refusal.starts_with("canister_start trapped: "), "{refusal}");
    assert!(refusal.contains("exceeded the limit of 10000000 instructions"), "{refusal}");
    assert_empty_and_usable(&mut sim, id);
}

#[test]
fn tail_calls_are_metered() {
    let mut sim = sim(10_000_000, 1 << 30);
    let (id, installed) = try_install(&mut sim, "tail_call_loop");
    installed.unwrap();
    let reject = sim.update_call(id, controller(), "go", vec![]).unwrap_err();
    assert_eq!(reject.code(), RejectCode::CanisterError);
    assert!(reject.message.contains("exceeded the limit of 10000000 instructions"), "{reject}");
    let stats = sim.stats(id).unwrap();
    assert_eq!((stats.traps, stats.instructions), (1, 10_000_000), "charged its limit");
}

#[test]
fn memory_or_tables_past_the_host_budget_are_refused_at_install() {
    for name in ["memory_4gib", "huge_table"] {
        let mut sim = sim(SimConfig::default().max_instructions_per_message, 1 << 30);
        let (id, installed) = try_install(&mut sim, name);
        let refusal = install_refusal(installed);
        assert!(refusal.contains("of the simulator's host-memory budget"), "{name}: {refusal}");
        assert_eq!(sim.host_memory_used(), 0, "{name}: nothing held for it");
        assert_empty_and_usable(&mut sim, id);
    }
}

#[test]
fn growth_past_the_host_budget_traps_as_growth_past_the_subnets_memory_does() {
    let budget = 1 << 30;
    let mut sim = sim(SimConfig::default().max_instructions_per_message, budget);
    let (id, installed) = try_install(&mut sim, "grow_and_fill");
    installed.unwrap();
    let reply = sim.update_call(id, controller(), "grow_and_fill", vec![]).unwrap();
    assert_eq!(u32_at(&reply, 0), 1, "256 MiB fit: three copies are 768 MiB of the 1 GiB");
    assert!(sim.host_memory_used() <= budget);
    for method in ["grow_and_fill", "grow_then_trap"] {
        let reject = sim.update_call(id, controller(), method, vec![]).unwrap_err();
        assert_eq!(reject.code(), RejectCode::CanisterError);
        assert!(
            reject.message.contains(
                "Canister cannot grow its memory usage. growing linear memory by 256 MiB would take 768 MiB (3 \
                 copies) of the simulator's host-memory budget of 1 GiB"
            ),
            "{method}: {reject}"
        );
        assert!(sim.host_memory_used() <= budget, "{} > {budget}", sim.host_memory_used());
    }
    let pages = u32_at(&sim.query_call(id, controller(), "size", vec![]).unwrap(), 0);
    assert_eq!(pages, 4097, "the first growth stays; the refused ones are undone");
}

#[test]
fn memory_grow_that_fails_in_a_loop_runs_to_the_instruction_limit() {
    let mut sim = sim(50_000_000, 1 << 30);
    let (id, installed) = try_install(&mut sim, "grow_fails_in_a_loop");
    installed.unwrap();
    let reject = sim.update_call(id, controller(), "go", vec![]).unwrap_err();
    assert!(reject.message.contains("exceeded the limit of 50000000 instructions"), "{reject}");
}

#[test]
fn growing_page_by_page_up_to_the_budget_traps_there_and_is_undone() {
    let budget = 3 << 30;
    let mut sim = sim(SimConfig::default().max_instructions_per_message, budget);
    let (id, installed) = try_install(&mut sim, "grow_page_by_page");
    installed.unwrap();
    let reject = sim.update_call(id, controller(), "go", vec![]).unwrap_err();
    assert!(reject.message.contains("Canister cannot grow its memory usage."), "{reject}");
    assert!(sim.host_memory_used() <= 3 * 65536 * 4, "the growth was undone: {}", sim.host_memory_used());
}

#[test]
fn stable_memory_past_the_budget_traps_and_is_undone() {
    let budget = 2 << 30;
    let mut sim = sim(SimConfig::default().max_instructions_per_message, budget);
    let (id, installed) = try_install(&mut sim, "stable_grow");
    installed.unwrap();
    let held = sim.host_memory_used();
    let reject = sim.update_call(id, controller(), "grow_1_gib", vec![]).unwrap_err();
    assert!(
        reject.message.contains(
            "Canister cannot grow its memory usage. growing stable memory by 1 GiB would take 3 GiB (3 copies) of \
             the simulator's host-memory budget of 2 GiB"
        ),
        "{reject}"
    );
    assert_eq!(sim.host_memory_used(), held, "nothing of the refused growth is held");
}

#[test]
fn a_failed_upgrade_leaves_the_canister_running_its_old_code() {
    let mut sim = sim(SimConfig::default().max_instructions_per_message, 1 << 30);
    let (id, installed) = try_install(&mut sim, "pre_upgrade_grows_then_traps");
    installed.unwrap();
    sim.update_call(id, controller(), "go", vec![]).unwrap_err(); // It never replies.
    let wasm = fixture("pre_upgrade_grows_then_traps");
    let refusal = sim.upgrade_canister(id, &wasm, vec![], controller()).unwrap_err().to_string();
    assert!(refusal.starts_with("canister_pre_upgrade trapped: "), "{refusal}");
    for _ in 0..2 {
        let reject = sim.update_call(id, controller(), "go", vec![]).unwrap_err();
        assert!(reject.message.contains("did not produce a response"), "{reject}");
    }
}

#[test]
fn cost_call_of_sizes_past_2_64_answers() {
    let mut sim = sim(SimConfig::default().max_instructions_per_message, 1 << 30);
    let (id, installed) = try_install(&mut sim, "cost_call_overflow");
    installed.unwrap();
    let reject = sim.update_call(id, controller(), "go", vec![]).unwrap_err();
    assert!(reject.message.contains("did not produce a response"), "{reject}");
}
