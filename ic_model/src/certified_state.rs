//! Each subnet's certified state tree, signed at each certification with the
//! subnet's key, and the root key's delegation to every subnet: one state
//! that canisters (`ic0.data_certificate_copy`) and every adapter read.

use candid::Principal;
use ic_certification::{AsHashTree, Certificate, Delegation, HashTree, NestedTree, merge_hash_trees};
use ic_verify_bls_signature::PrivateKey as BlsKey;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use crate::keys::{self, Keys};

/// The replica's state trees hold byte labels and byte leaves.
type Tree = NestedTree<Vec<u8>, Vec<u8>>;
/// A path in a state tree.
pub type Path = Vec<Vec<u8>>;
/// Changes to a tree: a value to write, or `None` to delete the subtree.
pub type Edits = Vec<(Path, Option<Vec<u8>>)>;

/// The interface specification's domain separator for a state tree's root hash.
const STATE_ROOT_DOMAIN: &[u8] = b"\x0Dic-state-root";

/// A value as the replica writes it in CBOR: self-described (tag 55799).
pub fn to_cbor(value: &impl Serialize) -> Vec<u8> {
    let mut serializer = serde_cbor::Serializer::new(Vec::new());
    serializer.self_describe().expect("writing to a Vec");
    value.serialize(&mut serializer).expect("plain data serializes");
    serializer.into_inner()
}

/// `n` as the state tree writes numbers (`/time`, reject codes).
pub fn leb128(n: u64) -> Vec<u8> {
    let mut bytes = vec![];
    leb128::write::unsigned(&mut bytes, n).expect("writing to a Vec");
    bytes
}

fn path(labels: &[&[u8]]) -> Path {
    labels.iter().map(|label| label.to_vec()).collect()
}

/// A subnet and the canister ids it hosts (inclusive ranges).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubnetRanges {
    /// The subnet's id.
    pub id: Principal,
    /// The canister-id ranges it hosts, ascending.
    pub ranges: Vec<(Principal, Principal)>,
}

/// What the state tree shows of a canister (`/canister/<id>/...`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CanisterState {
    /// Its controllers.
    pub controllers: Vec<Principal>,
    /// The sha256 of its module, once installed.
    pub module_hash: Option<Vec<u8>>,
    /// Its metadata sections: `(name, public, content)`. Only controllers
    /// may read a private one.
    pub metadata: Vec<(String, bool, Vec<u8>)>,
    /// What it certified (`ic0.certified_data_set`), at most 32 bytes.
    pub certified_data: Vec<u8>,
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

/// `/canister/<id>/{certified_data,controllers,module_hash,metadata/<name>}`,
/// written anew (a deleted canister's are deleted).
fn canister_entries(canister: Principal, state: Option<&CanisterState>) -> Edits {
    let at = |labels: &[&[u8]]| -> Path {
        [b"canister".as_slice(), canister.as_slice()].iter().chain(labels).map(|l| l.to_vec()).collect()
    };
    let mut edits = vec![(at(&[]), None)];
    if let Some(state) = state {
        edits.push((at(&[b"controllers"]), Some(to_cbor(&state.controllers))));
        if let Some(hash) = &state.module_hash {
            edits.push((at(&[b"module_hash"]), Some(hash.clone())));
        }
        for (name, _, content) in &state.metadata {
            edits.push((at(&[b"metadata", name.as_bytes()]), Some(content.clone())));
        }
        edits.push((at(&[b"certified_data"]), Some(state.certified_data.clone())));
    }
    edits
}

/// `/canister/<id>/certified_data`: what a query's data certificate shows
/// (with `/time`, which every certificate holds).
fn certified_data_path(canister: Principal) -> Path {
    path(&[b"canister", canister.as_slice(), b"certified_data"])
}

/// A tree's witness for `paths` (and `/time`, which every certificate holds).
fn witness(tree: &Tree, paths: &[Path]) -> HashTree {
    let time = tree.witness(&path(&[b"time"]));
    paths.iter().fold(time, |witness, path| merge_hash_trees(witness, tree.witness(path)))
}

fn sign(key: &BlsKey, tree: &Tree) -> Vec<u8> {
    key.sign(&[STATE_ROOT_DOMAIN, &tree.root_hash()].concat()).serialize().to_vec()
}

fn apply(tree: &mut Tree, edits: Edits) {
    for (path, value) in edits {
        match value {
            Some(value) => tree.insert(&path, value),
            None => tree.delete(&path),
        }
    }
}

/// How long a subnet serves one delegation before the root signs it anew,
/// at the subnet's certified time, as a replica fetches a fresh one
/// (`DELEGATION_UPDATE_INTERVAL`, 5 minutes, in the replica's
/// `rs/http_endpoints`). Agents refuse a delegation older than 30 days,
/// and a network's time is the wall clock, months past its start time.
const DELEGATION_RENEWED_EVERY: Duration = Duration::from_secs(5 * 60);

/// The root key and the topology it certifies: what each subnet's
/// delegation is signed from, again as time goes on.
struct Root {
    key: BlsKey,
    topology: Vec<(Path, Vec<u8>)>,
}

impl Root {
    /// The root's certificate, at `time`, of `subnet`'s key and ranges.
    fn delegate(&self, subnet: Principal, time: u64) -> Delegation {
        let mut root = Tree::default();
        root.insert(&path(&[b"time"]), leb128(time));
        for (path, value) in &self.topology {
            root.insert(path, value.clone());
        }
        let id = subnet.as_slice();
        let delegated = [
            path(&[b"subnet", id, b"public_key"]),
            path(&[b"subnet", id, b"canister_ranges"]),
            path(&[b"canister_ranges", id]),
        ];
        let certificate = Certificate {
            tree: witness(&root, &delegated),
            signature: sign(&self.key, &root),
            delegation: None,
        };
        Delegation { subnet_id: id.to_vec(), certificate: to_cbor(&certificate) }
    }
}

/// A subnet's state tree as of its last certification, its signature, the
/// root's delegation it is served with, and who may read its canisters'
/// private metadata as of then.
struct Certified {
    tree: Tree,
    signature: Vec<u8>,
    time: u64,
    height: u64,
    delegation: Delegation,
    delegated_at: u64,
    readers: HashMap<Principal, Readers>,
}

/// What waits for a subnet's next certification: tree edits, and each
/// changed canister's readers (`None`: the canister is gone).
#[derive(Default)]
struct Staged {
    edits: Edits,
    readers: Vec<(Principal, Option<Readers>)>,
}

/// One subnet: its keys, its delegation from the root, its certified state,
/// and the edits staged for its next certification.
pub struct SubnetState {
    /// The subnet's id.
    pub id: Principal,
    /// The canister ids it hosts.
    pub ranges: Vec<(Principal, Principal)>,
    key: BlsKey,
    /// The key its node signs query responses with.
    pub node_key: ic_ed25519::PrivateKey,
    /// Its node's id, derived from the node's public key.
    pub node_id: Principal,
    root: Arc<Root>,
    certified: RwLock<Certified>,
    staged: Mutex<Staged>,
}

impl SubnetState {
    /// Whether the subnet hosts `canister`.
    pub fn hosts(&self, canister: Principal) -> bool {
        self.ranges.iter().any(|(low, high)| *low <= canister && canister <= *high)
    }

    /// Applies the staged edits, then `edits`, sets `/time` and signs the
    /// result: the end of a round. Readers see the old tree and signature,
    /// or the new.
    pub fn certify(&self, time: u64, edits: Edits) {
        // The staged edits are taken under the tree's lock: two threads that
        // certify at once apply them in the order they were staged.
        let mut certified = self.certified.write().expect("not poisoned");
        let staged = std::mem::take(&mut *self.staged.lock().expect("not poisoned"));
        apply(&mut certified.tree, staged.edits);
        apply(&mut certified.tree, edits);
        for (canister, readers) in staged.readers {
            match readers {
                Some(readers) => certified.readers.insert(canister, readers),
                None => certified.readers.remove(&canister),
            };
        }
        // Certified time never goes back, whoever certifies.
        let time = time.max(certified.time);
        certified.tree.insert(&path(&[b"time"]), leb128(time));
        certified.signature = sign(&self.key, &certified.tree);
        certified.time = time;
        certified.height += 1;
        if time >= certified.delegated_at.saturating_add(DELEGATION_RENEWED_EVERY.as_nanos() as u64) {
            certified.delegation = self.root.delegate(self.id, time);
            certified.delegated_at = time;
        }
    }

    /// Whether edits wait for the next certification.
    pub fn has_staged(&self) -> bool {
        let staged = self.staged.lock().expect("not poisoned");
        !staged.edits.is_empty() || !staged.readers.is_empty()
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
        let certificate = {
            let certified = self.certified.read().expect("not poisoned");
            Certificate {
                tree: witness(&certified.tree, &paths),
                signature: certified.signature.clone(),
                delegation: Some(certified.delegation.clone()),
            }
        };
        to_cbor(&certificate)
    }
}

/// Who may read a canister's private metadata: its controllers.
struct Readers {
    controllers: Vec<Principal>,
    private: Vec<String>,
}

/// The network's certified state: its keys, and each subnet's tree.
///
/// ```
/// use candid::Principal;
/// use ic_model::{CanisterState, CertifiedState, Keys, SubnetRanges};
///
/// let canister = Principal::from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 1, 1]);
/// let subnet = SubnetRanges { id: Principal::from_slice(&[1; 29]), ranges: vec![(canister, canister)] };
/// let state = CertifiedState::new(Keys::from_seed(0), &[subnet], 1);
/// let data = CanisterState { controllers: vec![], module_hash: None, metadata: vec![], certified_data: vec![7] };
/// state.write_canister(canister, Some(&data));
/// state.certify_staged(2);
/// assert!(state.data_certificate(canister).is_some());
/// ```
pub struct CertifiedState {
    keys: Keys,
    subnets: Vec<SubnetState>,
}

impl CertifiedState {
    /// The keys that sign it.
    pub fn keys(&self) -> Keys {
        self.keys
    }

    /// The state of a network of `subnets` whose keys `keys` derive, each
    /// subnet certified once at `time` with the topology alone.
    pub fn new(keys: Keys, subnets: &[SubnetRanges], time: u64) -> Self {
        let topology = topology(subnets, &keys);
        let root = Arc::new(Root { key: keys.root(), topology: topology.clone() });
        let subnets = subnets
            .iter()
            .enumerate()
            .map(|(index, subnet)| {
                let node_key = keys.node(index);
                let (node_id, _) = keys::node_identity(&node_key);
                let certified = Certified {
                    tree: Tree::default(),
                    signature: vec![],
                    time: 0,
                    height: 0,
                    delegation: root.delegate(subnet.id, time),
                    delegated_at: time,
                    readers: HashMap::new(),
                };
                let subnet = SubnetState {
                    id: subnet.id,
                    ranges: subnet.ranges.clone(),
                    key: keys.subnet(index),
                    node_key,
                    node_id,
                    root: root.clone(),
                    certified: RwLock::new(certified),
                    staged: Mutex::new(Staged {
                        edits: topology
                            .iter()
                            .map(|(path, value)| (path.clone(), Some(value.clone())))
                            .collect(),
                        readers: vec![],
                    }),
                };
                subnet.certify(time, vec![]);
                subnet
            })
            .collect();
        Self { keys, subnets }
    }

    /// The root key (DER), which agents verify certificates against and
    /// canisters read with `ic0.root_key_copy`.
    pub fn root_key_der(&self) -> Vec<u8> {
        self.keys.root_key_der()
    }

    /// The subnets, in the order they were given.
    pub fn subnets(&self) -> &[SubnetState] {
        &self.subnets
    }

    /// The subnet with id `id`.
    pub fn subnet(&self, id: Principal) -> Option<&SubnetState> {
        self.subnets.iter().find(|s| s.id == id)
    }

    /// The subnet that hosts `canister`, and its index.
    pub fn subnet_of(&self, canister: Principal) -> Option<(usize, &SubnetState)> {
        self.subnets.iter().enumerate().find(|(_, s)| s.hosts(canister))
    }

    /// Stages `/canister/<id>/...` anew for its subnet's next
    /// certification (`None`: the canister is gone), and who may read its
    /// private metadata from then on.
    pub fn write_canister(&self, canister: Principal, state: Option<&CanisterState>) {
        let Some((_, subnet)) = self.subnet_of(canister) else { return };
        let readers = state.map(|state| Readers {
            controllers: state.controllers.clone(),
            private: state
                .metadata
                .iter()
                .filter(|(_, public, _)| !public)
                .map(|(name, ..)| name.clone())
                .collect(),
        });
        let mut staged = subnet.staged.lock().expect("not poisoned");
        staged.edits.extend(canister_entries(canister, state));
        staged.readers.push((canister, readers));
    }

    /// Certifies every subnet that has staged edits, at `time`: what an
    /// engine that certifies only when asked does before it is read.
    pub fn certify_staged(&self, time: u64) {
        for subnet in self.subnets.iter().filter(|s| s.has_staged()) {
            subnet.certify(time, vec![]);
        }
    }

    /// The certificate a non-replicated query to `canister` reads with
    /// `ic0.data_certificate_copy`: its certified data as of the last
    /// certified state, and `/time`. `None` if no subnet hosts it.
    pub fn data_certificate(&self, canister: Principal) -> Option<Vec<u8>> {
        let (_, subnet) = self.subnet_of(canister)?;
        Some(subnet.certificate(&[certified_data_path(canister)]))
    }

    /// Whether `reader` may read `canister`'s metadata section `name`, as
    /// of the last certified state: a private one only its controllers may.
    pub fn may_read_metadata(&self, canister: Principal, name: &[u8], reader: Principal) -> bool {
        let Some((_, subnet)) = self.subnet_of(canister) else { return true };
        let certified = subnet.certified.read().expect("not poisoned");
        certified.readers.get(&canister).is_none_or(|readers| {
            !readers.private.iter().any(|private| private.as_bytes() == name)
                || readers.controllers.contains(&reader)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ic_certification::LookupResult;

    fn canister(n: u8) -> Principal {
        Principal::from_slice(&[0, 0, 0, 0, 0, 0, 0, n, 1, 1])
    }

    fn network() -> CertifiedState {
        let subnets = [
            SubnetRanges { id: Principal::from_slice(&[1; 29]), ranges: vec![(canister(0), canister(9))] },
            SubnetRanges { id: Principal::from_slice(&[2; 29]), ranges: vec![(canister(10), canister(19))] },
        ];
        CertifiedState::new(Keys::from_seed(3), &subnets, 10)
    }

    fn state(certified_data: &[u8], private: &str) -> CanisterState {
        CanisterState {
            controllers: vec![Principal::from_slice(&[9])],
            module_hash: None,
            metadata: vec![(private.into(), false, b"secret".to_vec())],
            certified_data: certified_data.to_vec(),
        }
    }

    /// The certified data a certificate shows, and its time.
    fn certified(bytes: &[u8], canister: Principal) -> (Option<Vec<u8>>, Vec<u8>) {
        let certificate: Certificate = serde_cbor::from_slice(bytes).expect("a CBOR certificate");
        let value = |path: Path| match certificate.tree.lookup_path(&path) {
            LookupResult::Found(value) => Some(value.to_vec()),
            _ => None,
        };
        let time = value(path(&[b"time"])).expect("every certificate holds /time");
        (value(certified_data_path(canister)), time)
    }

    #[test]
    fn staged_data_shows_only_once_certified_and_only_on_its_subnet() {
        let network = network();
        network.write_canister(canister(12), Some(&state(&[7; 32], "x")));
        let before = network.data_certificate(canister(12)).unwrap();
        assert_eq!(certified(&before, canister(12)), (None, leb128(10)));
        assert!(network.subnets()[1].has_staged() && !network.subnets()[0].has_staged());

        network.certify_staged(20);
        let after = network.data_certificate(canister(12)).unwrap();
        assert_eq!(certified(&after, canister(12)), (Some(vec![7; 32]), leb128(20)));
        assert_eq!(network.subnets()[0].certified_height(), 1, "an unchanged subnet is not signed again");
        assert_eq!(network.subnets()[1].certified_height(), 2);
        assert!(network.data_certificate(canister(30)).is_none(), "no subnet hosts it");

        network.write_canister(canister(12), None);
        network.certify_staged(30);
        assert_eq!(certified(&network.data_certificate(canister(12)).unwrap(), canister(12)).0, None);
    }

    #[test]
    fn only_controllers_read_private_metadata_as_of_the_certified_state() {
        let network = network();
        let (controller, stranger) = (Principal::from_slice(&[9]), Principal::anonymous());
        network.write_canister(canister(1), Some(&state(&[], "candid:service")));
        network.certify_staged(20);
        assert!(network.may_read_metadata(canister(1), b"candid:service", controller));
        assert!(!network.may_read_metadata(canister(1), b"candid:service", stranger));
        assert!(network.may_read_metadata(canister(1), b"other", stranger), "no such private section");
        // Deleted, but the certified tree still holds the section until the
        // next certification: it stays private until then.
        network.write_canister(canister(1), None);
        assert!(!network.may_read_metadata(canister(1), b"candid:service", stranger));
        network.certify_staged(30);
        assert!(network.may_read_metadata(canister(1), b"candid:service", stranger), "the canister is gone");
    }

    /// The time of the root's delegation that a certificate of `subnet` carries.
    fn delegation_time(subnet: &SubnetState) -> Vec<u8> {
        let certificate: Certificate = serde_cbor::from_slice(&subnet.certificate(&[])).unwrap();
        let delegation: Certificate =
            serde_cbor::from_slice(&certificate.delegation.unwrap().certificate).unwrap();
        match delegation.tree.lookup_path(path(&[b"time"])) {
            LookupResult::Found(time) => time.to_vec(),
            _ => panic!("a delegation holds /time"),
        }
    }

    #[test]
    fn the_root_delegates_anew_once_the_delegation_is_five_minutes_old() {
        let network = network();
        let subnet = &network.subnets()[0];
        assert_eq!(delegation_time(subnet), leb128(10));
        let minute = 60_000_000_000;
        subnet.certify(10 + 4 * minute, vec![]);
        assert_eq!(delegation_time(subnet), leb128(10), "a fresh delegation is kept");
        // A network whose start time lies months behind its wall clock.
        let later = 10 + 300 * 24 * 60 * minute;
        subnet.certify(later, vec![]);
        assert_eq!(delegation_time(subnet), leb128(later));
        assert_eq!(
            delegation_time(&network.subnets()[1]),
            leb128(10),
            "each subnet at its own certification"
        );
    }

    #[test]
    fn staged_edits_apply_in_order_and_time_never_goes_back() {
        let network = network();
        network.write_canister(canister(2), Some(&state(&[1], "x")));
        network.certify_staged(50);
        network.write_canister(canister(2), Some(&state(&[2], "x")));
        network.subnets()[0].certify(40, vec![]);
        let (data, time) = certified(&network.data_certificate(canister(2)).unwrap(), canister(2));
        assert_eq!((data, time), (Some(vec![2]), leb128(50)), "the newest data, at the latest time");
    }
}
