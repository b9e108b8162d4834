//! PocketIC's canister HTTP endpoints in the IC model's terms: the pending
//! HTTPS outcalls as `get_canister_http` lists them, and the responses
//! `mock_canister_http` gives them.

use candid::{Nat, Principal};
use ic_error_types::RejectCode;
use ic_management_canister_types::{HttpHeader, HttpMethod, HttpRequestResult};
use ic_model::management::http_outcalls::{Outcall, OutcallResponse};
use pocket_ic::common::rest::{
    CanisterHttpHeader, CanisterHttpMethod, CanisterHttpPricingVersion, CanisterHttpReplication,
    CanisterHttpResponse, RawCanisterHttpRequest, RawMockCanisterHttpResponse, RawSubnetId,
};

use crate::errors::ApiError;
use crate::instance::Instance;

/// Every pending outcall, as PocketIC lists it.
pub fn pending(instance: &Instance) -> Vec<RawCanisterHttpRequest> {
    instance.pending_outcalls().into_iter().map(request).collect()
}

fn request(outcall: Outcall) -> RawCanisterHttpRequest {
    let http_method = match outcall.method {
        HttpMethod::GET => CanisterHttpMethod::GET,
        HttpMethod::HEAD => CanisterHttpMethod::HEAD,
        HttpMethod::POST => CanisterHttpMethod::POST,
        HttpMethod::PUT => CanisterHttpMethod::PUT,
        HttpMethod::DELETE => CanisterHttpMethod::DELETE,
        HttpMethod::PATCH => CanisterHttpMethod::PATCH,
    };
    RawCanisterHttpRequest {
        subnet_id: RawSubnetId { subnet_id: outcall.subnet.as_slice().to_vec() },
        request_id: outcall.id,
        http_method,
        url: outcall.url,
        headers: outcall
            .headers
            .into_iter()
            .map(|h| CanisterHttpHeader { name: h.name, value: h.value })
            .collect(),
        body: outcall.body,
        max_response_bytes: outcall.max_response_bytes,
        replication: if outcall.replicated {
            CanisterHttpReplication::FullyReplicated
        } else {
            CanisterHttpReplication::NonReplicated
        },
        pricing_version: CanisterHttpPricingVersion::Legacy,
    }
}

/// Answers a pending outcall with a mock: one response for every node, or
/// one per node.
pub fn mock(instance: &mut Instance, mock: RawMockCanisterHttpResponse) -> Result<(), ApiError> {
    let subnet = Principal::try_from_slice(&mock.subnet_id.subnet_id)
        .map_err(|e| ApiError::bad_request(format!("subnet id: {e}")))?;
    let id = mock.request_id;
    if !instance.pending_outcalls().iter().any(|o| o.id == id && o.subnet == subnet) {
        return Err(ApiError::bad_request(format!(
            "no pending canister HTTP outcall {id} on subnet {subnet}"
        )));
    }
    let first = response(mock.response)?;
    let others = mock.additional_responses.into_iter().map(response).collect::<Result<_, _>>()?;
    instance.respond_to_outcall(id, first, others).map_err(ApiError::bad_request)
}

fn response(response: CanisterHttpResponse) -> Result<OutcallResponse, ApiError> {
    Ok(match response {
        CanisterHttpResponse::CanisterHttpReply(reply) => OutcallResponse::Reply(HttpRequestResult {
            status: Nat::from(reply.status),
            headers: reply.headers.into_iter().map(|h| HttpHeader { name: h.name, value: h.value }).collect(),
            body: reply.body,
        }),
        CanisterHttpResponse::CanisterHttpReject(reject) => {
            let code = match reject.reject_code {
                1 => RejectCode::SysFatal,
                2 => RejectCode::SysTransient,
                3 => RejectCode::DestinationInvalid,
                4 => RejectCode::CanisterReject,
                5 => RejectCode::CanisterError,
                6 => RejectCode::SysUnknown,
                other => return Err(ApiError::bad_request(format!("{other} is not a reject code (1 to 6)"))),
            };
            OutcallResponse::Reject { code, message: reject.message }
        }
    })
}
