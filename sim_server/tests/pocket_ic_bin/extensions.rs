//! This project's extensions (`/instances/<id>/_/`): latency and faults,
//! through `ic-sim-client`.

use candid::{Decode, Encode, Principal};
use ic_sim_client::SimulatorExt;
use ic_sim_client::api::{Action, Blob, FaultSpec, Open, SetLatency};
use pocket_ic::{PocketIc, PocketIcBuilder};

use crate::user;

/// This project's extension (`/instances/<id>/_/latency`): told
/// `mainnet`, an instance makes the example's calls to another subnet take
/// 2 rounds each way; told back, one round trip a round again. A bad value
/// is refused with the reason, and nothing changes.
pub fn an_instance_takes_mainnets_rounds_between_subnets_when_told() {
    let wasms = canister_wasm::caller_and_callee().expect("canister wasm");
    let pic = PocketIcBuilder::new().with_application_subnet().with_application_subnet().build();
    let subnets = pic.topology().get_app_subnets();
    let caller = pic.create_canister_on_subnet(Some(user()), None, subnets[0]);
    let callee = pic.create_canister_on_subnet(Some(user()), None, subnets[1]);
    for (canister, wasm) in [(callee, wasms.callee), (caller, wasms.caller)] {
        pic.add_cycles(canister, 2_000_000_000_000);
        pic.install_canister(canister, wasm, Encode!().unwrap(), Some(user()));
    }
    pic.update_call(caller, user(), "setup_callee", Encode!(&callee).unwrap()).expect("setup_callee");
    let rounds_for_ten_sequential_calls = || {
        let call = pic.submit_call(caller, user(), "sequential_calls", Encode!(&10u64).unwrap()).unwrap();
        let ticks_before = (0..).find(|_| {
            pic.tick();
            pic.ingress_status(call.clone()).is_some()
        });
        ticks_before.expect("it finishes") + 1
    };
    let latency = pic.get_server_url().join(&format!("instances/{}/_/latency", pic.instance_id())).unwrap();
    let client = reqwest::blocking::Client::new();
    let set = |body: &str| {
        let answer =
            client.post(latency.clone()).header("content-type", "application/json").body(body.to_string());
        let answer = answer.send().expect("an answer");
        (answer.status().as_u16(), answer.text().unwrap())
    };
    let got = || client.get(latency.clone()).send().unwrap().text().unwrap();
    assert_eq!(got(), r#"{"profile":"pocket-ic","xnet_latency_rounds":0}"#);
    let pocket_ic = rounds_for_ten_sequential_calls();
    assert_eq!(
        set(r#"{"profile":"mainnet"}"#),
        (200, r#"{"profile":"mainnet","xnet_latency_rounds":2}"#.into())
    );
    let mainnet = rounds_for_ten_sequential_calls();
    // 10 round trips of at least 4 rounds each, against about 1 each.
    assert!(
        mainnet >= 40 && pocket_ic <= 15,
        "{pocket_ic} rounds on PocketIC's profile, {mainnet} on mainnet's"
    );
    let (status, why) = set(r#"{"xnet_latency_rounds":5000}"#);
    assert_eq!(status, 400);
    assert!(why.contains("more than 1000"), "{why}");
    assert_eq!(set(r#"{"profile":"pocket-ic"}"#).0, 200);
    assert_eq!(rounds_for_ten_sequential_calls(), pocket_ic);
}

/// This project's extension (`/instances/<id>/_/faults`), through
/// `ic-sim-client`: the callee traps on every 2nd execution, so 5 of the
/// example's 10 sequential calls fail, and the report accounts for each;
/// an event stops it and the log says when; an upgrade to its own module
/// keeps its count; turned off, all 10 succeed. A spec naming no canister
/// of the instance is refused with the reason.
pub fn seeded_faults_are_turned_on_and_off_through_the_extension() {
    let wasms = canister_wasm::caller_and_callee().expect("canister wasm");
    let pic = PocketIc::new();
    let (caller, callee) = (pic.create_canister(), pic.create_canister());
    for (canister, wasm) in [(callee, wasms.callee), (caller, wasms.caller)] {
        pic.add_cycles(canister, 2_000_000_000_000);
        pic.install_canister(canister, wasm, Encode!().unwrap(), None);
    }
    pic.update_call(caller, Principal::anonymous(), "setup_callee", Encode!(&callee).unwrap()).unwrap();
    let succeeded = || {
        let reply = pic
            .update_call(caller, Principal::anonymous(), "sequential_calls", Encode!(&10u64).unwrap())
            .unwrap();
        Decode!(&reply, u64).unwrap()
    };
    let pings_received = || {
        let reply = pic.query_call(callee, Principal::anonymous(), "pings_received", Encode!().unwrap());
        Decode!(&reply.unwrap(), u64).unwrap()
    };
    assert_eq!(succeeded(), 10, "no fault by default");
    pic.inject_faults(&FaultSpec::seeded(0).trap_every(callee, 2)).unwrap();
    assert_eq!(succeeded(), 5, "every 2nd ping traps");
    // Every call accounted for: 5 traps on the callee, 5 rejects (code 5)
    // at the caller, nothing open.
    let report = pic.faults_report().unwrap();
    assert_eq!(report.canister(callee).unwrap().traps, 5, "{report:?}");
    assert_eq!(report.canister(caller).unwrap().rejects(5), 5, "{report:?}");
    let pair = &report.canister(caller).unwrap().calls_to;
    assert_eq!((pair.len(), pair[0].callee, pair[0].calls_performed), (1, callee, 20), "{report:?}");
    assert_eq!(pair[0].rejects(5), 5, "{report:?}");
    assert_eq!(report.outstanding, Open::default(), "{report:?}");
    let upgraded_and_stopped = FaultSpec::default()
        .event(callee, 1, Action::Upgrade { wasm: None, arg: Blob(Encode!().unwrap()) })
        .event(callee, 1, Action::Stop);
    pic.inject_faults(&upgraded_and_stopped).unwrap();
    pic.tick();
    pic.tick();
    let log = pic.faults_report().unwrap().log;
    assert_eq!(log.len(), 2, "{log:?}");
    assert!(
        log[0].ends_with(&format!("upgraded {callee}")) && log[1].ends_with(&format!("stopped {callee}"))
    );
    assert_eq!(succeeded(), 0, "a stopped callee answers nothing");
    pic.clear_faults().unwrap();
    pic.start_canister(callee, None).unwrap();
    assert_eq!(pings_received(), 15, "its count survives the upgrade");
    assert_eq!(succeeded(), 10, "turned off");
    // Rounds to the end of time are taken as such, not as a crash.
    let subnet = pic.get_subnet(callee).unwrap();
    let forever =
        FaultSpec::default().stall(subnet, u64::MAX, u64::MAX).event(callee, u64::MAX, Action::Stop);
    pic.inject_faults(&forever).unwrap();
    assert_eq!(succeeded(), 10, "nothing is due before the end of time");
    pic.clear_faults().unwrap();
    let stranger = Principal::from_slice(&[9; 10]);
    match pic.inject_faults(&FaultSpec::default().trap_every(stranger, 2)) {
        Err(ic_sim_client::Error::Refused { status, message, .. }) => {
            assert_eq!(status, 400);
            assert!(message.contains(&stranger.to_string()), "{message}");
        }
        other => panic!("a stranger's trap: {other:?}"),
    }
    // The same endpoints, awaited.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        use ic_sim_client::nonblocking::SimulatorExt as _;
        let pic = pocket_ic::nonblocking::PocketIc::new().await;
        let latency = pic.set_latency(SetLatency::MAINNET).await.unwrap();
        assert_eq!(latency.xnet_latency_rounds, sim::MAINNET_XNET_LATENCY_ROUNDS);
        assert_eq!(pic.latency().await.unwrap(), latency);
        assert_eq!(pic.faults_report().await.unwrap().outstanding, Open::default());
        pic.drop().await;
    });
}
