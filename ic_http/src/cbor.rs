//! Bodies as the replica reads and writes them: CBOR in, self-described
//! CBOR out, and errors as plain text.

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use ic_model::to_cbor;

use crate::request::Request;

/// An answer other than 200: the status and the replica's text.
#[derive(Debug)]
pub(crate) struct HttpError {
    pub status: StatusCode,
    pub message: String,
}

impl HttpError {
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self { status: StatusCode::BAD_REQUEST, message: message.into() }
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self { status: StatusCode::NOT_FOUND, message: message.into() }
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self { status: StatusCode::FORBIDDEN, message: message.into() }
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self { status: StatusCode::INTERNAL_SERVER_ERROR, message: message.into() }
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        (self.status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], self.message).into_response()
    }
}

/// A CBOR answer with status 200.
pub(crate) struct Cbor<T>(pub T);

impl<T: Serialize> IntoResponse for Cbor<T> {
    fn into_response(self) -> Response {
        let content_type = HeaderValue::from_static("application/cbor");
        ([(header::CONTENT_TYPE, content_type)], to_cbor(&self.0)).into_response()
    }
}

/// The request, refused as the replica refuses a wrong content type or
/// undecodable CBOR.
pub(crate) fn request(headers: &HeaderMap, body: &Bytes) -> Result<Request, HttpError> {
    let cbor = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim().eq_ignore_ascii_case("application/cbor"));
    if !cbor {
        return Err(HttpError::bad_request("Unexpected content-type, expected application/cbor."));
    }
    Request::decode(body)
        .map_err(|e| HttpError::bad_request(format!("Failed to deserialize cbor request: {e}")))
}
