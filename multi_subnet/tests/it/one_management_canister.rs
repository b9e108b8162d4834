//! One management canister under every path: the same calls, in the same
//! order, through the harness's `--engine sim` (the IC model over the
//! simulator, in-process) and through `serve` (PocketIC's REST API, with
//! the pocket-ic client), get the same answers: the same replies, and the
//! same error codes for what a stranger may not do.

use candid::{Encode, Principal};
use ic_management_canister_types::{CanisterIdRecord, CanisterStatusResult, CanisterStatusType};
use ic_reject::ErrorCode;
use multi_subnet::engines::pocket_ic::{PocketIcEngine, Server};
use multi_subnet::engines::sim::sim_engine;
use multi_subnet::engines::{Effective, Engine, TimeStep};

fn controller() -> Principal {
    Principal::from_slice(&[0xc0; 29])
}

fn stranger() -> Principal {
    Principal::from_slice(&[0x57; 29])
}

/// What a call got, as the two paths are compared: the canister's status
/// for `canister_status`, `Ok` for another reply, or the error code.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Ok,
    Status(CanisterStatusType),
    Refused(ErrorCode),
}

/// A method, who calls it, and what the IC answers.
type Call = (&'static str, fn() -> Principal, Answer);

/// The calls, in order.
const TABLE: &[Call] = &[
    ("canister_status", controller, Answer::Status(CanisterStatusType::Running)),
    ("canister_status", stranger, Answer::Refused(ErrorCode::CanisterInvalidController)),
    ("stop_canister", stranger, Answer::Refused(ErrorCode::CanisterInvalidController)),
    ("delete_canister", controller, Answer::Refused(ErrorCode::CanisterNotStopped)),
    ("stop_canister", controller, Answer::Ok),
    ("canister_status", controller, Answer::Status(CanisterStatusType::Stopped)),
    ("delete_canister", stranger, Answer::Refused(ErrorCode::CanisterInvalidController)),
    ("start_canister", stranger, Answer::Refused(ErrorCode::CanisterInvalidController)),
    ("delete_canister", controller, Answer::Ok),
    ("canister_status", controller, Answer::Refused(ErrorCode::CanisterNotFound)),
];

/// Creates and installs the callee on `engine`, then makes the table's calls.
fn answers(engine: &mut dyn Engine) -> Vec<Answer> {
    let wasms = canister_wasm::caller_and_callee().expect("canister wasm");
    let canister = engine.create_canister(0, controller()).unwrap();
    engine.install(canister, &wasms.callee, controller()).unwrap();
    let arg = Encode!(&CanisterIdRecord { canister_id: canister }).unwrap();
    TABLE
        .iter()
        .map(|(method, sender, _)| {
            match engine
                .call_management(Effective::Canister(canister), sender(), method, arg.clone())
                .unwrap()
            {
                Ok(reply) if *method == "canister_status" => {
                    Answer::Status(candid::decode_one::<CanisterStatusResult>(&reply).unwrap().status)
                }
                Ok(_) => Answer::Ok,
                Err(reject) => Answer::Refused(reject.error_code),
            }
        })
        .collect()
}

#[test]
fn the_harness_and_serve_meet_the_same_management_canister() {
    let mut in_process = sim_engine(sim::Sim::builder().with_subnets(1).build());
    let server = sim_server::Running::start().expect("the server starts");
    let url = url::Url::parse(&server.url).unwrap();
    let mut served = PocketIcEngine::start_with_time_step(Server::Url(url), 1, TimeStep::POCKET_IC).unwrap();
    let expected: Vec<&Answer> = TABLE.iter().map(|(_, _, answer)| answer).collect();
    for (path, engine) in [("--engine sim", &mut in_process as &mut dyn Engine), ("serve", &mut served)] {
        let answers = answers(engine);
        let calls = TABLE.iter().zip(answers.iter().zip(&expected));
        for ((method, sender, _), (got, wanted)) in calls {
            assert_eq!(&got, wanted, "{path}: {method} from {}", sender());
        }
    }
}
