//! How failures reach the client: HTTP errors as PocketIC's `{"message"}`
//! bodies, and the simulator's rejects and errors as `RejectResponse`s.

use axum::Json;
use axum::extract::FromRequest;
use axum::extract::rejection::JsonRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use pocket_ic::{ErrorCode, RejectCode, RejectResponse};
use serde::Serialize;

/// An HTTP error. The body is what the pocket-ic client's `ApiResponse`
/// reads for any status but 200, 202 and 409.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
}

impl ApiError {
    /// What PocketIC answers for an operation that fails (its `OpOut::Error`).
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self { status: StatusCode::BAD_REQUEST, message: message.into() }
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self { status: StatusCode::INTERNAL_SERVER_ERROR, message: message.into() }
    }

    pub fn instance_not_found(id: usize) -> Self {
        Self::bad_request(format!("Instance not found: {id}"))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        #[derive(Serialize)]
        struct Body {
            message: String,
        }
        (self.status, Json(Body { message: self.message })).into_response()
    }
}

/// axum's `Json`, whose rejections (malformed JSON, wrong types, no JSON
/// content type) keep axum's status codes, as PocketIC's server has them,
/// but come as a body the client can read.
pub struct Body<T>(pub T);

impl<T, S> FromRequest<S> for Body<T>
where
    Json<T>: FromRequest<S, Rejection = JsonRejection>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, ApiError> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(value)) => Ok(Body(value)),
            Err(rejection) => Err(ApiError { status: rejection.status(), message: rejection.body_text() }),
        }
    }
}

pub fn reject(reject_code: RejectCode, error_code: ErrorCode, message: impl Into<String>) -> RejectResponse {
    RejectResponse { reject_code, reject_message: message.into(), error_code, certified: true }
}

/// The simulator's rejects carry no error code: each reject code gets the
/// one the replica gives most often for it.
pub fn from_sim_reject(r: sim::Reject) -> RejectResponse {
    let (reject_code, error_code) = match r.code {
        sim::RejectCode::SysFatal => (RejectCode::SysFatal, ErrorCode::SubnetOversubscribed),
        sim::RejectCode::SysTransient => (RejectCode::SysTransient, ErrorCode::CanisterQueueFull),
        sim::RejectCode::DestinationInvalid => (RejectCode::DestinationInvalid, ErrorCode::CanisterNotFound),
        sim::RejectCode::CanisterReject => (RejectCode::CanisterReject, ErrorCode::CanisterRejectedMessage),
        // The simulator names a missing method in its message, as the
        // replica does; tools tell it from a trap by its code (icp-cli
        // probes `http_request` to find a frontend).
        sim::RejectCode::CanisterError if is_missing_method(&r.message) => {
            (RejectCode::CanisterError, ErrorCode::CanisterMethodNotFound)
        }
        sim::RejectCode::CanisterError => (RejectCode::CanisterError, ErrorCode::CanisterCalledTrap),
        sim::RejectCode::SysUnknown => (RejectCode::SysUnknown, ErrorCode::DeadlineExpired),
    };
    reject(reject_code, error_code, r.message)
}

fn is_missing_method(message: &str) -> bool {
    message.starts_with("Canister ")
        && (message.contains(" has no update method '") || message.contains(" has no query method '"))
}

/// A management operation the simulator refused, with the reject and error
/// codes the replica gives for the same refusal.
pub fn from_sim_error(e: sim::SimError) -> RejectResponse {
    use sim::SimError as E;
    let (reject_code, error_code) = match &e {
        E::CanisterNotFound(_) => (RejectCode::DestinationInvalid, ErrorCode::CanisterNotFound),
        E::NoSuchSubnet { .. } => (RejectCode::DestinationInvalid, ErrorCode::SubnetNotFound),
        E::NotAController { .. } => (RejectCode::CanisterError, ErrorCode::CanisterInvalidController),
        E::InvalidWasm(_) => (RejectCode::CanisterError, ErrorCode::CanisterInvalidWasm),
        E::InstallTrapped { .. } => (RejectCode::CanisterError, ErrorCode::CanisterCalledTrap),
        E::NoCodeToUpgrade(_) => (RejectCode::CanisterError, ErrorCode::CanisterWasmModuleNotFound),
        E::NotStopped(_) | E::OpenCallContexts(_) => {
            (RejectCode::CanisterError, ErrorCode::CanisterNotStopped)
        }
        E::DidNotStop { .. } => (RejectCode::SysTransient, ErrorCode::StopCanisterRequestTimeout),
        E::TracingOff => (RejectCode::SysFatal, ErrorCode::CanisterCalledTrap),
        E::SubnetFull { .. } => (RejectCode::SysFatal, ErrorCode::MaxNumberOfCanistersReached),
    };
    reject(reject_code, error_code, e.to_string())
}

pub fn canister_not_found(canister: candid::Principal) -> RejectResponse {
    reject(
        RejectCode::DestinationInvalid,
        ErrorCode::CanisterNotFound,
        format!("Canister {canister} not found"),
    )
}

/// A management method or argument the simulator cannot honour.
pub fn unsupported(what: impl std::fmt::Display) -> RejectResponse {
    reject(
        RejectCode::CanisterReject,
        ErrorCode::UnknownManagementMessage,
        format!("{what}: not supported by the simulator server (this project's simulator, not PocketIC)"),
    )
}
