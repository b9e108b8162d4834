//! PocketIC's live mode over the simulator: `auto_progress` runs an
//! instance's rounds by themselves, with its time following the wall clock,
//! and an HTTP gateway serves it through the IC's HTTP interface
//! (`ic_http`), so that `PocketIc::make_live` hands back a URL an agent uses.

use candid::Principal;
use ic_http::{Backend, Reject};
use ic_model::CertifiedState;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, mpsc};

use crate::instance::Instance;
use crate::instances::Job;

/// An instance on its own thread, as an `ic_http` backend: each call runs
/// as a job between the REST API's, so both can be used at once.
pub struct Remote {
    jobs: mpsc::Sender<Job>,
    certified: Arc<CertifiedState>,
}

impl Remote {
    /// The instance `jobs` reaches, its canisters staged for the network's
    /// first certification; `None` if it is gone.
    pub fn connect(jobs: mpsc::Sender<Job>) -> Option<Self> {
        let certified = run_on(&jobs, None, |instance| {
            instance.ic.stage_changes();
            Some(instance.ic.certified().clone())
        })?;
        Some(Self { jobs, certified })
    }

    /// `f` on the instance; `gone` if it was deleted or its simulator failed.
    fn run<R: Send + 'static>(&self, gone: R, f: impl FnOnce(&mut Instance) -> R + Send + 'static) -> R {
        run_on(&self.jobs, gone, f)
    }
}

/// `f` on the instance `jobs` reaches, a panic caught (the instance is
/// broken from then on); `gone` if it was deleted or its simulator failed.
fn run_on<R: Send + 'static>(
    jobs: &mpsc::Sender<Job>,
    gone: R,
    f: impl FnOnce(&mut Instance) -> R + Send + 'static,
) -> R {
    let (answer, answered) = mpsc::channel();
    let job: Job = Box::new(move |instance, broken| {
        if broken.is_some() {
            return;
        }
        match std::panic::catch_unwind(AssertUnwindSafe(|| f(instance))) {
            Ok(result) => {
                let _ = answer.send(result);
            }
            Err(_) => *broken = Some("it panicked serving the IC HTTP interface".into()),
        }
    });
    if jobs.send(job).is_err() {
        return gone;
    }
    answered.recv().unwrap_or(gone)
}

fn gone() -> Reject {
    Reject {
        code: ic_transport_types::RejectCode::SysFatal,
        message: "the instance was deleted, or its simulator failed: it serves no more requests".into(),
        error_code: "IC0101".into(),
    }
}

impl Backend for Remote {
    fn description(&self) -> String {
        crate::IC_HTTP_DESCRIPTION.into()
    }

    fn certified_state(&self) -> Arc<CertifiedState> {
        self.certified.clone()
    }

    fn time(&self) -> u64 {
        self.run(0, |i| Backend::time(i))
    }

    fn advance_time_to(&mut self, ns: u64) {
        self.run((), move |i| i.advance_time_to(ns))
    }

    fn submit(
        &mut self,
        effective: Principal,
        canister: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<u64, Reject> {
        let method = method.to_string();
        self.run(Err(gone()), move |i| Backend::submit(i, effective, canister, sender, &method, arg))
    }

    fn outcome(&self, ticket: u64) -> Option<Result<Vec<u8>, Reject>> {
        self.run(Some(Err(gone())), move |i| Backend::outcome(i, ticket))
    }

    fn forget(&mut self, ticket: u64) {
        self.run((), move |i| Backend::forget(i, ticket))
    }

    fn has_work(&self) -> bool {
        self.run(false, |i| Backend::has_work(i))
    }

    fn tick(&mut self) {
        self.run((), Backend::tick)
    }

    fn query(
        &mut self,
        canister: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<Vec<u8>, Reject> {
        let method = method.to_string();
        self.run(Err(gone()), move |i| Backend::query(i, canister, sender, &method, arg))
    }
}
