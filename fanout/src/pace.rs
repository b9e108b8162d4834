//! The paces, generic over "make this call", so that they run natively in
//! tests and on the IC alike.
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
use std::num::NonZeroUsize;
use std::pin::pin;

/// How many calls [`fan_out`] keeps in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pace {
    /// Every call at once; those that find no slot fail.
    AllAtOnce,
    /// At most this many in flight, a new call started as soon as any
    /// answers; a refused call waits for a slot.
    Window(NonZeroUsize),
}

impl Pace {
    /// A window of one: one call after another.
    pub const ONE_AT_A_TIME: Pace = Pace::Window(NonZeroUsize::MIN);
}

/// Tells a failure that was never performed (no free slot, too few cycles:
/// nothing was sent) from one that was.
pub trait Refusal {
    /// Whether the call was refused before it was performed.
    fn is_refusal(&self) -> bool;
}

/// ic-cdk's own: refused when no slot was free (`CallPerformFailed`) or
/// the cycles to reserve for the call were missing.
impl Refusal for ic_cdk::call::CallFailed {
    fn is_refusal(&self) -> bool {
        matches!(self, Self::CallPerformFailed(_) | Self::InsufficientLiquidCycleBalance(_))
    }
}

/// What [`fan_out`] did: each item's outcome, in the items' order, and
/// how the calls went.
///
/// ```
/// # use ic_fanout::{FanOut, Pace, Refusal, fan_out};
/// # #[derive(Debug, PartialEq)] struct Rejected;
/// # impl Refusal for Rejected { fn is_refusal(&self) -> bool { false } }
/// let call = |&n: &u8| async move { if n == 2 { Err(Rejected) } else { Ok(n * 10) } };
/// let done: FanOut<u8, Rejected> = futures::executor::block_on(fan_out(Pace::AllAtOnce, &[1, 2, 3], call));
/// assert_eq!(done.succeeded().collect::<Vec<_>>(), [(0, &10), (2, &30)]);
/// assert_eq!(done.failed().collect::<Vec<_>>(), [(1, &Rejected)]);
/// assert_eq!((done.not_attempted().count(), done.requeued()), (0, 0));
/// ```
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FanOut<R, E> {
    outcomes: Vec<Option<Result<R, E>>>,
    peak_in_flight: u64,
    requeued: u64,
}

impl<R, E> FanOut<R, E> {
    /// One per item, in the items' order: its call's result, or `None` if
    /// its call was never started (the window stopped after a refusal with
    /// nothing of its own in flight).
    pub fn outcomes(&self) -> &[Option<Result<R, E>>] {
        &self.outcomes
    }

    /// The outcomes, owned (see [`outcomes`](Self::outcomes)).
    pub fn into_outcomes(self) -> Vec<Option<Result<R, E>>> {
        self.outcomes
    }

    /// The items whose call succeeded: each one's index and result.
    pub fn succeeded(&self) -> impl Iterator<Item = (usize, &R)> + '_ {
        self.outcomes.iter().enumerate().filter_map(|(i, o)| match o {
            Some(Ok(r)) => Some((i, r)),
            _ => None,
        })
    }

    /// The items whose call failed: each one's index and error.
    pub fn failed(&self) -> impl Iterator<Item = (usize, &E)> + '_ {
        self.outcomes.iter().enumerate().filter_map(|(i, o)| match o {
            Some(Err(e)) => Some((i, e)),
            _ => None,
        })
    }

    /// The indices of the items whose call was never started, for a retry
    /// later (from a timer, never in a loop).
    pub fn not_attempted(&self) -> impl Iterator<Item = usize> + '_ {
        self.outcomes.iter().enumerate().filter_map(|(i, o)| o.is_none().then_some(i))
    }

    /// The indices of the items whose call did not succeed: failed or never
    /// started, in the items' order.
    pub fn not_succeeded(&self) -> impl Iterator<Item = usize> + '_ {
        self.outcomes.iter().enumerate().filter_map(|(i, o)| (!matches!(o, Some(Ok(_)))).then_some(i))
    }

    /// The most of its calls in flight at once.
    pub fn peak_in_flight(&self) -> u64 {
        self.peak_in_flight
    }

    /// Calls refused and put back in line to wait for a slot: each was
    /// attempted once more than its outcome shows.
    pub fn requeued(&self) -> u64 {
        self.requeued
    }
}

/// Makes one call per item at `pace`; `call(item)` makes one. Every item's
/// outcome is in the result, in the items' order.
///
/// ```
/// # use ic_fanout::{Pace, Refusal, fan_out};
/// # #[derive(Debug, PartialEq)] struct Never;
/// # impl Refusal for Never { fn is_refusal(&self) -> bool { false } }
/// let done = futures::executor::block_on(fan_out(Pace::ONE_AT_A_TIME, &[3, 4], |&n| async move { Ok::<_, Never>(n * 2) }));
/// assert_eq!(done.outcomes(), [Some(Ok(6)), Some(Ok(8))]);
/// assert_eq!(done.peak_in_flight(), 0, "answered at once: never in flight");
/// ```
pub async fn fan_out<T, F, Fut, R, E>(pace: Pace, items: &[T], mut call: F) -> FanOut<R, E>
where
    F: FnMut(&T) -> Fut,
    Fut: Future<Output = Result<R, E>>,
    E: Refusal,
{
    let in_flight = InFlight::default();
    let tracked = |index: usize| {
        let outcome = in_flight.track(call(&items[index]));
        async move { (index, outcome.await) }
    };
    let mut outcomes: Vec<Option<Result<R, E>>> = std::iter::repeat_with(|| None).take(items.len()).collect();
    let requeued = match pace {
        Pace::AllAtOnce => {
            for (index, outcome) in join_all((0..items.len()).map(tracked)).await {
                outcomes[index] = Some(outcome);
            }
            0
        }
        Pace::Window(k) if k.get() == 1 => {
            one_at_a_time(items.len(), tracked, &mut outcomes).await;
            0
        }
        Pace::Window(k) => windowed(k.get(), items.len(), tracked, &in_flight, &mut outcomes).await,
    };
    FanOut { outcomes, peak_in_flight: in_flight.peak.get(), requeued }
}

/// A window of one. Nothing else of the run is in flight when a call is
/// refused, so there is no answer to wait for: the calls not started stay
/// `None` (see [`windowed`]).
async fn one_at_a_time<T, Fut, R, E>(n: usize, mut tracked: T, outcomes: &mut [Option<Result<R, E>>])
where
    T: FnMut(usize) -> Fut,
    Fut: Future<Output = (usize, Result<R, E>)>,
    E: Refusal,
{
    for index in 0..n {
        let (index, outcome) = tracked(index).await;
        let refused = outcome.as_ref().is_err_and(Refusal::is_refusal);
        outcomes[index] = Some(outcome);
        if refused {
            break;
        }
    }
}

/// At most `k` calls in flight, a new one started as soon as any answers;
/// returns how many refused calls were put back in line.
///
/// A call that cannot be performed (no slot, or too few cycles) frees
/// nothing within the execution that made it. So a refusal closes a gate
/// until the next answer: calls already queued behind it find the gate
/// closed and wait without being made, the window shrinks to the calls in
/// flight, and the refused call waits for a slot. With nothing in flight
/// there is no answer to wait for: the refused call fails and the calls not
/// started stay `None`.
async fn windowed<T, Fut, R, E>(
    k: usize,
    n: usize,
    mut tracked: T,
    in_flight: &InFlight,
    outcomes: &mut [Option<Result<R, E>>],
) -> u64
where
    T: FnMut(usize) -> Fut,
    Fut: Future<Output = (usize, Result<R, E>)>,
    E: Refusal,
{
    let mut waiting: VecDeque<usize> = (0..n).collect();
    let gate_open = Cell::new(true);
    let mut gated = |index| {
        let call = tracked(index);
        let gate_open = &gate_open;
        async move { if gate_open.get() { Ok(call.await) } else { Err(index) } }
    };
    let mut pending = FuturesUnordered::new();
    let mut window = k;
    // Where calls turned back since the gate closed go, in their order.
    let mut requeued_here = 0;
    let mut requeued = 0;
    let mut stopped = false;
    loop {
        while gate_open.get() && pending.len() < window {
            let Some(index) = waiting.pop_front() else { break };
            pending.push(gated(index));
        }
        match pending.next().await {
            None => break,
            Some(Err(_)) if stopped => {}
            Some(Err(index)) => {
                waiting.insert(requeued_here, index);
                requeued_here += 1;
            }
            Some(Ok((index, outcome))) if outcome.as_ref().is_err_and(Refusal::is_refusal) => {
                gate_open.set(false);
                if in_flight.now.get() == 0 {
                    stopped = true;
                    outcomes[index] = Some(outcome);
                } else {
                    requeued += 1;
                    window = in_flight.now.get() as usize;
                    waiting.insert(requeued_here, index);
                    requeued_here += 1;
                }
            }
            Some(Ok((index, outcome))) => {
                outcomes[index] = Some(outcome);
                gate_open.set(!stopped);
                requeued_here = 0;
            }
        }
    }
    requeued
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
    use ic_cdk::call::{CallFailed, CallPerformFailed, CallRejected, InsufficientLiquidCycleBalance};

    #[test]
    fn ic_cdk_s_failures_before_the_call_was_performed_are_refusals() {
        let too_few_cycles = InsufficientLiquidCycleBalance { available: 0, required: 1 };
        assert!(CallFailed::CallPerformFailed(CallPerformFailed).is_refusal());
        assert!(CallFailed::InsufficientLiquidCycleBalance(too_few_cycles).is_refusal());
        assert!(!CallFailed::CallRejected(CallRejected::with_rejection(2, "no".into())).is_refusal());
    }
}
