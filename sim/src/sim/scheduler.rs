//! Rounds: what a tick executes on each subnet, within its instruction budget.

use candid::Principal;

use super::Sim;

impl Sim {
    /// One round on every subnet, in ascending subnet-id order.
    pub fn tick(&mut self) {
        self.time = self.time.saturating_add(self.config.time_step_ns);
        self.ticks += 1;
        for subnet in 0..self.subnets.len() {
            self.execute_round(subnet);
        }
    }

    /// Expire overdue bounded-wait calls, induct what the other subnets
    /// sent and the ingress submitted, then execute iteration after
    /// iteration until nothing is left or the round's budget is spent.
    /// Messages between canisters of this subnet are inducted after each
    /// iteration and run in the next one, so a same-subnet call and its
    /// callback can complete within one round.
    fn execute_round(&mut self, subnet: usize) {
        let time = self.time;
        for id in &self.subnets[subnet].canisters {
            self.canisters.get_mut(id).expect("on this subnet").expire_callbacks(time);
        }
        let ticks = self.ticks;
        let s = &mut self.subnets[subnet];
        while s.in_transit.front().is_some_and(|&(arrives, _)| arrives <= ticks) {
            let (_, message) = s.in_transit.pop_front().expect("looked at");
            s.inbound.push(message);
        }
        let inbound = std::mem::take(&mut self.subnets[subnet].inbound);
        let ingress = std::mem::take(&mut self.subnets[subnet].ingress_pool);
        for message in inbound.into_iter().chain(ingress) {
            self.deliver(subnet, message);
        }
        let limits = self.config.round_limits;
        // A message may start while the round has used at most this much
        // (the replica's `max_instructions_per_round - max_slice + 1`).
        let start_limit = limits
            .max_instructions_per_round
            .saturating_sub(limits.max_instructions_per_slice)
            .saturating_add(1);
        let finalization = limits
            .overhead_per_canister_for_finalization
            .saturating_mul(self.subnets[subnet].canisters.len() as u64);
        let mut used = 0;
        // Timers are looked at in a round's first iteration only.
        let mut timers = true;
        while used < start_limit {
            let active: Vec<Principal> = self.subnets[subnet]
                .canisters
                .iter()
                .filter(|id| self.canisters[id].has_work(time, timers) && !self.is_paused(id))
                .copied()
                .collect();
            if active.is_empty() {
                break;
            }
            let mut outputs = vec![];
            for id in active {
                let canister = self.canisters.get_mut(&id).expect("on this subnet");
                used = used.saturating_add(limits.overhead_per_canister);
                // What was inducted before this iteration, plus a due timer.
                for _ in 0..canister.queued().max(1) {
                    if used >= start_limit {
                        break;
                    }
                    let executed = canister.execute_next(time, timers);
                    outputs.extend(executed.outputs);
                    used = used
                        .saturating_add(executed.instructions)
                        .saturating_add(limits.overhead_per_execution);
                }
            }
            used = used.saturating_add(finalization);
            timers = false;
            for output in outputs {
                self.route(subnet, output);
            }
        }
    }

    pub(super) fn is_paused(&self, id: &Principal) -> bool {
        self.paused_until.get(id).is_some_and(|&until| self.ticks <= until)
    }
}
