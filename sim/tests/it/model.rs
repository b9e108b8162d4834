//! The model, tested with the WAT fixtures: queues, call contexts,
//! rollback, instructions, canister management, saving and restoring.

use crate::common::*;
use candid::Principal;
use sim::{Action, Event, Faults, HostMemory, RejectCode, Sim, SimConfig, SimError, Stall, TrapRate, Traps};

const KEEPER: &str = include_str!("../fixtures/keeper.wat");

#[test]
fn a_pair_has_500_request_slots_shared_by_messages() {
    let mut w = world(1, 1, 0);
    let callee = w.callees[0];
    // Both messages run in the same round, the second while the first's
    // 300 calls are still in flight.
    let first = submit_fan_out(&mut w.sim, w.probe, &[record(callee, 300, Method::Ping, false)]);
    let second = submit_fan_out(&mut w.sim, w.probe, &[record(callee, 300, Method::Ping, false)]);
    w.sim.tick();
    assert_eq!(refused(&w.sim, first), 0);
    assert_eq!(refused(&w.sim, second), 100, "200 slots were left for the second message");
    run_until_idle(&mut w.sim);
    assert_eq!(probe_state(&mut w.sim, w.probe).replies, 500);
    assert_eq!(w.sim.stats(callee).unwrap().executions_of("ping"), 500);
    let stats = w.sim.stats(w.probe).unwrap();
    assert_eq!((stats.calls_performed, stats.calls_refused), (500, 100));
}

#[test]
fn a_pairs_peak_in_a_round_shows_slots_taken_and_freed_within_it() {
    let mut w = world(1, 1, 0);
    let callee = w.callees[0];
    submit_fan_out(&mut w.sim, w.probe, &[record(callee, 600, Method::Ping, false)]);
    w.sim.tick();
    // The calls were performed, answered and consumed within one round.
    let [(caller, to, between_rounds, peak)] = w.sim.pairs_in_flight()[..] else { panic!("one pair") };
    assert_eq!((caller, to, peak), (w.probe, callee, 500));
    assert!(between_rounds < peak, "{between_rounds} of them still in flight after the round");
    run_until_idle(&mut w.sim);
    assert_eq!(w.sim.pairs_in_flight(), [], "a round without calls has no peak");
}

#[test]
fn slots_are_freed_when_responses_are_consumed() {
    let mut w = world(1, 1, 0);
    let callee = w.callees[0];
    let first = submit_fan_out(&mut w.sim, w.probe, &[record(callee, 500, Method::Ping, false)]);
    run_until_idle(&mut w.sim);
    let second = submit_fan_out(&mut w.sim, w.probe, &[record(callee, 500, Method::Ping, false)]);
    run_until_idle(&mut w.sim);
    assert_eq!((refused(&w.sim, first), refused(&w.sim, second)), (0, 0));
    assert_eq!(probe_state(&mut w.sim, w.probe).replies, 1000);
}

#[test]
fn the_limit_is_per_pair() {
    let mut w = world(1, 2, 0);
    let records =
        [record(w.callees[0], 500, Method::Ping, false), record(w.callees[1], 500, Method::Ping, false)];
    let id = submit_fan_out(&mut w.sim, w.probe, &records);
    run_until_idle(&mut w.sim);
    assert_eq!(refused(&w.sim, id), 0);
    assert_eq!(probe_state(&mut w.sim, w.probe).replies, 1000);
    for callee in w.callees.clone() {
        assert_eq!(w.sim.stats(callee).unwrap().executions_of("ping"), 500);
    }
}

#[test]
fn across_subnets_a_slot_is_held_until_the_response_is_consumed() {
    let mut w = world(2, 1, 1);
    let callee = w.callees[0];
    let first = submit_fan_out(&mut w.sim, w.probe, &[record(callee, 400, Method::Ping, false)]);
    w.sim.tick();
    // The callee (on the later subnet) answered in this tick: the responses
    // wait in its stream, and their slots are still taken.
    assert_eq!(w.sim.stats(callee).unwrap().executions_of("ping"), 400);
    assert_eq!(w.sim.calls_in_flight(w.probe, callee), 400);
    assert_eq!(refused(&w.sim, first), 0);
    let second = submit_fan_out(&mut w.sim, w.probe, &[record(callee, 400, Method::Ping, false)]);
    let third = submit_fan_out(&mut w.sim, w.probe, &[record(callee, 400, Method::Ping, false)]);
    w.sim.tick();
    // The responses are inducted before the new messages run: the second
    // finds 500 free slots and takes 400, the third finds 100.
    assert_eq!((refused(&w.sim, second), refused(&w.sim, third)), (0, 300));
    assert_eq!(w.sim.calls_in_flight(w.probe, callee), 500);
    run_until_idle(&mut w.sim);
    assert_eq!(w.sim.calls_in_flight(w.probe, callee), 0);
}

#[test]
fn a_trapping_callee_answers_with_canister_error() {
    let mut w = world(1, 1, 0);
    let callee = w.callees[0];
    submit_fan_out(&mut w.sim, w.probe, &[record(callee, 3, Method::Trap, false)]);
    run_until_idle(&mut w.sim);
    let state = probe_state(&mut w.sim, w.probe);
    assert_eq!((state.replies, state.rejects), (0, 3));
    assert_eq!(state.last_reject_code, RejectCode::CanisterError as u32);
    assert_eq!(w.sim.stats(callee).unwrap().traps, 3);
}

#[test]
fn instructions_are_counted_exactly() {
    let mut w = world(1, 1, 0);
    let callee = w.callees[0];
    let mut burn = |n: u32| {
        let before = w.sim.stats(callee).unwrap().instructions;
        w.sim.update_call(callee, controller(), "burn", n.to_le_bytes().to_vec()).unwrap();
        w.sim.stats(callee).unwrap().instructions - before
    };
    let (one, two, three) = (burn(1000), burn(2000), burn(3000));
    assert!(two > one + 1000, "a loop iteration costs instructions");
    assert_eq!(three - two, two - one, "cost is linear in the iterations");
    assert_eq!(burn(1000), one, "and the same every time");
}

#[test]
fn a_trap_rolls_back_every_effect_of_the_message() {
    let mut w = world(1, 1, 0);
    let callee = w.callees[0];
    w.sim.update_call(w.probe, controller(), "prepare", vec![]).unwrap();
    let before = probe_state(&mut w.sim, w.probe);
    assert_eq!((before.heap_marker, before.counter, before.stable_pages), (1, 7, 1));
    assert_eq!(&before.stable_head, b"keep");
    // A trapping message still pays for the instructions it executed;
    // nothing else of its cycle effects stays.
    let balance_plus_consumed =
        |w: &World| w.sim.cycle_balance(w.probe).unwrap() + w.sim.stats(w.probe).unwrap().cycles_consumed;
    let cycles = balance_plus_consumed(&w);
    let performed = w.sim.stats(w.probe).unwrap().calls_performed;

    let err = w
        .sim
        .update_call(w.probe, controller(), "change_everything_then_trap", callee.as_slice().to_vec())
        .unwrap_err();
    assert_eq!(err.code(), RejectCode::CanisterError);
    assert!(err.message.contains("boom"), "{err}");
    run_until_idle(&mut w.sim);

    assert_eq!(probe_state(&mut w.sim, w.probe), before, "heap, global, stable memory and memory size");
    assert_eq!(balance_plus_consumed(&w), cycles, "cycles");
    assert_eq!(w.sim.stats(w.probe).unwrap().calls_performed, performed, "the queued call");
    assert_eq!(w.sim.stats(callee).unwrap().executions_of("ping"), 0, "the call never left");
    // And the canister still works.
    w.sim.update_call(w.probe, controller(), "prepare", vec![]).unwrap();
}

#[test]
fn a_trap_after_many_messages_and_checkpoints_rolls_back_to_the_last_one() {
    let mut w = world(1, 1, 0);
    let callee = w.callees[0];
    w.sim.update_call(w.probe, controller(), "prepare", vec![]).unwrap();
    // Enough executions to pass several checkpoints and leave a log behind.
    for n in 0..60 {
        submit_fan_out(&mut w.sim, w.probe, &[record(callee, n % 7, Method::Ping, false)]);
        w.sim.tick();
    }
    run_until_idle(&mut w.sim);
    let before = probe_state(&mut w.sim, w.probe);
    assert_eq!(before.replies, (0..60).map(|n| n % 7).sum::<u32>());
    w.sim
        .update_call(w.probe, controller(), "change_everything_then_trap", callee.as_slice().to_vec())
        .unwrap_err();
    assert_eq!(probe_state(&mut w.sim, w.probe), before);
    submit_fan_out(&mut w.sim, w.probe, &[record(callee, 5, Method::Ping, false)]);
    run_until_idle(&mut w.sim);
    assert_eq!(probe_state(&mut w.sim, w.probe).replies, before.replies + 5, "and it goes on from there");
}

#[test]
fn cleanup_runs_when_a_callback_traps_and_the_callback_is_rolled_back() {
    let mut w = world(1, 1, 0);
    let callee = w.callees[0];
    submit_fan_out(&mut w.sim, w.probe, &[record(callee, 4, Method::Ping, true)]);
    run_until_idle(&mut w.sim);
    let state = probe_state(&mut w.sim, w.probe);
    assert_eq!(state.cleanups, 4);
    assert_eq!(state.replies, 0, "the trapping reply callback's increment was rolled back");
    assert_eq!(w.sim.stats(w.probe).unwrap().executions_of("cleanup"), 4);
}

#[test]
fn only_the_cycles_minting_canister_may_mint_cycles() {
    let mut w = world(1, 0, 0);
    let err = w.sim.update_call(w.probe, controller(), "mint_cycles", vec![]).unwrap_err();
    assert_eq!(err.code(), RejectCode::CanisterError);
    let expected = format!(
        "Canister violated contract: ic0.mint_cycles128 cannot be executed on non Cycles Minting Canister: {} != rkp4c-7iaaa-aaaaa-aaaca-cai",
        w.probe
    );
    assert!(err.message.contains(&expected), "{err}");
}

#[test]
fn calls_to_a_stopped_canister_fail_with_canister_error_and_to_a_deleted_one_with_destination_invalid() {
    let mut w = world(1, 1, 0);
    let callee = w.callees[0];
    w.sim.stop_canister(callee).unwrap();
    submit_fan_out(&mut w.sim, w.probe, &[record(callee, 2, Method::Ping, false)]);
    run_until_idle(&mut w.sim);
    let state = probe_state(&mut w.sim, w.probe);
    assert_eq!((state.rejects, state.last_reject_code), (2, RejectCode::CanisterError as u32));

    w.sim.delete_canister(callee).unwrap();
    submit_fan_out(&mut w.sim, w.probe, &[record(callee, 3, Method::Ping, false)]);
    run_until_idle(&mut w.sim);
    let state = probe_state(&mut w.sim, w.probe);
    assert_eq!((state.rejects, state.last_reject_code), (5, RejectCode::DestinationInvalid as u32));
}

/// That a canister must be stopped before it is deleted is the IC model's
/// rule (its management canister checks it); the simulator refuses only a
/// canister with open call contexts, whose callers would never be answered.
#[test]
fn the_simulator_deletes_a_running_canister_but_not_one_with_open_call_contexts() {
    let mut w = world(1, 1, 0);
    let callee = w.callees[0];
    w.sim.pause_canister(callee, 5);
    submit_fan_out(&mut w.sim, w.probe, &[record(callee, 1, Method::Ping, false)]);
    w.sim.tick();
    assert_eq!(w.sim.delete_canister(w.probe), Err(SimError::OpenCallContexts(w.probe)));

    w.sim.delete_canister(callee).unwrap();
    run_until_idle(&mut w.sim);
    let state = probe_state(&mut w.sim, w.probe);
    assert_eq!((state.rejects, state.last_reject_code), (1, RejectCode::DestinationInvalid as u32));
    w.sim.delete_canister(w.probe).unwrap();
}

#[test]
fn a_deleted_callee_on_another_subnet_is_answered_by_its_subnet_a_round_trip_later() {
    let mut w = world(2, 1, 1);
    let callee = w.callees[0];
    w.sim.stop_canister(callee).unwrap();
    w.sim.delete_canister(callee).unwrap();
    submit_fan_out(&mut w.sim, w.probe, &[record(callee, 3, Method::Ping, false)]);
    w.sim.tick();
    assert_eq!(probe_state(&mut w.sim, w.probe).rejects, 0, "the routing table still sends it to subnet 1");
    w.sim.tick();
    let state = probe_state(&mut w.sim, w.probe);
    assert_eq!((state.rejects, state.last_reject_code), (3, RejectCode::DestinationInvalid as u32));

    // An id in no subnet's range is answered by the caller's own subnet.
    let nowhere = sim::canister_id(7 * sim::IDS_PER_SUBNET);
    submit_fan_out(&mut w.sim, w.probe, &[record(nowhere, 2, Method::Ping, false)]);
    w.sim.tick();
    let state = probe_state(&mut w.sim, w.probe);
    assert_eq!((state.rejects, state.last_reject_code), (5, RejectCode::DestinationInvalid as u32));
}

#[test]
fn a_stopped_canister_answers_no_query_and_a_restarted_one_does() {
    let mut w = world(1, 1, 0);
    w.sim.stop_canister(w.probe).unwrap();
    let reject = w.sim.query_call(w.probe, controller(), "timer", vec![]).unwrap_err();
    assert_eq!(reject.code(), RejectCode::CanisterError);
    assert!(reject.message.contains("is stopped"), "{}", reject.message);

    w.sim.start_canister(w.probe).unwrap();
    assert!(w.sim.query_call(w.probe, controller(), "timer", vec![]).is_ok());
}

#[test]
fn same_subnet_calls_complete_in_one_round_cross_subnet_in_two() {
    for (subnets, callee_subnet, rounds) in [(1, 0, 1), (2, 1, 2)] {
        let mut w = world(subnets, 1, callee_subnet);
        let records = [record(w.callees[0], 100, Method::Ping, false)];
        // fan_out replies at once; a second message observes the callbacks.
        submit_fan_out(&mut w.sim, w.probe, &records);
        for _ in 0..rounds {
            w.sim.tick();
        }
        assert_eq!(probe_state(&mut w.sim, w.probe).replies, 100, "{subnets} subnet(s)");
    }
}

#[test]
fn garbage_wasm_is_refused_with_a_message() {
    let mut sim = Sim::builder().with_subnet().build();
    let id = sim.create_canister(0, vec![controller()]).unwrap();
    let err = sim.install_canister(id, b"\0asm\x01\0\0\0garbage", vec![], controller()).unwrap_err();
    assert!(err.to_string().starts_with("Canister's Wasm module is not valid: "), "{err}");
}

#[test]
fn a_reinstall_ends_open_call_contexts_and_frees_their_slots() {
    let mut sim = Sim::builder().with_subnet().build();
    let a = install(&mut sim, 0, RELAY);
    let b = install(&mut sim, 0, RELAY);
    sim.pause_canister(b, 5);
    let message = sim.submit_call(a, controller(), "relay", b.as_slice().to_vec()).unwrap();
    sim.tick();
    assert_eq!(sim.calls_in_flight(a, b), 1);
    assert!(sim.ingress_status(message).is_none(), "A waits for B");
    sim.install_canister(a, &wat::parse_str(RELAY).unwrap(), vec![], controller()).unwrap();
    let err = sim.ingress_status(message).expect("answered").unwrap_err();
    assert_eq!(err.code(), RejectCode::CanisterError);
    assert!(err.message.contains("reinstalled"), "{err}");
    assert_eq!(sim.calls_in_flight(a, b), 0);
    run_until_idle(&mut sim); // B answers late; the response finds nobody.
    assert_eq!(sim.stats(a).unwrap().executions_of("callback"), 0);
}

#[test]
fn a_failed_upgrade_leaves_the_canister_as_it_was_timer_included() {
    let mut w = world_with(Sim::builder().with_time_step(sim::ONE_SECOND_NS), 1, 0, 0);
    w.sim.update_call(w.probe, controller(), "prepare", vec![]).unwrap();
    let at = w.sim.time() + 3 * sim::ONE_SECOND_NS;
    w.sim.update_call(w.probe, controller(), "set_timer", at.to_le_bytes().to_vec()).unwrap();
    let before = probe_state(&mut w.sim, w.probe);
    let broken =
        wat::parse_str("(module (memory 1) (func (export \"canister_post_upgrade\") unreachable))").unwrap();
    let err = w.sim.upgrade_canister(w.probe, &broken, vec![], controller()).unwrap_err();
    assert!(err.to_string().contains("canister_post_upgrade trapped"), "{err}");
    assert_eq!(probe_state(&mut w.sim, w.probe), before);
    run_until_idle(&mut w.sim);
    let timer = w.sim.query_call(w.probe, controller(), "timer", vec![]).unwrap();
    assert_eq!(u32_at(&timer, 0), 1, "the old code's timer still fired");
}

/// What the simulator shows of itself and of `canisters`.
/// The cycles ledger's id: in no subnet's range, as on the IC.
fn outside_id() -> Principal {
    Principal::from_slice(&[0, 0, 0, 0, 2, 16, 0, 2, 1, 1])
}

/// Submits the probe's `pay` of `cycles` to `callee` and runs rounds until
/// the call reaches the outside.
fn pay_outside(sim: &mut Sim, probe: Principal, callee: Principal, cycles: u64) -> sim::OutsideCall {
    let mut arg = callee.as_slice().to_vec();
    arg.extend(cycles.to_le_bytes());
    sim.update_call(probe, controller(), "pay", arg).unwrap();
    for _ in 0..5 {
        if let [call] = sim.outside_calls().as_slice() {
            return call.clone();
        }
        sim.tick();
    }
    panic!("the call never reached the outside")
}

fn refunded(sim: &mut Sim, probe: Principal) -> u128 {
    let bytes = sim.query_call(probe, controller(), "refunded", vec![]).unwrap();
    u128::from_le_bytes(bytes.try_into().unwrap())
}

#[test]
fn a_canister_hosted_outside_is_called_and_answered_from_outside_with_its_refund() {
    let mut w = world(2, 0, 0);
    let outside = outside_id();
    w.sim.host_outside(outside, 1).unwrap();
    assert_eq!(w.sim.host_outside(w.probe, 0), Err(SimError::IdTaken(w.probe)));

    let call = pay_outside(&mut w.sim, w.probe, outside, 1_000_000);
    assert_eq!(
        (call.caller, call.callee, call.method.as_str(), call.cycles),
        (w.probe, outside, "ping", 1_000_000)
    );
    assert!(w.sim.outside_calls().is_empty(), "handed out once");
    assert!(w.sim.busy() || w.sim.outstanding().calls_in_flight == 1, "the caller's slot is held");
    assert!(w.sim.answer_outside(call.id, Ok(b"paid".to_vec()), 400_000));
    assert!(!w.sim.answer_outside(call.id, Ok(vec![]), 0), "answered once");
    run_until_idle(&mut w.sim);
    assert_eq!(refunded(&mut w.sim, w.probe), 600_000);
    assert_eq!(probe_state(&mut w.sim, w.probe).replies, 1);

    // A reject refunds what was not accepted, and survives a save on the way.
    let call = pay_outside(&mut w.sim, w.probe, outside, 5);
    let mut sim = restored(&encoded(&w.sim));
    let reject = sim::Reject::new(sim::ErrorCode::CanisterRejectedMessage, "no");
    assert!(sim.answer_outside(call.id, Err(reject), 0));
    run_until_idle(&mut sim);
    let state = probe_state(&mut sim, w.probe);
    assert_eq!((state.rejects, state.last_reject_code), (1, RejectCode::CanisterReject as u32));
    assert_eq!(refunded(&mut sim, w.probe), 5);
    assert_eq!(sim.outstanding(), sim::Outstanding::default());
}

/// A canister hosted on every subnet (as the management canister is): a
/// call to it is delivered on the caller's own subnet, whatever the latency
/// between subnets, and its answer comes back from there, a round later.
#[test]
fn a_canister_hosted_on_every_subnet_is_called_and_answered_on_the_callers_subnet() {
    let mut w = world_with(Sim::builder().with_xnet_latency_rounds(5), 2, 0, 0);
    let everywhere = outside_id();
    w.sim.host_on_every_subnet(everywhere).unwrap();
    assert_eq!(w.sim.host_on_every_subnet(w.probe), Err(SimError::IdTaken(w.probe)));
    let second = install(&mut w.sim, 1, PROBE);
    for (probe, subnet) in [(w.probe, 0), (second, 1)] {
        let mut arg = everywhere.as_slice().to_vec();
        arg.extend(7u64.to_le_bytes());
        // The call is made and delivered in the round that executes `pay`.
        w.sim.update_call(probe, controller(), "pay", arg).unwrap();
        let [call] = w.sim.outside_calls().try_into().expect("delivered at once");
        assert_eq!((call.caller, call.callee, call.subnet), (probe, everywhere, subnet));
        assert!(w.sim.answer_outside(call.id, Ok(vec![]), 2));
        w.sim.tick();
        assert_eq!(refunded(&mut w.sim, probe), 5, "answered in the next round, no latency");
        assert_eq!(probe_state(&mut w.sim, probe).replies, 1);
    }
    // Still hosted on every subnet after a restore.
    let mut sim = restored(&encoded(&w.sim));
    let mut arg = everywhere.as_slice().to_vec();
    arg.extend(1u64.to_le_bytes());
    sim.update_call(second, controller(), "pay", arg).unwrap();
    let [call] = sim.outside_calls().try_into().expect("delivered at once");
    assert_eq!(call.subnet, 1);
}

fn view(sim: &Sim, canisters: &[Principal]) -> Vec<String> {
    let mut view = vec![format!("{:?}", (sim.time(), sim.ticks(), sim.outstanding(), sim.subnets()))];
    for &id in canisters {
        view.push(format!(
            "{:?}",
            (
                sim.cycle_balance(id),
                sim.controllers(id),
                sim.canister_version(id),
                sim.env_vars(id),
                sim.stable_memory_size(id),
                sim.wasm_memory_size(id),
                sim.certified_data(id),
                sim.debug_log(id),
                sim.stats(id),
            )
        ));
    }
    view
}

#[test]
fn a_restored_simulator_keeps_every_canisters_state_and_goes_on() {
    let mut sim = Sim::builder().with_subnet().with_subnet().with_xnet_latency_rounds(1).build();
    let other = Principal::self_authenticating(b"second controller");
    let keeper = sim.create_canister(0, vec![controller(), other]).unwrap();
    sim.install_canister(keeper, &wat::parse_str(KEEPER).unwrap(), vec![], controller()).unwrap();
    let wasms = canister_wasm::caller_and_callee().unwrap();
    let caller = sim.create_canister(0, vec![controller()]).unwrap();
    let no_args = candid::encode_args(()).unwrap();
    sim.install_canister(caller, &wasms.caller, no_args.clone(), controller()).unwrap();
    let callee = sim.create_canister(1, vec![controller()]).unwrap();
    sim.install_canister(callee, &wasms.callee, no_args, controller()).unwrap();
    // The caller finds its callee in the variable icp-cli sets.
    sim.set_env_var(caller, "PUBLIC_CANISTER_ID:callee", &callee.to_text()).unwrap();
    let parallel_calls = |sim: &mut Sim, n: u64| -> u64 {
        let reply = sim.update_call(caller, controller(), "parallel_calls", candid::encode_one(n).unwrap());
        candid::decode_one(&reply.unwrap()).unwrap()
    };
    assert_eq!(parallel_calls(&mut sim, 20), 20);
    sim.update_call(keeper, controller(), "keep", "first".into()).unwrap();
    assert_eq!(sim.take_certified_data_changes(), [keeper, caller, callee]);
    sim.update_call(keeper, controller(), "keep", "second".into()).unwrap();
    let timer = sim.time() + 10;
    sim.update_call(keeper, controller(), "arm", timer.to_le_bytes().to_vec()).unwrap();
    sim.set_frozen_reserve_cycles(keeper, 1_000).unwrap();

    let mut restored = restored(&encoded(&sim));
    let canisters = [keeper, caller, callee];
    assert_eq!(view(&restored, &canisters), view(&sim, &canisters));
    assert_eq!(restored.take_certified_data_changes(), [keeper], "not taken before the save");
    assert_eq!(sim.take_certified_data_changes(), [keeper]);
    let state = restored.query_call(keeper, controller(), "state", vec![]).unwrap();
    assert_eq!(state, sim.query_call(keeper, controller(), "state", vec![]).unwrap());
    assert_eq!(u64::from_le_bytes(state[0..8].try_into().unwrap()), 2, "kept twice");
    assert_eq!(u32_at(&state, 8), 1.0f32.to_bits());
    assert_eq!(
        u64::from_le_bytes(state[12..20].try_into().unwrap()),
        0x7ff4_0000_0000_0002,
        "a NaN, bit for bit"
    );
    assert_eq!((u32_at(&state, 20), u32_at(&state, 24)), (0, 3), "no timer run yet; 3 pages");
    assert_eq!(&state[28..38], b"\x06\0\0\0second", "stable memory");
    assert_eq!(&state[64..], b"\x06\0\0\0second", "the heap");
    assert_eq!(restored.debug_log(keeper).unwrap(), ["first", "second"]);
    assert_eq!(restored.certified_data(keeper).unwrap(), b"second");
    assert_eq!(restored.env_vars(caller).unwrap()["PUBLIC_CANISTER_ID:callee"], callee.to_text());
    assert_eq!(restored.canister_version(keeper).unwrap(), 4, "installed, kept twice, armed");
    assert_eq!(restored.controllers(keeper).unwrap(), [controller(), other]);

    // Both go on alike: the timer fires, updates and calls across subnets run,
    // the settings may change.
    for sim in [&mut sim, &mut restored] {
        for _ in 0..15 {
            sim.tick();
        }
        sim.update_call(keeper, controller(), "keep", "third".into()).unwrap();
        assert_eq!(parallel_calls(sim, 30), 30);
        sim.set_env_var(keeper, "by", "the restored simulator").unwrap();
    }
    assert_eq!(restored.debug_log(keeper).unwrap(), ["first", "second", "timer", "third"]);
    let state = restored.query_call(keeper, controller(), "state", vec![]).unwrap();
    assert_eq!(state, sim.query_call(keeper, controller(), "state", vec![]).unwrap());
    assert_eq!(u32_at(&state, 20), 1, "the timer ran once");
    assert_eq!(view(&restored, &canisters), view(&sim, &canisters));
    assert_eq!(encoded(&restored), encoded(&sim));
}

/// Two subnets with calls in flight, open call contexts and callbacks, a
/// paused canister, and faults injected with their generators' state.
/// A snapshot puts back the canister's heap (grown since, too), globals,
/// stable memory and certified data, and a saved simulator keeps it.
#[test]
fn a_snapshot_puts_the_canister_back_and_survives_a_restore() {
    let mut sim = Sim::builder().with_subnet().build();
    let keeper = sim.create_canister(0, vec![controller()]).unwrap();
    sim.install_canister(keeper, &wat::parse_str(KEEPER).unwrap(), vec![], controller()).unwrap();
    sim.update_call(keeper, controller(), "keep", "first".into()).unwrap();
    let state = |sim: &mut Sim| sim.query_call(keeper, controller(), "state", vec![]).unwrap();
    let first = state(&mut sim);
    let size = sim.take_canister_snapshot(keeper, b"snap".to_vec()).unwrap();
    assert!(size > 2 * 65536, "two pages of heap, one of stable memory and the module: {size}");
    sim.update_call(keeper, controller(), "keep", "second one".into()).unwrap();
    assert_ne!(state(&mut sim), first);

    let mut sim = restored(&encoded(&sim));
    sim.load_canister_snapshot(keeper, b"snap").unwrap();
    assert_eq!(state(&mut sim), first, "heap, globals and stable memory as they were");
    assert_eq!(sim.certified_data(keeper).unwrap(), b"first");
    sim.update_call(keeper, controller(), "keep", "third".into()).expect("it runs on");
    sim.delete_canister_snapshot(keeper, b"snap").unwrap();
    let gone = sim.load_canister_snapshot(keeper, b"snap").unwrap_err();
    assert!(matches!(gone, SimError::NoSuchSnapshot { .. }), "{gone}");
}

fn busy_world() -> Sim {
    let mut w = world_with(Sim::builder().with_xnet_latency_rounds(3), 2, 2, 1);
    let traps = vec![Traps { canister: w.callees[0], rate: TrapRate::Fraction(0.3) }];
    let events = vec![Event { round: 9, canister: w.callees[1], action: Action::Stop }];
    let stalls = vec![Stall { subnet: 1, from_round: 4, rounds: 2 }];
    w.sim.inject_faults(Faults { seed: 5, traps, stalls, events, ..Faults::default() }).unwrap();
    let records =
        [record(w.callees[0], 40, Method::Ping, true), record(w.callees[1], 40, Method::Trap, false)];
    submit_fan_out(&mut w.sim, w.probe, &records);
    w.sim.pause_canister(w.callees[1], 3);
    w.sim.tick();
    w.sim.tick();
    let open = w.sim.outstanding();
    assert!(open.messages > 0 && open.call_contexts > 0 && open.calls_in_flight == 80, "{open:?}");
    w.sim
}

#[test]
fn saving_a_restored_simulator_gives_the_same_bytes() {
    let saved = busy_world().save().unwrap();
    // Plain data: a server may encode it on another thread.
    let bytes = std::thread::spawn(move || postcard::to_stdvec(&saved).unwrap()).join().unwrap();
    assert_eq!(encoded(&restored(&bytes)), bytes);
}

/// The bytes a saved simulator with something of every saved type encodes
/// to. It fails when a saved type changes: bump `SavedSim::FORMAT` (a state
/// file of the old layout must be refused, not misread), then the hash.
#[test]
fn the_saved_layout_is_pinned_by_its_format_number() {
    use sha2::Digest;
    let mut sim = busy_world();
    let keeper = sim.create_canister(1, vec![controller()]).unwrap();
    sim.install_canister(keeper, &wat::parse_str(KEEPER).unwrap(), vec![], controller()).unwrap();
    sim.update_call(keeper, controller(), "keep", "pinned".into()).unwrap();
    sim.take_canister_snapshot(keeper, b"pinned".to_vec()).unwrap();
    // A reject, with its error code, among the ingress outcomes.
    sim.update_call(keeper, controller(), "missing", vec![]).unwrap_err();
    let probe = sim::canister_id(0);
    sim.host_outside(outside_id(), 0).unwrap();
    pay_outside(&mut sim, probe, outside_id(), 7);
    // A canister hosted on every subnet, and a call to it waiting.
    let everywhere = sim::canister_id(0xe0e0);
    sim.host_on_every_subnet(everywhere).unwrap();
    pay_outside(&mut sim, probe, everywhere, 3);
    let pinned = (sim::SavedSim::FORMAT, hex::encode(sha2::Sha256::digest(encoded(&sim))));
    assert_eq!(
        pinned,
        (10, "1b78e311f8ff12e15ab4104faab532c8804f11d685f9691fe35f560a423f993b".to_string()),
        "a saved type changed: bump SavedSim::FORMAT, then this hash"
    );
}

/// A canister whose `grow` adds `n` (a u32) pages to its memory, each written.
const GROWER: &str = r#"(module
  (import "ic0" "msg_arg_data_copy" (func $copy (param i32 i32 i32)))
  (import "ic0" "msg_reply" (func $reply))
  (memory 1)
  (func (export "canister_update grow") (local $page i32) (local $end i32)
    (call $copy (i32.const 0) (i32.const 0) (i32.const 4))
    (local.set $page (memory.grow (i32.load (i32.const 0))))
    (local.set $end (memory.size))
    (block $done (loop $pages
      (br_if $done (i32.ge_u (local.get $page) (local.get $end)))
      (i32.store (i32.mul (local.get $page) (i32.const 65536)) (i32.const 1))
      (local.set $page (i32.add (local.get $page) (i32.const 1)))
      (br $pages)))
    (call $reply)))"#;

#[test]
fn a_restore_is_refused_past_its_budget_or_with_subnets_or_a_configuration() {
    let mut sim = Sim::builder().with_subnet().build();
    // Restored in this order: the probe's stable memory, its heap, the grower's.
    let probe = install(&mut sim, 0, PROBE);
    sim.update_call(probe, controller(), "prepare", vec![]).unwrap();
    let grower = install(&mut sim, 0, GROWER);
    sim.update_call(grower, controller(), "grow", 99u32.to_le_bytes().to_vec()).unwrap();
    let bytes = encoded(&sim);
    let saved = || postcard::from_bytes(&bytes).unwrap();

    let budget = HostMemory::new(16 << 20);
    let err = Sim::builder().with_host_memory(&budget).restore(saved()).err().unwrap();
    let expected = format!(
        "cannot restore the simulator: canister {grower}: growing linear memory by 6.1 MiB would take 18.5 MiB (3 copies) of the simulator's host-memory budget of 16 MiB"
    );
    assert!(err.to_string().starts_with(&expected), "{err}");
    assert_eq!(budget.used(), 0, "a refused restore holds nothing");
    let err = Sim::builder().with_host_memory_budget(100 << 10).restore(saved()).err().unwrap();
    assert!(err.to_string().contains("stable memory of 64 KiB would take 192 KiB"), "{err}");

    let sim = Sim::builder().with_host_memory_budget(64 << 20).restore(saved()).unwrap();
    assert_eq!(sim.config().host_memory_budget, 64 << 20, "the builder's budget");
    assert_eq!(sim.wasm_memory_size(grower).unwrap(), 100 << 16);
    assert_eq!(sim.stable_memory_size(probe).unwrap(), 1 << 16);

    let refusal = "cannot restore the simulator: its subnets and configuration are the saved ones: give the builder neither";
    let builders = [
        Sim::builder().with_subnet(),
        Sim::builder().with_config(SimConfig::default()),
        Sim::builder().with_time_step(sim::ONE_SECOND_NS),
        Sim::builder().with_xnet_latency_rounds(1),
    ];
    for builder in builders {
        assert_eq!(builder.restore(saved()).err().unwrap().to_string(), refusal);
    }
}
