//! `window_canister`'s endpoint with `futures::future::join_all` instead of
//! a window (every call at once): the baseline its wasm size is compared
//! with. See `window_canister` for the command.

use candid::Principal;
use futures::future::join_all;
use ic_cdk::call::Call;
use std::future::IntoFuture;

/// Notifies every canister in `targets`; how many answered.
#[ic_cdk::update]
async fn notify_all(targets: Vec<Principal>) -> u64 {
    let answers =
        join_all(targets.iter().map(|&target| Call::bounded_wait(target, "notify").into_future())).await;
    answers.iter().filter(|answer| answer.is_ok()).count() as u64
}
