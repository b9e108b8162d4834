//! Chain keys: threshold signatures (`ecdsa_public_key`, `sign_with_ecdsa`,
//! `schnorr_public_key` and `sign_with_schnorr`: BIP340 with an optional
//! BIP341 Taproot tweak, and Ed25519) and vetKD ([`super::vetkd`]).
//!
//! The keys are PocketIC's test master keys, derived from a fixed seed
//! (`[42; 32]`, then the key's name as one derivation step), whose public
//! halves DFINITY's `ic-secp256k1` and `ic-ed25519` publish: a canister
//! gets the same public key as on PocketIC for the same id and path, and
//! real signatures that any verifier accepts. Their secrets are public:
//! nothing signed here protects anything.
//!
//! As on PocketIC, the II subnet holds `key_1` and the test-keys subnet
//! `test_key_1` and `dfx_test_key`; which the network holds is its
//! [`ChainKeys`].

use candid::Principal;
use ic_error_types::ErrorCode;
use ic_management_canister_types::{
    EcdsaCurve, EcdsaKeyId, EcdsaPublicKeyArgs, EcdsaPublicKeyResult, SchnorrAlgorithm, SchnorrAux,
    SchnorrKeyId, SchnorrPublicKeyArgs, SchnorrPublicKeyResult, SignWithEcdsaArgs, SignWithEcdsaResult,
    SignWithSchnorrArgs, SignWithSchnorrResult,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;

use super::{CallResult, decode, reply, vetkd};
use crate::Reject;

/// The methods, which only canisters may call.
pub(super) const METHODS: [&str; 6] = [
    "ecdsa_public_key",
    "sign_with_ecdsa",
    "schnorr_public_key",
    "sign_with_schnorr",
    "vetkd_public_key",
    "vetkd_derive_key",
];

/// The methods that charge [`SIGNATURE_FEE`]: a signature or a key, made
/// on the subnet that holds the key.
pub(crate) const PAID: [&str; 3] = ["sign_with_ecdsa", "sign_with_schnorr", "vetkd_derive_key"];

/// The names of the keys a network may hold, as PocketIC offers them.
pub const KEY_NAMES: [&str; 3] = ["key_1", "test_key_1", "dfx_test_key"];

/// What a signature or vetKD key costs the caller, as on a 13-node subnet
/// (the replica's `ECDSA_SIGNATURE_FEE`, `SCHNORR_SIGNATURE_FEE` and
/// `VETKD_FEE`).
pub const SIGNATURE_FEE: u128 = 10_000_000_000;

/// The most derivation path elements a request may carry.
const MAX_DERIVATION_PATH_LENGTH: usize = 255;

/// The seed PocketIC derives its master keys from.
const POCKET_IC_SEED: [u8; 32] = [42; 32];

/// The chain keys a network holds, by name; each name is a key of every
/// algorithm (ECDSA secp256k1, BIP340, Ed25519 and vetKD).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainKeys(BTreeSet<String>);

impl ChainKeys {
    /// The keys named `names`, each one of [`KEY_NAMES`].
    pub fn new<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        let names: BTreeSet<String> = names.into_iter().map(str::to_owned).collect();
        debug_assert!(names.iter().all(|n| KEY_NAMES.contains(&n.as_str())), "{names:?}");
        Self(names)
    }

    /// Every key PocketIC offers, as a local network holds them.
    pub fn all() -> Self {
        Self::new(KEY_NAMES)
    }

    /// Whether it holds the key named `name`.
    pub fn holds(&self, name: &str) -> bool {
        self.0.contains(name)
    }

    /// The names of the keys held.
    pub fn names(&self) -> BTreeSet<String> {
        self.0.clone()
    }

    /// Every key id held, as the replica lists them in a reject.
    fn list(&self) -> String {
        let ids: Vec<String> = self
            .0
            .iter()
            .flat_map(|name| {
                [
                    KeyId::Ecdsa(name.clone()),
                    KeyId::Schnorr(SchnorrAlgorithm::Bip340secp256k1, name.clone()),
                    KeyId::Schnorr(SchnorrAlgorithm::Ed25519, name.clone()),
                    KeyId::VetKd(name.clone()),
                ]
            })
            .map(|id| id.to_string())
            .collect();
        format!("[{}]", ids.join(", "))
    }
}

/// A key as the replica names it in its rejects (`MasterPublicKeyId`).
pub(super) enum KeyId {
    Ecdsa(String),
    EcdsaSecp256r1(String),
    Schnorr(SchnorrAlgorithm, String),
    VetKd(String),
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyId::Ecdsa(name) => write!(f, "ecdsa:Secp256k1:{name}"),
            KeyId::EcdsaSecp256r1(name) => write!(f, "ecdsa:Secp256r1:{name}"),
            KeyId::Schnorr(SchnorrAlgorithm::Bip340secp256k1, name) => {
                write!(f, "schnorr:Bip340Secp256k1:{name}")
            }
            KeyId::Schnorr(SchnorrAlgorithm::Ed25519, name) => write!(f, "schnorr:Ed25519:{name}"),
            KeyId::VetKd(name) => write!(f, "vetkd:Bls12_381_G2:{name}"),
        }
    }
}

impl From<&EcdsaKeyId> for KeyId {
    fn from(key: &EcdsaKeyId) -> Self {
        match key.curve {
            EcdsaCurve::Secp256k1 => KeyId::Ecdsa(key.name.clone()),
            EcdsaCurve::Secp256r1 => KeyId::EcdsaSecp256r1(key.name.clone()),
        }
    }
}

impl From<&SchnorrKeyId> for KeyId {
    fn from(key: &SchnorrKeyId) -> Self {
        KeyId::Schnorr(key.algorithm, key.name.clone())
    }
}

/// A call to one of [`METHODS`] from canister `caller` with `cycles`
/// attached: the answer and the cycles it keeps (a signature's fee).
pub(super) fn call(
    keys: &ChainKeys,
    caller: Principal,
    method: &str,
    arg: &[u8],
    cycles: u128,
) -> (CallResult, u128) {
    let answer = match method {
        "ecdsa_public_key" => decode(arg, method).and_then(|args| ecdsa_public_key(keys, caller, args)),
        "schnorr_public_key" => decode(arg, method).and_then(|args| schnorr_public_key(keys, caller, args)),
        "sign_with_ecdsa" => decode(arg, method).and_then(|args| sign_with_ecdsa(keys, caller, args, cycles)),
        "sign_with_schnorr" => {
            decode(arg, method).and_then(|args| sign_with_schnorr(keys, caller, args, cycles))
        }
        "vetkd_public_key" => decode(arg, method).and_then(|args| vetkd::public_key(keys, caller, args)),
        _ => decode(arg, method).and_then(|args| vetkd::derive_key(keys, caller, args, cycles)),
    };
    let kept = if answer.is_ok() && PAID.contains(&method) { SIGNATURE_FEE } else { 0 };
    (answer, kept)
}

fn ecdsa_public_key(keys: &ChainKeys, caller: Principal, args: EcdsaPublicKeyArgs) -> CallResult {
    let name = held(keys, "ecdsa_public_key", (&args.key_id).into(), false)?;
    let path =
        derivation_path(args.canister_id.unwrap_or(caller), &args.derivation_path, "ecdsa_public_key")?;
    let (key, chain_code) = secp256k1_master(&name).derive_subkey(&path);
    let public_key = key.public_key().serialize_sec1(true);
    reply(EcdsaPublicKeyResult { public_key, chain_code: chain_code.to_vec() })
}

fn schnorr_public_key(keys: &ChainKeys, caller: Principal, args: SchnorrPublicKeyArgs) -> CallResult {
    let name = held(keys, "schnorr_public_key", (&args.key_id).into(), false)?;
    let canister = args.canister_id.unwrap_or(caller);
    let (public_key, chain_code) = match args.key_id.algorithm {
        SchnorrAlgorithm::Bip340secp256k1 => {
            let path = derivation_path(canister, &args.derivation_path, "schnorr_public_key")?;
            let (key, chain_code) = secp256k1_master(&name).derive_subkey(&path);
            (key.public_key().serialize_sec1(true), chain_code)
        }
        SchnorrAlgorithm::Ed25519 => {
            check_path_length(&args.derivation_path, "schnorr_public_key")?;
            let path = ic_ed25519::DerivationPath::from_canister_id_and_path(
                canister.as_slice(),
                &args.derivation_path,
            );
            let (key, chain_code) = ed25519_master(&name).derive_subkey(&path);
            (key.public_key().serialize_raw().to_vec(), chain_code)
        }
    };
    reply(SchnorrPublicKeyResult { public_key, chain_code: chain_code.to_vec() })
}

fn sign_with_ecdsa(keys: &ChainKeys, caller: Principal, args: SignWithEcdsaArgs, cycles: u128) -> CallResult {
    let method = "sign_with_ecdsa";
    let name = held(keys, method, (&args.key_id).into(), true)?;
    if args.message_hash.len() != 32 {
        return Err(Reject::new(ErrorCode::CanisterRejectedMessage, "message_hash must be 32 bytes"));
    }
    pays(method, cycles)?;
    let path = derivation_path(caller, &args.derivation_path, method)?;
    let (key, _) = secp256k1_master(&name).derive_subkey(&path);
    reply(SignWithEcdsaResult { signature: key.sign_digest_with_ecdsa(&args.message_hash).to_vec() })
}

fn sign_with_schnorr(
    keys: &ChainKeys,
    caller: Principal,
    args: SignWithSchnorrArgs,
    cycles: u128,
) -> CallResult {
    let method = "sign_with_schnorr";
    let name = held(keys, method, (&args.key_id).into(), true)?;
    let refused = |message: &str| Err(Reject::new(ErrorCode::CanisterRejectedMessage, message));
    let merkle_root = match (args.key_id.algorithm, args.aux) {
        (SchnorrAlgorithm::Ed25519, Some(_)) => {
            return refused("Schnorr algorithm Ed25519 does not support aux input");
        }
        (_, Some(SchnorrAux::Bip341(bip341))) if ![0, 32].contains(&bip341.merkle_root_hash.len()) => {
            return refused("Invalid aux field for Bip340Secp256k1");
        }
        (_, aux) => aux.map(|SchnorrAux::Bip341(bip341)| bip341.merkle_root_hash),
    };
    pays(method, cycles)?;
    let signature = match args.key_id.algorithm {
        SchnorrAlgorithm::Bip340secp256k1 => {
            let path = derivation_path(caller, &args.derivation_path, method)?;
            let (key, _) = secp256k1_master(&name).derive_subkey(&path);
            match merkle_root {
                None => key.sign_message_with_bip340_no_rng(&args.message),
                Some(root) => {
                    key.sign_message_with_bip341_no_rng(&args.message, &root).expect("0 or 32 bytes")
                }
            }
        }
        SchnorrAlgorithm::Ed25519 => {
            check_path_length(&args.derivation_path, method)?;
            let path = ic_ed25519::DerivationPath::from_canister_id_and_path(
                caller.as_slice(),
                &args.derivation_path,
            );
            ed25519_master(&name).derive_subkey(&path).0.sign_message(&args.message)
        }
    };
    reply(SignWithSchnorrResult { signature: signature.to_vec() })
}

/// The name of the key `id` if the network holds it; otherwise the
/// replica's reject when it cannot route the request to a subnet holding
/// it (for a signature, a subnet where signing is enabled).
pub(super) fn held(keys: &ChainKeys, method: &str, id: KeyId, signing: bool) -> Result<String, Reject> {
    if let KeyId::Ecdsa(name) | KeyId::Schnorr(_, name) | KeyId::VetKd(name) = &id
        && keys.holds(name)
    {
        return Ok(name.clone());
    }
    let list = keys.list();
    let error = if signing {
        format!("Requested unknown or disabled threshold key: {id}, existing enabled keys: {list}")
    } else {
        format!("Requested unknown threshold key: {id}, existing keys: {list}")
    };
    let message = format!("Unable to route management canister request {method}: ChainKeyError({error:?})");
    Err(Reject::new(ErrorCode::CanisterNotFound, message))
}

/// Whether `cycles` pay a signature's fee; the replica's reject if not.
pub(super) fn pays(method: &str, cycles: u128) -> Result<(), Reject> {
    if cycles >= SIGNATURE_FEE {
        return Ok(());
    }
    Err(Reject::new(
        ErrorCode::CanisterRejectedMessage,
        format!("{method} request sent with {cycles} cycles, but {SIGNATURE_FEE} cycles are required."),
    ))
}

fn check_path_length(path: &[Vec<u8>], method: &str) -> Result<(), Reject> {
    if path.len() <= MAX_DERIVATION_PATH_LENGTH {
        return Ok(());
    }
    Err(Reject::new(
        ErrorCode::InvalidManagementPayload,
        format!(
            "Error decoding candid for method {method}: a derivation path has at most {MAX_DERIVATION_PATH_LENGTH} elements, this one {}",
            path.len()
        ),
    ))
}

/// The IC's derivation path for `canister`'s keys: its id, then `path`.
fn derivation_path(
    canister: Principal,
    path: &[Vec<u8>],
    method: &str,
) -> Result<ic_secp256k1::DerivationPath, Reject> {
    check_path_length(path, method)?;
    Ok(ic_secp256k1::DerivationPath::from_canister_id_and_path(canister.as_slice(), path))
}

/// PocketIC's secp256k1 master key `name` (ECDSA and BIP340 share it).
fn secp256k1_master(name: &str) -> ic_secp256k1::PrivateKey {
    let step =
        ic_secp256k1::DerivationPath::new(vec![ic_secp256k1::DerivationIndex(name.as_bytes().to_vec())]);
    ic_secp256k1::PrivateKey::generate_from_seed(&POCKET_IC_SEED).derive_subkey(&step).0
}

/// PocketIC's Ed25519 master key `name`.
fn ed25519_master(name: &str) -> ic_ed25519::DerivedPrivateKey {
    let step = ic_ed25519::DerivationPath::new(vec![ic_ed25519::DerivationIndex(name.as_bytes().to_vec())]);
    ic_ed25519::PrivateKey::generate_from_seed(&POCKET_IC_SEED).derive_subkey(&step).0
}

#[cfg(test)]
mod tests {
    use super::*;
    use ic_ed25519::PocketIcMasterPublicKeyId as Ed25519Key;
    use ic_secp256k1::PocketIcMasterPublicKeyId as Secp256k1Key;

    /// The master keys are the ones DFINITY publishes as PocketIC's.
    #[test]
    fn the_master_keys_are_pocket_ics() {
        let secp256k1 = [
            ("key_1", Secp256k1Key::EcdsaKey1),
            ("test_key_1", Secp256k1Key::EcdsaTestKey1),
            ("dfx_test_key", Secp256k1Key::EcdsaDfxTestKey),
        ];
        for (name, published) in secp256k1 {
            let published = ic_secp256k1::PublicKey::pocketic_key(published);
            assert_eq!(secp256k1_master(name).public_key(), published, "{name}");
        }
        let ed25519 = [
            ("key_1", Ed25519Key::Key1),
            ("test_key_1", Ed25519Key::TestKey1),
            ("dfx_test_key", Ed25519Key::DfxTestKey),
        ];
        for (name, published) in ed25519 {
            let published = ic_ed25519::PublicKey::pocketic_key(published);
            assert_eq!(ed25519_master(name).public_key(), published, "{name}");
        }
    }
}
