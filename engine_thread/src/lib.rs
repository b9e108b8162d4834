//! An engine (a value that need not be `Send`: a simulator, a backend) on a
//! thread of its own, running the jobs its handles send in order; a job
//! that panics is answered with its message, and every later job is
//! refused, as the engine's state is unknown from then on.

use std::fmt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;
use tokio::sync::oneshot;

/// Why a job did not run, or did not finish.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    /// The engine, as [`EngineThread::spawn`] named it ("the simulator").
    pub engine: &'static str,
    /// What happened to it.
    pub reason: Reason,
}

/// What happened to an engine that refused a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Its constructor failed with this error: no job runs.
    NotStarted(String),
    /// This job panicked with this message: the engine is broken from now on.
    Panicked(String),
    /// An earlier job panicked with this message.
    PanickedEarlier(String),
    /// Its thread has ended: it was stopped, or its constructor panicked.
    Ended,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let engine = self.engine;
        let unknown = "it serves no more requests, as its state is unknown";
        match &self.reason {
            Reason::NotStarted(why) => write!(f, "{engine} did not start: {why}"),
            Reason::Panicked(why) => write!(f, "{engine} panicked: {why}; {unknown}"),
            Reason::PanickedEarlier(why) => write!(f, "{engine} panicked earlier: {why}; {unknown}"),
            Reason::Ended => write!(f, "{engine}'s thread has ended"),
        }
    }
}

/// A job as the thread runs it: it gets the engine, or why it may not; it
/// answers its caller, and returns the panic's message if it panicked.
type Job<T> = Box<dyn FnOnce(Result<&mut T, Reason>) -> Option<String> + Send>;

enum Message<T> {
    Run(Job<T>),
    Stop,
}

/// A handle on an engine's thread; clones share it. The thread ends (and
/// drops the engine) when the last handle is dropped, or at [`stop`](Self::stop).
pub struct EngineThread<T> {
    engine: &'static str,
    messages: mpsc::Sender<Message<T>>,
}

impl<T> Clone for EngineThread<T> {
    fn clone(&self) -> Self {
        Self { engine: self.engine, messages: self.messages.clone() }
    }
}

impl<T: 'static> EngineThread<T> {
    /// Starts a thread named `engine` that builds the engine with `make`,
    /// then runs jobs until it is stopped or every handle is dropped. If
    /// `make` fails, every job is refused with its error.
    pub fn spawn(
        engine: &'static str,
        make: impl FnOnce() -> Result<T, String> + Send + 'static,
    ) -> std::io::Result<Self> {
        Self::spawn_driven(engine, make, |value, inbox| while inbox.run_next(value, Duration::MAX).is_ok() {})
    }

    /// As [`spawn`](Self::spawn), but `drive` runs the thread: it takes
    /// the jobs from the inbox when it chooses, and may use the engine
    /// between them (a network runs its rounds there). It returns once
    /// the inbox says the thread is to end.
    pub fn spawn_driven(
        engine: &'static str,
        make: impl FnOnce() -> Result<T, String> + Send + 'static,
        drive: impl FnOnce(&mut T, &mut Inbox<T>) + Send + 'static,
    ) -> std::io::Result<Self> {
        let (messages, received) = mpsc::channel();
        let mut inbox = Inbox { messages: Some(received), broken: None };
        std::thread::Builder::new().name(engine.into()).spawn(move || match make() {
            Ok(mut value) => drive(&mut value, &mut inbox),
            Err(why) => {
                while let Ok(job) = inbox.next(Duration::MAX) {
                    job(Err(Reason::NotStarted(why.clone())));
                }
            }
        })?;
        Ok(Self { engine, messages })
    }

    /// Runs `f` on the engine after the jobs sent before it (it is sent
    /// now, not when the future is first polled).
    pub fn run<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut T) -> R + Send + 'static,
    ) -> impl Future<Output = Result<R, Refused>> + Send + 'static {
        let (answer, answered) = oneshot::channel();
        self.send(f, move |result| {
            let _ = answer.send(result);
        });
        let engine = self.engine;
        async move { answered.await.unwrap_or(Err(Reason::Ended)).map_err(|reason| Refused { engine, reason }) }
    }

    /// [`run`](Self::run), waiting on this thread: not on an async
    /// runtime's, nor on the engine's own.
    pub fn run_blocking<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut T) -> R + Send + 'static,
    ) -> Result<R, Refused> {
        let (answer, answered) = mpsc::sync_channel(1);
        self.send(f, move |result| {
            let _ = answer.send(result);
        });
        answered
            .recv()
            .unwrap_or(Err(Reason::Ended))
            .map_err(|reason| Refused { engine: self.engine, reason })
    }

    /// Ends the thread once the jobs sent before have run, and drops the
    /// engine, although other handles remain: their jobs are refused.
    pub fn stop(&self) {
        let _ = self.messages.send(Message::Stop);
    }

    fn send<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut T) -> R + Send + 'static,
        answer: impl FnOnce(Result<R, Reason>) + Send + 'static,
    ) {
        let job: Job<T> = Box::new(move |value| match value {
            Err(reason) => {
                answer(Err(reason));
                None
            }
            // Unwind safety: no job touches the engine after a panic.
            Ok(value) => match catch_unwind(AssertUnwindSafe(|| f(value))) {
                Ok(result) => {
                    answer(Ok(result));
                    None
                }
                Err(panic) => {
                    let why = panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_else(|| "a panic without a message".into());
                    answer(Err(Reason::Panicked(why.clone())));
                    Some(why)
                }
            },
        });
        // A job the thread never gets is dropped, unanswered: its caller
        // is told the thread has ended.
        let _ = self.messages.send(Message::Run(job));
    }
}

/// The jobs sent to an engine, as its thread takes them.
pub struct Inbox<T> {
    /// `None` once stopped: the jobs still queued are dropped.
    messages: Option<mpsc::Receiver<Message<T>>>,
    /// The message of the job that panicked, if one did.
    broken: Option<String>,
}

impl<T> Inbox<T> {
    /// Waits up to `timeout` (`Duration::MAX`: for ever) for a job and runs
    /// it on `value`, or refuses it if an earlier one panicked.
    /// `Disconnected`: the thread is to end (stopped, or every handle dropped).
    pub fn run_next(&mut self, value: &mut T, timeout: Duration) -> Result<(), RecvTimeoutError> {
        let job = self.next(timeout)?;
        match &self.broken {
            Some(why) => {
                job(Err(Reason::PanickedEarlier(why.clone())));
            }
            None => self.broken = job(Ok(value)),
        }
        Ok(())
    }

    /// The message of the job that panicked, if one did: the engine's
    /// state is unknown.
    pub fn broken(&self) -> Option<&str> {
        self.broken.as_deref()
    }

    fn next(&mut self, timeout: Duration) -> Result<Job<T>, RecvTimeoutError> {
        let messages = self.messages.as_ref().ok_or(RecvTimeoutError::Disconnected)?;
        match messages.recv_timeout(timeout)? {
            Message::Run(job) => Ok(job),
            Message::Stop => {
                self.messages = None;
                Err(RecvTimeoutError::Disconnected)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;
    use std::sync::{Arc, Mutex};

    /// An engine that is not `Send`, as the simulator is not.
    type Log = Rc<RefCell<Vec<u32>>>;

    fn log() -> EngineThread<Log> {
        EngineThread::spawn("the test engine", || Ok(Log::default())).unwrap()
    }

    /// Tells `dropped` when it is dropped, on the engine's thread.
    struct Dropped(mpsc::Sender<()>);

    impl Drop for Dropped {
        fn drop(&mut self) {
            let _ = self.0.send(());
        }
    }

    #[tokio::test]
    async fn a_job_runs_on_the_engine_in_its_thread() {
        let engine = log();
        let ran = engine
            .run(|log| {
                log.borrow_mut().push(7);
                (log.borrow().clone(), std::thread::current().name().map(String::from))
            })
            .await;
        assert_eq!(ran, Ok((vec![7], Some("the test engine".to_string()))));
        assert_eq!(engine.run_blocking(|log| log.borrow().len()), Ok(1), "blocking, on the same engine");
    }

    #[tokio::test]
    async fn jobs_run_in_the_order_they_are_sent() {
        let engine = log();
        // Sent as they are made, not when awaited: awaited in reverse.
        let runs: Vec<_> = (1..=5)
            .map(|i| {
                engine.run(move |log| {
                    log.borrow_mut().push(i);
                    log.borrow().len()
                })
            })
            .collect();
        for (i, run) in runs.into_iter().enumerate().rev() {
            assert_eq!(run.await, Ok(i + 1));
        }
        assert_eq!(engine.run_blocking(|log| log.borrow().clone()), Ok(vec![1, 2, 3, 4, 5]));
    }

    #[tokio::test]
    async fn a_panic_is_answered_and_every_later_job_refused() {
        let engine = log();
        let panicked = engine.run(|_| -> u8 { panic!("boom {}", 1) });
        // Sent before the panic: it must not run on a broken engine.
        let queued = engine.run(|log| log.borrow_mut().push(1));
        let refused = panicked.await.unwrap_err();
        assert_eq!(refused.reason, Reason::Panicked("boom 1".into()));
        assert_eq!(
            refused.to_string(),
            "the test engine panicked: boom 1; it serves no more requests, as its state is unknown"
        );
        let earlier = Reason::PanickedEarlier("boom 1".into());
        assert_eq!(queued.await.unwrap_err().reason, earlier);
        let later = engine.run_blocking(|log| log.borrow().len()).unwrap_err();
        assert_eq!(later.reason, earlier);
        assert_eq!(
            later.to_string(),
            "the test engine panicked earlier: boom 1; it serves no more requests, as its state is unknown"
        );
        assert_eq!(engine.run(|log| log.borrow().len()).await.unwrap_err().reason, earlier);
    }

    #[test]
    fn a_constructor_error_refuses_every_job() {
        let engine = EngineThread::<Log>::spawn("the test engine", || Err("no such config".into())).unwrap();
        for _ in 0..2 {
            let refused = engine.run_blocking(|log| log.borrow().len()).unwrap_err();
            assert_eq!(refused.reason, Reason::NotStarted("no such config".into()));
            assert_eq!(refused.to_string(), "the test engine did not start: no such config");
        }
    }

    #[tokio::test]
    async fn a_job_after_the_thread_ended_is_refused_not_left_waiting() {
        let (dropped, told) = mpsc::channel();
        let engine = EngineThread::spawn("the test engine", move || Ok(Dropped(dropped))).unwrap();
        let other = engine.clone();
        engine.stop();
        told.recv_timeout(Duration::from_secs(10)).expect("stopping drops the engine");
        assert_eq!(other.run_blocking(|_| ()).unwrap_err().reason, Reason::Ended);
        assert_eq!(other.run(|_| ()).await.unwrap_err().reason, Reason::Ended);
        assert_eq!(other.run(|_| ()).await.unwrap_err().to_string(), "the test engine's thread has ended");

        let gone = EngineThread::<Log>::spawn("the test engine", || panic!("cannot build")).unwrap();
        assert_eq!(gone.run_blocking(|_| ()).unwrap_err().reason, Reason::Ended);
    }

    #[test]
    fn a_stopped_inbox_stays_ended_for_a_driven_thread() {
        let (ended, told) = mpsc::channel();
        let engine = EngineThread::spawn_driven(
            "the test engine",
            || Ok(()),
            move |value, inbox| {
                while inbox.run_next(value, Duration::MAX).is_ok() {}
                // A loop that takes jobs in more than one place asks again.
                let _ = ended.send(inbox.run_next(value, Duration::MAX));
            },
        )
        .unwrap();
        let other = engine.clone();
        engine.stop();
        assert_eq!(told.recv_timeout(Duration::from_secs(10)), Ok(Err(RecvTimeoutError::Disconnected)));
        assert_eq!(other.run_blocking(|_| ()).unwrap_err().reason, Reason::Ended);
    }

    #[test]
    fn dropping_the_last_handle_ends_the_thread() {
        let (dropped, told) = mpsc::channel();
        let engine = EngineThread::spawn("the test engine", move || Ok(Dropped(dropped))).unwrap();
        let other = engine.clone();
        drop(engine);
        assert_eq!(other.run_blocking(|_| 1), Ok(1), "a clone keeps it");
        assert_eq!(told.try_recv(), Err(mpsc::TryRecvError::Empty));
        drop(other);
        told.recv_timeout(Duration::from_secs(10)).expect("the engine is dropped");
    }

    #[test]
    fn a_driven_thread_uses_the_engine_between_jobs_and_knows_it_broke() {
        let seen_broken = Arc::new(Mutex::new(None));
        let seen = seen_broken.clone();
        let engine = EngineThread::spawn_driven(
            "the test engine",
            || Ok(0u32),
            move |ticks, inbox| loop {
                match inbox.run_next(ticks, Duration::from_millis(1)) {
                    Ok(()) => *seen.lock().unwrap() = inbox.broken().map(String::from),
                    Err(RecvTimeoutError::Timeout) => *ticks += 1,
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            },
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert!(engine.run_blocking(|ticks| *ticks).unwrap() > 0, "it ticked while idle");
        assert_eq!(*seen_broken.lock().unwrap(), None);
        let refused = engine.run_blocking(|_| -> u8 { panic!("boom") }).unwrap_err();
        assert_eq!(refused.reason, Reason::Panicked("boom".into()));
        // The thread looks at `broken` once the panic is answered, before the next job.
        let later = engine.run_blocking(|ticks| *ticks).unwrap_err();
        assert_eq!(later.reason, Reason::PanickedEarlier("boom".into()));
        assert_eq!(seen_broken.lock().unwrap().as_deref(), Some("boom"));
    }
}
