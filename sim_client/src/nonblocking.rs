//! The same extensions on `pocket_ic::nonblocking::PocketIc`.

use crate::Error;
use crate::api::{FaultReport, FaultSpec, Latency, SetLatency};
use crate::client::{Endpoint, Method, json};
use serde::de::DeserializeOwned;
use std::future::Future;
use std::time::Duration;

/// [`crate::SimulatorExt`], awaited.
pub trait SimulatorExt {
    /// The instance's rounds between subnets.
    fn latency(&self) -> impl Future<Output = Result<Latency, Error>> + Send;
    /// Sets the rounds between subnets from the next round on.
    fn set_latency(&self, latency: SetLatency) -> impl Future<Output = Result<Latency, Error>> + Send;
    /// Turns on `spec`'s faults, replacing any before; rounds count from now.
    fn inject_faults(&self, spec: &FaultSpec) -> impl Future<Output = Result<(), Error>> + Send;
    /// No fault from now on.
    fn clear_faults(&self) -> impl Future<Output = Result<(), Error>> + Send;
    /// What the faults did and what is still open.
    fn faults_report(&self) -> impl Future<Output = Result<FaultReport, Error>> + Send;
}

impl SimulatorExt for pocket_ic::nonblocking::PocketIc {
    fn latency(&self) -> impl Future<Output = Result<Latency, Error>> + Send {
        request(Endpoint::new(self.get_server_url(), self.instance_id, "latency"), Method::Get)
    }

    fn set_latency(&self, latency: SetLatency) -> impl Future<Output = Result<Latency, Error>> + Send {
        let endpoint = Endpoint::new(self.get_server_url(), self.instance_id, "latency");
        request(endpoint, Method::Post(json(&latency)))
    }

    fn inject_faults(&self, spec: &FaultSpec) -> impl Future<Output = Result<(), Error>> + Send {
        request(Endpoint::new(self.get_server_url(), self.instance_id, "faults"), Method::Post(json(spec)))
    }

    fn clear_faults(&self) -> impl Future<Output = Result<(), Error>> + Send {
        request(Endpoint::new(self.get_server_url(), self.instance_id, "faults"), Method::Delete)
    }

    fn faults_report(&self) -> impl Future<Output = Result<FaultReport, Error>> + Send {
        request(Endpoint::new(self.get_server_url(), self.instance_id, "faults"), Method::Get)
    }
}

/// One request with a client of its own: an awaited test may run on a
/// runtime of its own, and a client's connections belong to the runtime
/// that made them.
async fn request<T: DeserializeOwned>(endpoint: Endpoint, method: Method) -> Result<T, Error> {
    send(&http_client(), endpoint, method).await
}

/// How long a request may take: a round or a report, never minutes.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// An HTTP client with the timeout.
pub(crate) fn http_client() -> reqwest::Client {
    reqwest::Client::builder().timeout(REQUEST_TIMEOUT).build().expect("a client with a timeout builds")
}

pub(crate) async fn send<T: DeserializeOwned>(
    client: &reqwest::Client,
    endpoint: Endpoint,
    method: Method,
) -> Result<T, Error> {
    let url = endpoint.0.clone();
    let request = match method {
        Method::Get => client.get(url.clone()),
        Method::Delete => client.delete(url.clone()),
        Method::Post(body) => client.post(url.clone()).header("content-type", "application/json").body(body),
    };
    let unreachable = |source| Error::Unreachable { url: url.clone(), source };
    let response = request.send().await.map_err(unreachable)?;
    let status = response.status();
    let body = response.bytes().await.map_err(unreachable)?;
    endpoint.read(status, &body)
}
