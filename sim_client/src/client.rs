//! The blocking client: [`SimulatorExt`] on `pocket_ic::PocketIc`.

use crate::api::{FaultReport, FaultSpec, Latency, SetLatency};
use crate::nonblocking;
use reqwest::StatusCode;
use serde::de::DeserializeOwned;
use std::sync::OnceLock;
use url::Url;

/// Why an extension call failed. Each names the endpoint's `url`.
#[derive(Debug, thiserror::Error)]
#[allow(missing_docs)] // `url` is the endpoint's, `source` the cause.
#[non_exhaustive]
pub enum Error {
    /// The server did not answer.
    #[error("{url}: {source}")]
    Unreachable { url: Url, source: reqwest::Error },
    /// The server has no such endpoint: PocketIC's own server has none of
    /// them.
    #[error(
        "{url} is not served: only this project's simulator (`multi_subnet serve`, `pocket-ic-sim`) serves it, not PocketIC"
    )]
    NotServed { url: Url },
    /// The server refused the request, saying why.
    #[error("{url} refused it ({status}): {message}")]
    Refused {
        url: Url,
        status: StatusCode,
        /// The server's reason.
        message: String,
    },
    /// The server's answer is not what this client reads.
    #[error("{url} answered what this client cannot read: {source}")]
    Unreadable { url: Url, source: serde_json::Error },
}

/// The simulator's extensions on a blocking `pocket_ic::PocketIc`. Like
/// its client, these must not be called from inside an async runtime.
pub trait SimulatorExt {
    /// The instance's rounds between subnets.
    fn latency(&self) -> Result<Latency, Error>;
    /// Sets the rounds between subnets from the next round on.
    fn set_latency(&self, latency: SetLatency) -> Result<Latency, Error>;
    /// Turns on `spec`'s faults, replacing any before; rounds count from now.
    fn inject_faults(&self, spec: &FaultSpec) -> Result<(), Error>;
    /// No fault from now on.
    fn clear_faults(&self) -> Result<(), Error>;
    /// What the faults did and what is still open.
    fn faults_report(&self) -> Result<FaultReport, Error>;
}

impl SimulatorExt for pocket_ic::PocketIc {
    fn latency(&self) -> Result<Latency, Error> {
        blocking(Endpoint::new(self.get_server_url(), self.instance_id(), "latency"), Method::Get)
    }

    fn set_latency(&self, latency: SetLatency) -> Result<Latency, Error> {
        let endpoint = Endpoint::new(self.get_server_url(), self.instance_id(), "latency");
        blocking(endpoint, Method::Post(json(&latency)))
    }

    fn inject_faults(&self, spec: &FaultSpec) -> Result<(), Error> {
        blocking(Endpoint::new(self.get_server_url(), self.instance_id(), "faults"), Method::Post(json(spec)))
    }

    fn clear_faults(&self) -> Result<(), Error> {
        blocking(Endpoint::new(self.get_server_url(), self.instance_id(), "faults"), Method::Delete)
    }

    fn faults_report(&self) -> Result<FaultReport, Error> {
        blocking(Endpoint::new(self.get_server_url(), self.instance_id(), "faults"), Method::Get)
    }
}

/// An extension endpoint of one instance.
pub(crate) struct Endpoint(pub(crate) Url);

impl Endpoint {
    pub(crate) fn new(server: Url, instance: pocket_ic::common::rest::InstanceId, name: &str) -> Self {
        let url = server.join(&format!("instances/{instance}/_/{name}")).expect("a relative path joins");
        Self(url)
    }

    /// The server's answer as `T`, or why there is none.
    pub(crate) fn read<T: DeserializeOwned>(self, status: StatusCode, body: &[u8]) -> Result<T, Error> {
        let url = self.0;
        if status == StatusCode::NOT_FOUND && !body.starts_with(b"{") {
            return Err(Error::NotServed { url });
        }
        if !status.is_success() {
            #[derive(serde::Deserialize)]
            struct Refusal {
                message: String,
            }
            let message = serde_json::from_slice::<Refusal>(body)
                .map(|r| r.message)
                .unwrap_or_else(|_| String::from_utf8_lossy(body).into_owned());
            return Err(Error::Refused { url, status, message });
        }
        serde_json::from_slice(body).map_err(|source| Error::Unreadable { url, source })
    }
}

pub(crate) enum Method {
    Get,
    Post(Vec<u8>),
    Delete,
}

pub(crate) fn json(body: &impl serde::Serialize) -> Vec<u8> {
    serde_json::to_vec(body).expect("the API's types serialise")
}

/// [`nonblocking`]'s request on a runtime of this client's own, as the
/// blocking `PocketIc` runs its client on its own: one for the process,
/// with one HTTP client, so that its connections are reused.
fn blocking<T: DeserializeOwned>(endpoint: Endpoint, method: Method) -> Result<T, Error> {
    static RUNTIME: OnceLock<(tokio::runtime::Runtime, reqwest::Client)> = OnceLock::new();
    let (runtime, client) = RUNTIME.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build();
        (runtime.expect("a runtime starts"), nonblocking::http_client())
    });
    runtime.block_on(nonblocking::send(client, endpoint, method))
}
