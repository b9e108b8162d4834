//! Fixtures and helpers shared by the model tests: small WAT canisters
//! written against the bare system API, so that no behaviour depends on
//! ic-cdk or on a method name.

pub mod stack_shapes;

use candid::Principal;
use sim::{MessageId, Sim};

pub const PROBE: &str = include_str!("../../fixtures/probe.wat");
pub const CALLEE: &str = include_str!("../../fixtures/callee.wat");
pub const RELAY: &str = include_str!("../../fixtures/relay.wat");

pub fn controller() -> Principal {
    Principal::self_authenticating(b"model tests")
}

pub struct World {
    pub sim: Sim,
    pub probe: Principal,
    pub callees: Vec<Principal>,
}

/// A probe on subnet 0 and `callees` callees on subnet `callee_subnet`.
pub fn world(subnets: usize, callees: usize, callee_subnet: usize) -> World {
    world_with(Sim::builder(), subnets, callees, callee_subnet)
}

pub fn world_with(
    mut builder: sim::SimBuilder,
    subnets: usize,
    callees: usize,
    callee_subnet: usize,
) -> World {
    for _ in 0..subnets {
        builder = builder.with_subnet();
    }
    let mut sim = builder.build();
    let probe = install(&mut sim, 0, PROBE);
    let callees = (0..callees).map(|_| install(&mut sim, callee_subnet, CALLEE)).collect();
    World { sim, probe, callees }
}

pub fn install(sim: &mut Sim, subnet: usize, wat: &str) -> Principal {
    let id = sim.create_canister(subnet, vec![controller()]).unwrap();
    sim.install_canister(id, &wat::parse_str(wat).unwrap(), vec![], controller()).unwrap();
    id
}

#[derive(Clone, Copy, Debug)]
pub enum Method {
    Ping = 0,
    Trap = 1,
}

/// One `fan_out` record: `n` calls to `callee.method`.
pub fn record(callee: Principal, n: u32, method: Method, reply_traps: bool) -> Vec<u8> {
    let mut bytes = callee.as_slice().to_vec();
    assert_eq!(bytes.len(), 10, "the probe expects 10-byte canister ids");
    bytes.extend(n.to_le_bytes());
    bytes.extend((method as u32).to_le_bytes());
    bytes.extend(u32::from(reply_traps).to_le_bytes());
    bytes
}

pub fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

/// The probe's observable state.
#[derive(Debug, PartialEq, Eq)]
pub struct ProbeState {
    pub heap_marker: u32,
    pub counter: u32,
    pub stable_pages: u64,
    pub stable_head: [u8; 4],
    pub memory_pages: u32,
    pub last_reject_code: u32,
    pub replies: u32,
    pub rejects: u32,
    pub cleanups: u32,
}

pub fn probe_state(sim: &mut Sim, probe: Principal) -> ProbeState {
    let b = sim.query_call(probe, controller(), "state", vec![]).unwrap();
    ProbeState {
        heap_marker: u32_at(&b, 0),
        counter: u32_at(&b, 4),
        stable_pages: u64::from_le_bytes(b[8..16].try_into().unwrap()),
        stable_head: b[16..20].try_into().unwrap(),
        memory_pages: u32_at(&b, 20),
        last_reject_code: u32_at(&b, 24),
        replies: u32_at(&b, 28),
        rejects: u32_at(&b, 32),
        cleanups: u32_at(&b, 36),
    }
}

pub fn run_until_idle(sim: &mut Sim) {
    for _ in 0..10 {
        sim.tick();
    }
}

/// Submits `fan_out` without ticking; returns the message id.
pub fn submit_fan_out(sim: &mut Sim, probe: Principal, records: &[Vec<u8>]) -> MessageId {
    sim.submit_call(probe, controller(), "fan_out", records.concat()).unwrap()
}

/// The simulator saved and encoded as the servers encode it (postcard).
pub fn encoded(sim: &Sim) -> Vec<u8> {
    postcard::to_stdvec(&sim.save().unwrap()).unwrap()
}

/// The simulator that `bytes` (from [`encoded`]) restore.
pub fn restored(bytes: &[u8]) -> Sim {
    Sim::builder().restore(postcard::from_bytes(bytes).unwrap()).unwrap()
}

/// How many of a completed `fan_out`'s call_performs were refused.
pub fn refused(sim: &Sim, id: MessageId) -> u32 {
    u32_at(&sim.ingress_status(id).expect("completed").expect("replied"), 0)
}
