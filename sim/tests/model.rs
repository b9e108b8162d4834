//! The model, tested with the WAT fixtures: queues, call contexts,
//! rollback, instructions, canister management.

mod common;

use candid::Principal;
use common::*;
use sim::{RejectCode, Sim};

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
    assert_eq!(err.code, RejectCode::CanisterError);
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
    assert_eq!(err.code, RejectCode::CanisterError);
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
    w.sim.stop_canister(callee, controller()).unwrap();
    submit_fan_out(&mut w.sim, w.probe, &[record(callee, 2, Method::Ping, false)]);
    run_until_idle(&mut w.sim);
    let state = probe_state(&mut w.sim, w.probe);
    assert_eq!((state.rejects, state.last_reject_code), (2, RejectCode::CanisterError as u32));

    w.sim.delete_canister(callee, controller()).unwrap();
    submit_fan_out(&mut w.sim, w.probe, &[record(callee, 3, Method::Ping, false)]);
    run_until_idle(&mut w.sim);
    let state = probe_state(&mut w.sim, w.probe);
    assert_eq!((state.rejects, state.last_reject_code), (5, RejectCode::DestinationInvalid as u32));
}

#[test]
fn a_deleted_callee_on_another_subnet_is_answered_by_its_subnet_a_round_trip_later() {
    let mut w = world(2, 1, 1);
    let callee = w.callees[0];
    w.sim.stop_canister(callee, controller()).unwrap();
    w.sim.delete_canister(callee, controller()).unwrap();
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
    w.sim.stop_canister(w.probe, controller()).unwrap();
    let reject = w.sim.query_call(w.probe, controller(), "timer", vec![]).unwrap_err();
    assert_eq!(reject.code, RejectCode::CanisterError);
    assert!(reject.message.contains("is stopped"), "{}", reject.message);

    w.sim.start_canister(w.probe, controller()).unwrap();
    assert!(w.sim.query_call(w.probe, controller(), "timer", vec![]).is_ok());
}

#[test]
fn only_controllers_manage_canisters() {
    let mut w = world(1, 1, 0);
    let stranger = Principal::self_authenticating(b"stranger");
    let wasm = wat::parse_str(CALLEE).unwrap();
    for result in [
        w.sim.stop_canister(w.callees[0], stranger),
        w.sim.upgrade_canister(w.callees[0], &wasm, vec![], stranger),
        w.sim.set_env_var(w.callees[0], stranger, "A", "B"),
    ] {
        assert!(result.unwrap_err().to_string().contains("only a controller"));
    }
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
    assert_eq!(err.code, RejectCode::CanisterError);
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
