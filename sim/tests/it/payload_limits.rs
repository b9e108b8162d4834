//! The IC's limits on the payload of a call (its method name and argument
//! together), as the replica applies them: `ic0.call_data_append` traps past
//! 10 MiB wherever the callee is; a performed request over 2 MiB to another
//! subnet is answered with a CANISTER_ERROR reject instead of leaving. Each
//! limit is crossed by one byte and met exactly.

use crate::common::*;
use candid::Principal;
use sim::{Reject, RejectCode, Sim};

const BIG_CALL: &str = include_str!("../fixtures/big_call.wat");
/// The method the fixture calls: "take".
const NAME: usize = 4;
const TWO_MIB: usize = 2 << 20;
const TEN_MIB: usize = 10 << 20;

struct Pair {
    sim: Sim,
    sender: Principal,
    receiver: Principal,
}

/// The sender on subnet 0, the receiver on subnet 0 (same subnet) or 1.
fn pair(same_subnet: bool) -> Pair {
    let mut sim = Sim::builder().with_subnet().with_subnet().build();
    let sender = install(&mut sim, 0, BIG_CALL);
    let receiver = install(&mut sim, if same_subnet { 0 } else { 1 }, BIG_CALL);
    Pair { sim, sender, receiver }
}

/// What the sender's call to `take` came to.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    /// The callee got an argument of this many bytes.
    Delivered(u32),
    /// The sender's reject callback ran with this code and message.
    Rejected(u32, String),
}

impl Pair {
    /// Sends a payload of `size` bytes (method name included), appended in
    /// two pieces; the outcome and the rounds until `send` was answered.
    fn send(&mut self, size: usize) -> Result<(Outcome, u64), Reject> {
        let first = (size - NAME) / 2;
        let mut arg = self.receiver.as_slice().to_vec();
        arg.extend((first as u32).to_le_bytes());
        arg.extend(((size - NAME - first) as u32).to_le_bytes());
        let start = self.sim.ticks();
        let id = self.sim.submit_call(self.sender, controller(), "send", arg).unwrap();
        let reply = loop {
            self.sim.tick();
            if let Some(answer) = self.sim.ingress_status(id) {
                break answer?;
            }
            assert!(self.sim.ticks() - start < 10, "send was not answered");
        };
        assert_eq!(u32_at(&reply, 0), 0, "call_perform succeeded");
        let outcome = match u32_at(&reply, 4) {
            0 => Outcome::Delivered(u32_at(&reply, 8)),
            code => Outcome::Rejected(code, String::from_utf8(reply[8..].to_vec()).unwrap()),
        };
        Ok((outcome, self.sim.ticks() - start))
    }

    fn takes(&self) -> u64 {
        self.sim.stats(self.receiver).unwrap().executions_of("take")
    }
}

#[test]
fn to_another_subnet_2_mib_is_delivered() {
    let mut p = pair(false);
    let (outcome, rounds) = p.send(TWO_MIB).unwrap();
    assert_eq!(outcome, Outcome::Delivered((TWO_MIB - NAME) as u32));
    assert_eq!((rounds, p.takes()), (2, 1));
}

#[test]
fn to_another_subnet_one_byte_over_2_mib_is_rejected_as_the_stream_builder_rejects_it() {
    let mut p = pair(false);
    let (outcome, rounds) = p.send(TWO_MIB + 1).unwrap();
    let message = format!(
        "Canister {} violated contract: attempted to send a message of size 2097153 exceeding the limit 2097152",
        p.sender
    );
    assert_eq!(outcome, Outcome::Rejected(RejectCode::CanisterError as u32, message));
    // The call was performed and answered in the caller's next round; the callee saw nothing.
    assert_eq!((rounds, p.takes()), (2, 0));
    let stats = p.sim.stats(p.sender).unwrap();
    assert_eq!((stats.calls_performed, stats.traps), (1, 0));
    assert_eq!(stats.rejects_received.get(&RejectCode::CanisterError), Some(&1));
}

#[test]
fn to_a_deleted_canister_on_another_subnet_over_2_mib_is_still_rejected_at_the_border() {
    let mut p = pair(false);
    p.sim.stop_canister(p.receiver).unwrap();
    p.sim.delete_canister(p.receiver).unwrap();
    // The sender's subnet routes by id range: the size check comes before
    // anyone could know the callee is gone.
    let (outcome, _) = p.send(TWO_MIB + 1).unwrap();
    assert!(
        matches!(outcome, Outcome::Rejected(code, _) if code == RejectCode::CanisterError as u32),
        "{outcome:?}"
    );
    let (outcome, rounds) = p.send(TWO_MIB).unwrap();
    let Outcome::Rejected(code, message) = outcome else { panic!("{outcome:?}") };
    assert_eq!(code, RejectCode::DestinationInvalid as u32);
    assert!(message.contains("not found"), "{message}");
    assert_eq!(rounds, 2, "a round trip to the subnet that answers for it");
}

#[test]
fn on_the_same_subnet_more_than_2_mib_up_to_10_mib_is_delivered() {
    let mut p = pair(true);
    for size in [TWO_MIB + 1, TEN_MIB] {
        let (outcome, _) = p.send(size).unwrap();
        assert_eq!(outcome, Outcome::Delivered((size - NAME) as u32), "{size} bytes");
    }
    assert_eq!(p.takes(), 2);
}

#[test]
fn one_byte_over_10_mib_traps_in_call_data_append_wherever_the_callee_is() {
    for same_subnet in [true, false] {
        let mut p = pair(same_subnet);
        let reject = p.send(TEN_MIB + 1).unwrap_err();
        assert_eq!(reject.code(), RejectCode::CanisterError);
        let expected = format!(
            "Canister violated contract: Request to {}:take has a payload size of 10485761, which exceeds the allowed limit of 10485760.",
            p.receiver
        );
        assert!(reject.message.contains(&expected), "{reject}");
        // Both pieces were under the limit: their sum is what counts.
        let stats = p.sim.stats(p.sender).unwrap();
        assert_eq!((stats.calls_performed, stats.traps, p.takes()), (0, 1, 0));
    }
}

#[test]
fn to_another_subnet_10_mib_is_built_and_then_rejected_at_the_border() {
    let mut p = pair(false);
    let (outcome, _) = p.send(TEN_MIB).unwrap();
    assert!(
        matches!(&outcome, Outcome::Rejected(5, m) if m.contains("size 10485760 exceeding the limit 2097152"))
    );
    assert_eq!(p.takes(), 0);
}
