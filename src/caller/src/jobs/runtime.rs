//! Where jobs live while they run: the store, the timers that retry, and
//! what an upgrade saves and restores. The rules are the pure [`Job`]'s.

use ic_cdk::api::{call_context_instruction_counter, canister_cycle_balance, canister_version, time};
use ic_stable_structures::StableCell;
use interface::{Report, Strategy};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::Duration;

use super::{Job, NonceRange, nonce_floor};
use crate::calls::Pinger;
use crate::memory::{self, Memory};
use crate::plan::{Pace, ValidPlan};

/// Every job, by id; in the heap, saved to stable memory across upgrades.
#[derive(candid::CandidType, candid::Deserialize, Default)]
struct Jobs {
    next_id: u64,
    jobs: BTreeMap<u64, Job>,
}

thread_local! {
    static JOBS: RefCell<Jobs> = RefCell::new(Jobs::default());
    /// Not kept across upgrades: the version they bring starts a new range.
    static NONCES: RefCell<NonceRange> = RefCell::new(NonceRange::default());
    /// Jobs with a retry timer set, and when it fires (timers do not
    /// survive upgrades, so neither does this).
    static ARMED: RefCell<BTreeMap<u64, u64>> = const { RefCell::new(BTreeMap::new()) };
    /// The jobs while an upgrade is under way.
    static SAVED: RefCell<StableCell<Vec<u8>, Memory>> =
        RefCell::new(StableCell::init(memory::region(memory::JOBS), vec![]));
}

/// Jobs kept for `job_status`; beyond this, the oldest finished ones go.
const MAX_JOBS: usize = 1_000;

fn with_job<R>(id: u64, f: impl FnOnce(&mut Job) -> R) -> R {
    JOBS.with(|j| f(j.borrow_mut().jobs.get_mut(&id).expect("only finished jobs are removed")))
}

/// Starts `plan` as a job and returns its id; its first pass runs in this
/// call context. Refused, with nothing changed, if its nonces cannot be had.
pub fn start(plan: ValidPlan) -> Result<u64, String> {
    let first_nonce = match plan.retry.filter(|r| r.idempotent) {
        Some(_) => Some(NONCES.with(|n| n.borrow_mut().reserve(canister_version(), plan.n.get()))?),
        None => None,
    };
    let id = JOBS.with(|j| {
        let mut j = j.borrow_mut();
        j.next_id += 1;
        let id = j.next_id;
        j.jobs.insert(id, Job::new(plan, first_nonce, time(), canister_cycle_balance()));
        // Keep memory (and pre_upgrade's work) bounded: forget the oldest
        // finished jobs.
        while j.jobs.len() > MAX_JOBS {
            let Some(oldest) = j.jobs.iter().find(|(_, job)| job.finished_at.is_some()).map(|(&id, _)| id)
            else {
                break;
            };
            j.jobs.remove(&oldest);
        }
        id
    });
    ic_cdk::futures::spawn(first_pass(id));
    Ok(id)
}

/// A job's report so far.
pub fn status(id: u64) -> Option<Report> {
    JOBS.with(|j| j.borrow().jobs.get(&id).map(|job| job.report(time(), canister_cycle_balance())))
}

/// How a pass of job `id` reaches its callees. Its floor is computed as
/// the pass starts: floors only rise, so a lower one is never wrong.
fn pinger(id: u64, plan: &ValidPlan) -> Pinger<'_> {
    let first_nonce = with_job(id, |job| job.first_nonce);
    let floor = JOBS.with(|j| nonce_floor(j.borrow().jobs.values()));
    Pinger { plan, first_nonce, floor }
}

async fn first_pass(id: u64) {
    let plan = with_job(id, |job| job.plan.clone());
    let tally = pinger(id, &plan).run(plan.pace(), plan.calls()).await;
    with_job(id, |job| job.absorb(&tally, |_| 1, call_context_instruction_counter(), time()));
    arm_retry_timer(id);
}

/// Sets a timer for the job's next due retry, unless one fires by then.
fn arm_retry_timer(id: u64) {
    let Some(due) = with_job(id, |job| job.next_due()) else { return };
    if ARMED.with(|a| a.borrow().get(&id).is_some_and(|&armed| armed <= due)) {
        return;
    }
    ARMED.with(|a| a.borrow_mut().insert(id, due));
    let delay = Duration::from_nanos(due.saturating_sub(time()));
    ic_cdk_timers::set_timer(delay, retry_pass(id));
}

/// The most retries one timer makes at once: a bounded plan's window, else
/// what the callees' queues can take.
fn retry_window(plan: &ValidPlan) -> usize {
    match plan.strategy {
        Strategy::Bounded => plan.k as usize,
        _ => RETRY_WINDOW_PER_CALLEE * plan.callees.len(),
    }
}

/// The platform's per-pair queue is 500; a window of that size per callee
/// keeps a retry pass from failing for lack of slots on its own.
const RETRY_WINDOW_PER_CALLEE: usize = 500;

/// Runs from a timer: the due retries, then the next timer.
async fn retry_pass(id: u64) {
    ARMED.with(|a| a.borrow_mut().remove(&id));
    let plan = with_job(id, |job| job.plan.clone());
    let due = with_job(id, |job| job.take_due(time(), retry_window(&plan)));
    arm_retry_timer(id);
    if due.is_empty() {
        return;
    }
    let attempts: BTreeMap<u64, u32> = due.iter().map(|p| (p.call.index, p.attempt)).collect();
    // A bounded plan's retries keep to its window; the others' go at once.
    let pace = match plan.pace() {
        Pace::Window(k) if k.get() > 1 => Pace::Window(k),
        _ => Pace::AllAtOnce,
    };
    let tally = pinger(id, &plan).run(pace, due.iter().map(|p| p.call).collect()).await;
    with_job(id, |job| {
        job.absorb(&tally, |call| attempts[&call.index], call_context_instruction_counter(), time())
    });
    arm_retry_timer(id);
}

/// Before an upgrade: the jobs into stable memory.
pub fn save() {
    let saved = JOBS.with(|j| candid::encode_one(&*j.borrow())).expect("jobs encode");
    SAVED.with(|s| s.borrow_mut().set(saved));
}

/// After an upgrade: the jobs back, and their timers, which an upgrade
/// drops, re-armed.
pub fn restore() {
    let saved = SAVED.with(|s| s.borrow_mut().set(vec![]));
    if !saved.is_empty() {
        let jobs: Jobs = candid::decode_one(&saved).expect("jobs saved by pre_upgrade decode");
        JOBS.with(|j| *j.borrow_mut() = jobs);
    }
    let ids: Vec<u64> = JOBS.with(|j| j.borrow().jobs.keys().copied().collect());
    for id in ids {
        with_job(id, |job| job.after_upgrade(id, time()));
        arm_retry_timer(id);
    }
}
