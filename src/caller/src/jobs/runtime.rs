//! Where jobs live while they run: ic-fanout's `Jobs` in stable memory, and
//! the caller's `Work`, which makes a pass's pings. The library arms the
//! timers that retry, and re-arms them after an upgrade.

use ic_cdk::api::{call_context_instruction_counter, canister_cycle_balance, canister_version, time};
use ic_fanout::job::{self, Failed, JobId, Jobs, Pass, Work};
use ic_fanout::once::Nonces;
use ic_stable_structures::{Memory as _, StableCell};
use interface::{Report, Strategy};
use std::cell::RefCell;
use std::thread::LocalKey;

use super::{PingJob, SavedJobs, nonce_floors};
use crate::calls::{PingNonces, Pinger};
use crate::memory::{self, Memory};
use crate::plan::{Pace, ValidPlan};

thread_local! {
    static JOBS: RefCell<Jobs<PingJob, Memory>> = RefCell::new(Jobs::init(
        memory::region(memory::JOBS),
        memory::region(memory::UNFINISHED_JOBS),
        MAX_JOBS,
    ));
    /// Not kept across upgrades: the version they bring starts a new range.
    static NONCES: RefCell<Nonces> = RefCell::new(Nonces::skipping(nonce_ranges_skipped()));
}

/// The nonce ranges new jobs pass over; read only if a caller upgraded
/// from v0.1.0 ever stored them (a cell opened on fresh memory would take
/// a stable-memory bucket of its own, for nothing).
fn nonce_ranges_skipped() -> u64 {
    let region = memory::region(memory::NONCE_RANGES_SKIPPED);
    if region.size() == 0 { 0 } else { *StableCell::init(region, 0).get() }
}

/// Jobs kept for `job_status`; beyond this, the oldest finished ones go.
const MAX_JOBS: u64 = 1_000;

/// A plan's pings, as a job's passes.
struct Pings;

impl Work for Pings {
    type State = PingJob;
    type Memory = Memory;

    fn jobs() -> &'static LocalKey<RefCell<Jobs<PingJob, Memory>>> {
        &JOBS
    }

    async fn pass(id: JobId, job: PingJob, pass: Pass) -> Vec<Failed> {
        let plan = job.plan;
        let (pace, calls) = match &pass {
            Pass::First => (plan.pace(), plan.calls()),
            Pass::Retry(due) => (retry_pace(&plan), due.iter().map(|p| plan.call(p.item)).collect()),
        };
        // Computed as the pass starts: floors only rise, so a lower one is
        // never wrong.
        let nonces = job.first_nonce.map(|first| PingNonces {
            first,
            floors: JOBS
                .with(|j| nonce_floors(&plan.callees, j.borrow().unfinished().map(|(_, job)| job.state))),
        });
        let pinger = Pinger { plan: &plan, nonces };
        let tally = pinger.run(pace, calls).await;
        let instructions = call_context_instruction_counter();
        JOBS.with(|j| j.borrow_mut().update(id, |job| job.state.absorb(tally, instructions)))
            .unwrap_or_default()
    }

    /// The most retries one timer makes at once: a bounded plan's window,
    /// else what the callees' queues can take.
    fn retry_window(state: &PingJob) -> usize {
        match state.plan.strategy {
            Strategy::Bounded => state.plan.k as usize,
            _ => RETRY_WINDOW_PER_CALLEE * state.plan.callees.len(),
        }
    }
}

/// The platform's per-pair queue is 500; a window of that size per callee
/// keeps a retry pass from failing for lack of slots on its own.
const RETRY_WINDOW_PER_CALLEE: usize = 500;

/// A bounded plan's retries keep to its window; the others' go at once.
fn retry_pace(plan: &ValidPlan) -> Pace {
    match plan.pace() {
        Pace::Window(k) if k.get() > 1 => Pace::Window(k),
        _ => Pace::AllAtOnce,
    }
}

/// Starts `plan` as a job and returns its id; its first pass runs in this
/// call context. Refused, with nothing changed, if its nonces cannot be had.
pub fn start(plan: ValidPlan) -> Result<u64, String> {
    let first_nonce = match plan.retry.filter(|r| r.idempotent) {
        Some(_) => {
            let first = NONCES.with(|n| n.borrow_mut().reserve(canister_version(), plan.n.get()));
            Some(first.map_err(|e| e.to_string())?)
        }
        None => None,
    };
    let policy = plan.retry.map(super::policy);
    let state = PingJob::new(plan, first_nonce, canister_cycle_balance());
    job::start::<Pings>(state, policy).map(u64::from).map_err(|e| e.to_string())
}

/// A job's report so far.
pub fn status(id: u64) -> Option<Report> {
    let job = JOBS.with(|j| j.borrow().get(id.into()))?;
    Some(job.state.report(&job.schedule, time(), canister_cycle_balance()))
}

/// After an upgrade: jobs that an earlier version saved in its
/// `pre_upgrade` brought into the library's store (once), and every
/// unfinished job's timer, which an upgrade drops, set again.
pub fn restore() {
    let saved = memory::region(memory::SAVED_JOBS);
    if saved.size() > 0 {
        let mut cell = StableCell::init(saved, vec![]);
        let bytes = cell.set(vec![]);
        if !bytes.is_empty() {
            let saved: SavedJobs = candid::decode_one(&bytes).expect("jobs saved by pre_upgrade decode");
            let skipped = saved.nonce_ranges_used();
            StableCell::init(memory::region(memory::NONCE_RANGES_SKIPPED), skipped).set(skipped);
            NONCES.with(|n| *n.borrow_mut() = Nonces::skipping(skipped));
            JOBS.with(|j| {
                let mut jobs = j.borrow_mut();
                for (id, job) in saved.jobs {
                    jobs.put(id.into(), job.into_job(id));
                }
            });
        }
    }
    job::rearm::<Pings>();
}
