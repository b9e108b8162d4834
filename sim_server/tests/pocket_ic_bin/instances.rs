//! Instances as the pocket-ic client starts them: the example, one server
//! per test process, PocketIC's subnets, time, and what is not served.

use candid::{Decode, Encode, Principal};
use pocket_ic::common::rest::SubnetKind;
use pocket_ic::{PocketIc, PocketIcBuilder};

use crate::user;

/// The caller and the callee on a fresh instance, and the example's
/// sequential calls.
pub fn a_new_instance_runs_the_example() {
    let wasms = canister_wasm::caller_and_callee().expect("canister wasm");
    let pic = PocketIc::new();
    let caller = pic.create_canister_with_settings(Some(user()), None);
    let callee = pic.create_canister_with_settings(Some(user()), None);
    pic.add_cycles(caller, 2_000_000_000_000);
    pic.add_cycles(callee, 2_000_000_000_000);
    pic.install_canister(callee, wasms.callee, Encode!().unwrap(), Some(user()));
    pic.install_canister(caller, wasms.caller, Encode!().unwrap(), Some(user()));
    pic.update_call(caller, user(), "setup_callee", Encode!(&callee).unwrap()).expect("setup_callee");
    let reply =
        pic.update_call(caller, user(), "sequential_calls", Encode!(&10u64).unwrap()).expect("replied");
    assert_eq!(Decode!(&reply, u64).unwrap(), 10, "every call succeeded");
    let reply = pic.query_call(callee, user(), "pings_received", Encode!().unwrap()).expect("a query");
    assert_eq!(Decode!(&reply, u64).unwrap(), 10);
}

/// The client starts a server per test, all with the test process's port
/// file: the first owns it, the others end at once, and every instance is
/// on the first one's server.
pub fn instances_of_one_test_process_share_one_server() {
    let (a, b) = (PocketIcBuilder::new().with_application_subnet().build(), PocketIc::new());
    assert_eq!(a.get_server_url(), b.get_server_url());
    let canister = a.create_canister();
    assert_eq!(a.get_controllers(canister), [Principal::anonymous()]);
    assert!(b.get_subnet(canister).is_none(), "instances share nothing: {canister} is a's alone");
}

/// An endpoint the simulator does not serve is answered with what it is.
pub fn what_it_does_not_support_says_what_it_is() {
    let pic = PocketIc::new();
    let url =
        pic.get_server_url().join(&format!("instances/{}/read/not_an_endpoint", pic.instance_id())).unwrap();
    let body = reqwest::blocking::get(url).expect("an answer").text().expect("a body");
    assert!(body.contains(sim_server::DESCRIPTION), "{body}");
}

/// PocketIC's NNS and II subnets hold mainnet's ranges: a canister created
/// at the NNS registry's id is on the NNS subnet, runs there, and its id
/// cannot be taken twice; a canister created with no placement is on the
/// application subnet.
pub fn nns_ii_and_application_subnets_with_canisters_at_given_ids() {
    let pic = PocketIcBuilder::new().with_nns_subnet().with_ii_subnet().with_application_subnet().build();
    let topology = pic.topology();
    let kinds: Vec<_> = topology.subnet_configs.values().map(|c| c.subnet_kind).collect();
    for kind in [SubnetKind::NNS, SubnetKind::II, SubnetKind::Application] {
        assert_eq!(kinds.iter().filter(|&&k| k == kind).count(), 1, "one {kind:?} subnet in {kinds:?}");
    }
    let (nns, ii) = (topology.get_nns().expect("an NNS subnet"), topology.get_ii().expect("an II subnet"));
    let registry = Principal::from_text("rwlgt-iiaaa-aaaaa-aaaaa-cai").unwrap();
    let internet_identity = Principal::from_text("rdmx6-jaaaa-aaaaa-aaadq-cai").unwrap();
    assert_eq!(topology.get_subnet(registry), Some(nns));
    assert_eq!(topology.get_subnet(internet_identity), Some(ii));

    let created = pic.create_canister_with_id(Some(user()), None, registry).expect("created at its id");
    assert_eq!(created, registry);
    assert_eq!(pic.get_subnet(registry), Some(nns));
    let wasms = canister_wasm::caller_and_callee().expect("canister wasm");
    pic.install_canister(registry, wasms.callee, Encode!().unwrap(), Some(user()));
    pic.update_call(registry, user(), "ping", Encode!().unwrap()).expect("it runs on the NNS subnet");
    let again = pic.create_canister_with_id(Some(user()), None, registry).unwrap_err();
    assert!(again.contains("already exists"), "{again}");
    assert_eq!(pic.create_canister_with_id(None, None, internet_identity), Ok(internet_identity));
    assert_eq!(pic.get_subnet(internet_identity), Some(ii));

    let anywhere = pic.create_canister();
    assert_eq!(
        pic.get_subnet(anywhere),
        topology.get_app_subnets().first().copied(),
        "no placement: application"
    );
}

/// `set_certified_time` moves the time on, as `set_time` does.
pub fn certified_time_is_the_time_set() {
    let pic = PocketIc::new();
    let later = pic.get_time() + std::time::Duration::from_secs(3600);
    pic.set_certified_time(later);
    assert_eq!(pic.get_time(), later);
}
