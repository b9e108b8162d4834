//! The subnets an instance asks for, laid out as PocketIC lays them out:
//! the NNS, SNS, II, fiduciary and bitcoin subnets hold mainnet's canister
//! ranges (so the NNS subnet holds `rwlgt-iiaaa-aaaaa-aaaaa-cai`) and number
//! new canisters from a block of their own; every other subnet holds one
//! block. Blocks are taken from the top of the id space down, as PocketIC
//! takes them.

use candid::Principal;
use ic_model::management::ChainKeys;
use pocket_ic::common::rest::{ExtendedSubnetConfigSet, SubnetKind, SubnetSpec};
use sim::{IDS_PER_SUBNET, IdRanges, canister_number};
use std::ops::RangeInclusive;

/// A subnet to build: its kind and the canister ids it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Planned {
    pub kind: SubnetKind,
    pub ids: IdRanges,
}

/// The subnets `set` asks for, in PocketIC's order, or what in it the
/// simulator cannot do.
pub fn plan(set: &ExtendedSubnetConfigSet) -> Result<Vec<Planned>, String> {
    if !set.cloud_engine.is_empty() {
        return Err(unsupported("cloud engine subnets"));
    }
    let named = [
        (SubnetKind::NNS, &set.nns),
        (SubnetKind::SNS, &set.sns),
        (SubnetKind::II, &set.ii),
        (SubnetKind::Fiduciary, &set.fiduciary),
        (SubnetKind::Bitcoin, &set.bitcoin),
        (SubnetKind::TestThresholdKeys, &set.test_threshold_keys),
    ];
    let named = named.into_iter().filter_map(|(kind, spec)| Some((kind, spec.as_ref()?)));
    let numbered = [
        (SubnetKind::System, &set.system),
        (SubnetKind::Application, &set.application),
        (SubnetKind::VerifiedApplication, &set.verified_application),
    ];
    let numbered = numbered.into_iter().flat_map(|(kind, specs)| specs.iter().map(move |spec| (kind, spec)));
    let asked: Vec<(SubnetKind, &SubnetSpec)> = named.chain(numbered).collect();
    if asked.is_empty() {
        return Err("the simulator server needs at least one subnet".into());
    }
    if asked.iter().any(|(_, spec)| **spec != SubnetSpec::default()) {
        return Err(unsupported("subnets with a state, instruction limits, admins or a cost schedule"));
    }
    let mut blocks = Blocks::default();
    Ok(asked
        .into_iter()
        .map(|(kind, _)| {
            let ids = match mainnet_ranges(kind) {
                Some(ranges) => IdRanges { ranges, allocation: blocks.next() },
                None => {
                    let block = blocks.next();
                    IdRanges { ranges: vec![block.clone()], allocation: block }
                }
            };
            Planned { kind, ids }
        })
        .collect())
}

/// The chain keys subnets of `kinds` hold, as PocketIC's do: the II
/// subnet `key_1`, the test-keys subnet `test_key_1` and `dfx_test_key`.
pub fn chain_keys<'a>(kinds: impl IntoIterator<Item = &'a SubnetKind>) -> ChainKeys {
    let names = kinds.into_iter().flat_map(|kind| match kind {
        SubnetKind::II => &["key_1"][..],
        SubnetKind::TestThresholdKeys => &["test_key_1", "dfx_test_key"][..],
        _ => &[][..],
    });
    ChainKeys::new(names.copied())
}

fn unsupported(what: &str) -> String {
    format!("the simulator server (this project's simulator, not PocketIC) does not support {what}")
}

/// The ranges a named subnet holds on mainnet, as PocketIC gives them;
/// `None` for a kind without any. The test-keys subnet's range is not
/// known here: it holds a block, as an application subnet does.
fn mainnet_ranges(kind: SubnetKind) -> Option<Vec<RangeInclusive<u64>>> {
    let range = |start: &str, end: &str| {
        let number =
            |text: &str| canister_number(Principal::from_text(text).expect("a canister id")).expect("one");
        number(start)..=number(end)
    };
    Some(match kind {
        SubnetKind::NNS => vec![
            range("rwlgt-iiaaa-aaaaa-aaaaa-cai", "renrk-eyaaa-aaaaa-aaada-cai"),
            range("qoctq-giaaa-aaaaa-aaaea-cai", "n5n4y-3aaaa-aaaaa-p777q-cai"),
        ],
        SubnetKind::II => vec![
            range("rdmx6-jaaaa-aaaaa-aaadq-cai", "rdmx6-jaaaa-aaaaa-aaadq-cai"),
            range("uc7f6-kaaaa-aaaaq-qaaaa-cai", "ijz7v-ziaaa-aaaaq-7777q-cai"),
        ],
        SubnetKind::Bitcoin => vec![range("g3wsl-eqaaa-aaaan-aaaaa-cai", "2qqia-xyaaa-aaaan-p777q-cai")],
        SubnetKind::Fiduciary => vec![range("mf7xa-laaaa-aaaar-qaaaa-cai", "qoznl-yiaaa-aaaar-7777q-cai")],
        SubnetKind::SNS => vec![range("ybpmr-kqaaa-aaaaq-aaaaa-cai", "ekjw2-zyaaa-aaaaq-p777q-cai")],
        _ => return None,
    })
}

/// Blocks of [`IDS_PER_SUBNET`] ids from the top of the id space down;
/// mainnet's named ranges are all far below them.
#[derive(Default)]
struct Blocks {
    taken: u64,
}

impl Blocks {
    fn next(&mut self) -> RangeInclusive<u64> {
        let block = u64::MAX / IDS_PER_SUBNET - 1 - self.taken;
        self.taken += 1;
        block * IDS_PER_SUBNET..=(block + 1) * IDS_PER_SUBNET - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(set: &ExtendedSubnetConfigSet) -> Vec<SubnetKind> {
        plan(set).unwrap().into_iter().map(|p| p.kind).collect()
    }

    #[test]
    fn named_subnets_hold_mainnets_ranges_and_the_others_a_block_each() {
        let set = ExtendedSubnetConfigSet {
            nns: Some(Default::default()),
            ii: Some(Default::default()),
            application: vec![Default::default(); 2],
            ..Default::default()
        };
        assert_eq!(
            kinds(&set),
            [SubnetKind::NNS, SubnetKind::II, SubnetKind::Application, SubnetKind::Application]
        );
        let planned = plan(&set).unwrap();
        let holds =
            |p: &Planned, id: &str| p.ids.holds(canister_number(Principal::from_text(id).unwrap()).unwrap());
        assert!(holds(&planned[0], "rwlgt-iiaaa-aaaaa-aaaaa-cai"), "the NNS holds the registry");
        assert!(!holds(&planned[0], "rdmx6-jaaaa-aaaaa-aaadq-cai"), "II's canister is not the NNS's");
        assert!(holds(&planned[1], "rdmx6-jaaaa-aaaaa-aaadq-cai"), "the II subnet holds it");
        let all: Vec<_> = planned.iter().flat_map(|p| p.ids.all()).collect();
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert!(a.end() < b.start() || b.end() < a.start(), "{a:?} and {b:?} overlap");
            }
        }
    }

    #[test]
    fn what_the_simulator_cannot_do_is_refused_with_what_it_is() {
        let cloud = ExtendedSubnetConfigSet { cloud_engine: vec![Default::default()], ..Default::default() };
        assert!(plan(&cloud).unwrap_err().contains("does not support cloud engine subnets"));
        assert!(plan(&ExtendedSubnetConfigSet::default()).unwrap_err().contains("at least one subnet"));
    }
}
