//! A PocketIC instance with application subnets, through the pocket-ic
//! client: on a PocketIC server binary, or on whatever serves PocketIC's
//! REST API at a URL.

use anyhow::{Context, Result, anyhow};
use candid::Principal;
use pocket_ic::common::rest::{RawEffectivePrincipal, RawMessageId};
use pocket_ic::{PocketIc, PocketIcBuilder};
use url::Url;

use super::pocket_ic_server::PocketIcServer;
use super::{Engine, EngineKind, IngressId, IngressOutcome, Reject, TimeStep};
use ic_reject::ErrorCode;
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

/// How long a PocketIC server may take to start.
const SERVER_START_TIMEOUT: Duration = Duration::from_secs(60);

/// What the client talks to.
#[derive(Clone, Debug)]
pub enum Server {
    /// A PocketIC server binary the client starts.
    Binary(PocketIcServer),
    /// A server already running (`--pocket-ic-url`), described by its URL
    /// alone: it may be PocketIC or `multi_subnet serve`.
    Url(Url),
}

/// How reports name this engine.
pub fn describe(server: &Server) -> String {
    match server {
        Server::Binary(binary) => format!("PocketIC server {} ({})", binary.version, binary.path.display()),
        Server::Url(url) => format!("the pocket-ic client against the PocketIC REST API at {url}"),
    }
}

pub struct PocketIcEngine {
    server: Server,
    pic: PocketIc,
    /// Application subnets in ascending id byte order.
    subnets: Vec<Principal>,
    submitted: Vec<RawMessageId>,
    /// Added to the 1 ns a PocketIC tick advances, so that a round takes `step`.
    extra_time_per_tick: Duration,
}

impl PocketIcEngine {
    /// Starts an instance with `subnets` application subnets on `server`.
    /// Uses the blocking client, which runs its own tokio runtime: it must
    /// not be called from inside another runtime.
    pub fn start(server: Server, subnets: usize) -> Result<Self> {
        Self::start_with_time_step(server, subnets, TimeStep::POCKET_IC)
    }

    pub fn start_with_time_step(server: Server, subnets: usize, step: TimeStep) -> Result<Self> {
        let mut builder = match &server {
            Server::Binary(binary) => PocketIcBuilder::new().with_server_binary(binary.path.clone()),
            Server::Url(url) => PocketIcBuilder::new().with_server_url(url.clone()),
        };
        for _ in 0..subnets {
            builder = builder.with_application_subnet();
        }
        // The crate waits for a server that never starts without a limit.
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = sender.send(builder.build());
        });
        let pic = receiver.recv_timeout(SERVER_START_TIMEOUT).map_err(|e| match e {
            RecvTimeoutError::Timeout => {
                anyhow!(
                    "{} did not start an instance within {} s",
                    describe(&server),
                    SERVER_START_TIMEOUT.as_secs()
                )
            }
            // The client panics on a server it cannot reach; the panic said why.
            RecvTimeoutError::Disconnected => anyhow!("{} could not start an instance", describe(&server)),
        })?;
        let mut subnets = pic.topology().get_app_subnets();
        subnets.sort_by(|a, b| a.as_slice().cmp(b.as_slice()));
        let extra_time_per_tick = Duration::from_nanos(step.0.saturating_sub(TimeStep::POCKET_IC.0));
        Ok(Self { server, pic, subnets, submitted: vec![], extra_time_per_tick })
    }
}

impl Engine for PocketIcEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::PocketIc
    }

    fn description(&self) -> String {
        describe(&self.server)
    }

    fn subnet_count(&self) -> usize {
        self.subnets.len()
    }

    fn create_canister(&mut self, subnet: usize, controller: Principal) -> Result<Principal> {
        let subnet_id = *self
            .subnets
            .get(subnet)
            .ok_or_else(|| anyhow!("no subnet {subnet}: there are {}", self.subnets.len()))?;
        Ok(self.pic.create_canister_on_subnet(Some(controller), None, subnet_id))
    }

    fn install(&mut self, canister: Principal, wasm: &[u8], controller: Principal) -> Result<()> {
        let arg = candid::encode_args(()).context("encoding the empty init argument")?;
        self.pic.install_canister(canister, wasm.to_vec(), arg, Some(controller));
        Ok(())
    }

    fn submit(
        &mut self,
        canister: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<IngressId> {
        let id = self
            .pic
            .submit_call(canister, sender, method, arg)
            .map_err(|e| anyhow!("PocketIC refused {method}: {}", e.reject_message))?;
        self.submitted.push(id);
        Ok(IngressId(self.submitted.len() - 1))
    }

    fn tick(&mut self) {
        if !self.extra_time_per_tick.is_zero() {
            self.pic.advance_time(self.extra_time_per_tick);
        }
        self.pic.tick();
    }

    fn cycle_balance(&mut self, canister: Principal) -> Result<u128> {
        Ok(self.pic.cycle_balance(canister))
    }

    fn call_management(
        &mut self,
        target: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<IngressOutcome> {
        let effective = RawEffectivePrincipal::CanisterId(target.as_slice().to_vec());
        let management = Principal::management_canister();
        Ok(self
            .pic
            .update_call_with_effective_principal(management, effective, sender, method, arg)
            .map_err(reject))
    }

    fn query(
        &mut self,
        canister: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> IngressOutcome {
        self.pic.query_call(canister, sender, method, arg).map_err(reject)
    }

    fn ingress_status(&mut self, id: IngressId) -> Option<IngressOutcome> {
        let raw = self.submitted[id.0].clone();
        self.pic.ingress_status(raw).map(|outcome| outcome.map_err(reject))
    }
}

/// PocketIC's reject as the harness's, at this engine's edge: its error
/// code, found by its number. One that `ic-error-types` does not know yet
/// becomes a code of the same reject code.
fn reject(e: pocket_ic::RejectResponse) -> Reject {
    let error_code = ic_reject::error_code(e.error_code as u64).unwrap_or(match e.reject_code {
        pocket_ic::RejectCode::SysFatal => ErrorCode::SubnetOversubscribed,
        pocket_ic::RejectCode::SysTransient => ErrorCode::CanisterQueueFull,
        pocket_ic::RejectCode::DestinationInvalid => ErrorCode::CanisterNotFound,
        pocket_ic::RejectCode::CanisterReject => ErrorCode::CanisterRejectedMessage,
        pocket_ic::RejectCode::CanisterError => ErrorCode::CanisterCalledTrap,
        pocket_ic::RejectCode::SysUnknown => ErrorCode::ResponseDropped,
    });
    Reject::new(error_code, e.reject_message)
}
