//! The paces against a scripted platform: `capacity` request slots, calls
//! answered when and in the order the test says, as ic-cdk's call futures
//! are (performed on the first poll, or refused at once with no slot).

use futures::executor::block_on;
use ic_fanout::{FanOut, Pace, Refusal, fan_out};
use proptest::prelude::*;
use std::cell::{Cell, RefCell};
use std::future::{Future, poll_fn};
use std::num::NonZeroUsize;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

#[derive(Clone, Debug, PartialEq, Eq)]
enum Failed {
    NoSlot,
}

impl Refusal for Failed {
    fn is_refusal(&self) -> bool {
        true
    }
}

#[derive(Clone, Default)]
struct FakePlatform {
    capacity: usize,
    in_flight: Rc<Cell<usize>>,
    performed: Rc<Cell<u64>>,
    refused: Rc<Cell<u64>>,
    /// Whether the execution being polled has seen a refusal: no call may
    /// be started after one in the same execution.
    refused_in_this_execution: Rc<Cell<bool>>,
    started_after_refusal: Rc<Cell<u64>>,
    waiting: Rc<RefCell<Vec<Waiting>>>,
}

struct Waiting {
    waker: Rc<RefCell<Waker>>,
    answered: Rc<Cell<bool>>,
}

impl FakePlatform {
    fn with_capacity(capacity: usize) -> Self {
        Self { capacity, ..Self::default() }
    }

    fn call(&self, item: u64) -> impl Future<Output = Result<u64, Failed>> + use<> {
        let p = self.clone();
        let answered = Rc::new(Cell::new(false));
        let mut waker: Option<Rc<RefCell<Waker>>> = None;
        poll_fn(move |cx| {
            let Some(waker) = &waker else {
                if p.refused_in_this_execution.get() {
                    p.started_after_refusal.set(p.started_after_refusal.get() + 1);
                }
                if p.in_flight.get() == p.capacity {
                    p.refused.set(p.refused.get() + 1);
                    p.refused_in_this_execution.set(true);
                    return Poll::Ready(Err(Failed::NoSlot));
                }
                p.in_flight.set(p.in_flight.get() + 1);
                p.performed.set(p.performed.get() + 1);
                let shared = Rc::new(RefCell::new(cx.waker().clone()));
                p.waiting.borrow_mut().push(Waiting { waker: shared.clone(), answered: answered.clone() });
                waker = Some(shared);
                return Poll::Pending;
            };
            if answered.get() {
                p.in_flight.set(p.in_flight.get() - 1);
                Poll::Ready(Ok(item))
            } else {
                *waker.borrow_mut() = cx.waker().clone();
                Poll::Pending
            }
        })
    }

    /// Answers the waiting call that `pick` chooses; a new execution begins.
    fn answer(&self, pick: impl Fn(usize) -> usize) {
        let mut waiting = self.waiting.borrow_mut();
        let at = pick(waiting.len());
        let chosen = waiting.remove(at);
        chosen.answered.set(true);
        chosen.waker.borrow().wake_by_ref();
        self.refused_in_this_execution.set(false);
    }
}

fn items(n: u64) -> Vec<u64> {
    (0..n).collect()
}

fn window(k: u64) -> Pace {
    Pace::Window(NonZeroUsize::new(k as usize).unwrap())
}

/// Drives the fan-out to completion, answering one call at a time with `pick`.
fn drive(
    platform: &FakePlatform,
    pace: Pace,
    items: &[u64],
    pick: impl Fn(usize) -> usize,
) -> FanOut<u64, Failed> {
    let mut run = Box::pin(fan_out(pace, items, |&item| platform.call(item)));
    let waker = futures::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(done) = run.as_mut().poll(&mut cx) {
            return done;
        }
        platform.answer(&pick);
    }
}

fn first(_: usize) -> usize {
    0
}

#[test]
fn one_at_a_time_keeps_one_call_in_flight_and_all_succeed() {
    let platform = FakePlatform::with_capacity(3);
    let done = drive(&platform, Pace::ONE_AT_A_TIME, &items(10), first);
    assert_eq!((done.succeeded().count(), done.peak_in_flight()), (10, 1));
    assert_eq!(done.outcomes()[7], Some(Ok(7)), "each item's own outcome, in order");
}

#[test]
fn all_at_once_loses_the_calls_beyond_capacity() {
    let platform = FakePlatform::with_capacity(3);
    let done = drive(&platform, Pace::AllAtOnce, &items(10), first);
    assert_eq!((done.succeeded().count(), done.peak_in_flight()), (3, 3));
    let refused: Vec<usize> = (0..10).filter(|&i| done.outcomes()[i] == Some(Err(Failed::NoSlot))).collect();
    assert_eq!(refused, (3..10).collect::<Vec<_>>(), "which calls were refused is known");
    assert_eq!(platform.in_flight.get(), 0);
}

#[test]
fn a_window_never_exceeds_k_and_loses_nothing() {
    let platform = FakePlatform::with_capacity(3);
    let done = drive(&platform, window(3), &items(20), first);
    assert_eq!((done.succeeded().count(), done.peak_in_flight(), done.requeued()), (20, 3, 0));
}

#[test]
fn a_window_refills_as_soon_as_any_call_answers() {
    // Answer the newest call first: a chunked strategy would wait for the
    // oldest, this one starts the next call at once.
    let platform = FakePlatform::with_capacity(100);
    let items = items(10);
    let mut run = Box::pin(fan_out(window(4), &items, |&item| platform.call(item)));
    let waker = futures::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    assert!(run.as_mut().poll(&mut cx).is_pending());
    assert_eq!(platform.performed.get(), 4);
    platform.answer(|len| len - 1);
    assert!(run.as_mut().poll(&mut cx).is_pending());
    assert_eq!(platform.performed.get(), 5, "one answer, one new call, while three older ones wait");
    assert_eq!(platform.in_flight.get(), 4);
}

#[test]
fn a_window_above_capacity_shrinks_to_it_and_delivers_everything() {
    let platform = FakePlatform::with_capacity(5);
    let done = drive(&platform, window(6), &items(40), first);
    assert_eq!((done.succeeded().count(), done.peak_in_flight()), (40, 5));
    assert_eq!((platform.refused.get(), done.requeued()), (1, 1), "the window learned the capacity once");
}

#[test]
fn a_window_shares_slots_held_by_others_without_refusing_in_a_loop() {
    // 3 of 5 slots are held elsewhere: the window of 4 runs at 2.
    let platform = FakePlatform::with_capacity(5);
    platform.in_flight.set(3);
    let done = drive(&platform, window(4), &items(30), first);
    assert_eq!((done.succeeded().count(), done.peak_in_flight()), (30, 2));
    assert_eq!(platform.refused.get(), 1);
}

#[test]
fn with_nothing_in_flight_and_no_slot_a_window_stops_and_starts_nothing_more() {
    for k in [1, 3] {
        let platform = FakePlatform::with_capacity(2);
        platform.in_flight.set(2);
        let items = items(10);
        let done = block_on(fan_out(window(k), &items, |&item| platform.call(item)));
        assert_eq!(platform.refused.get(), 1, "k = {k}: one refusal, no burning through the rest");
        assert_eq!(done.outcomes()[0], Some(Err(Failed::NoSlot)));
        assert!(done.outcomes()[1..].iter().all(Option::is_none), "the rest were never attempted");
    }
}

#[test]
fn no_items_make_no_call() {
    let platform = FakePlatform::with_capacity(1);
    for pace in [Pace::AllAtOnce, Pace::ONE_AT_A_TIME, window(5)] {
        let done = block_on(fan_out(pace, &[], |&item| platform.call(item)));
        assert!(done.outcomes().is_empty());
    }
    assert_eq!(platform.performed.get(), 0);
}

proptest! {
    /// Any number of items, any window, any capacity, slots held elsewhere,
    /// and answers in any order: every item has exactly its own outcome or
    /// none; never more than k in flight; no call started in an execution
    /// that saw a refusal; and a window at or under the free slots refuses
    /// nothing.
    #[test]
    fn every_item_is_accounted_for_once_within_the_window(
        n in 0u64..60,
        k in 1u64..12,
        capacity in 1usize..10,
        held in 0usize..10,
        picks in proptest::collection::vec(any::<prop::sample::Index>(), 200),
    ) {
        let held = held.min(capacity);
        let platform = FakePlatform::with_capacity(capacity);
        platform.in_flight.set(held);
        let answers = Cell::new(0);
        let done = drive(&platform, window(k), &items(n), |len| {
            answers.set(answers.get() + 1);
            picks[answers.get() % picks.len()].index(len)
        });
        prop_assert_eq!(done.outcomes().len() as u64, n);
        for (item, outcome) in done.outcomes().iter().enumerate() {
            if let Some(Ok(answered)) = outcome {
                prop_assert_eq!(*answered, item as u64, "an item has its own call's outcome");
            }
        }
        let (succeeded, failed, not_attempted) =
            (done.succeeded().count(), done.failed().count(), done.not_attempted().count());
        prop_assert_eq!((succeeded + failed + not_attempted) as u64, n, "each item counted once");
        prop_assert_eq!(done.not_succeeded().count(), failed + not_attempted);
        prop_assert!(done.peak_in_flight() <= k);
        prop_assert_eq!(platform.started_after_refusal.get(), 0);
        let free = (capacity - held) as u64;
        if k <= free {
            prop_assert_eq!(platform.refused.get(), 0);
            prop_assert_eq!(done.succeeded().count() as u64, n);
        }
        if free > 0 {
            prop_assert_eq!(done.succeeded().count() as u64, n, "with a free slot, everything is delivered");
        }
    }
}
