//! Each subnet's certified state tree, signed once per round with the
//! subnet's key, and the root key's delegation to every subnet.

use candid::Principal;
use ic_certification::{AsHashTree, Certificate, Delegation, HashTree, NestedTree, merge_hash_trees};
use ic_verify_bls_signature::PrivateKey as BlsKey;
use serde::Serialize;
use std::sync::RwLock;

use crate::backend::SubnetRanges;
use crate::keys::{self, Keys};

/// The replica's state trees hold byte labels and byte leaves.
pub(crate) type Tree = NestedTree<Vec<u8>, Vec<u8>>;
/// A path in a state tree.
pub(crate) type Path = Vec<Vec<u8>>;

/// The interface specification's domain separator for a state tree's root hash.
const STATE_ROOT_DOMAIN: &[u8] = b"\x0Dic-state-root";

/// A value as the replica writes it in CBOR: self-described (tag 55799).
pub(crate) fn to_cbor(value: &impl Serialize) -> Vec<u8> {
    let mut serializer = serde_cbor::Serializer::new(Vec::new());
    serializer.self_describe().expect("writing to a Vec");
    value.serialize(&mut serializer).expect("plain data serializes");
    serializer.into_inner()
}

/// `n` as the state tree writes numbers (`/time`, reject codes).
pub(crate) fn leb128(n: u64) -> Vec<u8> {
    let mut bytes = vec![];
    leb128::write::unsigned(&mut bytes, n).expect("writing to a Vec");
    bytes
}

fn path(labels: &[&[u8]]) -> Path {
    labels.iter().map(|label| label.to_vec()).collect()
}

/// The entries every subnet's tree and the root's hold about the network:
/// `/subnet/<id>/{public_key,canister_ranges,type,node/<id>/public_key}`
/// and `/canister_ranges/<id>/<first id of a range>`, the sharded form
/// newer agents read (older ones read `/subnet/<id>/canister_ranges`).
fn topology(subnets: &[SubnetRanges], keys: &Keys) -> Vec<(Path, Vec<u8>)> {
    let mut entries = vec![];
    for (index, subnet) in subnets.iter().enumerate() {
        let id = subnet.id.as_slice();
        let (node_id, node_der) = keys::node_identity(&keys.node(index));
        entries.push((path(&[b"subnet", id, b"public_key"]), keys::bls_der(&keys.subnet(index))));
        entries.push((path(&[b"subnet", id, b"canister_ranges"]), to_cbor(&subnet.ranges)));
        entries.push((path(&[b"subnet", id, b"type"]), b"application".to_vec()));
        entries.push((path(&[b"subnet", id, b"node", node_id.as_slice(), b"public_key"]), node_der));
        for range in &subnet.ranges {
            entries.push((path(&[b"canister_ranges", id, range.0.as_slice()]), to_cbor(&[range])));
        }
    }
    entries
}

/// A tree's witness for `paths` (and `/time`, which every certificate holds).
fn witness(tree: &Tree, paths: &[Path]) -> HashTree {
    let time = tree.witness(&path(&[b"time"]));
    paths.iter().fold(time, |witness, path| merge_hash_trees(witness, tree.witness(path)))
}

fn sign(key: &BlsKey, tree: &Tree) -> Vec<u8> {
    key.sign(&[STATE_ROOT_DOMAIN, &tree.root_hash()].concat()).serialize().to_vec()
}

/// A subnet's state tree as of its last certification, and its signature.
struct Certified {
    tree: Tree,
    signature: Vec<u8>,
    time: u64,
    height: u64,
}

/// One subnet: its keys, its delegation from the root, and its certified state.
pub(crate) struct Subnet {
    pub id: Principal,
    pub ranges: Vec<(Principal, Principal)>,
    key: BlsKey,
    pub node_key: ic_ed25519::PrivateKey,
    pub node_id: Principal,
    delegation: Delegation,
    certified: RwLock<Certified>,
}

/// The network's subnets, certified at `time`, with their delegations.
pub(crate) fn subnets(keys: &Keys, subnets: &[SubnetRanges], time: u64) -> Vec<Subnet> {
    let topology = topology(subnets, keys);
    let mut root = Tree::default();
    root.insert(&path(&[b"time"]), leb128(time));
    for (path, value) in &topology {
        root.insert(path, value.clone());
    }
    let root_signature = sign(&keys.root(), &root);
    subnets
        .iter()
        .enumerate()
        .map(|(index, subnet)| {
            let id = subnet.id.as_slice();
            let delegated = [
                path(&[b"subnet", id, b"public_key"]),
                path(&[b"subnet", id, b"canister_ranges"]),
                path(&[b"canister_ranges", id]),
            ];
            let certificate = Certificate {
                tree: witness(&root, &delegated),
                signature: root_signature.clone(),
                delegation: None,
            };
            let delegation = Delegation { subnet_id: id.to_vec(), certificate: to_cbor(&certificate) };
            let mut tree = Tree::default();
            for (path, value) in &topology {
                tree.insert(path, value.clone());
            }
            let key = keys.subnet(index);
            let node_key = keys.node(index);
            let (node_id, _) = keys::node_identity(&node_key);
            let certified = Certified { tree, signature: vec![], time: 0, height: 0 };
            let subnet = Subnet {
                id: subnet.id,
                ranges: subnet.ranges.clone(),
                key,
                node_key,
                node_id,
                delegation,
                certified: RwLock::new(certified),
            };
            subnet.certify(time, |_| {});
            subnet
        })
        .collect()
}

impl Subnet {
    /// Whether the subnet hosts `canister`.
    pub fn hosts(&self, canister: Principal) -> bool {
        self.ranges.iter().any(|(low, high)| *low <= canister && canister <= *high)
    }

    /// Applies `edit` to the tree, sets `/time` and signs the result: the
    /// end of a round. Readers see the old tree and signature, or the new.
    pub fn certify(&self, time: u64, edit: impl FnOnce(&mut Tree)) {
        let mut certified = self.certified.write().expect("not poisoned");
        edit(&mut certified.tree);
        certified.tree.insert(&path(&[b"time"]), leb128(time));
        certified.signature = sign(&self.key, &certified.tree);
        certified.time = time;
        certified.height += 1;
    }

    /// The time of the last certification.
    pub fn certified_time(&self) -> u64 {
        self.certified.read().expect("not poisoned").time
    }

    /// How many certifications there have been.
    pub fn certified_height(&self) -> u64 {
        self.certified.read().expect("not poisoned").height
    }

    /// A certificate (CBOR) of the last certified state's `paths`, with the
    /// root's delegation.
    pub fn certificate(&self, paths: &[Path]) -> Vec<u8> {
        // A path under another one adds nothing to its witness: each is
        // witnessed once however often a request repeats it.
        let mut paths = paths.to_vec();
        paths.sort();
        paths.dedup_by(|longer, shorter| longer.starts_with(shorter));
        let (tree, signature) = {
            let certified = self.certified.read().expect("not poisoned");
            (witness(&certified.tree, &paths), certified.signature.clone())
        };
        to_cbor(&Certificate { tree, signature, delegation: Some(self.delegation.clone()) })
    }
}
