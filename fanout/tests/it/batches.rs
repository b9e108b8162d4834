//! Checked batches: every item in exactly one batch, in order; a batch
//! fails whole when its answer is not one result per item.

use futures::executor::block_on;
use ic_fanout::batch::{BatchFailed, fan_out_batches};
use ic_fanout::{Pace, Refusal};
use proptest::prelude::*;
use std::cell::RefCell;
use std::num::NonZeroUsize;

#[derive(Clone, Debug, PartialEq, Eq)]
struct Rejected;

impl Refusal for Rejected {
    fn is_refusal(&self) -> bool {
        false
    }
}

fn pace(window: u64) -> Pace {
    NonZeroUsize::new(window as usize).map_or(Pace::AllAtOnce, Pace::Window)
}

proptest! {
    #[test]
    fn each_batch_is_checked_whole(
        n in 0usize..60,
        k in 1usize..9,
        window in 0u64..4,
        // Per batch: how many results too few (or too many) the answer holds.
        skews in proptest::collection::vec(-2i64..=2, 8),
    ) {
        let items: Vec<usize> = (0..n).collect();
        let sent = RefCell::new(vec![]);
        let done = block_on(fan_out_batches(pace(window), &items, NonZeroUsize::new(k).unwrap(), |batch: &[usize]| {
            let index = batch[0] / k;
            sent.borrow_mut().push(batch.to_vec());
            let skew = skews[index % skews.len()];
            let answered = (batch.len() as i64 + skew).max(0) as usize;
            let answer: Vec<usize> = (0..answered).map(|i| batch[0] + i).collect();
            async move { Ok::<_, Rejected>(answer) }
        }));
        // Every item once, in contiguous batches of k (the last smaller).
        let sent = sent.into_inner();
        prop_assert_eq!(sent.concat(), items.clone());
        prop_assert!(sent.iter().all(|b| b.len() == k || Some(b) == sent.last()));
        prop_assert_eq!(done.outcomes().len(), n.div_ceil(k));
        for (index, outcome) in done.outcomes().iter().enumerate() {
            let size = sent[index].len();
            let answered = (size as i64 + skews[index % skews.len()]).max(0) as usize;
            match outcome {
                Some(Ok(results)) => {
                    prop_assert_eq!(answered, size);
                    prop_assert_eq!(results, &sent[index]);
                }
                Some(Err(BatchFailed::WrongLength { sent: s, answered: a })) => {
                    prop_assert_ne!(answered, size);
                    prop_assert_eq!((*s, *a), (size, answered));
                }
                other => prop_assert!(false, "batch {} ended {:?}", index, other),
            }
        }
    }
}

#[test]
fn a_failed_call_fails_its_batch_only() {
    let items = [1, 2, 3, 4];
    let k = NonZeroUsize::new(2).unwrap();
    let done = block_on(fan_out_batches(Pace::AllAtOnce, &items, k, |batch: &[i32]| {
        let answer = if batch[0] == 1 { Err(Rejected) } else { Ok(batch.to_vec()) };
        async move { answer }
    }));
    assert_eq!(done.outcomes(), [Some(Err(BatchFailed::Call(Rejected))), Some(Ok(vec![3, 4]))]);
}
