//! Canisters through PocketIC's API: stable memory, snapshots, heartbeats
//! and composite queries.

use candid::{Decode, Encode, Principal};
use pocket_ic::common::rest::BlobCompression;
use pocket_ic::{PocketIc, PocketIcBuilder};

use crate::user;

/// A canister whose query `first_bytes` replies with the first four bytes
/// of its stable memory.
const STABLE_READER: &str = r#"(module
  (import "ic0" "stable64_read" (func $read (param i64 i64 i64)))
  (import "ic0" "msg_reply_data_append" (func $append (param i32 i32)))
  (import "ic0" "msg_reply" (func $reply))
  (memory 1)
  (func (export "canister_query first_bytes")
    (call $read (i64.const 0) (i64.const 0) (i64.const 4))
    (call $append (i32.const 0) (i32.const 4))
    (call $reply)))"#;

/// Stable memory written through PocketIC's API, grown to whole pages, is
/// what the API reads back and what the canister reads.
pub fn stable_memory_set_through_the_api_is_what_the_canister_reads() {
    let pic = PocketIc::new();
    let canister = pic.create_canister();
    pic.install_canister(canister, wat::parse_str(STABLE_READER).unwrap(), vec![], None);
    assert!(pic.get_stable_memory(canister).is_empty(), "no pages yet");
    pic.set_stable_memory(canister, b"IC!\x01".to_vec(), BlobCompression::NoCompression);
    let memory = pic.get_stable_memory(canister);
    assert_eq!(memory.len(), 64 * 1024, "one whole page");
    assert_eq!(&memory[..4], b"IC!\x01");
    let read = pic.query_call(canister, Principal::anonymous(), "first_bytes", vec![]).expect("a reply");
    assert_eq!(read, b"IC!\x01");
}

/// A snapshot taken, the canister changed, the snapshot loaded: the change
/// is gone. Only a controller may take one; a deleted one cannot be loaded.
pub fn a_loaded_snapshot_undoes_what_came_after_it() {
    let wasms = canister_wasm::caller_and_callee().expect("canister wasm");
    let pic = PocketIc::new();
    let callee = pic.create_canister_with_settings(Some(user()), None);
    pic.install_canister(callee, wasms.callee, Encode!().unwrap(), Some(user()));
    let ping = |times| {
        for _ in 0..times {
            pic.update_call(callee, user(), "ping", Encode!().unwrap()).expect("a ping");
        }
    };
    let pings = || {
        let reply = pic.query_call(callee, user(), "pings_received", Encode!().unwrap()).expect("a query");
        Decode!(&reply, u64).unwrap()
    };
    ping(2);
    let stranger = pic.take_canister_snapshot(callee, Some(Principal::anonymous()), None).unwrap_err();
    assert!(stranger.reject_message.contains("Only controllers"), "{}", stranger.reject_message);

    let snapshot = pic.take_canister_snapshot(callee, Some(user()), None).expect("a snapshot");
    assert_eq!(&snapshot.id[8..], callee.as_slice(), "its id ends with the canister's");
    assert!(snapshot.total_size > 0);
    ping(3);
    assert_eq!(pings(), 5);
    pic.load_canister_snapshot(callee, Some(user()), snapshot.id.clone()).expect("it loads");
    assert_eq!(pings(), 2, "the three pings after the snapshot are gone");
    ping(1);
    assert_eq!(pings(), 3, "the loaded canister runs on");

    let listed = pic.list_canister_snapshots(callee, Some(user())).expect("a list");
    assert_eq!(listed, std::slice::from_ref(&snapshot));
    pic.delete_canister_snapshot(callee, Some(user()), snapshot.id.clone()).expect("deleted");
    assert!(pic.list_canister_snapshots(callee, Some(user())).unwrap().is_empty());
    let gone = pic.load_canister_snapshot(callee, Some(user()), snapshot.id).unwrap_err();
    assert!(gone.reject_message.contains("Could not find the snapshot"), "{}", gone.reject_message);
}

/// Counts its heartbeats; `beats` answers the count.
const HEARTBEAT_COUNTER: &str = include_str!("../../../sim/tests/fixtures/heartbeat_counter.wat");

/// Each `tick` is a round, and a round runs the heartbeat once.
pub fn a_heartbeat_runs_once_a_round() {
    let pic = PocketIc::new();
    let canister = pic.create_canister();
    pic.install_canister(canister, wat::parse_str(HEARTBEAT_COUNTER).unwrap(), vec![], None);
    let beats = || {
        let reply = pic.query_call(canister, Principal::anonymous(), "beats", vec![]).expect("a reply");
        u32::from_le_bytes(reply.try_into().unwrap())
    };
    let before = beats();
    for _ in 0..3 {
        pic.tick();
    }
    assert_eq!(beats(), before + 3);
}

/// `sum(hops)`, `inc` and `get`: see the fixture.
const COMPOSITE_SUM: &str = include_str!("../../../sim/tests/fixtures/composite_sum.wat");

/// Through the client's `query_call`: a composite query sums counters on
/// its subnet, a canister on another subnet is not found, and an update
/// call to a composite query is refused, each as the replica answers.
pub fn a_composite_query_calls_queries_on_its_own_subnet_only() {
    let pic = PocketIcBuilder::new().with_application_subnet().with_application_subnet().build();
    let subnets = pic.topology().get_app_subnets();
    let counter = |subnet, count| {
        let canister = pic.create_canister_on_subnet(None, None, subnet);
        pic.add_cycles(canister, 10_000_000_000_000);
        pic.install_canister(canister, wat::parse_str(COMPOSITE_SUM).unwrap(), vec![], None);
        for _ in 0..count {
            pic.update_call(canister, user(), "inc", vec![]).expect("counted");
        }
        canister
    };
    let (a, b, elsewhere) = (counter(subnets[0], 1), counter(subnets[0], 2), counter(subnets[1], 3));
    let sum = |hop: Principal| pic.query_call(a, user(), "sum", hop.as_slice().to_vec());
    let reply = sum(b).expect("a sum");
    assert_eq!(u64::from_le_bytes(reply.try_into().unwrap()), (1 + 1) + (2 + 1));
    let refused = sum(elsewhere).unwrap_err();
    assert_eq!(refused.reject_message, format!("3: Canister {elsewhere} not found"));
    let refused = pic.update_call(a, user(), "sum", vec![]).unwrap_err();
    assert_eq!(refused.error_code, pocket_ic::ErrorCode::CompositeQueryCalledInReplicatedMode);
}
