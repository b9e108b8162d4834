//! vetKD: `vetkd_public_key` and `vetkd_derive_key`, with PocketIC's test
//! master keys (BLS12-381, the secret hashed from the key's name as
//! PocketIC's test utilities hash it; DFINITY's `ic-vetkeys` publishes the
//! public halves). A key is derived for the canister and the context as
//! the IC derives it, and the vetKey, a BLS signature of the input, comes
//! encrypted to the caller's transport key, so `ic-vetkeys`' client side
//! decrypts and verifies it. The secrets are public: nothing protects.

use candid::Principal;
use ic_bls12_381::hash_to_curve::{ExpandMsgXmd, HashToCurve, HashToField};
use ic_bls12_381::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ic_error_types::ErrorCode;
use ic_management_canister_types::{
    VetKDDeriveKeyArgs, VetKDDeriveKeyResult, VetKDKeyId, VetKDPublicKeyArgs, VetKDPublicKeyResult,
};

use super::chain_keys::{ChainKeys, KeyId, held, pays};
use super::{CallResult, reply};
use crate::Reject;

/// A canister's key for a context: its secret and its public key.
struct DerivedKey {
    secret: Scalar,
    public: G2Affine,
}

pub(super) fn public_key(keys: &ChainKeys, caller: Principal, args: VetKDPublicKeyArgs) -> CallResult {
    let name = held(keys, "vetkd_public_key", key_id(&args.key_id), false)?;
    let key = derive(&name, args.canister_id.unwrap_or(caller), &args.context);
    reply(VetKDPublicKeyResult { public_key: key.public.to_compressed().to_vec() })
}

pub(super) fn derive_key(
    keys: &ChainKeys,
    caller: Principal,
    args: VetKDDeriveKeyArgs,
    cycles: u128,
) -> CallResult {
    let method = "vetkd_derive_key";
    let name = held(keys, method, key_id(&args.key_id), true)?;
    let transport = <[u8; 48]>::try_from(args.transport_public_key.as_slice())
        .ok()
        .and_then(|bytes| G1Affine::from_compressed(&bytes).into_option())
        .ok_or_else(|| {
            Reject::new(
                ErrorCode::CanisterRejectedMessage,
                "vetkd_derive_key failed: invalid transport public key (a compressed G1 point of 48 bytes)",
            )
        })?;
    pays(method, cycles)?;
    let key = derive(&name, caller, &args.context);
    let vetkey = augmented_hash_to_g1(&key.public, &args.input) * key.secret;
    // A fresh encryption per request, and the same one for the same
    // request, so runs replay.
    let r = hash_to_scalar(
        &[caller.as_slice(), &args.context, &args.input, &args.transport_public_key].concat(),
        "ic_model-vetkd-encryption",
    );
    let c1 = G1Affine::from(G1Affine::generator() * r);
    let c2 = G2Affine::from(G2Affine::generator() * r);
    let c3 = G1Affine::from(transport * r + vetkey);
    let encrypted_key = [&c1.to_compressed()[..], &c2.to_compressed(), &c3.to_compressed()].concat();
    reply(VetKDDeriveKeyResult { encrypted_key })
}

fn key_id(key: &VetKDKeyId) -> KeyId {
    KeyId::VetKd(key.name.clone())
}

/// PocketIC's master secret for the key `name`.
fn master_secret(name: &str) -> Scalar {
    hash_to_scalar(name.as_bytes(), "ic-crypto-vetkd-test-utils-generate-test-key")
}

/// The key of `canister` for `context`, from the master key `name`: each
/// step adds a hash of the key so far and the step's input to the secret.
fn derive(name: &str, canister: Principal, context: &[u8]) -> DerivedKey {
    let secret = master_secret(name);
    let mut key = DerivedKey { secret, public: G2Affine::from(G2Affine::generator() * secret) };
    key = key.step(canister.as_slice(), "ic-vetkd-bls12-381-g2-canister-id");
    if !context.is_empty() {
        key = key.step(context, "ic-vetkd-bls12-381-g2-context");
    }
    key
}

impl DerivedKey {
    fn step(self, input: &[u8], domain: &str) -> Self {
        let public = self.public.to_compressed();
        let combined =
            [&(public.len() as u64).to_be_bytes()[..], &public, &(input.len() as u64).to_be_bytes(), input]
                .concat();
        let offset = hash_to_scalar(&combined, domain);
        let public = G2Affine::from(G2Projective::from(self.public) + G2Affine::generator() * offset);
        DerivedKey { secret: self.secret + offset, public }
    }
}

fn hash_to_scalar(input: &[u8], domain: &str) -> Scalar {
    let mut scalar = [Scalar::zero()];
    <Scalar as HashToField>::hash_to_field::<ExpandMsgXmd<sha2::Sha256>>(
        input,
        domain.as_bytes(),
        &mut scalar,
    );
    scalar[0]
}

/// The point a BLS signature of `input` under `public` signs: the input
/// augmented with the key, hashed to G1.
fn augmented_hash_to_g1(public: &G2Affine, input: &[u8]) -> G1Projective {
    let augmented = [&public.to_compressed()[..], input].concat();
    <G1Projective as HashToCurve<ExpandMsgXmd<sha2::Sha256>>>::hash_to_curve(
        augmented,
        b"BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_AUG_",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ic_vetkeys::{DerivedPublicKey, EncryptedVetKey, MasterPublicKey, TransportSecretKey};

    fn pocket_ic_key(name: &str) -> MasterPublicKey {
        use ic_cdk_management_canister::{VetKDCurve, VetKDKeyId};
        let key_id = VetKDKeyId { curve: VetKDCurve::Bls12_381_G2, name: name.into() };
        MasterPublicKey::for_pocketic_key(&key_id).expect("PocketIC has it")
    }

    /// The master keys are PocketIC's, and derivation is the IC's, as
    /// DFINITY's client library computes it offline.
    #[test]
    fn keys_are_pocket_ics_and_derived_as_the_ic_derives_them() {
        let canister = Principal::from_slice(&[0, 0, 0, 0, 0, 0, 0, 1, 1, 1]);
        for name in super::super::chain_keys::KEY_NAMES {
            let master = DerivedKey {
                secret: master_secret(name),
                public: G2Affine::from(G2Affine::generator() * master_secret(name)),
            };
            assert_eq!(master.public.to_compressed().to_vec(), pocket_ic_key(name).serialize(), "{name}");
            for context in [&b""[..], b"my context"] {
                let expected =
                    pocket_ic_key(name).derive_canister_key(canister.as_slice()).derive_sub_key(context);
                let derived = derive(name, canister, context);
                assert_eq!(
                    derived.public.to_compressed().to_vec(),
                    expected.serialize(),
                    "{name} {context:?}"
                );
            }
        }
    }

    /// A derived key, encrypted to a transport key, decrypts with
    /// `ic-vetkeys` to a vetKey that verifies against the public key.
    #[test]
    fn a_derived_key_decrypts_and_verifies_with_ic_vetkeys() {
        let canister = Principal::from_slice(&[0, 0, 0, 0, 0, 0, 0, 2, 1, 1]);
        let keys = ChainKeys::all();
        let transport = TransportSecretKey::from_seed(vec![64; 32]).unwrap();
        let key_id = VetKDKeyId {
            curve: ic_management_canister_types::VetKDCurve::Bls12_381_G2,
            name: "dfx_test_key".into(),
        };
        let args = VetKDDeriveKeyArgs {
            input: b"My input".to_vec(),
            context: b"My context".to_vec(),
            transport_public_key: transport.public_key(),
            key_id: key_id.clone(),
        };
        let encrypted = derive_key(&keys, canister, args, super::super::chain_keys::SIGNATURE_FEE).unwrap();
        let encrypted = candid::decode_one::<VetKDDeriveKeyResult>(&encrypted).unwrap().encrypted_key;
        let public = public_key(
            &keys,
            canister,
            VetKDPublicKeyArgs { canister_id: None, context: b"My context".to_vec(), key_id },
        )
        .unwrap();
        let public = candid::decode_one::<VetKDPublicKeyResult>(&public).unwrap().public_key;
        let public = DerivedPublicKey::deserialize(&public).unwrap();
        let encrypted = EncryptedVetKey::deserialize(&encrypted).unwrap();
        encrypted.decrypt_and_verify(&transport, &public, b"My input").expect("it verifies");
        assert!(
            encrypted.decrypt_and_verify(&transport, &public, b"another input").is_err(),
            "and only for its input"
        );
    }
}
