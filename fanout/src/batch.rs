//! Checked batches: items sent `k` to a call of a batch method, whose
//! answer must hold exactly one result per item, or the whole batch fails.
//!
//! A batch method (ICRC-4's `transfer_batch`, a "notify many" endpoint)
//! answers with one result per request, in order. An answer with fewer or
//! more results cannot be matched to the items, so none of them can be
//! trusted: the batch fails as [`BatchFailed::WrongLength`].

use std::future::Future;
use std::num::NonZeroUsize;

use crate::pace::{FanOut, Pace, Refusal, fan_out};

/// Why a batch failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchFailed<E> {
    /// The call failed.
    Call(E),
    /// The answer does not hold one result per item.
    WrongLength {
        /// Items in the batch.
        sent: usize,
        /// Results in the answer.
        answered: usize,
    },
}

impl<E: std::fmt::Debug> std::fmt::Display for BatchFailed<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BatchFailed::Call(error) => write!(f, "the batch's call failed: {error:?}"),
            BatchFailed::WrongLength { sent, answered } => {
                write!(f, "the answer holds {answered} results for a batch of {sent} items")
            }
        }
    }
}

impl<E: Refusal> Refusal for BatchFailed<E> {
    fn is_refusal(&self) -> bool {
        matches!(self, BatchFailed::Call(error) if error.is_refusal())
    }
}

/// `results` if it holds one per item of a batch of `sent`.
pub fn checked<R, E>(sent: usize, results: Vec<R>) -> Result<Vec<R>, BatchFailed<E>> {
    if results.len() == sent {
        Ok(results)
    } else {
        Err(BatchFailed::WrongLength { sent, answered: results.len() })
    }
}

/// Sends `items` in batches of `k` (the last may be smaller) at `pace`;
/// `call(batch)` makes one call for a batch and yields its results. The
/// outcomes are per batch, in order: batch `i` holds items `i * k` to
/// `i * k + k - 1`, and its results are checked with [`checked`].
///
/// ```
/// use ic_fanout::batch::{BatchFailed, fan_out_batches};
/// use ic_fanout::{Pace, Refusal};
/// use std::num::NonZeroUsize;
///
/// #[derive(Debug, PartialEq)]
/// struct Rejected;
/// impl Refusal for Rejected {
///     fn is_refusal(&self) -> bool {
///         false
///     }
/// }
///
/// let users = [1, 2, 3, 4, 5];
/// let k = NonZeroUsize::new(2).unwrap();
/// let done = futures::executor::block_on(fan_out_batches(Pace::AllAtOnce, &users, k, |batch: &[u32]| {
///     // A callee that drops the last result of a full batch.
///     let answer: Vec<bool> = batch.iter().map(|_| true).take(if batch.len() == 2 { 1 } else { 2 }).collect();
///     async move { Ok::<_, Rejected>(answer) }
/// }));
/// assert_eq!(done.outcomes()[0], Some(Err(BatchFailed::WrongLength { sent: 2, answered: 1 })));
/// assert_eq!(done.outcomes()[2], Some(Ok(vec![true])));
/// ```
pub async fn fan_out_batches<T, F, Fut, R, E>(
    pace: Pace,
    items: &[T],
    k: NonZeroUsize,
    mut call: F,
) -> FanOut<Vec<R>, BatchFailed<E>>
where
    F: FnMut(&[T]) -> Fut,
    Fut: Future<Output = Result<Vec<R>, E>>,
    E: Refusal,
{
    let batches: Vec<&[T]> = items.chunks(k.get()).collect();
    fan_out(pace, &batches, |batch| {
        let (sent, answer) = (batch.len(), call(batch));
        async move { checked(sent, answer.await.map_err(BatchFailed::Call)?) }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrong_length_says_how_many_results_for_how_many_items() {
        let failed: BatchFailed<()> = BatchFailed::WrongLength { sent: 3, answered: 2 };
        assert_eq!(failed.to_string(), "the answer holds 2 results for a batch of 3 items");
    }
}
