//! Where jobs are kept: every job, by id, in stable memory.

use candid::{CandidType, Deserialize};
use ic_cdk_timers::TimerId;
use ic_stable_structures::storable::Bound;
use ic_stable_structures::{Memory, StableBTreeMap, Storable};
use serde::de::DeserializeOwned;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use super::Schedule;

/// A job's id, from [`Jobs::insert`] (or [`start`](super::start)): 1 for
/// the first, never reused. Convert it to and from `u64` at your endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobId(u64);

impl From<u64> for JobId {
    fn from(id: u64) -> Self {
        Self(id)
    }
}

impl From<JobId> for u64 {
    fn from(JobId(id): JobId) -> Self {
        id
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A job as kept: its schedule, and your state (what it calls, and what
/// you tally).
#[derive(CandidType, Deserialize, Clone, Debug, PartialEq)]
pub struct Job<S> {
    /// When its calls are made.
    pub schedule: Schedule,
    /// Yours.
    pub state: S,
}

impl<S: CandidType + DeserializeOwned> Storable for Job<S> {
    const BOUND: Bound = Bound::Unbounded;

    fn to_bytes(&self) -> Cow<'_, [u8]> {
        Cow::Owned(self.encode())
    }

    fn into_bytes(self) -> Vec<u8> {
        self.encode()
    }

    fn from_bytes(bytes: Cow<'_, [u8]>) -> Self {
        candid::decode_one(&bytes).expect("a job this crate stored decodes")
    }
}

impl<S: CandidType> Job<S> {
    fn encode(&self) -> Vec<u8> {
        candid::encode_one(self).expect("a job encodes")
    }
}

/// Every job, by id, in stable memory: at most a number of them, beyond
/// which the oldest finished ones are forgotten (an unfinished one never
/// is, so bound how many your canister starts).
///
/// ```
/// use ic_fanout::job::{Job, Jobs, Schedule};
/// use ic_stable_structures::VectorMemory;
///
/// let mut jobs: Jobs<u32, _> = Jobs::init(VectorMemory::default(), VectorMemory::default(), 1);
/// let first = jobs.insert(Job { schedule: Schedule::new(None, 0), state: 7 });
/// jobs.update(first, |job| job.schedule.absorb(&ic_fanout::job::Pass::First, [], 5));
/// let second = jobs.insert(Job { schedule: Schedule::new(None, 9), state: 8 });
/// assert_eq!((u64::from(first), u64::from(second)), (1, 2));
/// assert_eq!(jobs.get(first), None, "finished, so forgotten when the next started");
/// assert_eq!(jobs.unfinished().map(|(id, _)| id).collect::<Vec<_>>(), [second]);
/// ```
pub struct Jobs<S: CandidType + DeserializeOwned, M: Memory> {
    jobs: StableBTreeMap<u64, Job<S>, M>,
    pub(super) unfinished: StableBTreeMap<u64, (), M>,
    kept: u64,
    /// Jobs with a retry timer set: when it fires, and the timer. Timers do
    /// not survive upgrades, so neither does this.
    pub(super) armed: BTreeMap<JobId, (u64, TimerId)>,
}

impl<S: CandidType + DeserializeOwned, M: Memory> Jobs<S, M> {
    /// The jobs kept in `jobs` and `unfinished` (two memories of their own,
    /// e.g. from a `MemoryManager`), or none if they are new; at most
    /// `kept` are kept, unless more are unfinished (or the newest, which is
    /// always kept, has finished).
    pub fn init(jobs: M, unfinished: M, kept: u64) -> Self {
        Self {
            jobs: StableBTreeMap::init(jobs),
            unfinished: StableBTreeMap::init(unfinished),
            kept,
            armed: BTreeMap::new(),
        }
    }

    /// Keeps `job` under the next id (1 for the first), and returns it.
    /// Ids are never reused, as the newest job is never forgotten.
    pub fn insert(&mut self, job: Job<S>) -> JobId {
        let id = self.jobs.last_key_value().map_or(1, |(last, _)| last + 1);
        self.put(JobId(id), job);
        while self.jobs.len() > self.kept {
            // Never the newest, finished or not: its id gives the next.
            let oldest = self.jobs.keys().find(|old| *old != id && !self.unfinished.contains_key(old));
            let Some(oldest) = oldest else { break };
            self.jobs.remove(&oldest);
        }
        JobId(id)
    }

    /// Keeps `job` under `id`, replacing any kept there: for bringing in
    /// jobs kept some other way before.
    //
    // Hidden: only the demo caller's upgrade from its v0.1.0 needs it
    // (with `Schedule::resume`), to keep those jobs' ids; not part of the
    // API to build on.
    #[doc(hidden)]
    pub fn put(&mut self, JobId(id): JobId, job: Job<S>) {
        match job.schedule.finished_at() {
            None => self.unfinished.insert(id, ()),
            Some(_) => self.unfinished.remove(&id),
        };
        self.jobs.insert(id, job);
    }

    /// Job `id`, unless it was never started or is forgotten.
    pub fn get(&self, JobId(id): JobId) -> Option<Job<S>> {
        self.jobs.get(&id)
    }

    /// Changes job `id` with `f`, if it is kept.
    pub fn update<R>(&mut self, id: JobId, f: impl FnOnce(&mut Job<S>) -> R) -> Option<R> {
        let mut job = self.get(id)?;
        let result = f(&mut job);
        self.put(id, job);
        Some(result)
    }

    /// The jobs not finished yet, oldest first.
    pub fn unfinished(&self) -> impl Iterator<Item = (JobId, Job<S>)> + '_ {
        self.unfinished.keys().filter_map(|id| Some((JobId(id), self.jobs.get(&id)?)))
    }

    /// How many jobs are kept.
    pub fn len(&self) -> u64 {
        self.jobs.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ic_stable_structures::VectorMemory;

    fn running(state: u8) -> Job<u8> {
        Job { schedule: Schedule::new(None, 0), state }
    }

    #[test]
    fn the_same_memories_hold_the_same_jobs_after_an_upgrade() {
        let (memory, unfinished) = (VectorMemory::default(), VectorMemory::default());
        let mut jobs = Jobs::init(memory.clone(), unfinished.clone(), 100);
        let id = jobs.insert(running(7));
        let again: Jobs<u8, _> = Jobs::init(memory, unfinished, 100);
        assert_eq!(again.get(id).map(|job| job.state), Some(7));
        assert_eq!(again.unfinished().map(|(id, _)| id).collect::<Vec<_>>(), [id]);
    }

    #[test]
    fn a_job_brought_in_keeps_its_id_and_ids_go_on_after_it() {
        let mut jobs: Jobs<u8, _> = Jobs::init(VectorMemory::default(), VectorMemory::default(), 100);
        assert!(jobs.is_empty());
        jobs.put(JobId(41), Job { schedule: Schedule::resume(None, 0, vec![], 3, Some(9)), state: 0 });
        let next = jobs.insert(running(1));
        assert_eq!(next, JobId(42), "ids go on after it");
        assert_eq!(jobs.unfinished().count(), 1, "job 41 came in finished");
        assert_eq!(jobs.len(), 2);
    }

    #[test]
    fn only_a_kept_job_is_got_or_updated() {
        let mut jobs: Jobs<u8, _> = Jobs::init(VectorMemory::default(), VectorMemory::default(), 100);
        let id = jobs.insert(running(0));
        assert_eq!(jobs.update(id, |job| std::mem::replace(&mut job.state, 5)), Some(0));
        assert_eq!(jobs.get(id).unwrap().state, 5, "kept");
        let never = JobId(u64::from(id) + 1);
        assert_eq!((jobs.get(never), jobs.update(never, |job| job.state)), (None, None), "never started");
    }
}
