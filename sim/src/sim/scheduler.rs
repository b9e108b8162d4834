//! Rounds: what a tick executes on each subnet, within the instruction
//! budget of each of its scheduler threads.

use candid::Principal;

use super::Sim;

impl Sim {
    /// One round on every subnet, in ascending subnet-id order.
    pub fn tick(&mut self) {
        self.time = self.time.saturating_add(self.config.time_step_ns);
        self.ticks += 1;
        // Each round's peak starts from what is in flight; most canisters
        // hold no slots and are skipped.
        for canister in self.canisters.values_mut() {
            let state = canister.system_state_mut();
            if !(state.round_peak.is_empty() && state.in_flight.is_empty()) {
                state.round_peak.clone_from(&state.in_flight);
            }
        }
        self.apply_due_events();
        for subnet in 0..self.subnets.len() {
            if !self.is_stalled(subnet) {
                self.execute_round(subnet);
            }
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
        // What each thread may still use; a thread starts a message while it
        // has some left. The round starts with `max_instructions_per_round -
        // max_slice + 1`, so that a message started on the last instruction
        // still fits in the round (`rs/execution_environment/src/scheduler.rs`).
        let mut budget = limits
            .max_instructions_per_round
            .saturating_sub(limits.max_instructions_per_slice)
            .saturating_add(1);
        let finalization = limits
            .overhead_per_canister_for_finalization
            .saturating_mul(self.subnets[subnet].canisters.len() as u64);
        // Timers are looked at in a round's first iteration only.
        let mut timers = true;
        while budget > 0 {
            let active: Vec<Principal> = self.subnets[subnet]
                .canisters
                .iter()
                .filter(|id| self.canisters[id].pending(time, timers) > 0 && !self.is_paused(id))
                .copied()
                .collect();
            if active.is_empty() {
                break;
            }
            // The replica deals the active canisters to its threads
            // round-robin and gives every thread the whole remaining budget
            // (`partition_canisters_to_cores`, `execute_canisters_in_inner_round`).
            // The threads here are only accounts: canisters still execute one
            // after another in id order, which keeps outputs deterministic.
            let threads = limits.scheduler_cores.clamp(1, active.len());
            let mut used = vec![0u64; threads];
            let mut outputs = vec![];
            for (i, id) in active.into_iter().enumerate() {
                let used = &mut used[i % threads];
                let canister = self.canisters.get_mut(&id).expect("on this subnet");
                // What was inducted before this iteration, plus a due timer.
                let pending = canister.pending(time, timers);
                let mut ran = 0;
                while ran < pending && *used < budget {
                    let executed = canister.execute_next(time, timers);
                    outputs.extend(executed.outputs);
                    *used = used
                        .saturating_add(executed.instructions)
                        .saturating_add(limits.overhead_per_execution);
                    ran += 1;
                }
                self.executions += ran as u64;
                // Charged after the canister's turn, if it ran
                // (`execute_canisters_on_thread`).
                if ran > 0 {
                    *used = used.saturating_add(limits.overhead_per_canister);
                }
            }
            // The threads ran in parallel, so the round loses what the
            // busiest one used, then the finalization overhead.
            let busiest = used.into_iter().max().unwrap_or(0);
            budget = budget.saturating_sub(busiest).saturating_sub(finalization);
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
