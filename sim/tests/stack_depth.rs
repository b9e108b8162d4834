//! The simulator's stack against the replica's: for each shape of frame in
//! `common/stack_shapes.rs`, a recursion as deep as the deepest that
//! completes on the replica runs, and one three times as deep traps with
//! the replica's stack overflow and is rolled back. (The simulator's bound
//! is up to twice the replica's, for the smallest frames.)

#[path = "common/stack_shapes.rs"]
mod stack_shapes;

use candid::Principal;
use sim::{RejectCode, Sim};
use stack_shapes::{Metering, SHAPES, canister};

/// The deepest recursion of each of [`SHAPES`] that completes on the
/// replica's engine (wasmtime 45 as the replica configures it, 5 MiB of wasm
/// stack, x86-64), compiling the module as the replica instruments it.
/// Measured by
/// `cargo run -p sim --release --features replica-stack --example stack_depth`
/// (its "replica (instrumented)" column).
const REPLICA_DEPTHS: [u32; 4] = [163_835, 54_611, 9_636, 18_203];

fn u64_of(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes[..8].try_into().unwrap())
}

#[test]
fn each_shape_runs_as_deep_as_on_the_replica_and_three_times_as_deep_overflows_rolled_back() {
    let controller = Principal::anonymous();
    for (shape, depth) in SHAPES.iter().zip(REPLICA_DEPTHS) {
        let mut sim = Sim::builder().with_subnet().build();
        let id = sim.create_canister(0, vec![controller]).unwrap();
        let wasm = wat::parse_str(canister(shape, Metering::None)).unwrap();
        sim.install_canister(id, &wasm, vec![], controller).unwrap();
        let mut recurse =
            |depth: u32| sim.update_call(id, controller, "recurse", depth.to_le_bytes().to_vec());

        recurse(depth).unwrap_or_else(|reject| panic!("{}, {depth} deep: {reject}", shape.name));
        let reject = recurse(3 * depth).unwrap_err();
        assert_eq!(reject.code, RejectCode::CanisterError, "{}", shape.name);
        assert!(reject.message.ends_with("Canister trapped: stack overflow"), "{}: {reject}", shape.name);
        recurse(depth).unwrap_or_else(|reject| panic!("{}, {depth} deep again: {reject}", shape.name));

        let calls = sim.query_call(id, controller, "calls", vec![]).unwrap();
        assert_eq!(u64_of(&calls), 2, "{}: the overflowing call is rolled back", shape.name);
    }
}
