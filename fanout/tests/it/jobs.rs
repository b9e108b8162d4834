//! A job's schedule under random outcomes: every call is accounted for
//! once (done, waiting, or given up); a call is retried only as its class
//! and the policy allow, never before its backoff, never past its attempts;
//! no timer takes more than its window; and the job finishes exactly when
//! nothing waits. The store keeps every unfinished job, at most `kept` in
//! all otherwise, and never reuses an id.

use ic_fanout::job::{Failed, Job, JobId, Jobs, Pass, Policy, Schedule};
use ic_fanout::retry::{Backoff, Retry};
use ic_stable_structures::VectorMemory;
use proptest::prelude::*;
use std::collections::BTreeMap;

/// How one attempt of a call ends.
#[derive(Clone, Copy, Debug)]
enum Ending {
    Done,
    Failed(Retry),
    NotAttempted,
}

fn ending() -> impl Strategy<Value = Ending> {
    prop_oneof![
        3 => Just(Ending::Done),
        1 => Just(Ending::Failed(Retry::Always)),
        1 => Just(Ending::Failed(Retry::IfIdempotent)),
        1 => Just(Ending::Failed(Retry::Never)),
        1 => Just(Ending::NotAttempted),
    ]
}

proptest! {
    #[test]
    fn every_call_is_accounted_for_once(
        calls in 0u64..40,
        max_attempts in 2u32..6,
        idempotent: bool,
        window in 1usize..10,
        endings in proptest::collection::vec(ending(), 1..64),
    ) {
        let backoff = Backoff { max_attempts, first: std::time::Duration::from_millis(1) };
        let mut schedule = Schedule::new(Some(Policy { backoff, idempotent }), 0);
        let mut attempts: BTreeMap<u64, u32> = BTreeMap::new();
        let mut done: Vec<u64> = vec![];
        let mut next_ending = endings.iter().cycle();
        let (mut pass, mut now) = (Pass::First, 0u64);
        for _ in 0..200 {
            let mut failed = vec![];
            for item in pass.items(calls) {
                let attempt = match &pass {
                    Pass::First => 1,
                    Pass::Retry(due) => due.iter().find(|p| p.item == item).unwrap().attempt,
                };
                match *next_ending.next().unwrap() {
                    Ending::Done => done.push(item),
                    Ending::Failed(retry) => {
                        *attempts.entry(item).or_default() += 1;
                        prop_assert!(attempts[&item] <= max_attempts, "call {} attempted past its attempts", item);
                        prop_assert_eq!(attempt, attempts[&item], "the schedule counts the attempts made");
                        failed.push(Failed::new(item, retry));
                    }
                    Ending::NotAttempted => failed.push(Failed::not_attempted(item)),
                }
            }
            let failed_now: BTreeMap<u64, Failed> = failed.iter().map(|f| (f.item, *f)).collect();
            schedule.absorb(&pass, failed, now);
            // A call waits only if its class and the policy allow it, and
            // not before its backoff.
            for p in schedule.waiting().iter().filter(|p| failed_now.contains_key(&p.item)) {
                let f = failed_now[&p.item];
                prop_assert!(f.retry.allows(idempotent), "{:?} waits", f);
                prop_assert!(u128::from(p.due) >= u128::from(now) + backoff.delay(p.attempt.max(2)).as_nanos());
            }
            // Every call once: done, waiting, or given up.
            let waiting: Vec<u64> = schedule.waiting().iter().map(|p| p.item).collect();
            let mut seen: Vec<u64> = done.iter().chain(&waiting).copied().collect();
            seen.sort();
            let mut unique = seen.clone();
            unique.dedup();
            prop_assert_eq!(&seen, &unique, "a call is in one place only");
            prop_assert_eq!(done.len() as u64 + waiting.len() as u64 + schedule.given_up(), calls);
            prop_assert_eq!(schedule.finished_at().is_some(), waiting.is_empty());
            if waiting.is_empty() {
                break;
            }
            now = schedule.next_due().unwrap();
            let due = schedule.take_due(now, window);
            prop_assert!(!due.is_empty() && due.len() <= window);
            pass = Pass::Retry(due);
        }
    }

    #[test]
    fn without_a_policy_the_first_pass_ends_the_job(
        calls in 0u64..40,
        endings in proptest::collection::vec(ending(), 40),
    ) {
        let mut schedule = Schedule::new(None, 0);
        let failed = (0..calls).filter_map(|item| match endings[item as usize] {
            Ending::Done => None,
            Ending::Failed(retry) => Some(Failed::new(item, retry)),
            Ending::NotAttempted => Some(Failed::not_attempted(item)),
        });
        let failed: Vec<Failed> = failed.collect();
        schedule.absorb(&Pass::First, failed.clone(), 5);
        prop_assert_eq!(schedule.given_up(), failed.len() as u64);
        prop_assert_eq!((schedule.finished_at(), schedule.next_due()), (Some(5), None));
    }

    #[test]
    fn the_store_keeps_every_unfinished_job_and_never_reuses_an_id(
        kept in 0u64..6,
        // Per step: 8 starts a job, 9 brings in one already finished, and
        // 0-7 finish the unfinished job at that index.
        steps in proptest::collection::vec(0usize..10, 1..60),
    ) {
        let mut jobs: Jobs<u64, _> = Jobs::init(VectorMemory::default(), VectorMemory::default(), kept);
        let (mut last_id, mut unfinished, mut bound) = (JobId::from(0), vec![], 0);
        for (now, step) in steps.into_iter().enumerate() {
            let now = now as u64;
            match step {
                8 | 9 => {
                    let mut schedule = Schedule::new(None, now);
                    if step == 9 {
                        schedule.absorb(&Pass::First, [], now);
                    }
                    let id = jobs.insert(Job { schedule, state: now });
                    prop_assert!(id > last_id, "id {} after {}", id, last_id);
                    last_id = id;
                    if step == 8 {
                        unfinished.push(id);
                    }
                    // Forgetting happens as a job comes in: beyond `kept`,
                    // the finished ones go, but for the newest.
                    bound = kept.max(unfinished.len() as u64 + u64::from(step == 9));
                }
                i if i < unfinished.len() => {
                    let id = unfinished.remove(i);
                    jobs.update(id, |job| job.schedule.absorb(&Pass::First, [], now)).unwrap();
                }
                _ => {}
            }
            let kept_unfinished: Vec<JobId> = jobs.unfinished().map(|(id, _)| id).collect();
            let mut expected = unfinished.clone();
            expected.sort();
            prop_assert_eq!(kept_unfinished, expected);
            prop_assert!(jobs.len() <= bound, "{} kept, over {}", jobs.len(), bound);
            prop_assert!(last_id == JobId::from(0) || jobs.get(last_id).is_some(), "the newest job is kept");
        }
    }
}
