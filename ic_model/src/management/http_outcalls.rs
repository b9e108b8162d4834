//! HTTPS outcalls: `http_request`, which only canisters call. The call
//! waits, pending, until responses for it come from outside the model: a
//! test's mocks (PocketIC's `mock_canister_http_response`) or the host's
//! own requests (a local network's real outcalls). Then, as on the IC, the
//! nodes' responses must agree (a replicated outcall needs 2f + 1 equal
//! ones of the subnet's 13; a non-replicated one takes its node's), the
//! calling canister's `transform` query runs on the response, and the
//! result must fit `max_response_bytes`. The fee (legacy pricing, as the
//! subnet prices it) is kept whatever the outcome.

use candid::{Decode, Encode, Principal};
use ic_error_types::{ErrorCode, RejectCode};
use ic_management_canister_types::{
    HttpHeader, HttpMethod, HttpRequestArgs, HttpRequestResult, TransformArgs,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::{CallResult, Host, decode};
use crate::engine::Engine;
use crate::{CanisterCall, Reject};

/// The largest response (headers and body) an outcall may take, and the
/// limit when the request names none (`MAX_CANISTER_HTTP_RESPONSE_BYTES`).
pub const MAX_RESPONSE_BYTES: u64 = 2_000_000;

/// The longest URL (`MAX_CANISTER_HTTP_URL_SIZE`).
pub const MAX_URL_BYTES: usize = 8192;

/// The most request headers (`MAX_CANISTER_HTTP_HEADER_NUM`).
pub const MAX_HEADERS: usize = 64;

/// The most outcalls a network keeps waiting at once (the replica's
/// `MAX_CANISTER_HTTP_REQUESTS_IN_FLIGHT` per subnet): past it, a request
/// is refused at once, so that no canister grows the pending list without
/// limit.
pub const MAX_PENDING: usize = 3_000;

/// The nodes of a subnet, each of which makes a replicated outcall.
pub const SUBNET_NODES: usize = 13;

/// How many of the nodes' responses must be equal for a replicated
/// outcall to deliver one: 2f + 1 of 3f + 1.
const AGREEING: usize = 2 * ((SUBNET_NODES - 1) / 3) + 1;

/// An outcall waiting for its responses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcall {
    /// Its id, by which a response names it.
    pub id: u64,
    /// The subnet of the canister that made it.
    pub subnet: Principal,
    /// The canister that made it, whose transform runs on the response.
    pub caller: Principal,
    /// The request, as the canister made it.
    pub method: HttpMethod,
    /// Where to.
    pub url: String,
    /// The request's headers.
    pub headers: Vec<HttpHeader>,
    /// The request's body (empty if it has none).
    pub body: Vec<u8>,
    /// The largest response it takes; `None` for [`MAX_RESPONSE_BYTES`].
    pub max_response_bytes: Option<u64>,
    /// Whether every node makes it (and they must agree), or one does.
    pub replicated: bool,
    /// The caller's transform method and its context.
    transform: Option<(String, Vec<u8>)>,
    /// The engine's call to answer.
    call: u64,
    /// The fee, which is kept.
    fee: u128,
}

/// What one node got: a response, or why it got none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutcallResponse {
    /// The server's response: status, headers and body.
    Reply(HttpRequestResult),
    /// No response, and why (a timeout, a refused connection, ...).
    Reject {
        /// What the canister sees as the reject code.
        code: RejectCode,
        /// Why.
        message: String,
    },
}

/// The pending outcalls, and the next id.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcalls {
    next_id: u64,
    pending: BTreeMap<u64, Outcall>,
}

impl Outcalls {
    /// The outcalls waiting for responses, oldest first.
    pub fn pending(&self) -> impl Iterator<Item = &Outcall> {
        self.pending.values()
    }

    /// Those with an id of `from` or more (ids rise), oldest first.
    pub fn pending_from(&self, from: u64) -> impl Iterator<Item = &Outcall> {
        self.pending.range(from..).map(|(_, outcall)| outcall)
    }

    /// Whether one more may wait; the reject if [`MAX_PENDING`] already do.
    fn admit(&self) -> Result<(), Reject> {
        if self.pending.len() < MAX_PENDING {
            return Ok(());
        }
        Err(Reject::of_code(
            RejectCode::SysTransient,
            format!(
                "http_request refused: {MAX_PENDING} HTTPS outcalls already wait for responses; try again later"
            ),
        ))
    }
}

/// A canister's `http_request`, call `call` of the engine's, with `cycles`
/// attached: pending (`None`), or refused at once with the cycles kept.
pub(super) fn request(
    ic: &mut impl Host,
    subnet: Principal,
    caller: Principal,
    arg: &[u8],
    cycles: u128,
    call: u64,
) -> Option<(CallResult, u128)> {
    let checked =
        decode(arg, "http_request").and_then(|args: HttpRequestArgs| check(ic, caller, args, cycles));
    let (args, fee) = match checked {
        Ok(checked) => checked,
        Err(reject) => return Some((Err(reject), 0)),
    };
    let outcalls = ic.outcalls_mut();
    if let Err(full) = outcalls.admit() {
        return Some((Err(full), 0));
    }
    let id = outcalls.next_id;
    outcalls.next_id += 1;
    let outcall = Outcall {
        id,
        subnet,
        caller,
        method: args.method,
        url: args.url,
        headers: args.headers,
        body: args.body.unwrap_or_default(),
        max_response_bytes: args.max_response_bytes,
        replicated: args.is_replicated.unwrap_or(true),
        transform: args.transform.map(|t| (t.function.0.method, t.context)),
        call,
        fee,
    };
    outcalls.pending.insert(id, outcall);
    None
}

/// The request if the IC takes it, and its fee; otherwise the reject.
fn check(
    ic: &impl Host,
    caller: Principal,
    args: HttpRequestArgs,
    cycles: u128,
) -> Result<(HttpRequestArgs, u128), Reject> {
    let refuse = |message: String| Err(Reject::new(ErrorCode::CanisterRejectedMessage, message));
    if args.pricing_version.is_some_and(|v| v != 1) {
        return Err(super::unsupported("http_request with pay-as-you-go pricing (pricing_version 2)"));
    }
    if args.url.len() > MAX_URL_BYTES {
        return refuse(format!("url size {} exceeds the limit of {MAX_URL_BYTES} bytes", args.url.len()));
    }
    if let Some(max) = args.max_response_bytes.filter(|&max| max > MAX_RESPONSE_BYTES) {
        return refuse(format!(
            "max_response_bytes expected to be in the range [0..{MAX_RESPONSE_BYTES}], got {max}"
        ));
    }
    if args.headers.len() > MAX_HEADERS {
        return refuse(format!(
            "number of headers {} exceeds the limit of {MAX_HEADERS}",
            args.headers.len()
        ));
    }
    if let Some(transform) = &args.transform
        && transform.function.0.principal != caller
    {
        return refuse(format!(
            "the transform function must be a query method of the calling canister {caller}, not of {}",
            transform.function.0.principal
        ));
    }
    let headers: usize = args.headers.iter().map(|h| h.name.len() + h.value.len()).sum();
    let transform = args.transform.as_ref().map_or(0, |t| t.function.0.method.len() + t.context.len());
    let request_bytes = args.url.len() + headers + args.body.as_ref().map_or(0, Vec::len) + transform;
    let max_response = args.max_response_bytes.unwrap_or(MAX_RESPONSE_BYTES);
    let fee = ic.engine().http_request_fee(request_bytes as u64, max_response);
    if cycles < fee {
        return refuse(format!(
            "http_request request sent with {cycles} cycles, but {fee} cycles are required."
        ));
    }
    Ok((args, fee))
}

/// Answers pending outcall `id` with its node's `response` and, for a
/// replicated one whose nodes disagree, the other nodes' (`others`: none,
/// or one per remaining node); why not, if it cannot.
pub fn respond(
    ic: &mut impl Host,
    id: u64,
    response: OutcallResponse,
    others: Vec<OutcallResponse>,
) -> Result<(), String> {
    if !others.is_empty() && others.len() != SUBNET_NODES - 1 {
        return Err(format!(
            "a mock gives one response for every node, or {} more (the subnet has {SUBNET_NODES} nodes), not {}",
            SUBNET_NODES - 1,
            others.len()
        ));
    }
    let outcall = ic.outcalls_mut().pending.remove(&id).ok_or_else(|| format!("no pending outcall {id}"))?;
    let agreed =
        if outcall.replicated && !others.is_empty() { agreement(response, others) } else { Ok(response) };
    let result = match agreed {
        Ok(OutcallResponse::Reply(reply)) => deliver(ic, &outcall, reply),
        Ok(OutcallResponse::Reject { code, message }) => Err(Reject::of_code(code, message)),
        Err(reject) => Err(reject),
    };
    ic.engine_mut().answer_call(
        outcall.call,
        result.map(|reply| Encode!(&reply).expect("encodes")),
        outcall.fee,
    );
    Ok(())
}

/// The response at least [`AGREEING`] nodes got, or the replica's reject.
fn agreement(response: OutcallResponse, others: Vec<OutcallResponse>) -> Result<OutcallResponse, Reject> {
    let all: Vec<_> = std::iter::once(response).chain(others).collect();
    let agreeing = |r: &OutcallResponse| all.iter().filter(|other| *other == r).count();
    match all.iter().find(|r| agreeing(r) >= AGREEING) {
        Some(agreed) => Ok(agreed.clone()),
        None => Err(Reject::of_code(
            RejectCode::SysTransient,
            "No consensus could be reached. Replicas had different responses.",
        )),
    }
}

/// The response the canister gets: within the size limit, transformed by
/// its transform method, and within the limit again.
fn deliver(
    ic: &mut impl Host,
    outcall: &Outcall,
    reply: HttpRequestResult,
) -> Result<HttpRequestResult, Reject> {
    let max = outcall.max_response_bytes.unwrap_or(MAX_RESPONSE_BYTES);
    let too_large = |what: &str| {
        Reject::of_code(RejectCode::SysFatal, format!("{what} exceeds size limit of {max} bytes."))
    };
    if size(&reply) > max {
        return Err(too_large("Http body"));
    }
    let Some((method, context)) = &outcall.transform else {
        return Ok(reply);
    };
    let arg = Encode!(&TransformArgs { response: reply, context: context.clone() }).expect("encodes");
    let call = CanisterCall::new(outcall.caller, Principal::management_canister(), method.clone(), arg);
    let failed = |why: String| {
        Reject::of_code(RejectCode::SysFatal, format!("Failed to transform http response: {why}"))
    };
    let transformed = ic.engine_mut().query(call, None).map_err(|reject| failed(reject.message))?;
    let transformed = Decode!(&transformed, HttpRequestResult).map_err(|e| failed(e.to_string()))?;
    if size(&transformed) > max {
        return Err(too_large("Transformed http response"));
    }
    Ok(transformed)
}

/// A response's size as the IC counts it: headers and body.
fn size(response: &HttpRequestResult) -> u64 {
    let headers: usize = response.headers.iter().map(|h| h.name.len() + h.value.len()).sum();
    (headers + response.body.len()) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_more_than_max_pending_outcalls_wait() {
        let mut outcalls = Outcalls::default();
        let outcall = |id| Outcall {
            id,
            subnet: Principal::anonymous(),
            caller: Principal::anonymous(),
            method: HttpMethod::GET,
            url: String::new(),
            headers: vec![],
            body: vec![],
            max_response_bytes: None,
            replicated: true,
            transform: None,
            call: id,
            fee: 0,
        };
        for id in 0..MAX_PENDING as u64 - 1 {
            outcalls.pending.insert(id, outcall(id));
        }
        assert!(outcalls.admit().is_ok());
        outcalls.pending.insert(u64::MAX, outcall(u64::MAX));
        let full = outcalls.admit().unwrap_err();
        assert_eq!(full.code(), RejectCode::SysTransient);
        assert!(full.message.contains("3000 HTTPS outcalls already wait"), "{}", full.message);
    }
}
