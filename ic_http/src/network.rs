//! The network: a backend on a thread of its own, the subnets' certified
//! state, and the round that certifies it.

use ic_model::{CertifiedState, SubnetState};
use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::{oneshot, watch};

use crate::backend::Backend;
use crate::ingress::Requests;

/// An idle network still runs a round (timers fire) and certifies a new
/// `/time` this often, so that its certificates stay fresh for the agents
/// (icp-cli refuses one older than 240 s; dfx one ahead of its clock).
const IDLE_ROUND_EVERY: Duration = Duration::from_millis(500);

/// How long a round waits, once a message has come, for others to join it.
const BLOCK_WINDOW: Duration = Duration::from_millis(1);

/// The wall clock in ns since the epoch, as the validator and the agents read it.
pub type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// How a network is set up.
#[derive(Clone)]
pub struct Options {
    /// The clock that validates ingress expiries and that the backend's
    /// time follows. Tests set it off the wall clock.
    pub clock: Clock,
    /// `None`: rounds run one after another while there is work (the
    /// fastest pace). `Some(d)`: one round every `d`, work or not, as a
    /// subnet makes a block about every second on mainnet.
    pub round_interval: Option<Duration>,
}

impl Default for Options {
    fn default() -> Self {
        Self { clock: Arc::new(wall_clock), round_interval: None }
    }
}

fn wall_clock() -> u64 {
    let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).expect("the clock is past 1970");
    u64::try_from(since_epoch.as_nanos()).expect("before the year 2554")
}

type Job = Box<dyn FnOnce(&mut dyn Backend) + Send>;

/// What the backend's thread and the HTTP handlers share.
pub(crate) struct Certified {
    /// The backend's certified state, which handlers serve certificates of.
    pub state: Arc<CertifiedState>,
    pub description: String,
    pub clock: Clock,
    pub requests: Mutex<Requests>,
    /// Rounds certified so far: a handler waiting for an outcome watches it.
    pub rounds: watch::Sender<u64>,
}

/// A network served over one backend; clones share it. The backend's
/// thread ends when the last clone is dropped.
#[derive(Clone)]
pub struct Network {
    pub(crate) certified: Arc<Certified>,
    jobs: mpsc::Sender<Job>,
    /// Why the backend serves no more requests, once one made it panic.
    broken: Arc<Mutex<Option<String>>>,
}

impl Network {
    /// Starts the backend that `make` builds on a thread of its own (it
    /// need not be `Send`), and certifies its subnets' state at the
    /// clock's time.
    ///
    /// ```no_run
    /// # fn backend() -> Box<dyn ic_http::Backend> { unimplemented!() }
    /// # async fn serve() {
    /// let network = ic_http::Network::start(backend, ic_http::Options::default()).unwrap();
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:4943").await.unwrap();
    /// axum::serve(listener, ic_http::router(network)).await.unwrap();
    /// # }
    /// ```
    pub fn start(
        make: impl FnOnce() -> Box<dyn Backend> + Send + 'static,
        options: Options,
    ) -> Result<Self, String> {
        let (jobs, inbox) = mpsc::channel::<Job>();
        let (ready, started) = mpsc::channel();
        let clock = options.clock.clone();
        std::thread::Builder::new()
            .name("ic_http backend".into())
            .spawn(move || {
                let mut backend = make();
                let time = follow_clock(&mut *backend, &clock);
                let state = backend.certified_state();
                for subnet in state.subnets() {
                    subnet.certify(time, vec![]);
                }
                let certified = Arc::new(Certified {
                    state,
                    description: backend.description(),
                    clock,
                    requests: Mutex::default(),
                    rounds: watch::Sender::new(0),
                });
                if ready.send(certified.clone()).is_err() {
                    return;
                }
                drive(&mut *backend, &certified, &inbox, options.round_interval);
            })
            .map_err(|e| format!("cannot start the backend's thread: {e}"))?;
        let certified = started.recv().map_err(|_| "the backend failed to start".to_string())?;
        Ok(Self { certified, jobs, broken: Arc::default() })
    }

    /// The root key (DER), which agents are given to verify certificates.
    pub fn root_key(&self) -> Vec<u8> {
        self.certified.state.root_key_der()
    }

    /// The subnet ids, as the backend lists them.
    pub fn subnet_ids(&self) -> Vec<candid::Principal> {
        self.certified.state.subnets().iter().map(|s| s.id).collect()
    }

    /// The certified state the network serves.
    pub(crate) fn state(&self) -> &CertifiedState {
        &self.certified.state
    }

    /// Runs `f` on the backend's thread, between rounds. `Err` once a job
    /// has panicked there: the backend's state is unknown from then on.
    pub(crate) async fn run<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut dyn Backend) -> R + Send + 'static,
    ) -> Result<R, String> {
        if let Some(why) = self.broken.lock().expect("not poisoned").clone() {
            return Err(format!("the backend serves no more requests: it failed on an earlier one ({why})"));
        }
        let (answer, answered) = oneshot::channel();
        let job: Job = Box::new(move |backend| {
            let _ = answer.send(std::panic::catch_unwind(AssertUnwindSafe(|| f(backend))));
        });
        self.jobs.send(job).map_err(|_| "the backend's thread has ended".to_string())?;
        match answered.await.map_err(|_| "the backend's thread has ended".to_string())? {
            Ok(result) => Ok(result),
            Err(panic) => {
                let why = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "a panic".into());
                *self.broken.lock().expect("not poisoned") = Some(why.clone());
                Err(format!("the backend failed: {why}; it serves no more requests, as its state is unknown"))
            }
        }
    }

    /// The ingress messages the network remembers.
    pub(crate) fn requests(&self) -> MutexGuard<'_, Requests> {
        self.certified.requests.lock().expect("not poisoned")
    }

    /// How many ingress messages the network remembers (each is forgotten
    /// once its expiry has passed).
    pub fn remembered_requests(&self) -> usize {
        self.requests().len()
    }

    /// Rounds the network has run and certified so far.
    pub fn rounds(&self) -> u64 {
        *self.certified.rounds.borrow()
    }

    /// The wall clock the network validates with.
    pub(crate) fn now(&self) -> u64 {
        (self.certified.clock)()
    }

    /// The subnet that hosts `canister`, and its index.
    pub(crate) fn subnet_of(&self, canister: candid::Principal) -> Option<(usize, &SubnetState)> {
        self.state().subnet_of(canister)
    }

    /// The subnet at `index`.
    pub(crate) fn subnet_at(&self, index: usize) -> &SubnetState {
        &self.state().subnets()[index]
    }
}

/// Moves the backend's time on to the clock's, as PocketIC's auto-progress
/// does, and never back; returns the time.
fn follow_clock(backend: &mut dyn Backend, clock: &Clock) -> u64 {
    let time = backend.time().max(clock());
    backend.advance_time_to(time);
    time
}

/// The backend's thread: jobs in the order they come, and rounds: one
/// every `interval` if there is one; otherwise one after another while
/// there is work, and one every [`IDLE_ROUND_EVERY`] when there is none.
fn drive(
    backend: &mut dyn Backend,
    certified: &Certified,
    inbox: &mpsc::Receiver<Job>,
    interval: Option<Duration>,
) {
    let busy = |backend: &dyn Backend| {
        interval.is_none() && (backend.has_work() || certified.requests.lock().expect("not poisoned").fresh())
    };
    let pace = interval.unwrap_or(IDLE_ROUND_EVERY);
    let mut last = Instant::now();
    loop {
        let wait = if busy(backend) { Duration::ZERO } else { pace.saturating_sub(last.elapsed()) };
        match inbox.recv_timeout(wait) {
            Ok(job) => {
                job(backend);
                // What else comes within a block's window runs before the
                // round, as the replica inducts a block of messages at once
                // (and one round, one signature, serves them all).
                let window = Instant::now() + BLOCK_WINDOW;
                while let Ok(job) = inbox.recv_timeout(window.saturating_duration_since(Instant::now())) {
                    job(backend);
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        if busy(backend) || last.elapsed() >= pace {
            last = Instant::now();
            round(backend, certified);
        }
    }
}

/// One round: time follows the clock, every subnet executes and certifies
/// its new state (the canisters the backend staged, the statuses the round
/// decided); only then do handlers see the round's decisions, so that
/// nothing they read runs ahead of a certificate.
fn round(backend: &mut dyn Backend, certified: &Certified) {
    let time = follow_clock(backend, &certified.clock);
    backend.tick();
    let running = certified.requests.lock().expect("not poisoned").running();
    let outcomes =
        running.into_iter().filter_map(|ticket| Some((ticket, backend.outcome(ticket)?))).collect();
    let now = (certified.clock)();
    let subnets = certified.state.subnets();
    let mut decided = certified.requests.lock().expect("not poisoned").round(subnets.len(), now, outcomes);
    for &(_, ticket) in &decided.expired {
        backend.forget(ticket);
    }
    // A signature costs about 0.65 ms: a subnet whose tree did not change
    // re-signs only to keep its `/time` fresh, as an idle network does.
    let fresh_enough = time.saturating_sub(IDLE_ROUND_EVERY.as_nanos() as u64);
    for (subnet, edits) in subnets.iter().zip(std::mem::take(&mut decided.edits)) {
        if !edits.is_empty() || subnet.has_staged() || subnet.certified_time() <= fresh_enough {
            subnet.certify(time, edits);
        }
    }
    certified.requests.lock().expect("not poisoned").settle(&decided);
    certified.rounds.send_modify(|rounds| *rounds += 1);
}
