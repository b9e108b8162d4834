//! The instance store: each instance is a simulator on a thread of its own
//! (the simulator is not `Send`), which serves its requests in order.

use pocket_ic::common::rest::{InitialTime, InstanceConfig, InstanceId, Topology};
use sim::{Sim, SimConfig};
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::Mutex;
use std::sync::mpsc;
use tokio::sync::oneshot;

use crate::errors::ApiError;
use crate::instance::Instance;

type Job = Box<dyn FnOnce(&mut Instance) + Send>;

/// `None` for a deleted instance: its thread and simulator are gone.
#[derive(Default)]
pub struct Store {
    instances: Mutex<BTreeMap<InstanceId, Option<mpsc::Sender<Job>>>>,
}

/// The simulator an instance config asks for, or what in it the simulator cannot do.
fn sim_for(config: &InstanceConfig) -> Result<Sim, String> {
    let subnets = &config.subnet_config_set;
    let unsupported = [
        ("an NNS subnet", subnets.nns.is_some()),
        ("an SNS subnet", subnets.sns.is_some()),
        ("an II subnet", subnets.ii.is_some()),
        ("a fiduciary subnet", subnets.fiduciary.is_some()),
        ("a bitcoin subnet", subnets.bitcoin.is_some()),
        ("a test threshold keys subnet", subnets.test_threshold_keys.is_some()),
        ("system subnets", !subnets.system.is_empty()),
        ("cloud engine subnets", !subnets.cloud_engine.is_empty()),
        ("verified application subnets", !subnets.verified_application.is_empty()),
        ("a state directory", config.state_dir.is_some()),
        ("an HTTP gateway", config.http_gateway_config.is_some()),
        ("ICP features", config.icp_features.as_ref().is_some_and(|f| *f != Default::default())),
        ("auto progress", matches!(config.initial_time, Some(InitialTime::AutoProgress(_)))),
        ("bitcoind", config.bitcoind_addr.is_some()),
        ("dogecoind", config.dogecoind_addr.is_some()),
        (
            "application subnets with a state or settings",
            subnets.application.iter().any(|s| *s != Default::default()),
        ),
    ];
    if let Some((what, _)) = unsupported.iter().find(|(_, asked)| *asked) {
        return Err(format!(
            "the simulator server (this project's simulator, not PocketIC) does not support {what}"
        ));
    }
    if subnets.application.is_empty() {
        return Err("the simulator server needs at least one application subnet".into());
    }
    let mut sim_config = SimConfig::default();
    if let Some(InitialTime::Timestamp(t)) = &config.initial_time {
        sim_config.start_time_ns = t.nanos_since_epoch;
    }
    let builder = subnets.application.iter().fold(Sim::builder(), |b, _| b.with_subnet());
    Ok(builder.with_config(sim_config).build())
}

impl Store {
    /// Starts an instance's thread; answers its id and topology.
    pub async fn create(&self, config: InstanceConfig) -> Result<(InstanceId, Topology), String> {
        let (jobs, inbox) = mpsc::channel::<Job>();
        let (ready, started) = oneshot::channel();
        std::thread::Builder::new()
            .name("sim instance".into())
            .spawn(move || {
                let mut instance = match sim_for(&config) {
                    Ok(sim) => Instance::new(sim),
                    Err(why) => {
                        let _ = ready.send(Err(why));
                        return;
                    }
                };
                let _ = ready.send(Ok(instance.topology()));
                for job in inbox {
                    job(&mut instance);
                }
            })
            .map_err(|e| format!("cannot start an instance thread: {e}"))?;
        let topology = started.await.map_err(|_| "the instance thread ended".to_string())??;
        let mut instances = self.instances.lock().expect("not poisoned");
        let id = instances.len();
        instances.insert(id, Some(jobs));
        Ok((id, topology))
    }

    /// Every instance ever created, as PocketIC lists them.
    pub fn list(&self) -> Vec<String> {
        let instances = self.instances.lock().expect("not poisoned");
        instances.values().map(|i| if i.is_some() { "Available" } else { "Deleted" }.to_string()).collect()
    }

    /// Ends the instance's thread, which drops its simulator. `false` if there was none.
    pub fn delete(&self, id: InstanceId) -> bool {
        let mut instances = self.instances.lock().expect("not poisoned");
        instances.get_mut(&id).and_then(Option::take).is_some()
    }

    /// Runs `f` on the instance's thread. A panic in it is answered as an
    /// error and the instance keeps serving.
    pub async fn with<R: Send + 'static>(
        &self,
        id: InstanceId,
        f: impl FnOnce(&mut Instance) -> R + Send + 'static,
    ) -> Result<R, ApiError> {
        let jobs = self
            .instances
            .lock()
            .expect("not poisoned")
            .get(&id)
            .and_then(Clone::clone)
            .ok_or_else(|| ApiError::instance_not_found(id))?;
        let (answer, answered) = oneshot::channel();
        let job: Job = Box::new(move |instance| {
            let result = std::panic::catch_unwind(AssertUnwindSafe(|| f(instance)));
            let _ = answer.send(result.map_err(|panic| {
                let why = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("a panic");
                ApiError::internal(format!("the simulator failed: {why}"))
            }));
        });
        jobs.send(job).map_err(|_| ApiError::instance_not_found(id))?;
        answered.await.map_err(|_| ApiError::instance_not_found(id))?
    }
}
