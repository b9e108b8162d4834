//! The plan's calls at their pace, through `ic-fanout`, tallied: the
//! library makes the calls and reports each one's outcome; the tally counts
//! pings, failures by kind, and the calls that a job can retry.

use std::future::Future;

use ic_fanout::job::Failed;
use ic_fanout::{Pace, fan_out};
use interface::Outcome;

use crate::plan::{CallId, Tally};

/// Makes `calls` at `pace`; `call(id)` makes one and yields its outcome.
pub async fn run<F, Fut>(pace: Pace, calls: Vec<CallId>, mut call: F) -> Tally
where
    F: FnMut(CallId) -> Fut,
    Fut: Future<Output = Outcome>,
{
    let done = fan_out(pace, &calls, |&id| call(id)).await;
    let mut tally = Tally::default();
    // A refused call put back in line was attempted once more.
    tally.calls += done.requeued();
    tally.peak_in_flight = done.peak_in_flight();
    tally.failed = Failed::from_fan_out(&calls, &done, |_, &kind| kind.into());
    for (id, outcome) in calls.into_iter().zip(done.into_outcomes()) {
        match outcome {
            Some(outcome) => tally.record(id, outcome),
            None => tally.not_attempted(id),
        }
    }
    tally
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::executor::block_on;
    use interface::{Acknowledged, FailureKind};

    fn refused_from(first_refused: u64) -> impl FnMut(CallId) -> std::future::Ready<Outcome> {
        move |id| {
            std::future::ready(if id.index >= first_refused {
                Err(FailureKind::CallPerformFailed)
            } else {
                Ok(Acknowledged::now(id.pings))
            })
        }
    }

    #[test]
    fn calls_never_started_are_not_attempted_and_a_job_can_retry_each() {
        let calls: Vec<CallId> = (0..10).map(|index| CallId { index, pings: 1 }).collect();
        let tally = block_on(run(Pace::ONE_AT_A_TIME, calls, refused_from(2)));
        assert_eq!((tally.succeeded, tally.calls), (2, 3));
        assert_eq!(tally.failures.get(&FailureKind::CallPerformFailed), Some(&1));
        assert_eq!(tally.failures.get(&FailureKind::NotAttempted), Some(&7));
        assert_eq!(tally.failed.len(), 8, "every ping is accounted for");
    }

    #[test]
    fn batches_count_their_pings_when_they_fail() {
        let calls: Vec<CallId> = (0..3).map(|index| CallId { index, pings: 10 }).collect();
        let tally = block_on(run(Pace::AllAtOnce, calls, refused_from(2)));
        assert_eq!((tally.succeeded, tally.calls), (20, 3));
        assert_eq!(tally.failures.get(&FailureKind::CallPerformFailed), Some(&10), "pings, not calls");
        assert_eq!(tally.failed.len(), 1, "the failed call is listed");
    }
}
