//! A canister's calls to the management canister, through the simulator:
//! a canister in WAT forwards a call to `aaaaa-aa` and replies with what
//! came back, as the canister saw it.

use candid::{Decode, Encode, Nat, Principal};
use ic_error_types::ErrorCode;
use ic_management_canister_types::{
    CanisterIdRecord, CanisterSettings, CanisterStatusResult, CanisterStatusType, CreateCanisterArgs,
    InstallCodeArgs, ProvisionalCreateCanisterWithCyclesArgs, UpdateSettingsArgs,
};
use sim::Sim;

use crate::management::{self, CANISTER_CREATION_FEE, raw_rand_value};
use crate::{CanisterCall, Effective, Engine, Ic, Interface, Keys, Reject};

/// `call`'s argument: the cycles to attach (u64), the method's length
/// (u32) and name, then the candid argument. It replies with 0 and the
/// reply, or the reject code and message; in both cases after the cycles
/// refunded (u128).
const FORWARDER: &str = include_str!("../../sim/tests/fixtures/management_forwarder.wat");

/// What the forwarder saw: the reply, or the reject code and message.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    answer: Result<Vec<u8>, (u8, String)>,
    refunded: u128,
}

fn owner() -> Principal {
    Principal::from_slice(&[0x0e; 29])
}

/// An ingress message from the owner, run to its outcome; the rounds it took.
fn run(ic: &mut Ic<Sim>, canister: Principal, method: &str, arg: Vec<u8>) -> (Result<Vec<u8>, Reject>, u64) {
    let number = ic.submit(Effective::None, CanisterCall::new(canister, owner(), method, arg)).unwrap();
    for rounds in 1..=30 {
        ic.execute_round();
        if let Some(outcome) = ic.outcome(number) {
            return (outcome, rounds);
        }
    }
    panic!("{method} did not finish");
}

fn manage(ic: &mut Ic<Sim>, method: &str, arg: Vec<u8>) -> Vec<u8> {
    run(ic, Principal::management_canister(), method, arg).0.unwrap()
}

/// A new canister of the owner's on subnet `subnet` (an index), with the forwarder installed.
fn forwarder(ic: &mut Ic<Sim>, subnet: usize) -> Principal {
    let create = ProvisionalCreateCanisterWithCyclesArgs::default();
    let effective = Effective::Subnet(ic.engine.subnets()[subnet]);
    let number = ic
        .submit(
            effective,
            CanisterCall::new(
                Principal::management_canister(),
                owner(),
                "provisional_create_canister_with_cycles",
                Encode!(&create).unwrap(),
            ),
        )
        .unwrap();
    ic.execute_round();
    let created = ic.outcome(number).unwrap().unwrap();
    let canister_id = Decode!(&created, CanisterIdRecord).unwrap().canister_id;
    let install = InstallCodeArgs {
        mode: ic_management_canister_types::CanisterInstallMode::Install,
        canister_id,
        wasm_module: wat::parse_str(FORWARDER).unwrap(),
        arg: vec![],
        sender_canister_version: None,
    };
    manage(ic, "install_code", Encode!(&install).unwrap());
    canister_id
}

/// `canister` calls `method` on the management canister with `cycles`
/// attached; what it saw, and the rounds the owner's message took.
fn forward(ic: &mut Ic<Sim>, canister: Principal, method: &str, arg: Vec<u8>, cycles: u64) -> (Seen, u64) {
    let (outcome, rounds) = run(ic, canister, "call", forwarded(method, arg, cycles));
    (seen(outcome.expect("the forwarder replies")), rounds)
}

/// The forwarder's `call` argument for `method` with `arg` and `cycles`.
fn forwarded(method: &str, arg: Vec<u8>, cycles: u64) -> Vec<u8> {
    let mut forwarded = cycles.to_le_bytes().to_vec();
    forwarded.extend((method.len() as u32).to_le_bytes());
    forwarded.extend(method.as_bytes());
    forwarded.extend(arg);
    forwarded
}

/// What the forwarder's reply says it saw.
fn seen(bytes: Vec<u8>) -> Seen {
    let refunded = u128::from_le_bytes(bytes[1..17].try_into().unwrap());
    let answer = match bytes[0] {
        0 => Ok(bytes[17..].to_vec()),
        code => Err((code, String::from_utf8(bytes[17..].to_vec()).unwrap())),
    };
    Seen { answer, refunded }
}

fn raw_rand(ic: &mut Ic<Sim>, canister: Principal) -> [u8; 32] {
    let (seen, _) = forward(ic, canister, "raw_rand", Encode!().unwrap(), 0);
    Decode!(&seen.answer.unwrap(), Vec<u8>).unwrap().try_into().expect("32 bytes")
}

fn cycles(ic: &Ic<Sim>, canister: Principal) -> u128 {
    ic.engine.status(canister).unwrap().cycles
}

fn id_arg(canister_id: Principal) -> Vec<u8> {
    Encode!(&CanisterIdRecord { canister_id }).unwrap()
}

/// A network without system canisters: the management canister answers
/// canisters all the same.
fn network(seed: u64) -> Ic<Sim> {
    Ic::new(Sim::builder().with_subnets(2).with_xnet_latency_rounds(5).build(), Keys::from_seed(seed), false)
}

#[test]
fn raw_rand_gives_32_new_bytes_each_call_the_same_on_a_network_of_the_same_seed() {
    let mut ic = network(7);
    let canister = forwarder(&mut ic, 1);
    let (first, second) = (raw_rand(&mut ic, canister), raw_rand(&mut ic, canister));
    assert_ne!(first, second);
    assert_eq!((first, second), (raw_rand_value(7, 0), raw_rand_value(7, 1)), "as documented");

    // Saved and restored: the sequence goes on.
    let mut restored = Ic::<Sim>::restore(&ic.save().unwrap()().unwrap()).unwrap();
    let third = raw_rand(&mut restored, canister);
    assert_eq!(third, raw_rand_value(7, 2));

    // Replayed: the same bytes; another seed, others.
    let mut again = network(7);
    let canister = forwarder(&mut again, 1);
    assert_eq!([raw_rand(&mut again, canister), raw_rand(&mut again, canister)], [first, second]);
    let mut other = network(8);
    let canister = forwarder(&mut other, 1);
    assert_ne!(raw_rand(&mut other, canister), first);

    // Only canisters may call it, as on the replica.
    let refused =
        run(&mut ic, Principal::management_canister(), "raw_rand", Encode!().unwrap()).0.unwrap_err();
    assert_eq!(refused.error_code, ErrorCode::CanisterRejectedMessage);
    assert_eq!(refused.message, "Only canisters can call ic00 method raw_rand");
}

#[test]
fn a_canister_reads_its_own_status_only_as_its_own_controller() {
    let mut ic = network(1);
    let canister = forwarder(&mut ic, 1);
    // Not its own controller: refused as the replica refuses, with
    // CANISTER_ERROR (IC0512, CanisterInvalidController).
    let (seen, rounds) = forward(&mut ic, canister, "canister_status", id_arg(canister), 0);
    let (code, message) = seen.answer.unwrap_err();
    assert_eq!(code, 5, "CANISTER_ERROR");
    assert!(message.contains("Only controllers of canister"), "{message}");
    assert_eq!(rounds, 2, "on the caller's own subnet, with no latency between subnets");
    let subnet = ic.engine.subnets()[1];
    let (answer, accepted) =
        management::call_from_canister(&mut ic, subnet, canister, "canister_status", &id_arg(canister), 0, 0)
            .expect("answered at once");
    assert_eq!(answer.unwrap_err().error_code, ErrorCode::CanisterInvalidController);
    assert_eq!(accepted, 0);

    // Its own controller: its status.
    let settings = UpdateSettingsArgs {
        canister_id: canister,
        settings: CanisterSettings { controllers: Some(vec![owner(), canister]), ..Default::default() },
        sender_canister_version: None,
    };
    manage(&mut ic, "update_settings", Encode!(&settings).unwrap());
    let (seen, _) = forward(&mut ic, canister, "canister_status", id_arg(canister), 0);
    let status = Decode!(&seen.answer.unwrap(), CanisterStatusResult).unwrap();
    assert_eq!(status.status, CanisterStatusType::Running);
    assert_eq!(status.settings.controllers, [owner(), canister]);
    // Read while its call was open, with the cycles for the largest reply
    // it may get set aside.
    let (now, initial) = (Nat::from(cycles(&ic, canister)), Nat::from(100_000_000_000_000u64));
    assert!(status.cycles > 0u8 && status.cycles <= now && now <= initial, "{status:?}");

    // A method the model does not implement: its reject, not "not found".
    let (seen, _) = forward(&mut ic, canister, "bitcoin_get_utxos", vec![], 0);
    let (code, message) = seen.answer.unwrap_err();
    assert!(message.contains("not supported by this project's model"), "{code}: {message}");
    // Nor may it delete itself.
    let (seen, _) = forward(&mut ic, canister, "delete_canister", id_arg(canister), 0);
    assert!(seen.answer.unwrap_err().1.contains("cannot delete itself"));
}

#[test]
fn deposit_cycles_adds_the_cycles_attached_to_the_target() {
    let mut ic = network(2);
    let (canister, target) = (forwarder(&mut ic, 0), forwarder(&mut ic, 1));
    let (before, own_before) = (cycles(&ic, target), cycles(&ic, canister));
    let (seen, _) = forward(&mut ic, canister, "deposit_cycles", id_arg(target), 1_000_000);
    assert_eq!(seen.refunded, 0, "all accepted");
    Decode!(&seen.answer.unwrap(), ()).unwrap();
    assert_eq!(cycles(&ic, target), before + 1_000_000, "on another subnet too");
    assert!(cycles(&ic, canister) <= own_before - 1_000_000);

    // To no canister: refunded.
    let missing = Principal::from_slice(&[9; 10]);
    let (seen, _) = forward(&mut ic, canister, "deposit_cycles", id_arg(missing), 5);
    assert_eq!(seen.refunded, 5);
    assert_eq!(seen.answer.unwrap_err().0, 3, "DESTINATION_INVALID");

    // Ingress carries no cycles: only canisters deposit, as on the replica.
    let refused = run(&mut ic, Principal::management_canister(), "deposit_cycles", id_arg(target)).0;
    assert_eq!(refused.unwrap_err().error_code, ErrorCode::CanisterRejectedMessage);
}

#[test]
fn create_canister_is_paid_with_the_cycles_attached_and_the_caller_controls_it() {
    let mut ic = network(3);
    let canister = forwarder(&mut ic, 1);
    let create = Encode!(&CreateCanisterArgs { settings: None, sender_canister_version: None }).unwrap();
    let paid = CANISTER_CREATION_FEE as u64 + 1_000_000_000_000;
    let (seen, _) = forward(&mut ic, canister, "create_canister", create.clone(), paid);
    assert_eq!(seen.refunded, 0);
    let created = Decode!(&seen.answer.unwrap(), CanisterIdRecord).unwrap().canister_id;
    let info = ic.canister(created).unwrap();
    assert_eq!(info.controllers, [canister]);
    assert_eq!(info.subnet, ic.engine.subnets()[1], "on the caller's subnet");
    assert_eq!(cycles(&ic, created), 1_000_000_000_000, "the creation fee kept");

    // Too few cycles: refused as the replica refuses, and refunded.
    let (seen, _) = forward(&mut ic, canister, "create_canister", create.clone(), 100);
    assert_eq!(seen.refunded, 100);
    let (code, message) = seen.answer.unwrap_err();
    assert_eq!(code, 4, "CANISTER_REJECT");
    assert!(message.starts_with("Creating a canister requires a fee of 500000000000"), "{message}");

    // Ingress may not: nothing pays for it.
    let refused = run(&mut ic, Principal::management_canister(), "create_canister", create).0;
    assert_eq!(refused.unwrap_err().message, "Only canisters can call ic00 method create_canister");
}

mod chain_keys {
    //! Threshold signatures as a canister asks for them: PocketIC's keys,
    //! signatures that standard libraries verify, and the replica's rejects.

    use ic_management_canister_types::{
        Bip341, EcdsaCurve, EcdsaKeyId, EcdsaPublicKeyArgs, EcdsaPublicKeyResult, SchnorrAlgorithm,
        SchnorrAux, SchnorrKeyId, SchnorrPublicKeyArgs, SchnorrPublicKeyResult, SignWithEcdsaArgs,
        SignWithEcdsaResult, SignWithSchnorrArgs, SignWithSchnorrResult,
    };
    use k256::elliptic_curve::PrimeField;
    use k256::elliptic_curve::sec1::ToEncodedPoint;
    use sha2::{Digest, Sha256};

    use super::*;
    use crate::management::ChainKeys;
    use crate::management::chain_keys::SIGNATURE_FEE;

    const MESSAGE: &[u8; 32] = b"Hello, world!===================";

    fn path() -> Vec<Vec<u8>> {
        vec![b"my message".to_vec()]
    }

    /// A network holding every key, and a forwarder on its second subnet.
    fn signer() -> (Ic<Sim>, Principal) {
        let mut ic = network(3);
        ic.hold_chain_keys(ChainKeys::all());
        let canister = forwarder(&mut ic, 1);
        (ic, canister)
    }

    fn ecdsa_key(name: &str) -> EcdsaKeyId {
        EcdsaKeyId { curve: EcdsaCurve::Secp256k1, name: name.into() }
    }

    fn schnorr_key(algorithm: SchnorrAlgorithm, name: &str) -> SchnorrKeyId {
        SchnorrKeyId { algorithm, name: name.into() }
    }

    fn answer<T: candid::CandidType + for<'a> serde::Deserialize<'a>>(seen: Seen) -> T {
        Decode!(&seen.answer.unwrap_or_else(|e| panic!("rejected: {e:?}")), T).unwrap()
    }

    #[test]
    fn ecdsa_keys_are_pocket_ics_and_their_signatures_verify() {
        use ic_secp256k1::PocketIcMasterPublicKeyId as Master;
        use k256::ecdsa::signature::hazmat::PrehashVerifier;
        use k256::ecdsa::{Signature, VerifyingKey};

        let (mut ic, canister) = signer();
        let hash: Vec<u8> = Sha256::digest(b"Hello, world!").to_vec();
        for (name, master) in [
            ("key_1", Master::EcdsaKey1),
            ("test_key_1", Master::EcdsaTestKey1),
            ("dfx_test_key", Master::EcdsaDfxTestKey),
        ] {
            let args =
                EcdsaPublicKeyArgs { canister_id: None, derivation_path: path(), key_id: ecdsa_key(name) };
            let (seen, _) = forward(&mut ic, canister, "ecdsa_public_key", Encode!(&args).unwrap(), 0);
            let key: EcdsaPublicKeyResult = answer(seen);
            let (pocket_ic, chain_code) =
                ic_secp256k1::PublicKey::derive_pocketic_key(master, &canister, &path());
            assert_eq!(
                (key.public_key.clone(), key.chain_code),
                (pocket_ic.serialize_sec1(true), chain_code.to_vec())
            );

            let args = SignWithEcdsaArgs {
                message_hash: hash.clone(),
                derivation_path: path(),
                key_id: ecdsa_key(name),
            };
            let attached = SIGNATURE_FEE as u64 + 1_000;
            let (seen, rounds) =
                forward(&mut ic, canister, "sign_with_ecdsa", Encode!(&args).unwrap(), attached);
            assert_eq!(seen.refunded, 1_000, "the fee is kept, the rest comes back");
            // The network's subnets are 5 rounds apart: the key's subnet is
            // a round trip away, as on mainnet.
            assert!(rounds > 2 * 5, "a round trip to the key's subnet: {rounds} rounds");
            let signed: SignWithEcdsaResult = answer(seen);
            let verifying = VerifyingKey::from_sec1_bytes(&key.public_key).unwrap();
            let signature = Signature::try_from(signed.signature.as_slice()).unwrap();
            verifying.verify_prehash(&hash, &signature).expect("k256 verifies it");
        }
        // A restored network holds the same keys.
        let mut restored = Ic::<Sim>::restore(&ic.save().unwrap()().unwrap()).unwrap();
        let args =
            EcdsaPublicKeyArgs { canister_id: None, derivation_path: path(), key_id: ecdsa_key("key_1") };
        let (seen, _) = forward(&mut restored, canister, "ecdsa_public_key", Encode!(&args).unwrap(), 0);
        assert!(seen.answer.is_ok(), "{:?}", seen.answer);
    }

    /// BIP341's tweak of the x-only key `xonly` with `merkle_root`, for
    /// Taproot key-path signatures: `P + H_TapTweak(P || root)·G`.
    fn taproot_tweaked(xonly: &[u8], merkle_root: &[u8]) -> Vec<u8> {
        let tag = Sha256::digest(b"TapTweak");
        let tweak = Sha256::new()
            .chain_update(tag)
            .chain_update(tag)
            .chain_update(xonly)
            .chain_update(merkle_root)
            .finalize();
        let tweak = k256::Scalar::from_repr(tweak).unwrap();
        let even = k256::PublicKey::from_sec1_bytes(&[&[2u8][..], xonly].concat()).unwrap();
        let tweaked = (even.to_projective() + k256::ProjectivePoint::GENERATOR * tweak).to_affine();
        tweaked.to_encoded_point(true).as_bytes()[1..].to_vec()
    }

    #[test]
    fn schnorr_keys_are_pocket_ics_and_bip340_taproot_and_ed25519_signatures_verify() {
        let (mut ic, canister) = signer();
        let root = b"Hello, aux!=====================".to_vec();
        for name in KEY_NAMES_FOR_TESTS {
            for algorithm in [SchnorrAlgorithm::Bip340secp256k1, SchnorrAlgorithm::Ed25519] {
                let key_id = schnorr_key(algorithm, name);
                let args = SchnorrPublicKeyArgs {
                    canister_id: None,
                    derivation_path: path(),
                    key_id: key_id.clone(),
                };
                let (seen, _) = forward(&mut ic, canister, "schnorr_public_key", Encode!(&args).unwrap(), 0);
                let key: SchnorrPublicKeyResult = answer(seen);
                assert_eq!(key.public_key, pocket_ic_schnorr_key(algorithm, name, canister));
                let auxes = match algorithm {
                    SchnorrAlgorithm::Bip340secp256k1 => vec![None, Some(root.clone())],
                    SchnorrAlgorithm::Ed25519 => vec![None],
                };
                for merkle_root in auxes {
                    let args = SignWithSchnorrArgs {
                        message: MESSAGE.to_vec(),
                        derivation_path: path(),
                        key_id: key_id.clone(),
                        aux: merkle_root
                            .clone()
                            .map(|merkle_root_hash| SchnorrAux::Bip341(Bip341 { merkle_root_hash })),
                    };
                    let attached = SIGNATURE_FEE as u64;
                    let (seen, _) =
                        forward(&mut ic, canister, "sign_with_schnorr", Encode!(&args).unwrap(), attached);
                    let signature = answer::<SignWithSchnorrResult>(seen).signature;
                    match algorithm {
                        SchnorrAlgorithm::Bip340secp256k1 => {
                            use k256::schnorr::signature::hazmat::PrehashVerifier;
                            let xonly = &key.public_key[1..];
                            let signer = match &merkle_root {
                                None => xonly.to_vec(),
                                Some(root) => taproot_tweaked(xonly, root),
                            };
                            let verifying = k256::schnorr::VerifyingKey::from_bytes(&signer).unwrap();
                            let signature = k256::schnorr::Signature::try_from(signature.as_slice()).unwrap();
                            verifying.verify_prehash(MESSAGE, &signature).expect("k256 verifies it");
                        }
                        SchnorrAlgorithm::Ed25519 => {
                            use ed25519_dalek::Verifier;
                            let verifying = ed25519_dalek::VerifyingKey::from_bytes(
                                &key.public_key.clone().try_into().unwrap(),
                            )
                            .unwrap();
                            let signature = ed25519_dalek::Signature::from_slice(&signature).unwrap();
                            verifying.verify(MESSAGE, &signature).expect("ed25519-dalek verifies it");
                        }
                    }
                }
            }
        }
    }

    const KEY_NAMES_FOR_TESTS: [&str; 3] = ["key_1", "test_key_1", "dfx_test_key"];

    /// The key PocketIC gives `canister` for [`path`], as DFINITY's crates derive it.
    fn pocket_ic_schnorr_key(algorithm: SchnorrAlgorithm, name: &str, canister: Principal) -> Vec<u8> {
        use ic_ed25519::PocketIcMasterPublicKeyId as Ed25519;
        use ic_secp256k1::PocketIcMasterPublicKeyId as Secp256k1;
        let id = canister;
        match algorithm {
            SchnorrAlgorithm::Bip340secp256k1 => {
                let master = match name {
                    "key_1" => Secp256k1::SchnorrKey1,
                    "test_key_1" => Secp256k1::SchnorrTestKey1,
                    _ => Secp256k1::SchnorrDfxTestKey,
                };
                ic_secp256k1::PublicKey::derive_pocketic_key(master, &id, &path()).0.serialize_sec1(true)
            }
            SchnorrAlgorithm::Ed25519 => {
                let master = match name {
                    "key_1" => Ed25519::Key1,
                    "test_key_1" => Ed25519::TestKey1,
                    _ => Ed25519::DfxTestKey,
                };
                ic_ed25519::PublicKey::derive_pocketic_key(master, &id, &path()).0.serialize_raw().to_vec()
            }
        }
    }

    #[test]
    fn each_bad_request_gets_the_replicas_reject() {
        let (mut ic, canister) = signer();
        let mut refused = |method: &str, arg: Vec<u8>, cycles: u64| {
            let (seen, _) = forward(&mut ic, canister, method, arg, cycles);
            assert_eq!(seen.refunded, u128::from(cycles), "{method}: nothing is kept");
            seen.answer.unwrap_err()
        };
        let hash = |len| vec![7u8; len];
        let sign = |key: &str, len| {
            Encode!(&SignWithEcdsaArgs {
                message_hash: hash(len),
                derivation_path: path(),
                key_id: ecdsa_key(key)
            })
            .unwrap()
        };
        let fee = SIGNATURE_FEE as u64;
        assert_eq!(
            refused("sign_with_ecdsa", sign("test_key_1", 31), fee),
            (4, "message_hash must be 32 bytes".into())
        );
        let (code, message) = refused("sign_with_ecdsa", sign("test_key_1", 32), fee - 1);
        assert_eq!(
            (code, message),
            (
                4,
                format!(
                    "sign_with_ecdsa request sent with {} cycles, but {fee} cycles are required.",
                    fee - 1
                )
            )
        );
        let (code, message) = refused("sign_with_ecdsa", sign("no_such_key", 32), fee);
        assert_eq!(code, 3, "DESTINATION_INVALID: no subnet holds it");
        assert!(
            message.starts_with(
                "Unable to route management canister request sign_with_ecdsa: ChainKeyError(\"Requested unknown or disabled threshold key: ecdsa:Secp256k1:no_such_key, existing enabled keys: [ecdsa:Secp256k1:dfx_test_key,"
            ),
            "{message}"
        );
        let aux = |algorithm, len| {
            let aux = Some(SchnorrAux::Bip341(Bip341 { merkle_root_hash: vec![0; len] }));
            let args = SignWithSchnorrArgs {
                message: vec![],
                derivation_path: path(),
                key_id: schnorr_key(algorithm, "dfx_test_key"),
                aux,
            };
            Encode!(&args).unwrap()
        };
        let ed25519 = refused("sign_with_schnorr", aux(SchnorrAlgorithm::Ed25519, 32), fee);
        assert_eq!(ed25519, (4, "Schnorr algorithm Ed25519 does not support aux input".into()));
        let bip340 = refused("sign_with_schnorr", aux(SchnorrAlgorithm::Bip340secp256k1, 8), fee);
        assert_eq!(bip340, (4, "Invalid aux field for Bip340Secp256k1".into()));

        let long = EcdsaPublicKeyArgs {
            canister_id: None,
            derivation_path: vec![vec![]; 256],
            key_id: ecdsa_key("key_1"),
        };
        let (_, message) = refused("ecdsa_public_key", Encode!(&long).unwrap(), 0);
        assert!(message.ends_with("a derivation path has at most 255 elements, this one 256"), "{message}");

        // Only canisters may ask, as on the replica.
        let ingress =
            run(&mut ic, Principal::management_canister(), "sign_with_ecdsa", sign("test_key_1", 32));
        assert_eq!(ingress.0.unwrap_err().message, "Only canisters can call ic00 method sign_with_ecdsa");
    }

    #[test]
    fn a_vetkey_asked_for_by_a_canister_decrypts_and_verifies_with_ic_vetkeys() {
        use ic_management_canister_types::{
            VetKDCurve, VetKDDeriveKeyArgs, VetKDDeriveKeyResult, VetKDKeyId, VetKDPublicKeyArgs,
            VetKDPublicKeyResult,
        };
        use ic_vetkeys::{DerivedPublicKey, EncryptedVetKey, TransportSecretKey};

        let (mut ic, canister) = signer();
        let transport = TransportSecretKey::from_seed(vec![64; 32]).unwrap();
        let key_id = VetKDKeyId { curve: VetKDCurve::Bls12_381_G2, name: "test_key_1".into() };
        let context = b"My context".to_vec();
        let args = VetKDPublicKeyArgs { canister_id: None, context: context.clone(), key_id: key_id.clone() };
        let (seen, _) = forward(&mut ic, canister, "vetkd_public_key", Encode!(&args).unwrap(), 0);
        let public = DerivedPublicKey::deserialize(&answer::<VetKDPublicKeyResult>(seen).public_key).unwrap();
        let args = VetKDDeriveKeyArgs {
            input: b"My input".to_vec(),
            context,
            transport_public_key: transport.public_key(),
            key_id,
        };
        let attached = SIGNATURE_FEE as u64 + 5;
        let (seen, _) = forward(&mut ic, canister, "vetkd_derive_key", Encode!(&args).unwrap(), attached);
        assert_eq!(seen.refunded, 5, "the fee is kept");
        let encrypted =
            EncryptedVetKey::deserialize(&answer::<VetKDDeriveKeyResult>(seen).encrypted_key).unwrap();
        encrypted.decrypt_and_verify(&transport, &public, b"My input").expect("ic-vetkeys verifies it");

        let bad = VetKDDeriveKeyArgs { transport_public_key: vec![1; 48], ..args };
        let (seen, _) = forward(&mut ic, canister, "vetkd_derive_key", Encode!(&bad).unwrap(), attached);
        assert!(seen.answer.unwrap_err().1.contains("invalid transport public key"));
    }

    /// Subnets the end of time apart: a signature is held, not a crash.
    #[test]
    fn a_signature_across_an_endless_latency_is_held_without_overflow() {
        let mut ic = Ic::new(
            Sim::builder().with_subnets(1).with_xnet_latency_rounds(u64::MAX).build(),
            Keys::from_seed(3),
            false,
        );
        ic.hold_chain_keys(ChainKeys::all());
        let canister = forwarder(&mut ic, 0);
        let hash = vec![7u8; 32];
        let args =
            SignWithEcdsaArgs { message_hash: hash, derivation_path: path(), key_id: ecdsa_key("key_1") };
        let call = forwarded("sign_with_ecdsa", Encode!(&args).unwrap(), SIGNATURE_FEE as u64);
        let number = ic.submit(Effective::None, CanisterCall::new(canister, owner(), "call", call)).unwrap();
        for _ in 0..5 {
            ic.execute_round();
        }
        assert!(ic.outcome(number).is_none(), "still on its way");
    }

    #[test]
    fn a_network_that_holds_no_keys_says_so_as_pocket_ic_does() {
        let mut ic = network(3);
        let canister = forwarder(&mut ic, 0);
        let args = EcdsaPublicKeyArgs {
            canister_id: None,
            derivation_path: path(),
            key_id: ecdsa_key("dfx_test_key"),
        };
        let (seen, _) = forward(&mut ic, canister, "ecdsa_public_key", Encode!(&args).unwrap(), 0);
        let (_, message) = seen.answer.unwrap_err();
        assert!(
            message
                .contains("Requested unknown threshold key: ecdsa:Secp256k1:dfx_test_key, existing keys: []"),
            "{message}"
        );
    }
}

mod outcalls {
    //! HTTPS outcalls as a canister makes them: pending until answered,
    //! the nodes' agreement, the transform, the size limit and the fee.

    use candid::Func;
    use ic_error_types::RejectCode;
    use ic_management_canister_types::{
        HttpHeader, HttpMethod, HttpRequestArgs, HttpRequestResult, TransformContext, TransformFunc,
    };

    use super::*;
    use crate::management::http_outcalls::{OutcallResponse, SUBNET_NODES};

    const URL: &str = "https://example.com/price";

    fn args(transform: Option<Principal>) -> HttpRequestArgs {
        HttpRequestArgs {
            url: URL.into(),
            max_response_bytes: Some(1_000),
            method: HttpMethod::GET,
            headers: vec![HttpHeader { name: "accept".into(), value: "text/plain".into() }],
            body: None,
            transform: transform.map(|canister| TransformContext {
                function: TransformFunc(Func { principal: canister, method: "transform".into() }),
                context: vec![],
            }),
            is_replicated: None,
            pricing_version: None,
        }
    }

    /// The fee for [`args`], as the subnet prices it.
    fn fee(args: &HttpRequestArgs) -> u128 {
        let transform = args.transform.as_ref().map_or(0, |t| t.function.0.method.len());
        let request = URL.len() + "accept".len() + "text/plain".len() + transform;
        sim::http_request_fee(request as u128, 1_000)
    }

    fn reply(status: u64, body: &[u8]) -> OutcallResponse {
        OutcallResponse::Reply(HttpRequestResult {
            status: status.into(),
            headers: vec![],
            body: body.to_vec(),
        })
    }

    /// The forwarder's `http_request` with `cycles`, run until it waits for
    /// its responses: the owner's message and the pending outcall's id.
    fn request(ic: &mut Ic<Sim>, canister: Principal, args: &HttpRequestArgs, cycles: u128) -> (u64, u64) {
        let call = forwarded("http_request", Encode!(args).unwrap(), cycles as u64);
        let number = ic.submit(Effective::None, CanisterCall::new(canister, owner(), "call", call)).unwrap();
        for _ in 0..3 {
            ic.execute_round();
        }
        assert!(ic.outcome(number).is_none(), "it waits for its responses");
        let pending = ic.pending_outcalls();
        assert_eq!(pending.len(), 1);
        assert_eq!((pending[0].url.as_str(), pending[0].caller), (URL, canister));
        (number, pending[0].id)
    }

    /// What the forwarder saw once the responses came.
    fn answered(ic: &mut Ic<Sim>, number: u64) -> Seen {
        for _ in 0..3 {
            ic.execute_round();
        }
        seen(ic.outcome(number).expect("answered").expect("the forwarder replies"))
    }

    #[test]
    fn an_outcall_waits_for_its_response_and_keeps_the_fee() {
        let mut ic = network(5);
        let canister = forwarder(&mut ic, 0);
        let args = args(None);
        let (number, id) = request(&mut ic, canister, &args, fee(&args) + 7);
        ic.respond_to_outcall(id, reply(200, b"42"), vec![]).unwrap();
        let seen = answered(&mut ic, number);
        assert_eq!(seen.refunded, 7, "the fee is kept, the rest comes back");
        let result = Decode!(&seen.answer.unwrap(), HttpRequestResult).unwrap();
        assert_eq!((result.status, result.body), (200u64.into(), b"42".to_vec()));
        assert!(ic.pending_outcalls().is_empty());
        assert_eq!(
            ic.respond_to_outcall(id, reply(200, b""), vec![]).unwrap_err(),
            format!("no pending outcall {id}")
        );
    }

    #[test]
    fn nodes_that_disagree_get_the_replicas_reject_and_enough_that_agree_are_delivered() {
        let mut ic = network(5);
        let canister = forwarder(&mut ic, 0);
        let args = args(None);
        let agreeing = 2 * ((SUBNET_NODES - 1) / 3) + 1;
        // 9 of 13 agree: delivered.
        let (number, id) = request(&mut ic, canister, &args, fee(&args));
        let mut others: Vec<_> = (1..agreeing).map(|_| reply(200, b"42")).collect();
        others.extend((agreeing..SUBNET_NODES).map(|i| reply(200, &[i as u8])));
        ic.respond_to_outcall(id, reply(200, b"42"), others).unwrap();
        assert!(answered(&mut ic, number).answer.is_ok());
        // 8 of 13: no consensus.
        let (number, id) = request(&mut ic, canister, &args, fee(&args));
        let mut others: Vec<_> = (1..agreeing - 1).map(|_| reply(200, b"42")).collect();
        others.extend((agreeing - 1..SUBNET_NODES).map(|i| reply(200, &[i as u8])));
        ic.respond_to_outcall(id, reply(200, b"42"), others).unwrap();
        let (code, message) = answered(&mut ic, number).answer.unwrap_err();
        assert_eq!(code, RejectCode::SysTransient as u8);
        assert!(message.starts_with("No consensus could be reached."), "{message}");
        // One response per node, or one for all.
        let (_, id) = request(&mut ic, canister, &args, fee(&args));
        let wrong = ic.respond_to_outcall(id, reply(200, b""), vec![reply(200, b"")]).unwrap_err();
        assert!(wrong.contains("12 more"), "{wrong}");
    }

    #[test]
    fn the_transform_runs_on_the_response_and_the_size_limit_holds() {
        let mut ic = network(5);
        let canister = forwarder(&mut ic, 0);
        let transformed =
            HttpRequestResult { status: 201u64.into(), headers: vec![], body: b"transformed".to_vec() };
        run(&mut ic, canister, "set_transformed", Encode!(&transformed).unwrap()).0.unwrap();
        let with_transform = args(Some(canister));
        let (number, id) = request(&mut ic, canister, &with_transform, fee(&with_transform));
        ic.respond_to_outcall(id, reply(200, b"raw"), vec![]).unwrap();
        let seen = answered(&mut ic, number);
        assert_eq!(Decode!(&seen.answer.unwrap(), HttpRequestResult).unwrap(), transformed);

        let plain = args(None);
        let (number, id) = request(&mut ic, canister, &plain, fee(&plain));
        ic.respond_to_outcall(id, reply(200, &[0; 1_001]), vec![]).unwrap();
        let (code, message) = answered(&mut ic, number).answer.unwrap_err();
        assert_eq!(
            (code, message.as_str()),
            (RejectCode::SysFatal as u8, "Http body exceeds size limit of 1000 bytes.")
        );

        let (number, id) = request(&mut ic, canister, &plain, fee(&plain));
        let timeout = OutcallResponse::Reject { code: RejectCode::SysTransient, message: "timeout".into() };
        ic.respond_to_outcall(id, timeout, vec![]).unwrap();
        assert_eq!(
            answered(&mut ic, number).answer.unwrap_err(),
            (RejectCode::SysTransient as u8, "timeout".into())
        );
    }

    #[test]
    fn bad_requests_are_refused_at_once_and_a_pending_one_survives_a_restart() {
        let mut ic = network(5);
        let canister = forwarder(&mut ic, 0);
        let plain = args(None);
        let (seen, _) = forward(&mut ic, canister, "http_request", Encode!(&plain).unwrap(), 5);
        let (code, message) = seen.answer.unwrap_err();
        assert_eq!(code, 4);
        assert_eq!(
            message,
            format!("http_request request sent with 5 cycles, but {} cycles are required.", fee(&plain))
        );
        let too_large = HttpRequestArgs { max_response_bytes: Some(2_000_001), ..args(None) };
        let (seen, _) =
            forward(&mut ic, canister, "http_request", Encode!(&too_large).unwrap(), 1_000_000_000_000);
        assert!(
            seen.answer
                .unwrap_err()
                .1
                .starts_with("max_response_bytes expected to be in the range [0..2000000]")
        );
        let foreign = args(Some(Principal::management_canister()));
        let (seen, _) =
            forward(&mut ic, canister, "http_request", Encode!(&foreign).unwrap(), 1_000_000_000_000);
        assert!(seen.answer.unwrap_err().1.contains("must be a query method of the calling canister"));
        let ingress =
            run(&mut ic, Principal::management_canister(), "http_request", Encode!(&plain).unwrap());
        assert_eq!(ingress.0.unwrap_err().message, "Only canisters can call ic00 method http_request");

        let (number, id) = request(&mut ic, canister, &plain, fee(&plain));
        let mut restored = Ic::<Sim>::restore(&ic.save().unwrap()().unwrap()).unwrap();
        assert_eq!(restored.pending_outcalls(), ic.pending_outcalls());
        restored.respond_to_outcall(id, reply(200, b"after"), vec![]).unwrap();
        assert!(answered(&mut restored, number).answer.is_ok());
    }
}
