//! Instructions per ping of the caller and of the callee, as the simulator
//! counts them, for the strategies docs/strategies.md's batching advice compares:
//! `cargo run --release --example instructions_per_ping`.
//!
//! The caller's figure is what its own `performance_counter` reports for
//! the plan, per ping requested (what a sweep shows); the callee's is every
//! execution the simulator charged it (its statistics, so simulator-only),
//! per ping delivered.

use interface::{Plan, Strategy};
use multi_subnet::engines::sim::sim_engine;
use multi_subnet::scenario::{self, Topology};

fn main() -> anyhow::Result<()> {
    let wasms = canister_wasm::caller_and_callee()?;
    println!("| strategy | n | caller / ping | callee / delivered ping |\n|---|---:|---:|---:|");
    for (strategy, k, n) in [
        (Strategy::Sequential, None, 100),
        (Strategy::Parallel, None, 100),
        (Strategy::Parallel, None, 2000),
        (Strategy::Bounded, Some(100), 2000),
        (Strategy::Batched, Some(100), 2000),
    ] {
        let mut engine =
            sim_engine(sim::Sim::builder().with_subnets(Topology::CrossSubnet.subnets()).build());
        let deployment = scenario::deploy(&mut engine, Topology::CrossSubnet, &wasms)?;
        let callee_before = engine.engine.stats(deployment.callee())?.instructions;
        let plan = Plan { k, ..Plan::new(strategy, n) };
        let run = scenario::run_plan(&mut engine, &deployment, &plan)?;
        let callee = engine.engine.stats(deployment.callee())?.instructions - callee_before;
        let k = k.map_or(String::new(), |k| format!(" (k = {k})"));
        println!(
            "| {}{k} | {n} | {:.0} | {:.0} |",
            strategy.name(),
            run.report.instructions as f64 / n as f64,
            callee as f64 / run.report.succeeded.max(1) as f64
        );
    }
    Ok(())
}
