//! The HTTP gateway: canisters' `http_request` served to browsers, responses verified as the IC's gateways verify them.
//!
//! DFINITY's `ic-http-gateway` does the protocol (the `http_request` query,
//! its upgrade to `http_request_update`, streaming callbacks, certification
//! v1 and v2); this crate finds the canister a request is for, gives the
//! gateway an agent of the network it serves, and turns its failures into
//! pages that say what to do.
//!
//! A canister is found as dfx's, icp-cli's and PocketIC's local gateways
//! find it: from the host (`<id>.localhost`, `<id>.raw.localhost` for
//! responses served unverified), from `?canisterId=<id>`, or from the
//! `Referer` of a page that was found so (the scripts a page loads).

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use candid::Principal;
use http_body_util::BodyExt;
use ic_agent::agent::RejectCode;
use ic_agent::{Agent, AgentError};
use ic_http_gateway::{HttpGatewayClient, HttpGatewayError, HttpGatewayRequestArgs};
use std::sync::{Arc, OnceLock};

/// The domain whose subdomains name canisters.
const DOMAIN: &str = "localhost";

/// The gateway of one network: its router serves the requests, once
/// [`connect`](Self::connect) has said where the network's API listens.
#[derive(Clone)]
pub struct Gateway {
    root_key: Vec<u8>,
    client: Arc<OnceLock<HttpGatewayClient>>,
}

impl Gateway {
    /// A gateway that verifies responses against `root_key` (DER), the
    /// network's.
    pub fn new(root_key: Vec<u8>) -> Self {
        Self { root_key, client: Arc::new(OnceLock::new()) }
    }

    /// Points the gateway's agent at the network's API (`http://127.0.0.1:<port>`).
    /// The router answers 503 until then; a second call changes nothing.
    pub fn connect(&self, api_url: &str) -> Result<(), String> {
        let agent = Agent::builder()
            .with_url(api_url)
            .build()
            .map_err(|e| format!("the gateway's agent for {api_url}: {e}"))?;
        // The network's own key, not one fetched: nothing to trust on the way.
        agent.set_root_key(self.root_key.clone());
        let client = HttpGatewayClient::builder()
            .with_agent(agent)
            .build()
            .map_err(|e| format!("the gateway for {api_url}: {e}"))?;
        let _ = self.client.set(client);
        Ok(())
    }

    /// The router that serves every request it is given through the gateway.
    pub fn router(&self) -> Router {
        Router::new().fallback(serve).with_state(self.clone())
    }
}

/// The canister a request is for, and whether its response is served
/// unverified (`raw`).
#[derive(Debug, PartialEq, Eq)]
struct Target {
    canister: Principal,
    raw: bool,
}

/// Why no canister answers a request, before any is asked.
#[derive(Debug, PartialEq, Eq)]
enum Unresolved {
    /// Neither the host, nor the query, nor the referer names a canister.
    Nothing,
    /// Where a canister id was expected, this text, which is not one.
    Malformed { text: String, why: String },
}

fn parse(text: &str) -> Result<Principal, Unresolved> {
    Principal::from_text(text)
        .map_err(|e| Unresolved::Malformed { text: text.to_string(), why: e.to_string() })
}

/// The canister `host` (with or without its port) names, if it is `<id>.localhost`
/// or `<id>.raw.localhost`.
fn from_host(host: &str) -> Option<Result<Target, Unresolved>> {
    let name = host
        .rsplit_once(':')
        .map_or(host, |(name, port)| if port.chars().all(|c| c.is_ascii_digit()) { name } else { host });
    let name = name.to_ascii_lowercase();
    let label = name.strip_suffix(DOMAIN)?.strip_suffix('.')?;
    let (label, raw) = match label.strip_suffix(".raw") {
        Some(label) => (label, true),
        None => (label, false),
    };
    Some(parse(label).map(|canister| Target { canister, raw }))
}

/// The canister `?canisterId=` names in `query`.
fn from_query(query: &str) -> Option<Result<Target, Unresolved>> {
    let value = query.split('&').find_map(|pair| pair.strip_prefix("canisterId="))?;
    Some(parse(value).map(|canister| Target { canister, raw: false }))
}

/// The canister a request is for: its host first, then its query, then
/// those of the page that referred to it.
fn resolve(headers: &HeaderMap, uri: &Uri) -> Result<Target, Unresolved> {
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).or_else(|| uri.host());
    let referer =
        headers.get(header::REFERER).and_then(|r| r.to_str().ok()).and_then(|r| r.parse::<Uri>().ok());
    host.and_then(from_host)
        .or_else(|| uri.query().and_then(from_query))
        .or_else(|| referer.as_ref().and_then(|r| r.host().and_then(from_host)))
        .or_else(|| referer.as_ref().and_then(|r| r.query().and_then(from_query)))
        .unwrap_or(Err(Unresolved::Nothing))
}

async fn serve(State(gateway): State<Gateway>, request: Request) -> Response {
    let port = port(request.headers());
    let target = match resolve(request.headers(), request.uri()) {
        Ok(target) => target,
        Err(unresolved) => return unresolved_page(&unresolved, &port),
    };
    let Some(client) = gateway.client.get() else {
        return page(
            StatusCode::SERVICE_UNAVAILABLE,
            "The gateway is starting",
            "It does not know yet where the network's API listens.",
            "Retry in a moment.",
        );
    };
    let (parts, body) = request.into_parts();
    // The server read the body within its limits before this runs.
    let body = match body.collect().await {
        Ok(body) => body.to_bytes(),
        Err(e) => return page(StatusCode::BAD_REQUEST, "Bad request", &format!("Its body: {e}"), ""),
    };
    let canister_request = axum::http::Request::from_parts(parts, body);
    let mut request =
        client.request(HttpGatewayRequestArgs { canister_request, canister_id: target.canister });
    request.unsafe_set_skip_verification(target.raw);
    let response = request.send().await;
    let (parts, body) = response.canister_response.into_parts();
    match response.metadata.internal_error {
        None => Response::from_parts(parts, Body::new(body)),
        Some(error) => {
            // The gateway's own message, which its error responses carry whole.
            let said = match body.collect().await {
                Ok(body) => String::from_utf8_lossy(&body.to_bytes()).into_owned(),
                Err(_) => String::new(),
            };
            failure_page(parts.status, &target, &error, &said, &port)
        }
    }
}

/// `:<port>` as the request's host gives it, for the addresses a page suggests.
fn port(headers: &HeaderMap) -> String {
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
    host.rsplit_once(':').map_or(String::new(), |(_, port)| format!(":{port}"))
}

fn unresolved_page(unresolved: &Unresolved, port: &str) -> Response {
    let ways = format!(
        "Open <code>http://&lt;canister id&gt;.localhost{port}/</code>, or \
         <code>http://127.0.0.1{port}/?canisterId=&lt;canister id&gt;</code> \
         (<code>icp canister status NAME</code> or <code>dfx canister id NAME</code> shows the id). \
         Paths under <code>/api/</code> are the IC's HTTP interface, for agents."
    );
    match unresolved {
        Unresolved::Nothing => page(
            StatusCode::BAD_REQUEST,
            "No canister named",
            "This is a local IC network's HTTP gateway: it serves canisters' web pages, \
             and this request names no canister.",
            &ways,
        ),
        Unresolved::Malformed { text, why } => page(
            StatusCode::BAD_REQUEST,
            "Not a canister id",
            &format!("<code>{}</code> is not a canister id: {}", escape(text), escape(why)),
            &ways,
        ),
    }
}

/// The page for a request the gateway failed, with the gateway's status.
fn failure_page(
    status: StatusCode,
    target: &Target,
    error: &HttpGatewayError,
    said: &str,
    port: &str,
) -> Response {
    let canister = target.canister;
    let agent_error = match error {
        HttpGatewayError::AgentError(e) => Some(&**e),
        _ => None,
    };
    let reject = match agent_error {
        Some(AgentError::CertifiedReject { reject, .. } | AgentError::UncertifiedReject { reject, .. }) => {
            Some(reject)
        }
        _ => None,
    };
    // The network's refusal in its own words, rather than the gateway's debug print of it.
    let said = match agent_error {
        Some(AgentError::HttpError(payload)) => String::from_utf8_lossy(&payload.content).into_owned(),
        _ => said.to_string(),
    };
    let what = format!("The gateway asked canister <code>{canister}</code> for this page: {}", escape(&said));
    // The API refuses an id in no subnet's range (400); a subnet, one it does not host.
    let no_such_canister = matches!(agent_error, Some(AgentError::HttpError(payload)) if payload.status == 400)
        || reject.is_some_and(|reject| reject.reject_code == RejectCode::DestinationInvalid);
    let (title, todo) = match (error, reject) {
        _ if no_such_canister => (
            "No such canister",
            "Check the canister id: <code>icp canister status NAME</code> or \
             <code>dfx canister id NAME</code> shows it, on this network."
                .to_string(),
        ),
        // IC0536: the canister has no such method.
        (_, Some(reject)) if reject.error_code.as_deref() == Some("IC0536") => (
            "Not a web canister",
            "This canister has no <code>http_request</code> method, so it serves no web pages. \
             Call its methods with <code>icp canister call</code>, or through the Candid UI."
                .to_string(),
        ),
        (HttpGatewayError::ResponseVerificationError(_), _) => (
            "Response not verified",
            format!(
                "The canister's response does not carry a certificate that verifies, so the gateway \
                 does not serve it. A canister certifies what it serves (ic-certified-assets, \
                 ic-http-certification); for development, <code>http://{canister}.raw.localhost{port}/</code> \
                 serves it unverified."
            ),
        ),
        _ => ("The gateway could not serve this page", "Retry, or look at the network's log.".to_string()),
    };
    page(status, title, &what, &todo)
}

/// A short HTML page: what happened, and what to do.
fn page(status: StatusCode, title: &str, what: &str, todo: &str) -> Response {
    let body = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{status} {title}</title></head>\n\
         <body><h1>{title}</h1>\n<p>{what}</p>\n<p>{todo}</p>\n<p><small>{status}, from the HTTP gateway of \
         this project's simulator.</small></p></body></html>\n"
    );
    (status, [(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "ryjl3-tyaaa-aaaaa-aaaba-cai";

    fn resolved(host: &str, uri: &str, referer: Option<&str>) -> Result<Target, Unresolved> {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, host.parse().unwrap());
        if let Some(referer) = referer {
            headers.insert(header::REFERER, referer.parse().unwrap());
        }
        resolve(&headers, &uri.parse().unwrap())
    }

    fn target(raw: bool) -> Result<Target, Unresolved> {
        Ok(Target { canister: Principal::from_text(ID).unwrap(), raw })
    }

    #[test]
    fn the_canister_comes_from_the_host_the_query_or_the_referer() {
        assert_eq!(resolved(&format!("{ID}.localhost:4943"), "/", None), target(false));
        assert_eq!(resolved(&format!("{ID}.localhost"), "/index.js", None), target(false));
        assert_eq!(resolved(&format!("{ID}.raw.localhost:4943"), "/", None), target(true));
        assert_eq!(resolved("127.0.0.1:4943", &format!("/?id=x&canisterId={ID}"), None), target(false));
        let referer = format!("http://127.0.0.1:4943/?canisterId={ID}&id=aaaaa-aa");
        assert_eq!(resolved("127.0.0.1:4943", "/index.js", Some(&referer)), target(false));
        assert_eq!(resolved("127.0.0.1:4943", "/", None), Err(Unresolved::Nothing));
        assert_eq!(resolved("localhost:4943", "/", None), Err(Unresolved::Nothing));
        assert!(matches!(resolved("nope.localhost:4943", "/", None), Err(Unresolved::Malformed { .. })));
        assert!(matches!(
            resolved("127.0.0.1", "/?canisterId=nope", None),
            Err(Unresolved::Malformed { .. })
        ));
    }
}
