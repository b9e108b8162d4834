//! PocketIC's live mode over the simulator: `auto_progress` runs an
//! instance's rounds by themselves, with its time following the wall clock,
//! and an HTTP gateway serves it through the IC's HTTP interface
//! (`ic_http`), so that `PocketIc::make_live` hands back a URL an agent uses.

use engine_thread::EngineThread;
use ic_error_types::ErrorCode;
use ic_http::{Backend, Reject};
use ic_model::{CanisterCall, CertifiedState, Effective, Interface};
use ic_sim_client::api::{FaultReport, FaultSpec};
use std::sync::Arc;

use crate::instance::Instance;

/// An instance on its own thread, as an `ic_http` backend: each call runs
/// as a job between the REST API's, so both can be used at once.
pub struct Remote {
    instance: EngineThread<Instance>,
    certified: Arc<CertifiedState>,
}

impl Remote {
    /// The instance on `instance`'s thread, its canisters staged for the
    /// network's first certification; `None` if it is gone.
    pub fn connect(instance: EngineThread<Instance>) -> Option<Self> {
        let certified = instance
            .run_blocking(|instance| {
                instance.stage_changes();
                instance.certified().clone()
            })
            .ok()?;
        Some(Self { instance, certified })
    }

    /// `f` on the instance (a panic breaks it); `gone` if it was deleted
    /// or its simulator panicked.
    fn run<R: Send + 'static>(&self, gone: R, f: impl FnOnce(&mut Instance) -> R + Send + 'static) -> R {
        self.instance.run_blocking(f).unwrap_or(gone)
    }
}

fn gone() -> Reject {
    Reject::new(
        ErrorCode::SubnetOversubscribed,
        "the instance was deleted, or its simulator failed: it serves no more requests",
    )
}

impl Interface for Remote {
    fn description(&self) -> String {
        self.run("a deleted instance".into(), |i| i.description())
    }

    fn time(&self) -> u64 {
        self.run(0, |i| i.time())
    }

    fn advance_time_to(&mut self, ns: u64) {
        self.run((), move |i| i.advance_time_to(ns))
    }

    fn submit(&mut self, effective: Effective, call: CanisterCall) -> Result<u64, Reject> {
        self.run(Err(gone()), move |i| i.submit(effective, call))
    }

    fn outcome(&self, ticket: u64) -> Option<Result<Vec<u8>, Reject>> {
        self.run(Some(Err(gone())), move |i| i.outcome(ticket))
    }

    fn forget(&mut self, ticket: u64) {
        self.run((), move |i| i.forget(ticket))
    }

    fn tick(&mut self) {
        self.run((), Interface::tick)
    }

    fn query(&mut self, call: CanisterCall) -> Result<Vec<u8>, Reject> {
        self.run(Err(gone()), move |i| i.query(call))
    }
}

impl Backend for Remote {
    fn certified_state(&self) -> Arc<CertifiedState> {
        self.certified.clone()
    }

    fn has_work(&self) -> bool {
        self.run(false, |i| i.busy())
    }

    fn view(&self) -> Option<ic_model::NetworkView> {
        self.run(None, |i| Some(i.view()))
    }

    // The instance's faults, as its `/instances/<id>/_/faults` has them.
    fn inject_faults(&mut self, spec: FaultSpec) -> Result<(), String> {
        self.run(Err(gone().message), move |i| ic_model::Engine::inject_faults(&mut i.engine, spec))
    }

    fn fault_report(&self) -> Option<FaultReport> {
        self.run(None, |i| Some(ic_model::Engine::fault_report(&i.engine)))
    }
}
