//! The network's keys, all derived from one seed: a root key, and per
//! subnet a threshold key (BLS12-381) and one node's key (Ed25519).

use candid::Principal;
use ic_verify_bls_signature::PrivateKey as BlsKey;
use sha2::{Digest, Sha256};

/// The DER prefix of an IC BLS12-381 public key (the interface
/// specification's "BLS key encoding"; ic-agent checks it).
const BLS_DER_PREFIX: [u8; 37] = [
    0x30, 0x81, 0x82, 0x30, 0x1d, 0x06, 0x0d, 0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0xdc, 0x7c, 0x05, 0x03,
    0x01, 0x02, 0x01, 0x06, 0x0c, 0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0xdc, 0x7c, 0x05, 0x03, 0x02, 0x01,
    0x03, 0x61, 0x00,
];

/// The keys of a network, derived from `seed`: the same seed gives the same
/// root key, so a tool's configuration can pin it.
///
/// ```
/// let keys = ic_model::Keys::from_seed(7);
/// assert_eq!(keys.root_key_der(), ic_model::Keys::from_seed(7).root_key_der());
/// assert_eq!(keys.root_key_der().len(), 133);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Keys {
    seed: u64,
}

impl Keys {
    /// The keys that `seed` derives.
    pub fn from_seed(seed: u64) -> Self {
        Self { seed }
    }

    /// The seed they derive from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    fn secret(&self, what: &str) -> [u8; 32] {
        let mut secret: [u8; 32] = Sha256::new()
            // The crate that first derived them: a seed keeps its root key.
            .chain_update(b"ic_http/")
            .chain_update(what)
            .chain_update(self.seed.to_be_bytes())
            .finalize()
            .into();
        // Below 2^254, hence below the group order (0x73ed...): a valid scalar.
        secret[0] &= 0x3f;
        secret
    }

    pub(crate) fn root(&self) -> BlsKey {
        BlsKey::deserialize(&self.secret("root")).expect("a scalar below the group order")
    }

    pub(crate) fn subnet(&self, index: usize) -> BlsKey {
        BlsKey::deserialize(&self.secret(&format!("subnet/{index}"))).expect("a scalar below the group order")
    }

    pub(crate) fn node(&self, index: usize) -> ic_ed25519::PrivateKey {
        ic_ed25519::PrivateKey::generate_from_seed(&self.secret(&format!("node/{index}")))
    }

    /// The root key, DER-encoded as `/api/v2/status` serves it (133 bytes).
    pub fn root_key_der(&self) -> Vec<u8> {
        bls_der(&self.root())
    }
}

/// A BLS public key as the IC encodes it.
pub(crate) fn bls_der(key: &BlsKey) -> Vec<u8> {
    [&BLS_DER_PREFIX[..], &key.public_key().serialize()].concat()
}

/// A node's id and its public key (RFC 8410 DER), as `/subnet/<id>/node` lists them.
pub(crate) fn node_identity(key: &ic_ed25519::PrivateKey) -> (Principal, Vec<u8>) {
    let der = key.public_key().serialize_rfc8410_der();
    (Principal::self_authenticating(&der), der)
}
