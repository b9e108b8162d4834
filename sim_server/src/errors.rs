//! How failures reach the client: HTTP errors as PocketIC's `{"message"}`
//! bodies, and the IC model's rejects as `RejectResponse`s.

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

/// A reject of the IC model's, as PocketIC reports one.
pub fn pocket_ic_reject(r: ic_model::Reject) -> RejectResponse {
    let reject_code = RejectCode::try_from(r.code() as u64).unwrap_or(RejectCode::CanisterError);
    let error_code = ErrorCode::try_from(r.error_code as u64).unwrap_or(ErrorCode::CanisterCalledTrap);
    RejectResponse { reject_code, reject_message: r.message, error_code, certified: true }
}

/// A call's result, as PocketIC reports it.
pub fn pocket_ic_result(result: Result<Vec<u8>, ic_model::Reject>) -> Result<Vec<u8>, RejectResponse> {
    result.map_err(pocket_ic_reject)
}
