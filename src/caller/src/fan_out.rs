//! The fan-out strategies, generic over "make one ping call" so that they run
//! natively in unit tests and on the IC alike.

use futures::future::join_all;
use std::future::Future;

use crate::guards::CallCount;

/// Makes the calls one after another: at most one call is in flight.
pub async fn sequential<F, Fut, E>(n: CallCount, mut ping: F) -> u64
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), E>>,
{
    let mut succeeded = 0;
    for _ in 0..n.get() {
        if ping().await.is_ok() {
            succeeded += 1;
        }
    }
    succeeded
}

/// Issues every call at once and awaits them together. ic-cdk performs a call
/// when its future is first polled, and `join_all` polls them all before any
/// completes, so all `n` calls are performed in the same message execution.
pub async fn parallel<F, Fut, E>(n: CallCount, mut ping: F) -> u64
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), E>>,
{
    let results = join_all((0..n.get()).map(|_| ping())).await;
    results.iter().filter(|r| r.is_ok()).count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::executor::block_on;
    use std::cell::Cell;
    use std::pin::Pin;
    use std::rc::Rc;
    use std::task::{Context, Poll};

    /// A stand-in for the platform: a fixed number of in-flight slots. A call
    /// takes a slot when first polled (or fails at once when none is free, as
    /// `call_perform` does), stays in flight for one poll, then frees it.
    #[derive(Clone, Default)]
    struct FakePlatform {
        capacity: usize,
        in_flight: Rc<Cell<usize>>,
        peak: Rc<Cell<usize>>,
        performed: Rc<Cell<usize>>,
    }

    struct FakeCall {
        platform: FakePlatform,
        holds_slot: bool,
    }

    impl Future for FakeCall {
        type Output = Result<(), &'static str>;
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            let p = self.platform.clone();
            if self.holds_slot {
                p.in_flight.set(p.in_flight.get() - 1);
                return Poll::Ready(Ok(()));
            }
            if p.in_flight.get() == p.capacity {
                return Poll::Ready(Err("no free slot"));
            }
            p.in_flight.set(p.in_flight.get() + 1);
            p.peak.set(p.peak.get().max(p.in_flight.get()));
            p.performed.set(p.performed.get() + 1);
            self.holds_slot = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }

    impl FakePlatform {
        fn with_capacity(capacity: usize) -> Self {
            Self { capacity, ..Self::default() }
        }
        fn ping(&self) -> FakeCall {
            FakeCall { platform: self.clone(), holds_slot: false }
        }
    }

    fn count(n: u64) -> CallCount {
        CallCount::new(n).unwrap()
    }

    #[test]
    fn sequential_keeps_one_call_in_flight_and_all_succeed() {
        let platform = FakePlatform::with_capacity(3);
        assert_eq!(block_on(sequential(count(10), || platform.ping())), 10);
        assert_eq!(platform.peak.get(), 1);
        assert_eq!(platform.performed.get(), 10);
    }

    #[test]
    fn parallel_issues_all_calls_at_once_and_loses_those_beyond_capacity() {
        let platform = FakePlatform::with_capacity(3);
        assert_eq!(block_on(parallel(count(10), || platform.ping())), 3);
        assert_eq!(platform.peak.get(), 3);
        assert_eq!(platform.in_flight.get(), 0);
    }

    #[test]
    fn parallel_within_capacity_all_succeed() {
        let platform = FakePlatform::with_capacity(100);
        assert_eq!(block_on(parallel(count(100), || platform.ping())), 100);
        assert_eq!(platform.peak.get(), 100);
    }

    #[test]
    fn zero_calls_make_no_call() {
        let platform = FakePlatform::with_capacity(1);
        assert_eq!(block_on(sequential(count(0), || platform.ping())), 0);
        assert_eq!(block_on(parallel(count(0), || platform.ping())), 0);
        assert_eq!(platform.performed.get(), 0);
    }
}
