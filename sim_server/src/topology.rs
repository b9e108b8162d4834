//! The instance's topology as PocketIC describes it, derived from the
//! simulator's subnets and the canister ids they assign.

use candid::Principal;
use pocket_ic::common::rest::{
    CanisterCyclesCostSchedule, CanisterIdRange, RawCanisterId, SubnetConfig, SubnetInstructionConfig,
    SubnetKind, Topology,
};
use sim::{IDS_PER_SUBNET, canister_id};

/// The ids subnet `index` (in ascending id byte order) assigns.
pub fn canister_range(index: usize) -> CanisterIdRange {
    let first = index as u64 * IDS_PER_SUBNET;
    CanisterIdRange {
        start: RawCanisterId::from(canister_id(first)),
        end: RawCanisterId::from(canister_id(first + IDS_PER_SUBNET - 1)),
    }
}

/// `subnets` as `Sim::subnets` lists them: ascending id bytes, the order of a tick.
pub fn of(subnets: &[Principal]) -> Topology {
    let subnet_configs = subnets
        .iter()
        .enumerate()
        .map(|(index, &id)| {
            // PocketIC derives a subnet's id from its seed; here the id is
            // the simulator's, and the seed is its bytes.
            let mut subnet_seed = [0; 32];
            subnet_seed[..id.as_slice().len()].copy_from_slice(id.as_slice());
            let config = SubnetConfig {
                subnet_kind: SubnetKind::Application,
                subnet_admins: None,
                cost_schedule: CanisterCyclesCostSchedule::Normal,
                subnet_seed,
                instruction_config: SubnetInstructionConfig::Production,
                canister_ranges: vec![canister_range(index)],
            };
            (id, config)
        })
        .collect();
    Topology { subnet_configs, default_effective_canister_id: canister_range(0).start }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ranges cover what the simulator assigns, on the right subnet.
    #[test]
    fn ranges_hold_the_ids_the_simulator_assigns() {
        let mut sim = sim::Sim::builder().with_subnet().with_subnet().with_subnet().build();
        let topology = of(&sim.subnets());
        for (index, subnet) in sim.subnets().into_iter().enumerate() {
            for _ in 0..3 {
                let id = sim.create_canister(index, vec![]).expect("subnet exists");
                assert_eq!(topology.get_subnet(id), Some(subnet));
            }
        }
        assert_eq!(topology.get_app_subnets(), sim.subnets());
    }
}
