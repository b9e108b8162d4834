//! Under every fault the simulator injects, every strategy's ledger
//! balances: nothing lost, nothing counted twice, nothing left open; each
//! fault leaves its mark; and a seed gives the same table in any process.

use interface::FailureKind;
use multi_subnet::chaos::{self, ChaosReport, ChaosRow, ChaosStrategy, Fault};
use multi_subnet::engines::EngineFactory;
use multi_subnet::report::Format;
use std::process::Command;

const CHILD: &str = "MULTI_SUBNET_CHAOS_CHILD";

fn matrix(faults: &[Fault], seeds: u64) -> ChaosReport {
    chaos::run(faults, seeds, &EngineFactory::Sim, &canister_wasm::caller_and_callee().unwrap()).unwrap()
}

fn row(report: &ChaosReport, fault: Fault, strategy: ChaosStrategy) -> &ChaosRow {
    report.rows.iter().find(|r| r.fault == fault && r.strategy == strategy && r.seed == 1).unwrap()
}

#[test]
fn every_ping_is_accounted_for_under_every_fault() {
    let report = matrix(&Fault::ALL, 3);
    assert_eq!(report.rows.len(), Fault::ALL.len() * ChaosStrategy::ALL.len() * 3);
    let violations = report.violations();
    assert!(violations.is_empty(), "{} runs do not balance:\n{}", violations.len(), violations.join("\n"));

    let failed =
        |fault, strategy, kind| row(&report, fault, strategy).failures.get(&kind).copied().unwrap_or(0);
    use ChaosStrategy::{Job, Parallel, Sequential};
    assert!(failed(Fault::CalleeTraps, Parallel, FailureKind::CanisterError) > 0);
    assert!(failed(Fault::CalleeTrapsEvery7th, Parallel, FailureKind::CanisterError) == 300 / 7);
    assert!(failed(Fault::CalleeStopped, Parallel, FailureKind::CalleeStopped) > 0);
    assert!(failed(Fault::CalleeDeleted, Sequential, FailureKind::DestinationInvalid) > 0);
    assert!(failed(Fault::SubnetStalled, Parallel, FailureKind::SysUnknown) > 0);
    assert!(failed(Fault::ResponsesDropped, Parallel, FailureKind::SysUnknown) > 0);
    assert!(failed(Fault::CallerOutOfCycles, Parallel, FailureKind::InsufficientLiquidCycleBalance) > 0);
    let upgraded = row(&report, Fault::CalleeUpgraded, Job);
    assert!(upgraded.fault_log.iter().any(|l| l.contains("upgraded")), "{:?}", upgraded.fault_log);
    let caller = row(&report, Fault::CallerUpgraded, Job);
    let log = caller.fault_log.join("\n");
    assert!(log.contains("upgraded") && caller.retried > 0, "retries waited across the upgrade: {log}");
    // With nonces, a job delivers every ping exactly once through every
    // fault it may retry (not a deleted callee, nor cycles gone).
    for fault in
        Fault::ALL.into_iter().filter(|f| ![Fault::CalleeDeleted, Fault::CallerOutOfCycles].contains(f))
    {
        let job = row(&report, fault, Job);
        assert_eq!((job.delivered, job.executed), (300, 300), "{}: {job:?}", fault.name());
    }
    // Not a deleted callee's fault: pings that never ran have no count.
    assert_eq!(
        row(&report, Fault::SubnetStalled, Parallel).executed,
        300,
        "the stalled subnet ran them later"
    );
}

/// The faults whose choices the seed makes, as a table.
fn seeded_table(seeds: u64) -> String {
    matrix(&[Fault::CalleeTraps, Fault::ResponsesDropped], seeds).render(Format::Json)
}

#[test]
fn a_seed_gives_the_same_table_in_another_process() {
    if std::env::var_os(CHILD).is_some() {
        println!("<table>{}</table>", seeded_table(2));
        return;
    }
    let here = seeded_table(2);
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "chaos::a_seed_gives_the_same_table_in_another_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8(output.stdout).unwrap();
    let there = &stdout[stdout.find("<table>").unwrap() + "<table>".len()..stdout.find("</table>").unwrap()];
    assert_eq!(there, here);
    let json: serde_json::Value = serde_json::from_str(&here).unwrap();
    let rows = json["rows"].as_array().unwrap();
    let seed =
        |s: u64| rows.iter().filter(|r| r["seed"] == s).map(|r| r["failures"].clone()).collect::<Vec<_>>();
    assert_ne!(seed(1), seed(2), "the seed decides which pings fail");
}

#[test]
fn the_docs_chaos_table_is_regenerated_identically() {
    use clap::Parser;
    use multi_subnet::cli::{Cli, Command};
    const BEGIN: &str = "<!-- chaos-table: ";
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/chaos.md")).unwrap();
    let start = page.find(BEGIN).expect("docs/chaos.md marks its chaos table");
    let (marker, rest) = page[start + BEGIN.len()..].split_once(" -->\n").unwrap();
    let table = &rest[..rest.find("<!-- /chaos-table -->").expect("the table ends")];
    assert!(page.contains(&format!("cargo run --release -- chaos {marker} --format markdown")));
    let args = ["multi_subnet", "chaos"].into_iter().chain(marker.split_whitespace());
    let Some(Command::Chaos(args)) = Cli::try_parse_from(args).unwrap().command else {
        panic!("not chaos: {marker}");
    };
    assert_eq!(
        table,
        matrix(&args.faults, args.seeds).render(Format::Markdown),
        "the chaos table of docs/chaos.md is stale"
    );
}
