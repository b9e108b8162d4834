//! HTTPS outcalls made by the host, for a network whose canisters reach
//! the web: each pending outcall's request is sent once, on a thread of its
//! own, with a timeout and the outcall's size limit, to the hosts the
//! policy allows; its response, or why there is none, answers the outcall
//! in a later round. Every node of the IC would get the same response
//! here: one request stands for all of them.

use ic_error_types::RejectCode;
use ic_management_canister_types::{HttpHeader, HttpMethod, HttpRequestResult};
use ic_model::management::http_outcalls::{Outcall, OutcallResponse};
use std::net::{IpAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::Backend;

/// Which outcalls the host makes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutcallPolicy {
    /// None: every outcall fails at once, saying how to allow them.
    #[default]
    Deny,
    /// Only to the host's own loopback addresses (a test's local server),
    /// so that tests stay offline.
    LoopbackOnly,
    /// To any URL.
    Allow,
}

/// How long a request may take, as a node waits for one (the replica's
/// adapter gives up after 30 s).
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// The id after the last outcall started, and the answers that came back.
pub(crate) struct Outcaller {
    policy: OutcallPolicy,
    next: u64,
    answered: Arc<Mutex<Vec<(u64, OutcallResponse)>>>,
}

impl Outcaller {
    pub(crate) fn new(policy: OutcallPolicy) -> Self {
        Self { policy, next: 0, answered: Arc::default() }
    }

    /// Answers the outcalls whose requests came back, and starts the new ones.
    pub(crate) fn step(&mut self, backend: &mut dyn Backend) {
        for (id, response) in std::mem::take(&mut *self.answered.lock().expect("not poisoned")) {
            if let Err(why) = backend.respond_to_outcall(id, response) {
                eprintln!("outcall {id}: {why}");
            }
        }
        // Only the new ones: those started wait for their answers.
        for outcall in backend.pending_outcalls(self.next) {
            self.next = outcall.id.saturating_add(1);
            let (policy, answered) = (self.policy, self.answered.clone());
            std::thread::spawn(move || {
                let response = make(policy, &outcall);
                answered.lock().expect("not poisoned").push((outcall.id, response));
            });
        }
    }
}

/// The outcall's request, made if the policy allows it.
fn make(policy: OutcallPolicy, outcall: &Outcall) -> OutcallResponse {
    if let Err(why) = allowed(policy, &outcall.url) {
        return OutcallResponse::Reject { code: RejectCode::SysTransient, message: why };
    }
    send(outcall).unwrap_or_else(|why| OutcallResponse::Reject {
        code: RejectCode::SysTransient,
        message: format!("Connecting to {} failed: {why}", outcall.url),
    })
}

/// Whether `policy` lets the host request `url`; why not, if not.
fn allowed(policy: OutcallPolicy, url: &str) -> Result<(), String> {
    let refused = |what: &str| {
        Err(format!(
            "HTTPS outcalls to {what} are not made by this network (this project's simulator): start it with `--outcalls allow` to reach {url}"
        ))
    };
    match policy {
        OutcallPolicy::Allow => Ok(()),
        OutcallPolicy::Deny => refused("any host"),
        OutcallPolicy::LoopbackOnly => {
            let parsed = reqwest::Url::parse(url).map_err(|e| format!("Invalid URL {url}: {e}"))?;
            let (Some(host), Some(port)) = (parsed.host_str(), parsed.port_or_known_default()) else {
                return Err(format!("Invalid URL {url}: no host"));
            };
            let host = host.trim_start_matches('[').trim_end_matches(']');
            let addresses: Vec<IpAddr> = (host, port)
                .to_socket_addrs()
                .map_err(|e| format!("Connecting to {url} failed: {e}"))?
                .map(|a| a.ip())
                .collect();
            if !addresses.is_empty() && addresses.iter().all(IpAddr::is_loopback) {
                Ok(())
            } else {
                refused("hosts other than this machine's loopback addresses")
            }
        }
    }
}

/// Sends the request; the response, its body cut one byte past the
/// outcall's limit (the model refuses it then).
fn send(outcall: &Outcall) -> Result<OutcallResponse, reqwest::Error> {
    use std::io::Read;
    let client = reqwest::blocking::Client::builder().timeout(TIMEOUT).build()?;
    let method = match outcall.method {
        HttpMethod::GET => reqwest::Method::GET,
        HttpMethod::HEAD => reqwest::Method::HEAD,
        HttpMethod::POST => reqwest::Method::POST,
        HttpMethod::PUT => reqwest::Method::PUT,
        HttpMethod::DELETE => reqwest::Method::DELETE,
        HttpMethod::PATCH => reqwest::Method::PATCH,
    };
    let mut request = client.request(method, &outcall.url).body(outcall.body.clone());
    for header in &outcall.headers {
        request = request.header(&header.name, &header.value);
    }
    let response = request.send()?;
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(name, value)| HttpHeader {
            name: name.to_string(),
            value: String::from_utf8_lossy(value.as_bytes()).into_owned(),
        })
        .collect();
    let limit = outcall.max_response_bytes.unwrap_or(ic_model::management::http_outcalls::MAX_RESPONSE_BYTES);
    let mut body = Vec::new();
    // A read error past the headers is the server's: the body so far.
    let _ = response.take(limit + 1).read_to_end(&mut body);
    Ok(OutcallResponse::Reply(HttpRequestResult { status: status.into(), headers, body }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_decides_which_hosts_are_reached() {
        assert!(allowed(OutcallPolicy::Allow, "https://example.com/").is_ok());
        let denied = allowed(OutcallPolicy::Deny, "http://127.0.0.1:8080/").unwrap_err();
        assert!(denied.contains("--outcalls allow"), "{denied}");
        assert!(allowed(OutcallPolicy::LoopbackOnly, "http://127.0.0.1:8080/price").is_ok());
        assert!(allowed(OutcallPolicy::LoopbackOnly, "http://[::1]:8080/").is_ok());
        assert!(allowed(OutcallPolicy::LoopbackOnly, "http://localhost:8080/").is_ok());
        assert!(allowed(OutcallPolicy::LoopbackOnly, "http://10.0.0.1/").is_err());
        assert!(allowed(OutcallPolicy::LoopbackOnly, "not a url").is_err());
    }
}
