//! A minimal canister that notifies many canisters through a window of
//! 400 calls in flight: what a canister pays in wasm size for `fan_out`.
//! Compare with `join_all_canister`, the same endpoint with `join_all`:
//!
//! ```sh
//! cargo build --release --target wasm32-unknown-unknown --target-dir target/wasm \
//!   -p ic-fanout --example window_canister --example join_all_canister
//! ```

use candid::Principal;
use ic_cdk::call::Call;
use ic_fanout::{Pace, fan_out};
use std::num::NonZeroUsize;

/// Notifies every canister in `targets`; how many answered.
#[ic_cdk::update]
async fn notify_all(targets: Vec<Principal>) -> u64 {
    let window = Pace::Window(NonZeroUsize::new(400).expect("400 is not zero"));
    let notify = |&target: &Principal| Call::bounded_wait(target, "notify").into_future();
    let done = fan_out(window, &targets, notify).await;
    done.succeeded().count() as u64
}
