//! The strategies' goals (common/goals.rs) on the simulator, and on
//! PocketIC with `--include-ignored` when POCKET_IC_BIN names a server
//! (scripts/test.sh does that).

use crate::common::goals::goal_tests;
use multi_subnet::engines::{Engine, EngineChoice, EngineFactory, TimeStep};

fn sim() -> Box<dyn Engine> {
    EngineFactory::Sim.start(2, TimeStep::ONE_SECOND).unwrap()
}

fn pocket_ic() -> Box<dyn Engine> {
    let resolved = EngineFactory::resolve(EngineChoice::PocketIc, None).unwrap_or_else(|e| panic!("{e:#}"));
    resolved.factory.start(2, TimeStep::ONE_SECOND).unwrap_or_else(|e| panic!("{e:#}"))
}

goal_tests!([sim => sim; pocket_ic => pocket_ic #[ignore = "needs POCKET_IC_BIN"];]);
