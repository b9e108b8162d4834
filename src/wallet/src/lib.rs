//! A test canister, as wallets and oracles are written with ic-cdk: its
//! chain keys' public keys and signatures (ECDSA, BIP340 with an optional
//! Taproot tweak, Ed25519), a vetKD key encrypted to a transport key, and an
//! HTTPS outcall with a transform. Each call's cycles come from the
//! `ic0.cost_*` functions, as ic-cdk attaches them.

use ic_cdk::{query, update};
use ic_cdk_management_canister as ic00;
use ic_cdk_management_canister::{
    Bip341, EcdsaCurve, EcdsaKeyId, EcdsaPublicKeyArgs, HttpHeader, HttpMethod, HttpRequestArgs,
    HttpRequestResult, SchnorrAlgorithm, SchnorrAux, SchnorrKeyId, SchnorrPublicKeyArgs, SignWithEcdsaArgs,
    SignWithSchnorrArgs, TransformArgs, VetKDCurve, VetKDDeriveKeyArgs, VetKDKeyId, VetKDPublicKeyArgs,
};

/// Every key of this canister is derived with this path.
fn path() -> Vec<Vec<u8>> {
    vec![b"wallet".to_vec()]
}

/// The ECDSA public key (SEC1, compressed) and a signature of `message_hash`.
#[update]
async fn ecdsa(key: String, message_hash: Vec<u8>) -> Result<(Vec<u8>, Vec<u8>), String> {
    let key_id = EcdsaKeyId { curve: EcdsaCurve::Secp256k1, name: key };
    let args = EcdsaPublicKeyArgs { canister_id: None, derivation_path: path(), key_id: key_id.clone() };
    let public_key = ic00::ecdsa_public_key(&args).await.map_err(|e| e.to_string())?.public_key;
    let args = SignWithEcdsaArgs { message_hash, derivation_path: path(), key_id };
    let signature = ic00::sign_with_ecdsa(&args).await.map_err(|e| e.to_string())?.signature;
    Ok((public_key, signature))
}

/// The Schnorr public key and a signature of `message`, Taproot-tweaked
/// with `merkle_root` if there is one.
#[update]
async fn schnorr(
    algorithm: SchnorrAlgorithm,
    key: String,
    message: Vec<u8>,
    merkle_root: Option<Vec<u8>>,
) -> Result<(Vec<u8>, Vec<u8>), String> {
    let key_id = SchnorrKeyId { algorithm, name: key };
    let args = SchnorrPublicKeyArgs { canister_id: None, derivation_path: path(), key_id: key_id.clone() };
    let public_key = ic00::schnorr_public_key(&args).await.map_err(|e| e.to_string())?.public_key;
    let aux = merkle_root.map(|merkle_root_hash| SchnorrAux::Bip341(Bip341 { merkle_root_hash }));
    let args = SignWithSchnorrArgs { message, derivation_path: path(), key_id, aux };
    let signature = ic00::sign_with_schnorr(&args).await.map_err(|e| e.to_string())?.signature;
    Ok((public_key, signature))
}

/// The vetKD public key for `context` and the key for `input`, encrypted
/// to `transport_public_key`.
#[update]
async fn vetkd(
    key: String,
    context: Vec<u8>,
    input: Vec<u8>,
    transport_public_key: Vec<u8>,
) -> Result<(Vec<u8>, Vec<u8>), String> {
    let key_id = VetKDKeyId { curve: VetKDCurve::Bls12_381_G2, name: key };
    let args = VetKDPublicKeyArgs { canister_id: None, context: context.clone(), key_id: key_id.clone() };
    let public_key = ic00::vetkd_public_key(&args).await.map_err(|e| e.to_string())?.public_key;
    let args = VetKDDeriveKeyArgs { input, context, transport_public_key, key_id };
    let encrypted_key = ic00::vetkd_derive_key(&args).await.map_err(|e| e.to_string())?.encrypted_key;
    Ok((public_key, encrypted_key))
}

/// `url`'s response, as [`transform`] leaves it.
#[update]
async fn fetch(url: String) -> Result<HttpRequestResult, String> {
    let args = HttpRequestArgs {
        url,
        max_response_bytes: Some(10_000),
        method: HttpMethod::GET,
        headers: vec![],
        body: None,
        transform: Some(ic00::transform_context_from_query("transform".into(), b"wallet".to_vec())),
        is_replicated: None,
    };
    ic00::http_request(&args).await.map_err(|e| e.to_string())
}

/// Keeps the status and body; the headers become one that names the context.
#[query]
fn transform(args: TransformArgs) -> HttpRequestResult {
    let context = String::from_utf8_lossy(&args.context).into_owned();
    HttpRequestResult {
        status: args.response.status,
        headers: vec![HttpHeader { name: "x-transformed".into(), value: context }],
        body: args.response.body,
    }
}

ic_cdk::export_candid!();

#[cfg(test)]
mod tests {
    use candid_parser::utils::{CandidSource, service_equal};

    #[test]
    fn the_did_file_is_the_interface() {
        let kept = include_str!("../wallet.did");
        service_equal(CandidSource::Text(kept), CandidSource::Text(&super::__export_service()))
            .unwrap_or_else(|e| panic!("wallet.did is stale: {e}\n{}", super::__export_service()));
    }
}
