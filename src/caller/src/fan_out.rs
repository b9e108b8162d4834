//! The fan-out paces, generic over "make this call", so that they run
//! natively in unit tests and on the IC alike.
//!
//! ic-cdk performs a call when its future is first polled. A call that
//! cannot be performed fails on that first poll; one that is performed stays
//! pending until its response arrives. That is how calls in flight are
//! counted here.

use futures::future::join_all;
use futures::stream::{FuturesUnordered, StreamExt};
use std::cell::Cell;
use std::collections::VecDeque;
use std::future::{Future, poll_fn};
use std::pin::pin;

use interface::Outcome;

use crate::plan::{CallId, Pace, Tally};

/// Makes `calls` at `pace`; `call(id)` makes one and yields its outcome.
pub async fn run<F, Fut>(pace: Pace, calls: Vec<CallId>, call: F) -> Tally
where
    F: FnMut(CallId) -> Fut,
    Fut: Future<Output = Outcome>,
{
    let in_flight = InFlight::default();
    let mut call = call;
    let tracked = |id: CallId| {
        let outcome = in_flight.track(call(id));
        async move { (id, outcome.await) }
    };
    let mut tally = match pace {
        Pace::AllAtOnce => all_at_once(calls, tracked).await,
        Pace::Window(1) => one_at_a_time(calls, tracked).await,
        Pace::Window(k) => windowed(k, calls, tracked, &in_flight).await,
    };
    tally.peak_in_flight = in_flight.peak.get();
    tally
}

async fn all_at_once<T, Fut>(calls: Vec<CallId>, tracked: T) -> Tally
where
    T: FnMut(CallId) -> Fut,
    Fut: Future<Output = (CallId, Outcome)>,
{
    let mut tally = Tally::default();
    for (id, outcome) in join_all(calls.into_iter().map(tracked)).await {
        tally.record(id, outcome);
    }
    tally
}

/// A window of one. Nothing else of the run is in flight when a call is
/// refused, so there is no answer to wait for: the calls not started are
/// `NotAttempted` (see [`windowed`]).
async fn one_at_a_time<T, Fut>(calls: Vec<CallId>, mut tracked: T) -> Tally
where
    T: FnMut(CallId) -> Fut,
    Fut: Future<Output = (CallId, Outcome)>,
{
    let mut tally = Tally::default();
    let mut calls = calls.into_iter();
    while let Some(id) = calls.next() {
        let (id, outcome) = tracked(id).await;
        let refused = outcome.is_err_and(|kind| kind.not_performed());
        tally.record(id, outcome);
        if refused {
            calls.by_ref().for_each(|id| tally.not_attempted(id));
        }
    }
    tally
}

/// At most `k` calls in flight, a new one started as soon as any answers.
///
/// A call that cannot be performed (no slot, or too few cycles) frees
/// nothing within the execution that made it. So a refusal closes a gate
/// until the next answer: calls already queued behind it find the gate
/// closed and wait without being made, the window shrinks to the calls in
/// flight, and the refused call waits for a slot. With nothing in flight
/// there is no answer to wait for: the refused call fails and the calls not
/// started are `NotAttempted`.
async fn windowed<T, Fut>(k: u64, calls: Vec<CallId>, mut tracked: T, in_flight: &InFlight) -> Tally
where
    T: FnMut(CallId) -> Fut,
    Fut: Future<Output = (CallId, Outcome)>,
{
    let mut tally = Tally::default();
    let mut waiting = VecDeque::from(calls);
    let gate_open = Cell::new(true);
    let mut gated = |id| {
        let call = tracked(id);
        let gate_open = &gate_open;
        async move { if gate_open.get() { Ok(call.await) } else { Err(id) } }
    };
    let mut pending = FuturesUnordered::new();
    let mut window = k;
    // Where calls turned back since the gate closed go, in their order.
    let mut requeued = 0;
    let mut stopped = false;
    loop {
        while gate_open.get() && (pending.len() as u64) < window {
            let Some(id) = waiting.pop_front() else { break };
            pending.push(gated(id));
        }
        match pending.next().await {
            None => break,
            Some(Err(id)) if stopped => tally.not_attempted(id),
            Some(Err(id)) => {
                waiting.insert(requeued, id);
                requeued += 1;
            }
            Some(Ok((id, outcome))) if outcome.is_err_and(|kind| kind.not_performed()) => {
                gate_open.set(false);
                if in_flight.now.get() == 0 {
                    stopped = true;
                    tally.record(id, outcome);
                } else {
                    tally.calls += 1;
                    window = in_flight.now.get();
                    waiting.insert(requeued, id);
                    requeued += 1;
                }
            }
            Some(Ok((id, outcome))) => {
                tally.record(id, outcome);
                gate_open.set(!stopped);
                requeued = 0;
            }
        }
    }
    waiting.into_iter().for_each(|id| tally.not_attempted(id));
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
    use interface::{Acknowledged, FailureKind};
    use std::cell::RefCell;
    use std::rc::Rc;
    use std::task::{Poll, Waker};

    /// A stand-in for the platform: `capacity` request slots. A call takes
    /// a slot when first polled (or fails at once when none is free, as
    /// `call_perform` does) and is answered when the test says so, in the
    /// order the test chooses. Like ic-cdk's call future, it wakes the waker
    /// of its latest poll.
    #[derive(Clone, Default)]
    struct FakePlatform {
        capacity: usize,
        in_flight: Rc<Cell<usize>>,
        performed: Rc<Cell<u64>>,
        refused: Rc<Cell<u64>>,
        waiting: Rc<RefCell<Vec<Waiting>>>,
    }

    /// A performed call waiting for its answer.
    struct Waiting {
        index: u64,
        waker: Rc<RefCell<Waker>>,
        answered: Rc<Cell<bool>>,
    }

    impl FakePlatform {
        fn with_capacity(capacity: usize) -> Self {
            Self { capacity, ..Self::default() }
        }

        fn call(&self, id: CallId) -> impl Future<Output = Outcome> + use<> {
            let p = self.clone();
            let answered = Rc::new(Cell::new(false));
            let mut waker: Option<Rc<RefCell<Waker>>> = None;
            poll_fn(move |cx| {
                let Some(waker) = &waker else {
                    if p.in_flight.get() == p.capacity {
                        p.refused.set(p.refused.get() + 1);
                        return Poll::Ready(Err(FailureKind::CallPerformFailed));
                    }
                    p.in_flight.set(p.in_flight.get() + 1);
                    p.performed.set(p.performed.get() + 1);
                    let shared = Rc::new(RefCell::new(cx.waker().clone()));
                    let entry =
                        Waiting { index: id.index, waker: shared.clone(), answered: answered.clone() };
                    p.waiting.borrow_mut().push(entry);
                    waker = Some(shared);
                    return Poll::Pending;
                };
                if answered.get() {
                    p.in_flight.set(p.in_flight.get() - 1);
                    Poll::Ready(Ok(Acknowledged::now(id.pings)))
                } else {
                    *waker.borrow_mut() = cx.waker().clone();
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
            chosen.waker.borrow().wake_by_ref();
        }
    }

    fn singles(n: u64) -> Vec<CallId> {
        (0..n).map(|index| CallId { index, pings: 1 }).collect()
    }

    /// Drives `run` to completion, answering one call at a time with `pick`.
    fn drive(
        platform: &FakePlatform,
        pace: Pace,
        calls: Vec<CallId>,
        pick: impl Fn(&[u64]) -> usize,
    ) -> Tally {
        let mut run = Box::pin(run(pace, calls, |id| platform.call(id)));
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
    fn one_at_a_time_keeps_one_call_in_flight_and_all_succeed() {
        let platform = FakePlatform::with_capacity(3);
        let tally = drive(&platform, Pace::Window(1), singles(10), first);
        assert_eq!((tally.succeeded, tally.calls, tally.peak_in_flight), (10, 10, 1));
    }

    #[test]
    fn all_at_once_loses_the_calls_beyond_capacity() {
        let platform = FakePlatform::with_capacity(3);
        let tally = drive(&platform, Pace::AllAtOnce, singles(10), first);
        assert_eq!((tally.succeeded, tally.calls, tally.peak_in_flight), (3, 10, 3));
        assert_eq!(tally.failures.get(&FailureKind::CallPerformFailed), Some(&7));
        let failed: Vec<u64> = tally.failed.iter().map(|f| f.0.index).collect();
        assert_eq!(failed, (3..10).collect::<Vec<_>>(), "which calls failed is known");
        assert_eq!(platform.in_flight.get(), 0);
    }

    #[test]
    fn a_window_never_exceeds_k_and_loses_nothing() {
        let platform = FakePlatform::with_capacity(3);
        let tally = drive(&platform, Pace::Window(3), singles(20), first);
        assert_eq!((tally.succeeded, tally.calls, tally.peak_in_flight), (20, 20, 3));
        assert!(tally.failures.is_empty());
    }

    #[test]
    fn a_window_refills_as_soon_as_any_call_answers() {
        // Answer the newest call first: a chunked strategy would wait for
        // the oldest, this one starts the next call at once.
        let platform = FakePlatform::with_capacity(100);
        let newest = |indices: &[u64]| indices.len() - 1;
        let mut run = Box::pin(run(Pace::Window(4), singles(10), |id| platform.call(id)));
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
    fn a_window_above_capacity_shrinks_to_it_and_delivers_everything() {
        let platform = FakePlatform::with_capacity(5);
        let mut run = Box::pin(run(Pace::Window(6), singles(40), |id| platform.call(id)));
        let waker = futures::task::noop_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        assert!(run.as_mut().poll(&mut cx).is_pending());
        assert_eq!((platform.performed.get(), platform.refused.get()), (5, 1), "one refusal, then nothing");
        let tally = loop {
            platform.answer(first);
            if let Poll::Ready(tally) = run.as_mut().poll(&mut cx) {
                break tally;
            }
        };
        assert_eq!((tally.succeeded, tally.peak_in_flight), (40, 5));
        assert!(tally.failures.is_empty(), "{:?}", tally.failures);
        assert_eq!(platform.refused.get(), 1, "the window learned the capacity once");
        assert_eq!(tally.calls, 41, "the refused call counts as attempted");
    }

    #[test]
    fn a_window_shares_slots_held_by_others_without_refusing_in_a_loop() {
        // 3 of 5 slots are held elsewhere: the window of 4 runs at 2.
        let platform = FakePlatform::with_capacity(5);
        platform.in_flight.set(3);
        let tally = drive(&platform, Pace::Window(4), singles(30), first);
        assert_eq!((tally.succeeded, tally.peak_in_flight), (30, 2));
        assert_eq!(platform.refused.get(), 1);
    }

    #[test]
    fn with_nothing_in_flight_and_no_slot_a_window_stops_and_starts_nothing_more() {
        for k in [1, 3] {
            let platform = FakePlatform::with_capacity(2);
            platform.in_flight.set(2);
            let tally = block_on(run(Pace::Window(k), singles(10), |id| platform.call(id)));
            assert_eq!(platform.refused.get(), 1, "k = {k}: one refusal, no burning through the rest");
            assert_eq!((tally.succeeded, tally.calls), (0, 1));
            assert_eq!(tally.failures.get(&FailureKind::CallPerformFailed), Some(&1));
            assert_eq!(tally.failures.get(&FailureKind::NotAttempted), Some(&9));
            assert_eq!(tally.failed.len(), 10, "every ping is accounted for, and a job can retry each");
        }
    }

    #[test]
    fn batches_count_their_pings_when_they_fail() {
        let platform = FakePlatform::with_capacity(2);
        let calls: Vec<CallId> = (0..3).map(|index| CallId { index, pings: 10 }).collect();
        let tally = drive(&platform, Pace::AllAtOnce, calls, first);
        assert_eq!((tally.succeeded, tally.calls, tally.peak_in_flight), (20, 3, 2));
        assert_eq!(tally.failures.get(&FailureKind::CallPerformFailed), Some(&10), "pings, not calls");
    }

    #[test]
    fn no_calls_make_no_call() {
        let platform = FakePlatform::with_capacity(1);
        for pace in [Pace::AllAtOnce, Pace::Window(1), Pace::Window(5)] {
            let tally = block_on(run(pace, vec![], |id| platform.call(id)));
            assert_eq!((tally.calls, tally.succeeded), (0, 0));
        }
        assert_eq!(platform.performed.get(), 0);
    }
}
