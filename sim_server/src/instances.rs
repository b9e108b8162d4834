//! The instance store: each instance is a simulator on a thread of its own
//! (the simulator is not `Send`), which serves its requests in order.

use candid::Principal;
use engine_thread::{EngineThread, Reason};
use pocket_ic::common::rest::{InitialTime, InstanceConfig, InstanceId, SubnetKind, Topology};
use sim::{HostMemory, Sim, SimConfig};
use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::errors::ApiError;
use crate::instance::{self, Instance};
use crate::live::Remote;
use crate::{subnets, topology};
use std::time::Duration;

/// What every instance's simulator may use: the host-memory budget they
/// all share (one hostile instance cannot take the host's memory from the
/// others), and the instructions one message may execute.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub host_memory_budget: u64,
    pub max_instructions_per_message: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            host_memory_budget: sim::DEFAULT_HOST_MEMORY_BUDGET,
            max_instructions_per_message: SimConfig::default().max_instructions_per_message,
        }
    }
}

/// The instances, and the limits they share. An instance is `None` once
/// deleted: its thread and simulator are gone.
pub struct Store {
    instances: Mutex<BTreeMap<InstanceId, Option<EngineThread<Instance>>>>,
    host_memory: HostMemory,
    max_instructions_per_message: u64,
    /// The instances in auto progress, each served by the IC HTTP interface.
    /// Live instances' networks, and the round duration each was started with.
    live: Mutex<BTreeMap<InstanceId, (ic_http::Network, Option<Duration>)>>,
    /// Each instance's topology, made when it was created.
    topologies: Mutex<BTreeMap<InstanceId, Topology>>,
}

impl Default for Store {
    fn default() -> Self {
        Self::new(Limits::default())
    }
}

/// The simulator an instance config asks for, with each subnet's kind, or
/// what in it the simulator cannot do.
fn sim_for(
    config: &InstanceConfig,
    host_memory: &HostMemory,
    max_instructions: u64,
) -> Result<(Sim, BTreeMap<Principal, SubnetKind>), String> {
    let unsupported = [
        ("a state directory (`multi_subnet network --state-dir` keeps one)", config.state_dir.is_some()),
        ("an HTTP gateway", config.http_gateway_config.is_some()),
        ("ICP features", config.icp_features.as_ref().is_some_and(|f| *f != Default::default())),
        ("auto progress", matches!(config.initial_time, Some(InitialTime::AutoProgress(_)))),
        ("bitcoind", config.bitcoind_addr.is_some()),
        ("dogecoind", config.dogecoind_addr.is_some()),
    ];
    if let Some((what, _)) = unsupported.iter().find(|(_, asked)| *asked) {
        return Err(format!(
            "the simulator server (this project's simulator, not PocketIC) does not support {what}"
        ));
    }
    let planned = subnets::plan(&config.subnet_config_set)?;
    let mut sim_config = SimConfig { max_instructions_per_message: max_instructions, ..SimConfig::default() };
    if let Some(InitialTime::Timestamp(t)) = &config.initial_time {
        sim_config.start_time_ns = t.nanos_since_epoch;
    }
    let builder = planned.iter().fold(Sim::builder(), |b, p| b.with_subnet_holding(p.ids.clone()));
    let sim = builder.with_config(sim_config).with_host_memory(host_memory).build();
    let kind_of =
        |ids: &sim::IdRanges| planned.iter().find(|p| p.ids == *ids).expect("built as planned").kind;
    let kinds = sim.subnet_ranges().iter().map(|(id, ids)| (*id, kind_of(ids))).collect();
    Ok((sim, kinds))
}

impl Store {
    pub fn new(limits: Limits) -> Self {
        Self {
            instances: Mutex::default(),
            host_memory: HostMemory::new(limits.host_memory_budget),
            max_instructions_per_message: limits.max_instructions_per_message,
            live: Mutex::default(),
            topologies: Mutex::default(),
        }
    }

    /// Starts an instance's thread; answers its id and topology.
    pub async fn create(&self, config: InstanceConfig) -> Result<(InstanceId, Topology), String> {
        let (host_memory, max_instructions) = (self.host_memory.clone(), self.max_instructions_per_message);
        // The subnets' kinds are known once the simulator is built, on its thread.
        let (kinds, kinds_made) = std::sync::mpsc::channel();
        let make = move || {
            let (sim, subnet_kinds) = sim_for(&config, &host_memory, max_instructions)?;
            let mut instance = instance::new(sim);
            instance.hold_chain_keys(subnets::chain_keys(subnet_kinds.values()));
            let _ = kinds.send(subnet_kinds);
            Ok::<_, String>(instance)
        };
        let engine = EngineThread::spawn("the simulator", make)
            .map_err(|e| format!("cannot start an instance thread: {e}"))?;
        let topology = engine.run(|instance| instance::topology(instance)).await;
        let kinds = kinds_made.try_recv().unwrap_or_default();
        let topology = topology.map(|topology| topology::with_kinds(topology, &kinds));
        let topology = topology.map_err(|refused| {
            match refused.reason {
                // What in the config the simulator cannot do, as it is.
                Reason::NotStarted(why) => why,
                _ => refused.to_string(),
            }
        })?;
        let mut instances = self.instances.lock().expect("not poisoned");
        let id = instances.len();
        instances.insert(id, Some(engine));
        self.topologies.lock().expect("not poisoned").insert(id, topology.clone());
        Ok((id, topology))
    }

    /// Every instance ever created, as PocketIC lists them.
    pub fn list(&self) -> Vec<String> {
        let instances = self.instances.lock().expect("not poisoned");
        instances.values().map(|i| if i.is_some() { "Available" } else { "Deleted" }.to_string()).collect()
    }

    /// Ends the instance's thread, which drops its simulator. `false` if there was none.
    pub fn delete(&self, id: InstanceId) -> bool {
        self.stop_progress(id);
        let Some(engine) = self.instances.lock().expect("not poisoned").get_mut(&id).and_then(Option::take)
        else {
            return false;
        };
        // A network still serving the instance (a gateway's) holds a handle
        // too: the simulator goes now, and what asks for it is told so.
        engine.stop();
        true
    }

    /// `auto_progress`: the instance's rounds run by themselves, its time
    /// follows the wall clock, and the returned network serves it through
    /// the IC's HTTP interface (the same one again if it is already live).
    /// It blocks until the network has certified its first state: run it
    /// off the async runtime's threads. With `round_interval` (PocketIC's
    /// artificial delay) a round runs every so often, else as soon as there
    /// is work; a live instance keeps its own, and refuses another.
    pub fn auto_progress(
        &self,
        id: InstanceId,
        round_interval: Option<Duration>,
    ) -> Result<ic_http::Network, ApiError> {
        if let Some((network, running)) = self.live.lock().expect("not poisoned").get(&id).cloned() {
            return match round_interval {
                Some(asked) if Some(asked) != running => Err(ApiError::bad_request(format!(
                    "instance {id} is live with {}: stop_progress first to change it",
                    running.map_or("rounds as fast as there is work".into(), |d| format!(
                        "a round every {} ms",
                        d.as_millis()
                    ))
                ))),
                _ => Ok(network),
            };
        }
        let remote = Remote::connect(self.engine(id)?).ok_or_else(|| ApiError::instance_not_found(id))?;
        let make = move || -> Box<dyn ic_http::Backend> { Box::new(remote) };
        let network =
            ic_http::Network::start(make, ic_http::Options { round_interval, ..ic_http::Options::default() })
                .map_err(ApiError::internal)?;
        // Two requests may have started one each: the first one kept serves.
        let mut live = self.live.lock().expect("not poisoned");
        Ok(live.entry(id).or_insert((network, round_interval)).0.clone())
    }

    /// The instance's network, if it is in auto progress.
    pub fn network(&self, id: InstanceId) -> Option<ic_http::Network> {
        self.live.lock().expect("not poisoned").get(&id).map(|(network, _)| network.clone())
    }

    /// `stop_progress`: rounds run only when asked again. A gateway still
    /// serving the instance keeps its network (and its rounds) until it stops.
    pub fn stop_progress(&self, id: InstanceId) -> bool {
        self.live.lock().expect("not poisoned").remove(&id).is_some()
    }

    /// The instance's topology: its subnets, their kinds and ranges.
    pub fn topology(&self, id: InstanceId) -> Result<Topology, ApiError> {
        self.engine(id)?;
        let topologies = self.topologies.lock().expect("not poisoned");
        topologies.get(&id).cloned().ok_or_else(|| ApiError::instance_not_found(id))
    }

    fn engine(&self, id: InstanceId) -> Result<EngineThread<Instance>, ApiError> {
        let instances = self.instances.lock().expect("not poisoned");
        instances.get(&id).and_then(Clone::clone).ok_or_else(|| ApiError::instance_not_found(id))
    }

    /// Runs `f` on the instance's thread. A panic in it is answered as an
    /// error (500), and so is every later request to the instance: the
    /// panic may have left its simulator half-way through a change, and
    /// answers from it could be wrong. The instance is still deleted as
    /// any other, and the server's other instances are untouched.
    pub async fn with<R: Send + 'static>(
        &self,
        id: InstanceId,
        f: impl FnOnce(&mut Instance) -> R + Send + 'static,
    ) -> Result<R, ApiError> {
        self.engine(id)?.run(f).await.map_err(|refused| match refused.reason {
            Reason::Ended => ApiError::instance_not_found(id),
            _ => ApiError::internal(format!("instance {id}: {refused}; create another instance")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ic_model::Interface;
    use pocket_ic::common::rest::ExtendedSubnetConfigSet;

    #[tokio::test]
    async fn an_instance_whose_simulator_panicked_serves_no_more_requests() {
        let store = Store::default();
        let application =
            ExtendedSubnetConfigSet { application: vec![Default::default()], ..Default::default() };
        let config = InstanceConfig { subnet_config_set: application, ..Default::default() };
        let (broken, _) = store.create(config.clone()).await.unwrap();
        let (other, _) = store.create(config).await.unwrap();
        let failed = store.with(broken, |_| -> u8 { panic!("boom") }).await.unwrap_err();
        assert_eq!(failed.status, axum::http::StatusCode::INTERNAL_SERVER_ERROR);
        assert!(failed.message.contains("instance 0: the simulator panicked: boom"), "{}", failed.message);
        let later = store.with(broken, |i| i.time()).await.unwrap_err();
        assert_eq!(later.status, axum::http::StatusCode::INTERNAL_SERVER_ERROR);
        assert!(
            later.message.contains("the simulator panicked earlier: boom; it serves no more requests"),
            "{}",
            later.message
        );
        assert!(store.with(other, |i| i.time()).await.is_ok(), "the other instance serves");
        assert!(store.delete(broken));
    }
}
