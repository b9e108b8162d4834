//! The fan-out strategies, generic over "make call number i carrying p
//! pings", so that they run natively in unit tests and on the IC alike.
//!
//! ic-cdk performs a call when its future is first polled. A call that
//! cannot be performed fails on that first poll; one that is performed stays
//! pending until its response arrives. That is how calls in flight are
//! counted here.

use futures::future::join_all;
use futures::stream::{FuturesUnordered, StreamExt};
use std::cell::Cell;
use std::future::{Future, poll_fn};
use std::pin::pin;

use crate::plan::{CallId, FailureKind, Strategy, Tally};

/// Runs `n` pings with `strategy`; `k` is the window (`bounded`) or the
/// batch size (`batched`). `call(i, pings)` makes call number `i`, which
/// carries `pings` pings, and yields how many were acknowledged.
pub async fn run<F, Fut>(strategy: Strategy, n: u64, k: u64, call: F) -> Tally
where
    F: FnMut(u64, u64) -> Fut,
    Fut: Future<Output = Result<u64, FailureKind>>,
{
    let in_flight = InFlight::default();
    let mut call = call;
    let mut tracked = |i: u64, pings: u64| {
        let outcome = in_flight.track(call(i, pings));
        async move { (CallId { index: i, pings }, outcome.await) }
    };
    let mut tally = Tally::default();
    match strategy {
        Strategy::Sequential => {
            for i in 0..n {
                let (id, outcome) = tracked(i, 1).await;
                tally.record(id, outcome);
            }
        }
        Strategy::Parallel => {
            for (id, outcome) in join_all((0..n).map(|i| tracked(i, 1))).await {
                tally.record(id, outcome);
            }
        }
        Strategy::Bounded => {
            let mut pending = FuturesUnordered::new();
            let mut next = 0;
            while next < n.min(k) {
                pending.push(tracked(next, 1));
                next += 1;
            }
            // Refill as soon as any call completes, not when a chunk has.
            while let Some((id, outcome)) = pending.next().await {
                tally.record(id, outcome);
                if next < n {
                    pending.push(tracked(next, 1));
                    next += 1;
                }
            }
        }
        Strategy::Batched => {
            let batches = n.div_ceil(k);
            let calls = (0..batches).map(|i| tracked(i, k.min(n - i * k)));
            for (id, outcome) in join_all(calls).await {
                tally.record(id, outcome);
            }
        }
    }
    tally.peak_in_flight = in_flight.peak.get();
    tally
}

/// Makes the given calls all at once (a job's retries).
pub async fn run_calls<F, Fut>(calls: Vec<CallId>, call: F) -> Tally
where
    F: Fn(CallId) -> Fut,
    Fut: Future<Output = Result<u64, FailureKind>>,
{
    let in_flight = InFlight::default();
    let mut tally = Tally::default();
    let outcomes = join_all(calls.iter().map(|&id| in_flight.track(call(id)))).await;
    for (id, outcome) in calls.into_iter().zip(outcomes) {
        tally.record(id, outcome);
    }
    tally.peak_in_flight = in_flight.peak.get();
    tally
}

/// Calls performed and not yet answered.
#[derive(Default)]
struct InFlight {
    now: Cell<u64>,
    peak: Cell<u64>,
}

impl InFlight {
    /// `call`, counted in flight from its first `Pending` until it is ready.
    async fn track<T>(&self, call: impl Future<Output = T>) -> T {
        let mut call = pin!(call);
        let mut counted = false;
        let outcome = poll_fn(|cx| {
            let poll = call.as_mut().poll(cx);
            if poll.is_pending() && !counted {
                counted = true;
                self.now.set(self.now.get() + 1);
                self.peak.set(self.peak.get().max(self.now.get()));
            }
            poll
        })
        .await;
        if counted {
            self.now.set(self.now.get() - 1);
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::executor::block_on;
    use std::cell::RefCell;
    use std::rc::Rc;
    use std::task::{Poll, Waker};

    /// A stand-in for the platform: `capacity` request slots. A call takes
    /// a slot when first polled (or fails at once when none is free, as
    /// `call_perform` does) and is answered when the test says so, in the
    /// order the test chooses.
    #[derive(Clone, Default)]
    struct FakePlatform {
        capacity: usize,
        in_flight: Rc<Cell<usize>>,
        performed: Rc<Cell<u64>>,
        waiting: Rc<RefCell<Vec<Waiting>>>,
    }

    /// A performed call waiting for its answer.
    struct Waiting {
        index: u64,
        waker: Waker,
        answered: Rc<Cell<bool>>,
    }

    impl FakePlatform {
        fn with_capacity(capacity: usize) -> Self {
            Self { capacity, ..Self::default() }
        }

        fn call(&self, i: u64, pings: u64) -> impl Future<Output = Result<u64, FailureKind>> + use<> {
            let p = self.clone();
            let answered = Rc::new(Cell::new(false));
            let mut performed = false;
            poll_fn(move |cx| {
                if !performed {
                    if p.in_flight.get() == p.capacity {
                        return Poll::Ready(Err(FailureKind::CallPerformFailed));
                    }
                    performed = true;
                    p.in_flight.set(p.in_flight.get() + 1);
                    p.performed.set(p.performed.get() + 1);
                    let waiting = Waiting { index: i, waker: cx.waker().clone(), answered: answered.clone() };
                    p.waiting.borrow_mut().push(waiting);
                    return Poll::Pending;
                }
                if answered.get() {
                    p.in_flight.set(p.in_flight.get() - 1);
                    Poll::Ready(Ok(pings))
                } else {
                    Poll::Pending
                }
            })
        }

        /// Answers the waiting call that `pick` chooses among the indices.
        fn answer(&self, pick: impl Fn(&[u64]) -> usize) {
            let mut waiting = self.waiting.borrow_mut();
            let indices: Vec<u64> = waiting.iter().map(|w| w.index).collect();
            let chosen = waiting.remove(pick(&indices));
            chosen.answered.set(true);
            chosen.waker.wake();
        }
    }

    /// Drives `run` to completion, answering one call at a time with `pick`.
    fn drive(
        platform: &FakePlatform,
        strategy: Strategy,
        n: u64,
        k: u64,
        pick: impl Fn(&[u64]) -> usize,
    ) -> Tally {
        let mut run = Box::pin(run(strategy, n, k, |i, pings| platform.call(i, pings)));
        let waker = futures::task::noop_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        loop {
            if let Poll::Ready(tally) = run.as_mut().poll(&mut cx) {
                return tally;
            }
            platform.answer(&pick);
        }
    }

    fn first(_: &[u64]) -> usize {
        0
    }

    #[test]
    fn sequential_keeps_one_call_in_flight_and_all_succeed() {
        let platform = FakePlatform::with_capacity(3);
        let tally = drive(&platform, Strategy::Sequential, 10, 1, first);
        assert_eq!((tally.succeeded, tally.calls, tally.peak_in_flight), (10, 10, 1));
    }

    #[test]
    fn parallel_issues_every_call_at_once_and_loses_those_beyond_capacity() {
        let platform = FakePlatform::with_capacity(3);
        let tally = drive(&platform, Strategy::Parallel, 10, 1, first);
        assert_eq!((tally.succeeded, tally.calls, tally.peak_in_flight), (3, 10, 3));
        assert_eq!(tally.failures.get(&FailureKind::CallPerformFailed), Some(&7));
        let failed: Vec<u64> = tally.failed.iter().map(|f| f.0.index).collect();
        assert_eq!(failed, (3..10).collect::<Vec<_>>(), "which calls failed is known");
        assert_eq!(platform.in_flight.get(), 0);
    }

    #[test]
    fn bounded_never_exceeds_its_window_and_loses_nothing() {
        let platform = FakePlatform::with_capacity(3);
        let tally = drive(&platform, Strategy::Bounded, 20, 3, first);
        assert_eq!((tally.succeeded, tally.calls, tally.peak_in_flight), (20, 20, 3));
        assert!(tally.failures.is_empty());
    }

    #[test]
    fn bounded_refills_as_soon_as_any_call_answers() {
        // Answer the newest call first: a chunked strategy would wait for
        // the oldest, this one starts the next call at once.
        let platform = FakePlatform::with_capacity(100);
        let newest = |indices: &[u64]| indices.len() - 1;
        let mut run = Box::pin(run(Strategy::Bounded, 10, 4, |i, pings| platform.call(i, pings)));
        let waker = futures::task::noop_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        assert!(run.as_mut().poll(&mut cx).is_pending());
        assert_eq!(platform.performed.get(), 4);
        platform.answer(newest);
        assert!(run.as_mut().poll(&mut cx).is_pending());
        assert_eq!(platform.performed.get(), 5, "one answer, one new call, while three older ones wait");
        assert_eq!(platform.in_flight.get(), 4);
    }

    #[test]
    fn batched_carries_k_pings_per_call_and_the_rest_in_the_last() {
        let platform = FakePlatform::with_capacity(100);
        let tally = drive(&platform, Strategy::Batched, 25, 10, first);
        assert_eq!((tally.succeeded, tally.calls, tally.peak_in_flight), (25, 3, 3));
    }

    #[test]
    fn zero_pings_make_no_call() {
        let platform = FakePlatform::with_capacity(1);
        for strategy in [Strategy::Sequential, Strategy::Parallel, Strategy::Bounded, Strategy::Batched] {
            let tally = block_on(run(strategy, 0, 5, |i, p| platform.call(i, p)));
            assert_eq!((tally.calls, tally.succeeded), (0, 0));
        }
        assert_eq!(platform.performed.get(), 0);
    }
}
