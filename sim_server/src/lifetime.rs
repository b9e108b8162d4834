//! How long a server lives when nobody stops it, as PocketIC's server
//! does: `--ttl`, so long without a request (and none in flight), and
//! `--hard-ttl`, so long since it started. A server that a test run
//! started ends by itself, so none outlives its tests.

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// When a server ends by itself; `None` for either: never for that reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lifetime {
    /// After this long without a request, none in flight.
    pub ttl: Option<Duration>,
    /// After this long since it started, whatever it does.
    pub hard_ttl: Option<Duration>,
}

/// The requests a router serves: how many are in flight, and when the
/// last one ended.
#[derive(Clone)]
pub(crate) struct Activity {
    in_flight: Arc<AtomicU64>,
    last_ended: Arc<Mutex<Instant>>,
}

impl Activity {
    pub(crate) fn new() -> Self {
        Self { in_flight: Arc::default(), last_ended: Arc::new(Mutex::new(Instant::now())) }
    }

    /// `router`, with each of its requests counted.
    pub(crate) fn track(&self, router: Router) -> Router {
        router.layer(middleware::from_fn_with_state(self.clone(), count))
    }

    /// How long it has been idle: zero while a request is in flight.
    fn idle(&self) -> Duration {
        if self.in_flight.load(Ordering::SeqCst) > 0 {
            return Duration::ZERO;
        }
        self.last_ended.lock().unwrap_or_else(|e| e.into_inner()).elapsed()
    }
}

async fn count(State(activity): State<Activity>, request: Request, next: Next) -> Response {
    activity.in_flight.fetch_add(1, Ordering::SeqCst);
    let response = next.run(request).await;
    // The time first: a check between the two sees the request in flight.
    *activity.last_ended.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    activity.in_flight.fetch_sub(1, Ordering::SeqCst);
    response
}

impl Lifetime {
    /// Completes when the server's life is over: `activity` idle for the
    /// TTL, or the hard TTL passed since now.
    pub(crate) async fn over(self, activity: Activity) {
        let idle = async {
            let Some(ttl) = self.ttl else { return std::future::pending().await };
            loop {
                let idle = activity.idle();
                if idle >= ttl {
                    return;
                }
                // A request in flight may take long: look again soon.
                let wait = if idle.is_zero() { Duration::from_millis(100) } else { ttl - idle };
                tokio::time::sleep(wait).await;
            }
        };
        let hard = async {
            match self.hard_ttl {
                Some(hard_ttl) => tokio::time::sleep(hard_ttl).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = idle => {}
            () = hard => {}
        }
    }
}
