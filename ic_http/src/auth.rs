//! Ingress authentication as the replica does it
//! (`rs/validator/src/ingress_validation.rs`): the expiry window, the
//! sender's self-authenticating id, its signature and its delegations.

use candid::Principal;
use ic_transport_types::{EnvelopeContent, RequestId, SignedDelegation};
use std::collections::BTreeSet;

use crate::request::Request;

/// The longest an ingress message lives (`MAX_INGRESS_TTL`), and the clock
/// drift the validator permits on top of it.
const MAX_INGRESS_TTL_NS: u64 = 300_000_000_000;
const PERMITTED_DRIFT_NS: u64 = 30_000_000_000;
/// The replica's `MAXIMUM_NUMBER_OF_DELEGATIONS` and targets per delegation.
const MAX_DELEGATIONS: usize = 20;
const MAX_TARGETS: usize = 1000;
const MAX_NONCE_BYTES: usize = 32;
/// The OID of an IC canister signature key (Internet Identity's).
const CANISTER_SIGNATURE_OID: [u8; 12] =
    [0x06, 0x0a, 0x2b, 0x06, 0x01, 0x04, 0x01, 0x83, 0xb8, 0x43, 0x01, 0x02];

/// Domain separator of a signed request id (`RequestId::signable`).
const REQUEST_DOMAIN: &[u8] = b"\x0Aic-request";

/// An authenticated request, and the canisters its delegations let it
/// reach (`None`: all).
pub(crate) struct Authenticated {
    pub content: EnvelopeContent,
    pub id: RequestId,
    pub targets: Option<BTreeSet<Principal>>,
}

/// Checks what the replica checks of every request before it executes or
/// reads anything. `Err` is the replica's text for a 400.
pub(crate) fn authenticate(request: Request, now: u64) -> Result<Authenticated, String> {
    let id = request.id();
    if let Some(nonce) = request.nonce()
        && nonce.len() > MAX_NONCE_BYTES
    {
        return Err(format!(
            "Invalid request nonce: the nonce has {} bytes, at most {MAX_NONCE_BYTES} are allowed",
            nonce.len()
        ));
    }
    let envelope = request.envelope;
    let content = envelope.content.into_owned();
    let sender = *content.sender();
    let reads = !matches!(content, EnvelopeContent::Call { .. });
    // The replica lets anonymous queries and reads of the state through at
    // any expiry.
    if !(reads && sender == Principal::anonymous()) {
        check_expiry(content.ingress_expiry(), now)?;
    }
    let signable = [REQUEST_DOMAIN, id.as_slice()].concat();
    let targets = match (envelope.sender_pubkey, envelope.sender_sig) {
        (None, None) if envelope.sender_delegation.is_none() => {
            if sender != Principal::anonymous() {
                return Err(format!("Missing signature from user: {sender}"));
            }
            None
        }
        (Some(_), Some(_)) | (None, None) if sender == Principal::anonymous() => {
            return Err("Signature is not allowed for the anonymous user.".into());
        }
        (Some(pubkey), Some(signature)) => {
            if Principal::self_authenticating(&pubkey) != sender {
                return Err(format!(
                    "The user id '{sender}' does not match the public key '{}'",
                    hex::encode(&pubkey)
                ));
            }
            let delegations = envelope.sender_delegation.unwrap_or_default();
            let (key, targets) = check_delegations(pubkey, &delegations, now, reads)?;
            verify(&key, &signable, &signature).map_err(|e| format!("Invalid signature: {e}"))?;
            targets
        }
        _ => {
            return Err(
                "Invalid signature: a request carries both a sender_pubkey and a sender_sig, or neither"
                    .into(),
            );
        }
    };
    if let EnvelopeContent::Call { canister_id, .. } | EnvelopeContent::Query { canister_id, .. } = &content
        && targets.as_ref().is_some_and(|targets| !targets.contains(canister_id))
    {
        return Err(format!("Canister '{canister_id}' is not one of the delegation targets."));
    }
    Ok(Authenticated { content, id, targets })
}

/// The replica's ingress expiry window: from `now` to 5 min 30 s after.
pub(crate) fn check_expiry(expiry: u64, now: u64) -> Result<(), String> {
    let latest = now.saturating_add(MAX_INGRESS_TTL_NS + PERMITTED_DRIFT_NS);
    if expiry < now || expiry > latest {
        return Err(format!(
            "Invalid request expiry: Specified ingress_expiry not within expected range: Minimum allowed expiry: {now}, Maximum allowed expiry: {latest}, Provided expiry: {expiry}"
        ));
    }
    Ok(())
}

/// Follows the chain from the sender's key: each delegation is signed by
/// the key before it. Returns the key that must sign the request and the
/// targets all the delegations allow.
fn check_delegations(
    mut key: Vec<u8>,
    delegations: &[SignedDelegation],
    now: u64,
    reads: bool,
) -> Result<(Vec<u8>, Option<BTreeSet<Principal>>), String> {
    if delegations.len() > MAX_DELEGATIONS {
        return Err(format!(
            "Invalid delegation: Chain of delegations is too long: got {} delegations, but at most {MAX_DELEGATIONS} are allowed.",
            delegations.len()
        ));
    }
    let mut seen = BTreeSet::from([key.clone()]);
    let mut targets: Option<BTreeSet<Principal>> = None;
    for signed in delegations {
        let delegation = &signed.delegation;
        if delegation.expiration < now {
            return Err(format!(
                "Invalid delegation expiry: Specified sender delegation has expired:\nProvided expiry: {}\nLocal replica time: {now}",
                delegation.expiration
            ));
        }
        verify(&key, &delegation.signable(), &signed.signature)
            .map_err(|e| format!("Invalid delegation: Invalid signature: {e}"))?;
        if !seen.insert(delegation.pubkey.clone()) {
            return Err(
                "Invalid delegation: Chain of delegations contains a cycle: a public key appears twice"
                    .into(),
            );
        }
        if let Some(these) = &delegation.targets {
            if these.len() > MAX_TARGETS {
                return Err(format!(
                    "Invalid delegation: a delegation has {} targets, at most {MAX_TARGETS} are allowed",
                    these.len()
                ));
            }
            let these: BTreeSet<Principal> = these.iter().copied().collect();
            targets = Some(match targets {
                Some(before) => before.intersection(&these).copied().collect(),
                None => these,
            });
        }
        if delegation.permissions == Some(ic_transport_types::DelegationPermissions::Queries) && !reads {
            return Err(
                "Invalid delegation: the delegation permits only queries and reads of the state".into()
            );
        }
        key = delegation.pubkey.clone();
    }
    Ok((key, targets))
}

/// Verifies `signature` of `message` by the DER-encoded `key`: Ed25519, or
/// ECDSA on secp256k1 or P-256 over SHA-256, as the interface specification
/// lists them.
fn verify(key: &[u8], message: &[u8], signature: &[u8]) -> Result<(), String> {
    use k256::ecdsa::signature::Verifier;
    use k256::pkcs8::DecodePublicKey;
    if let Ok(key) = ic_ed25519::PublicKey::deserialize_rfc8410_der(key) {
        return key.verify_signature(message, signature).map_err(|e| format!("Invalid basic signature: {e}"));
    }
    if let Ok(key) = k256::ecdsa::VerifyingKey::from_public_key_der(key) {
        let signature = k256::ecdsa::Signature::from_slice(signature)
            .map_err(|e| format!("Invalid basic signature: {e}"))?;
        return key.verify(message, &signature).map_err(|e| format!("Invalid basic signature: {e}"));
    }
    if let Ok(key) = p256::ecdsa::VerifyingKey::from_public_key_der(key) {
        let signature = p256::ecdsa::Signature::from_slice(signature)
            .map_err(|e| format!("Invalid basic signature: {e}"))?;
        return key.verify(message, &signature).map_err(|e| format!("Invalid basic signature: {e}"));
    }
    if key.windows(CANISTER_SIGNATURE_OID.len()).any(|w| w == CANISTER_SIGNATURE_OID) {
        return Err("Invalid public key: canister signatures (Internet Identity) are not supported by this network; use an Ed25519, secp256k1 or P-256 identity".into());
    }
    Err("Invalid public key: not an Ed25519, ECDSA secp256k1 or ECDSA P-256 key in DER".into())
}

/// Envelope decoding and authentication under arbitrary input: whatever
/// the bytes, an answer and no panic; whatever is changed in a signed
/// request, it no longer passes for its sender, or it is the same request.
#[cfg(test)]
mod fuzz {
    use super::*;
    use ic_transport_types::Envelope;
    use proptest::prelude::*;

    /// Cases per property: what CI runs every time.
    const CASES: u32 = 2_000;
    const NOW: u64 = 1_800_000_000_000_000_000;

    fn signed(content: EnvelopeContent, seed: u8) -> Vec<u8> {
        let key = ic_ed25519::PrivateKey::generate_from_seed(&[seed; 32]);
        let signature = key.sign_message(&[REQUEST_DOMAIN, content.to_request_id().as_slice()].concat());
        Envelope {
            content: std::borrow::Cow::Owned(content),
            sender_pubkey: Some(key.public_key().serialize_rfc8410_der()),
            sender_sig: Some(signature.to_vec()),
            sender_delegation: None,
        }
        .encode_bytes()
    }

    fn sender(seed: u8) -> Principal {
        let key = ic_ed25519::PrivateKey::generate_from_seed(&[seed; 32]);
        Principal::self_authenticating(key.public_key().serialize_rfc8410_der())
    }

    /// A request of each type, from the key `seed` derives, valid at [`NOW`].
    fn content(kind: u8, seed: u8, nonce: Option<Vec<u8>>, arg: Vec<u8>) -> EnvelopeContent {
        let (sender, ingress_expiry) = (sender(seed), NOW + 60_000_000_000);
        let canister_id = Principal::from_slice(&[0, 0, 0, 0, 0, 0, 0, 1, 1, 1]);
        match kind % 3 {
            0 => EnvelopeContent::Call {
                nonce,
                ingress_expiry,
                sender,
                canister_id,
                method_name: "ping".into(),
                arg,
                sender_info: None,
            },
            1 => EnvelopeContent::Query {
                ingress_expiry,
                sender,
                canister_id,
                method_name: "ping".into(),
                arg,
                nonce,
                sender_info: None,
            },
            _ => EnvelopeContent::ReadState { ingress_expiry, sender, paths: vec![vec!["time".into()]] },
        }
    }

    fn authenticated(body: &[u8]) -> Option<Authenticated> {
        let request = Request::decode(body).ok()?;
        authenticate(request, NOW).ok()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(CASES))]

        #[test]
        fn any_bytes_get_an_answer(body in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = authenticated(&body);
        }

        #[test]
        fn a_changed_byte_never_passes_for_another_request(
            kind in any::<u8>(),
            seed in any::<u8>(),
            nonce in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40)),
            arg in proptest::collection::vec(any::<u8>(), 0..64),
            at in any::<prop::sample::Index>(),
            flip in 1..=255u8,
        ) {
            let original = content(kind, seed, nonce.clone(), arg);
            let id = original.to_request_id();
            let mut body = signed(original, seed);
            let valid = authenticated(&body);
            let too_long = nonce.as_ref().is_some_and(|n| n.len() > MAX_NONCE_BYTES) && kind % 3 != 2;
            prop_assert_eq!(valid.is_some(), !too_long, "a signed request within the limits passes");
            let at = at.index(body.len());
            body[at] ^= flip;
            if let Some(changed) = authenticated(&body) {
                prop_assert_eq!(changed.id, id, "byte {} changed: it passed as another request", at);
                prop_assert_eq!(*changed.content.sender(), sender(seed));
            }
        }
    }
}
