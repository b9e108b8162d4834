//! The network: a backend on a thread of its own, the subnets' certified
//! state, and the round that certifies it.

use engine_thread::{EngineThread, Inbox};
use ic_model::{CertifiedState, SubnetState};
use ic_sim_client::api::FaultSpec;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::watch;

use crate::backend::{Backend, SavedState};
use crate::ingress::{Requests, SavedRequests};
use crate::outcalls::{OutcallPolicy, Outcaller};
use crate::state_file::StateDir;

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
    /// Which HTTPS outcalls the host makes for the canisters.
    pub outcalls: OutcallPolicy,
    /// Faults turned on when a new network starts ([`Backend::inject_faults`]),
    /// rounds counted from then; a spec the backend refuses stops the start.
    /// A network resumed from its state keeps the faults it saved.
    pub faults: Option<FaultSpec>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            clock: Arc::new(wall_clock),
            round_interval: None,
            outcalls: OutcallPolicy::default(),
            faults: None,
        }
    }
}

fn wall_clock() -> u64 {
    let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).expect("the clock is past 1970");
    u64::try_from(since_epoch.as_nanos()).expect("before the year 2554")
}

/// Where a network keeps its state across restarts ([`Network::start_saved`]).
#[derive(Clone, Debug)]
pub struct Persistence {
    /// The state directory: created if need be, and locked while the
    /// network runs.
    pub dir: PathBuf,
    /// Names the format of what the backend saves: a state saved under
    /// another name is refused, not misread.
    pub backend_format: String,
    /// How often it writes a checkpoint, if its state changed since the
    /// last (a `kill -9` loses what happened since then).
    pub checkpoint_every: Duration,
}

/// Bumped whenever [`Saved`] or what it holds changes.
const FORMAT: u32 = 1;

/// What a network saves of its own: its rounds and its ingress messages
/// (without them a request sent again after a restart would execute
/// again). The backend's state follows it in the file, as the backend
/// wrote it (not encoded again: it may be GiBs).
#[derive(Serialize, Deserialize)]
struct Saved {
    rounds: u64,
    requests: SavedRequests,
}

/// What one save cost.
#[derive(Clone, Copy, Debug)]
pub struct SaveReport {
    /// The state file's body.
    pub bytes: usize,
    /// How long the rounds stopped for, while the backend took its state.
    pub snapshot: Duration,
    /// How long encoding and writing it took (off the backend's thread for
    /// a checkpoint).
    pub write: Duration,
}

/// The state directory, the checkpoint being written, and what the file
/// holds.
struct Saver {
    dir: StateDir,
    writer: String,
    every: Duration,
    writing: Mutex<Option<JoinHandle<()>>>,
    /// The backend's [`state_version`](Backend::state_version) the file
    /// holds; `None` before the first write, or after a failed one.
    saved_version: Mutex<Option<u64>>,
}

impl Saver {
    fn busy(&self) -> bool {
        self.writing.lock().expect("not poisoned").as_ref().is_some_and(|w| !w.is_finished())
    }

    /// Waits for the checkpoint being written, if any.
    fn wait(&self) {
        if let Some(writing) = self.writing.lock().expect("not poisoned").take() {
            let _ = writing.join();
        }
    }

    /// Encodes the backend's state and writes the file; its size and how
    /// long that took.
    fn write(&self, (own, backend, version): Snapshot) -> Result<(usize, Duration), String> {
        let started = Instant::now();
        let written = backend().and_then(|backend| {
            self.dir
                .write(&self.writer, &[&own, &backend])
                .map_err(|e| format!("cannot save the state in {}: {e}", self.dir.path().display()))?;
            Ok(own.len() + backend.len())
        });
        *self.saved_version.lock().expect("not poisoned") = written.is_ok().then_some(version);
        Ok((written?, started.elapsed()))
    }
}

/// What lives on the backend's thread: the backend, and what it shares.
struct OnBackendThread {
    backend: Box<dyn Backend>,
    certified: Arc<Certified>,
    outcaller: Outcaller,
}

/// What the backend's thread and the HTTP handlers share.
pub(crate) struct Certified {
    /// The backend's certified state, which handlers serve certificates of.
    pub state: Arc<CertifiedState>,
    pub description: String,
    pub clock: Clock,
    pub requests: Mutex<Requests>,
    /// Rounds certified so far: a handler waiting for an outcome watches it.
    pub rounds: watch::Sender<u64>,
    saver: Option<Saver>,
}

/// A network served over one backend; clones share it. The backend's
/// thread ends when the last clone is dropped. A job that panics there
/// breaks the backend: its state is unknown, so it serves no more
/// requests, and is not saved either.
#[derive(Clone)]
pub struct Network {
    pub(crate) certified: Arc<Certified>,
    thread: EngineThread<OnBackendThread>,
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
        Self::launch(move |_: Option<&[u8]>| Ok(make()), options, None)
    }

    /// Starts a network that keeps its state in a directory: `make` builds
    /// the backend from the bytes it last saved there ([`Backend::save`]),
    /// `None` the first time. The network writes a checkpoint every
    /// `checkpoint_every` in which its state changed, and the whole state at
    /// [`Network::save`]; a state that another format wrote is refused with
    /// one line.
    pub fn start_saved(
        make: impl FnOnce(Option<&[u8]>) -> Result<Box<dyn Backend>, String> + Send + 'static,
        options: Options,
        persistence: Persistence,
    ) -> Result<Self, String> {
        Self::launch(make, options, Some(persistence))
    }

    fn launch(
        make: impl FnOnce(Option<&[u8]>) -> Result<Box<dyn Backend>, String> + Send + 'static,
        options: Options,
        persistence: Option<Persistence>,
    ) -> Result<Self, String> {
        let (saver, saved) = match persistence {
            None => (None, None),
            Some(persistence) => {
                let dir = StateDir::open(&persistence.dir)?;
                let writer = format!("ic_http state {FORMAT} over {}", persistence.backend_format);
                let saved = match dir.read(&writer)? {
                    None => None,
                    Some(body) => {
                        let (saved, backend) = postcard::take_from_bytes::<Saved>(&body).map_err(|e| {
                            format!(
                                "{}: cannot be read ({e}), although its format is this one's",
                                dir.path().display()
                            )
                        })?;
                        // The backend reads its part in place: it may be GiBs.
                        let backend_at = body.len() - backend.len();
                        Some((saved, body, backend_at))
                    }
                };
                let saver = Saver {
                    dir,
                    writer,
                    every: persistence.checkpoint_every,
                    writing: Mutex::default(),
                    saved_version: Mutex::default(),
                };
                (Some(saver), saved)
            }
        };
        let (clock, outcalls, faults) = (options.clock.clone(), options.outcalls, options.faults.clone());
        let make = move || {
            let resumed = saved.is_some();
            let (rounds, requests, made) = match saved {
                None => (0, vec![], make(None)),
                Some((saved, body, at)) => (saved.rounds, saved.requests, make(Some(&body[at..]))),
            };
            let mut backend = made?;
            // A resumed network has its faults, and their log, in its state.
            if let Some(spec) = faults.filter(|_| !resumed) {
                backend.inject_faults(spec).map_err(|why| format!("the faults: {why}"))?;
            }
            let time = follow_clock(&mut *backend, &clock);
            let state = backend.certified_state();
            let (requests, edits) =
                Requests::restore(requests, state.subnets().len(), |ticket| backend.outcome(ticket))?;
            for (subnet, edits) in state.subnets().iter().zip(edits) {
                subnet.certify(time, edits);
            }
            if let Some(saver) = &saver
                && resumed
            {
                *saver.saved_version.lock().expect("not poisoned") = Some(backend.state_version());
            }
            let certified = Arc::new(Certified {
                state,
                description: backend.description(),
                clock,
                requests: Mutex::new(requests),
                rounds: watch::Sender::new(rounds),
                saver,
            });
            Ok(OnBackendThread { backend, certified, outcaller: Outcaller::new(outcalls) })
        };
        let interval = options.round_interval;
        let thread = EngineThread::spawn_driven("the backend", make, move |on_thread, inbox| {
            drive(on_thread, inbox, interval)
        })
        .map_err(|e| format!("cannot start the backend's thread: {e}"))?;
        let certified =
            thread.run_blocking(|on_thread| on_thread.certified.clone()).map_err(|e| e.to_string())?;
        Ok(Self { certified, thread })
    }

    /// Writes the whole state to the state directory now (after the
    /// checkpoint being written, if any), between rounds; what a server
    /// does as it stops. `Err` without a state directory, or once the
    /// backend has failed (the directory keeps its last good state).
    pub fn save(&self) -> Result<SaveReport, String> {
        if self.certified.saver.is_none() {
            return Err("this network has no state directory".into());
        }
        let saved = self.thread.run_blocking(|engine| {
            let saver = engine.certified.saver.as_ref().expect("checked above");
            saver.wait();
            snapshot(&*engine.backend, &engine.certified).and_then(|(taken, snapshot)| {
                let (bytes, write) = saver.write(taken)?;
                Ok(SaveReport { bytes, snapshot, write })
            })
        });
        saved.unwrap_or_else(|refused| {
            let dir = self.certified.saver.as_ref().expect("checked above").dir.path();
            Err(format!("{refused}; {} keeps the last checkpoint", dir.display()))
        })
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
        self.thread.run(move |engine| f(&mut *engine.backend)).await.map_err(|refused| refused.to_string())
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

/// The network's own part of its state, encoded; the backend's, to encode;
/// and the backend's version of it.
type Snapshot = (Vec<u8>, SavedState, u64);

/// The network's state, and how long the rounds stopped to take it.
fn snapshot(backend: &dyn Backend, certified: &Certified) -> Result<(Snapshot, Duration), String> {
    let started = Instant::now();
    let saved = Saved {
        rounds: *certified.rounds.borrow(),
        requests: certified.requests.lock().expect("not poisoned").save(),
    };
    let own = postcard::to_stdvec(&saved).map_err(|e| format!("cannot serialize the state: {e}"))?;
    Ok(((own, backend.save()?, backend.state_version()), started.elapsed()))
}

/// Writes a checkpoint on a thread of its own if the backend's state
/// changed since the file was written, and the last checkpoint is written.
fn checkpoint(backend: &dyn Backend, certified: &Arc<Certified>) {
    let Some(saver) = &certified.saver else { return };
    let unchanged = *saver.saved_version.lock().expect("not poisoned") == Some(backend.state_version());
    if unchanged || saver.busy() {
        return;
    }
    match snapshot(backend, certified) {
        Ok((taken, _)) => {
            let certified = certified.clone();
            let writing = std::thread::spawn(move || {
                let saver = certified.saver.as_ref().expect("a saver");
                // A failed checkpoint is tried again at the next one.
                if let Err(why) = saver.write(taken) {
                    eprintln!("checkpoint failed: {why}");
                }
            });
            *saver.writing.lock().expect("not poisoned") = Some(writing);
        }
        Err(why) => eprintln!("checkpoint failed: {why}"),
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
/// Checkpoints stop once a job has panicked: the backend's state is unknown.
fn drive(engine: &mut OnBackendThread, inbox: &mut Inbox<OnBackendThread>, interval: Option<Duration>) {
    let busy = |engine: &OnBackendThread| {
        interval.is_none()
            && (engine.backend.has_work() || engine.certified.requests.lock().expect("not poisoned").fresh())
    };
    let pace = interval.unwrap_or(IDLE_ROUND_EVERY);
    let (mut last, mut last_checkpoint) = (Instant::now(), Instant::now());
    loop {
        let wait = if busy(engine) { Duration::ZERO } else { pace.saturating_sub(last.elapsed()) };
        match inbox.run_next(engine, wait) {
            Ok(()) => {
                // What else comes within a block's window runs before the
                // round, as the replica inducts a block of messages at once
                // (and one round, one signature, serves them all).
                let window = Instant::now() + BLOCK_WINDOW;
                while inbox.run_next(engine, window.saturating_duration_since(Instant::now())).is_ok() {}
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        if busy(engine) || last.elapsed() >= pace {
            last = Instant::now();
            round(&mut *engine.backend, &engine.certified);
            engine.outcaller.step(&mut *engine.backend);
        }
        if engine.certified.saver.as_ref().is_some_and(|saver| last_checkpoint.elapsed() >= saver.every) {
            last_checkpoint = Instant::now();
            if inbox.broken().is_none() {
                checkpoint(&*engine.backend, &engine.certified);
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use ic_transport_types::RequestId;

    /// The bytes of a network's own part of a state. It fails when a saved
    /// type changes: bump [`FORMAT`], then these bytes.
    #[test]
    fn the_saved_layout_is_pinned_by_its_format_number() {
        let mut requests = Requests::default();
        let (sender, canister) = (candid::Principal::anonymous(), candid::Principal::management_canister());
        requests.insert(RequestId::new(&[7; 32]), sender, canister, 1, 99, 5);
        let saved = Saved { rounds: 3, requests: requests.save() };
        let pinned = (FORMAT, hex::encode(postcard::to_stdvec(&saved).unwrap()));
        assert_eq!(
            pinned,
            (
                1,
                "0301070707070707070707070707070707070707070707070707070707070707070701040001630500"
                    .to_string()
            ),
            "a saved type changed: bump FORMAT, then these bytes"
        );
    }
}
