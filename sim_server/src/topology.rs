//! The instance's topology as PocketIC describes it: the IC model's
//! subnets and the canister ids each hosts.

use candid::Principal;
use ic_model::SubnetRanges;
use pocket_ic::common::rest::{
    CanisterCyclesCostSchedule, CanisterIdRange, RawCanisterId, SubnetConfig, SubnetInstructionConfig,
    SubnetKind, Topology,
};
use std::collections::BTreeMap;

/// `subnets` in the model's order (ascending id bytes, the order of a round).
pub fn of(subnets: &[SubnetRanges]) -> Topology {
    let range = |&(start, end): &(candid::Principal, candid::Principal)| CanisterIdRange {
        start: RawCanisterId::from(start),
        end: RawCanisterId::from(end),
    };
    let subnet_configs = subnets
        .iter()
        .map(|subnet| {
            // PocketIC derives a subnet's id from its seed; here the id is
            // the simulator's, and the seed is its bytes.
            let mut subnet_seed = [0; 32];
            subnet_seed[..subnet.id.as_slice().len()].copy_from_slice(subnet.id.as_slice());
            let config = SubnetConfig {
                subnet_kind: SubnetKind::Application,
                subnet_admins: None,
                cost_schedule: CanisterCyclesCostSchedule::Normal,
                subnet_seed,
                instruction_config: SubnetInstructionConfig::Production,
                canister_ranges: subnet.ranges.iter().map(range).collect(),
            };
            (subnet.id, config)
        })
        .collect();
    let default_effective_canister_id = subnets.first().and_then(|subnet| subnet.ranges.first()).map_or_else(
        || RawCanisterId::from(candid::Principal::management_canister()),
        |&(start, _)| RawCanisterId::from(start),
    );
    Topology { subnet_configs, default_effective_canister_id }
}

/// `topology` with each subnet's kind from `kinds` (application if not
/// there), and the default effective canister id on the first application
/// subnet, where PocketIC's clients create canisters when they name none.
pub fn with_kinds(mut topology: Topology, kinds: &BTreeMap<Principal, SubnetKind>) -> Topology {
    for (id, config) in topology.subnet_configs.iter_mut() {
        config.subnet_kind = kinds.get(id).copied().unwrap_or(SubnetKind::Application);
    }
    let application = topology.subnet_configs.values().find(|c| c.subnet_kind == SubnetKind::Application);
    if let Some(range) = application.and_then(|config| config.canister_ranges.first()) {
        topology.default_effective_canister_id = range.start.clone();
    }
    topology
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ranges cover what the simulator assigns, on the right subnet.
    #[test]
    fn ranges_hold_the_ids_the_simulator_assigns() {
        let mut sim = sim::Sim::builder().with_subnet().with_subnet().with_subnet().build();
        let topology = of(&ic_model::Engine::subnet_ranges(&sim));
        for (index, subnet) in sim.subnets().into_iter().enumerate() {
            for _ in 0..3 {
                let id = sim.create_canister(index, vec![]).expect("subnet exists");
                assert_eq!(topology.get_subnet(id), Some(subnet));
            }
        }
        assert_eq!(topology.get_app_subnets(), sim.subnets());
    }
}
