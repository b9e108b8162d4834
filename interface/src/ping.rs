//! The callee's batch: what `ping_batch` takes and how its answer
//! acknowledges each ping.

use candid::{CandidType, Deserialize};

use crate::FailureKind;

/// The callee's `ping_batch` argument: `count` pings, tagged with nonces
/// `first_nonce`, `first_nonce + 1`, ... if given, and the caller's floor
/// (see [`OncePing`]). It answers with one byte per ping.
#[derive(CandidType, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // Documented in the .did: see the crate doc.
pub struct PingBatch {
    pub first_nonce: Option<u64>,
    pub count: u32,
    pub floor: Option<u64>,
}

/// A [`PingBatch`] without nonces, as a caller sends it: the fields it
/// leaves out are `opt`, so the callee reads them as absent, and a caller
/// encoding them spends about 70 more instructions per ping at 100 pings a
/// batch (the sweep in docs/strategies.md).
#[derive(CandidType, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // Documented in the .did: see the crate doc.
pub struct PlainPingBatch {
    pub count: u32,
}

/// The callee's `ping_once_with_floor` argument: a nonce-tagged ping, and
/// the caller's promise never to send a nonce below `floor` again, which
/// lets the callee forget the nonces below it.
#[derive(CandidType, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // Documented in the .did: see the crate doc.
pub struct OncePing {
    pub nonce: u64,
    pub floor: u64,
}

impl PingBatch {
    /// The most pings the callee takes in one batch (a plan's batches are
    /// smaller: [`crate::MAX_BATCH`]).
    pub const MAX_COUNT: u32 = 10_000;
}

/// `ping_batch` result bytes: executed now, or (a nonce seen before)
/// executed earlier. Either way the ping was delivered.
pub const EXECUTED: u8 = 1;
/// See [`EXECUTED`].
pub const EXECUTED_EARLIER: u8 = 2;

/// What one call's answer acknowledged: pings executed by this call, and
/// pings whose nonce the callee had executed before (an earlier attempt of
/// the same job delivered them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Acknowledged {
    /// Executed by this call.
    pub now: u64,
    /// Executed before (their nonce was seen).
    pub earlier: u64,
}

impl Acknowledged {
    /// `pings` pings, all executed by this call.
    pub fn now(pings: u64) -> Self {
        Self { now: pings, earlier: 0 }
    }
}

/// How one call ended: what it acknowledged, or why it failed.
pub type Outcome = Result<Acknowledged, FailureKind>;

/// Reads `ping_batch`'s answer for a batch of `count` pings: exactly one
/// known result byte per ping, or the whole batch is `BadAcknowledgement`
/// (a callee that answers otherwise cannot be trusted for any of them).
pub fn batch_acknowledgement(results: Vec<u8>, count: u64) -> Outcome {
    let sent = usize::try_from(count).map_err(|_| FailureKind::BadAcknowledgement)?;
    let results =
        ic_fanout::batch::checked::<_, ()>(sent, results).map_err(|_| FailureKind::BadAcknowledgement)?;
    let mut acknowledged = Acknowledged::default();
    for result in results {
        match result {
            EXECUTED => acknowledged.now += 1,
            EXECUTED_EARLIER => acknowledged.earlier += 1,
            _ => return Err(FailureKind::BadAcknowledgement),
        }
    }
    Ok(acknowledged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_acknowledgements_must_match_the_batch_ping_by_ping() {
        let ack = |bytes: &[u8], count| batch_acknowledgement(bytes.to_vec(), count);
        assert_eq!(ack(&[EXECUTED, EXECUTED_EARLIER, EXECUTED], 3), Ok(Acknowledged { now: 2, earlier: 1 }));
        for (bytes, count) in
            [(&[][..], 100), (&[EXECUTED; 50][..], 5), (&[EXECUTED, 0][..], 2), (&[9][..], 1)]
        {
            assert_eq!(ack(bytes, count), Err(FailureKind::BadAcknowledgement), "{bytes:?} for {count}");
        }
    }

    #[test]
    fn a_plans_batches_fit_what_the_callee_takes() {
        assert!(crate::MAX_BATCH <= u64::from(PingBatch::MAX_COUNT));
    }
}
