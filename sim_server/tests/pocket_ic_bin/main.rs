//! PocketIC tests as their users write them (`PocketIc::new()`,
//! `PocketIcBuilder`, no URL anywhere), run with `POCKET_IC_BIN` naming
//! `pocket-ic-sim`, as `POCKET_IC_BIN=$(scripts/pocket-ic-path.sh) cargo
//! test` runs a user's suite: the pocket-ic client checks its version,
//! starts it with a port file shared by the test process, and drives it.
//!
//! The variable must be set before any thread reads the environment, so
//! this test has its own `main` (`harness = false`), which sets it first
//! and then runs the tests in order, as libtest would report them.

mod canisters;
mod chain_keys_and_outcalls;
mod extensions;
mod instances;

use candid::Principal;
use std::process::ExitCode;

/// Each test by its name, as libtest names it.
macro_rules! tests {
    ($($module:ident::$test:ident),* $(,)?) => { &[$((stringify!($test), $module::$test as fn())),*] };
}

const TESTS: &[(&str, fn())] = tests![
    instances::a_new_instance_runs_the_example,
    instances::instances_of_one_test_process_share_one_server,
    instances::what_it_does_not_support_says_what_it_is,
    instances::nns_ii_and_application_subnets_with_canisters_at_given_ids,
    canisters::stable_memory_set_through_the_api_is_what_the_canister_reads,
    canisters::a_loaded_snapshot_undoes_what_came_after_it,
    canisters::a_heartbeat_runs_once_a_round,
    canisters::a_composite_query_calls_queries_on_its_own_subnet_only,
    chain_keys_and_outcalls::the_ii_and_test_keys_subnets_sign_with_pocket_ics_keys,
    chain_keys_and_outcalls::a_motoko_oracles_outcall_is_mocked_transformed_and_delivered,
    chain_keys_and_outcalls::a_rust_wallet_signs_with_every_key_type_and_fetches_through_ic_cdk,
    extensions::an_instance_takes_mainnets_rounds_between_subnets_when_told,
    extensions::seeded_faults_are_turned_on_and_off_through_the_extension,
    instances::certified_time_is_the_time_set,
];

fn main() -> ExitCode {
    // SAFETY: no other thread has started yet.
    unsafe { std::env::set_var("POCKET_IC_BIN", env!("CARGO_BIN_EXE_pocket-ic-sim")) };
    // libtest's arguments: a name filter, and flags this runner need not follow.
    let filter = std::env::args().skip(1).find(|arg| !arg.starts_with('-'));
    let chosen: Vec<_> =
        TESTS.iter().filter(|(name, _)| filter.as_ref().is_none_or(|f| name.contains(f.as_str()))).collect();
    println!("\nrunning {} tests", chosen.len());
    let mut failed = vec![];
    for (name, test) in &chosen {
        let passed = std::panic::catch_unwind(test).is_ok();
        println!("test {name} ... {}", if passed { "ok" } else { "FAILED" });
        if !passed {
            failed.push(*name);
        }
    }
    let result = if failed.is_empty() { "ok" } else { "FAILED" };
    println!(
        "\ntest result: {result}. {} passed; {} failed; 0 ignored; 0 measured; {} filtered out\n",
        chosen.len() - failed.len(),
        failed.len(),
        TESTS.len() - chosen.len()
    );
    if failed.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

pub fn user() -> Principal {
    Principal::from_slice(&[7; 29])
}
