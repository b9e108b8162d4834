//! Cycle prices of a 13-node application subnet.
//!
//! As the replica's `CyclesAccountManager` computes them
//! (`rs/cycles_account_manager`, `rs/config/src/subnet_config.rs`).

/// Base fee of an inter-canister call.
pub const XNET_CALL_FEE: u128 = 260_000;
/// Fee per byte of request or response sent.
pub const XNET_BYTE_TRANSMISSION_FEE: u128 = 1_000;
/// Fee per executed message.
pub const UPDATE_MESSAGE_EXECUTION_FEE: u128 = 5_000_000;
/// Fee per 10 executed instructions.
pub const TEN_UPDATE_INSTRUCTIONS_EXECUTION_FEE: u128 = 10;
/// The largest response a call may get back; the caller prepays for it.
pub const MAX_RESPONSE_BYTES: u128 = 2 * 1024 * 1024;
/// Instruction limit of one message execution (with deterministic time slicing).
pub const MAX_INSTRUCTIONS_PER_MESSAGE: u64 = 40_000_000_000;

/// The nodes of an application subnet, which the fees above are for
/// (`DEFAULT_REFERENCE_SUBNET_SIZE`; every subnet of the simulator is one).
pub const SUBNET_SIZE: u128 = 13;
/// Creating a canister (`canister_creation_fee`).
pub const CANISTER_CREATION_FEE: u128 = 500_000_000_000;

/// A threshold signature or vetKD key on a 13-node subnet: the replica's
/// `ECDSA_SIGNATURE_FEE`, `SCHNORR_SIGNATURE_FEE` and `VETKD_FEE`.
pub const THRESHOLD_SIGNATURE_FEE: u128 = 10_000_000_000;
/// An HTTPS outcall (`http_request_*_fee`, `cost_http_request`): a base,
/// a per-node base, and per byte of request and of the largest response,
/// times the subnet's nodes.
pub const fn http_request_fee(request_bytes: u128, max_response_bytes: u128) -> u128 {
    (3_000_000 + 60_000 * SUBNET_SIZE + 400 * request_bytes + 800 * max_response_bytes) * SUBNET_SIZE
}

/// The fields `ic0.cost_http_request_v2` reads (`HttpRequestV2CostParams`).
#[derive(Clone, Copy, Debug, Default, candid::CandidType, serde::Deserialize)]
pub struct HttpRequestV2CostParams {
    pub request_bytes: u64,
    pub http_roundtrip_time_ms: u64,
    pub raw_response_bytes: u64,
    pub transformed_response_bytes: u64,
    pub transform_instructions: u64,
}

/// An HTTPS outcall as the replica's `http_request_fee_v2` prices a fully
/// replicated one on an `n`-node subnet.
pub fn http_request_fee_v2(p: HttpRequestV2CostParams) -> u128 {
    let n = SUBNET_SIZE;
    let per_node = 1_000_000
        + 50 * u128::from(p.request_bytes)
        + 140_000 * n
        + 800 * n * n
        + 50 * u128::from(p.raw_response_bytes)
        + 300 * u128::from(p.http_roundtrip_time_ms)
        + u128::from(p.transform_instructions) / 13
        + (10 * n + 650) * u128::from(p.transformed_response_bytes);
    n * per_node
}

/// Cycles for executing `instructions`.
pub const fn execution_cost(instructions: u64) -> u128 {
    UPDATE_MESSAGE_EXECUTION_FEE + instructions as u128 * TEN_UPDATE_INSTRUCTIONS_EXECUTION_FEE / 10
}

/// Sending a request of `method_len + arg_len` bytes.
fn request_cost(method_len: u64, arg_len: u64) -> u128 {
    // In u128: a canister may pass any two sizes to `ic0.cost_call`.
    XNET_CALL_FEE + XNET_BYTE_TRANSMISSION_FEE * (u128::from(method_len) + u128::from(arg_len))
}

/// `ic0.cost_call`: what `call_perform` withdraws up front. It covers the
/// request, the largest possible response and the longest possible callback.
pub fn call_prepayment(method_len: u64, arg_len: u64) -> u128 {
    request_cost(method_len, arg_len)
        + XNET_BYTE_TRANSMISSION_FEE * MAX_RESPONSE_BYTES
        + execution_cost(MAX_INSTRUCTIONS_PER_MESSAGE)
}

/// What a call really cost, once its response was sent and its callback ran;
/// the rest of the prepayment is refunded.
pub fn call_actual_cost(
    method_len: u64,
    arg_len: u64,
    response_bytes: u64,
    callback_instructions: u64,
) -> u128 {
    request_cost(method_len, arg_len)
        + XNET_BYTE_TRANSMISSION_FEE * u128::from(response_bytes)
        + execution_cost(callback_instructions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ping_prepays_about_42_billion_cycles() {
        let cost = call_prepayment("ping".len() as u64, 6);
        assert_eq!(cost, 260_000 + 10_000 + 2_097_152_000 + 5_000_000 + 40_000_000_000);
    }

    #[test]
    fn the_actual_cost_never_exceeds_the_prepayment() {
        let (m, a) = (4, 6);
        assert!(
            call_actual_cost(m, a, MAX_RESPONSE_BYTES as u64, MAX_INSTRUCTIONS_PER_MESSAGE)
                <= call_prepayment(m, a)
        );
    }
}
