//! Host functions that price what a canister may do, as a 13-node
//! application subnet prices it ([`crate::cycles`]). They work in every
//! context, `canister_start` included, as the replica's do.

use wasmi::Error;

use super::linker::{Registry, Word, def};
use super::memory::{read, write_u128};
use super::trap;
use crate::cycles::{self, HttpRequestV2CostParams};

/// What the `cost_sign_with_*` and `cost_vetkd_derive_key` functions
/// return when they write no cost (0 would say they wrote one).
#[derive(Clone, Copy)]
enum CostReturnCode {
    UnknownCurveOrAlgorithm = 1,
    UnknownKey = 2,
}

pub(super) fn register<I: Word>(r: &mut Registry) {
    def!(r, "cost_call", |c: Ctx<'_>, method_len: i64, payload_len: i64, dst: I| -> Result<(), Error> {
        write_u128(&mut c, dst, cycles::call_prepayment(method_len as u64, payload_len as u64))
    });
    def!(r, "cost_create_canister", |c: Ctx<'_>, dst: I| -> Result<(), Error> {
        write_u128(&mut c, dst, cycles::CANISTER_CREATION_FEE)
    });
    def!(r, "cost_http_request", |c: Ctx<'_>,
                                  request_size: i64,
                                  max_response: i64,
                                  dst: I|
     -> Result<(), Error> {
        let fee = cycles::http_request_fee(u128::from(request_size as u64), u128::from(max_response as u64));
        write_u128(&mut c, dst, fee)
    });
    def!(r, "cost_http_request_v2", |c: Ctx<'_>, src: I, size: I, dst: I| -> Result<(), Error> {
        let bytes = read(&c, src, size)?;
        let mut config = candid::de::DecoderConfig::new();
        config.set_skipping_quota(0);
        let params: HttpRequestV2CostParams = match candid::utils::decode_one_with_config(&bytes, &config) {
            Ok(params) => params,
            Err(e) => {
                return trap(format!(
                    "Canister violated contract: Failed to decode HttpRequestV2CostParams from Candid: {e}"
                ));
            }
        };
        write_u128(&mut c, dst, cycles::http_request_fee_v2(params))
    });
    // How many curves (or algorithms) each knows: ECDSA secp256k1 (0);
    // Schnorr BIP340 (0) and Ed25519 (1); vetKD BLS12-381 G2 (0).
    macro_rules! chain_key_cost {
        ($name:literal, $curves:expr) => {
            def!(r, $name, |c: Ctx<'_>, src: I, size: I, curve: i32, dst: I| -> Result<i32, Error> {
                chain_key_cost(&mut c, src, size, curve, $curves, dst)
            });
        };
    }
    chain_key_cost!("cost_sign_with_ecdsa", 1);
    chain_key_cost!("cost_sign_with_schnorr", 2);
    chain_key_cost!("cost_vetkd_derive_key", 1);
}

/// The cost of a threshold signature or key with the key named at `src`,
/// written to `dst`: [`cycles::THRESHOLD_SIGNATURE_FEE`] if the network
/// holds the key (see [`super::Hosting`]). For a key it does not hold, or
/// a curve the function does not know, a return code, with `dst` left as
/// it was, as the replica leaves it.
fn chain_key_cost<I: Word>(
    c: &mut super::Ctx<'_>,
    src: I,
    size: I,
    curve: i32,
    curves: u32,
    dst: I,
) -> Result<i32, Error> {
    let name = read(c, src, size)?;
    let Ok(name) = std::str::from_utf8(&name) else {
        let lossy = String::from_utf8_lossy(&name);
        return trap(format!("Canister violated contract: Failed to decode key name {lossy}"));
    };
    if curve as u32 >= curves {
        return Ok(CostReturnCode::UnknownCurveOrAlgorithm as i32);
    }
    if !c.data().network.chain_keys.contains(name) {
        return Ok(CostReturnCode::UnknownKey as i32);
    }
    write_u128(c, dst, cycles::THRESHOLD_SIGNATURE_FEE)?;
    Ok(0)
}
