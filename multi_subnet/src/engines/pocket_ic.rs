//! A PocketIC instance with application subnets, through the pocket-ic
//! client: on a PocketIC server binary, or on whatever serves PocketIC's
//! REST API at a URL.

use anyhow::anyhow;
use candid::Principal;
use pocket_ic::common::rest::{RawEffectivePrincipal, RawMessageId};
use pocket_ic::{PocketIc, PocketIcBuilder};
use url::Url;

use super::pocket_ic_server::PocketIcServer;
use super::{CanisterCall, Effective, Engine, EngineKind, Interface, Reject, TimeStep};
use ic_reject::ErrorCode;
use ic_sim_client::SimulatorExt;
use ic_sim_client::api::{FaultReport, FaultSpec, SetLatency};
use std::collections::BTreeMap;
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

/// How long connecting to a server at --pocket-ic-url may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

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
        Server::Binary(binary) => binary.to_string(),
        Server::Url(url) => format!("the pocket-ic client against the PocketIC REST API at {url}"),
    }
}

pub struct PocketIcEngine {
    server: Server,
    pic: PocketIc,
    /// Application subnets in ascending id byte order.
    subnets: Vec<Principal>,
    /// The messages submitted and not forgotten, by ticket.
    submitted: BTreeMap<u64, RawMessageId>,
    next_ticket: u64,
    /// Added to the 1 ns a PocketIC tick advances, so that a round takes `step`.
    extra_time_per_tick: Duration,
}

impl PocketIcEngine {
    /// Starts an instance with `subnets` application subnets on `server`.
    /// Uses the blocking client, which runs its own tokio runtime: it must
    /// not be called from inside another runtime.
    pub fn start(server: Server, subnets: usize) -> anyhow::Result<Self> {
        Self::start_with_time_step(server, subnets, TimeStep::POCKET_IC)
    }

    pub fn start_with_time_step(server: Server, subnets: usize, step: TimeStep) -> anyhow::Result<Self> {
        if let Server::Url(url) = &server {
            reachable(url)?;
        }
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
        Ok(Self { server, pic, subnets, submitted: BTreeMap::new(), next_ticket: 0, extra_time_per_tick })
    }
}

impl Interface for PocketIcEngine {
    fn description(&self) -> String {
        describe(&self.server)
    }

    fn time(&self) -> u64 {
        self.pic.get_time().as_nanos_since_unix_epoch()
    }

    fn advance_time_to(&mut self, ns: u64) {
        if ns > self.time() {
            self.pic.set_time(pocket_ic::Time::from_nanos_since_unix_epoch(ns));
        }
    }

    fn submit(&mut self, effective: Effective, call: CanisterCall) -> Result<u64, Reject> {
        let effective = match effective {
            Effective::None => RawEffectivePrincipal::None,
            Effective::Subnet(id) => RawEffectivePrincipal::SubnetId(id.as_slice().to_vec()),
            Effective::Canister(id) => RawEffectivePrincipal::CanisterId(id.as_slice().to_vec()),
        };
        let CanisterCall { canister, sender, method, arg } = call;
        let id = self.pic.submit_call_with_effective_principal(canister, effective, sender, &method, arg);
        let id = id.map_err(reject)?;
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        self.submitted.insert(ticket, id);
        Ok(ticket)
    }

    fn outcome(&self, ticket: u64) -> Option<Result<Vec<u8>, Reject>> {
        let raw = self.submitted.get(&ticket)?.clone();
        self.pic.ingress_status(raw).map(|outcome| outcome.map_err(reject))
    }

    fn forget(&mut self, ticket: u64) {
        // PocketIC keeps every status; the engine forgets how to ask.
        if self.outcome(ticket).is_some() {
            self.submitted.remove(&ticket);
        }
    }

    fn tick(&mut self) {
        if !self.extra_time_per_tick.is_zero() {
            self.pic.advance_time(self.extra_time_per_tick);
        }
        self.pic.tick();
    }

    fn query(&mut self, call: CanisterCall) -> Result<Vec<u8>, Reject> {
        self.pic.query_call(call.canister, call.sender, &call.method, call.arg).map_err(reject)
    }
}

impl Engine for PocketIcEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::PocketIc
    }

    fn subnets(&self) -> Vec<Principal> {
        self.subnets.clone()
    }

    fn cycle_balance(&mut self, canister: Principal) -> anyhow::Result<u128> {
        Ok(self.pic.cycle_balance(canister))
    }

    // Through this project's extensions: only the simulator behind the
    // API serves them; PocketIC's server answers with `NotServed`.
    fn set_xnet_latency_rounds(&mut self, xnet_latency_rounds: u64) -> anyhow::Result<()> {
        self.pic.set_latency(SetLatency::Rounds { xnet_latency_rounds })?;
        Ok(())
    }

    fn inject_faults(&mut self, spec: &FaultSpec) -> anyhow::Result<()> {
        Ok(self.pic.inject_faults(spec)?)
    }

    fn fault_report(&mut self) -> anyhow::Result<FaultReport> {
        Ok(self.pic.faults_report()?)
    }
}

/// Fails, in one line, if nothing listens at `url`: the client panics
/// on such a server, several lines long.
fn reachable(url: &Url) -> anyhow::Result<()> {
    let addresses = url.socket_addrs(|| None).map_err(|e| anyhow!("{url}: {e}"))?;
    let mut why = format!("{url} names no address");
    for address in addresses {
        match std::net::TcpStream::connect_timeout(&address, CONNECT_TIMEOUT) {
            Ok(_) => return Ok(()),
            Err(e) => why = e.to_string(),
        }
    }
    Err(anyhow!("nothing serves PocketIC's REST API at {url}: {why}"))
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
