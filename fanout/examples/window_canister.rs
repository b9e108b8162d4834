//! A minimal canister that notifies many canisters through a window of
//! 400 calls in flight: what a canister pays in wasm size for `fan_out`.
//! Compare with `join_all_canister`, the same endpoint with `join_all`:
//!
//! ```sh
//! cargo build --release --target wasm32-unknown-unknown --target-dir target/wasm \
//!   -p ic-fanout --example window_canister --example join_all_canister
//! ```

use candid::Principal;
use ic_cdk::call::{Call, CallFailed};
use ic_fanout::{Pace, Refusal, fan_out};
use std::num::NonZeroU64;

struct Failed(CallFailed);

impl Refusal for Failed {
    fn is_refusal(&self) -> bool {
        matches!(self.0, CallFailed::CallPerformFailed(_) | CallFailed::InsufficientLiquidCycleBalance(_))
    }
}

/// Notifies every canister in `targets`; how many answered.
#[ic_cdk::update]
async fn notify_all(targets: Vec<Principal>) -> u64 {
    let window = Pace::Window(NonZeroU64::new(400).expect("400 is not zero"));
    let notify =
        |&target: &Principal| async move { Call::bounded_wait(target, "notify").await.map_err(Failed) };
    let done = fan_out(window, &targets, notify).await;
    done.outcomes.iter().filter(|outcome| matches!(outcome, Some(Ok(_)))).count() as u64
}
