//! A request as the interface specification defines its content: the
//! envelope ic-transport-types decodes, and the `nonce` of a `read_state`,
//! for which its `EnvelopeContent::ReadState` has no field (the spec's
//! content and the replica's have one). The request id hashes every field
//! the spec gives the request's type, as the replica's does.

use candid::Principal;
use ic_transport_types::{Envelope, EnvelopeContent, RequestId, to_request_id};
use serde::{Deserialize, Serialize};

/// A decoded request.
pub(crate) struct Request {
    pub envelope: Envelope<'static>,
    read_state_nonce: Option<Vec<u8>>,
}

/// The one field of a read_state's content that the envelope drops.
#[derive(Deserialize)]
struct NonceOf {
    content: Nonce,
}

#[derive(Deserialize)]
struct Nonce {
    #[serde(default, with = "serde_bytes")]
    nonce: Option<Vec<u8>>,
}

/// A read_state's content with its nonce, as the request id hashes it
/// (`L`: the envelope's labels).
#[derive(Serialize)]
struct ReadStateContent<'a, L> {
    request_type: &'static str,
    ingress_expiry: u64,
    sender: &'a Principal,
    paths: &'a [Vec<L>],
    #[serde(with = "serde_bytes")]
    nonce: &'a [u8],
}

impl Request {
    /// Decodes a CBOR envelope.
    pub fn decode(body: &[u8]) -> Result<Self, serde_cbor::Error> {
        let envelope: Envelope<'static> = serde_cbor::from_slice(body)?;
        let read_state_nonce = match envelope.content.as_ref() {
            EnvelopeContent::ReadState { .. } => serde_cbor::from_slice::<NonceOf>(body)?.content.nonce,
            _ => None,
        };
        Ok(Self { envelope, read_state_nonce })
    }

    pub fn content(&self) -> &EnvelopeContent {
        &self.envelope.content
    }

    /// The content's nonce, whatever the request's type.
    pub fn nonce(&self) -> Option<&[u8]> {
        match self.content() {
            EnvelopeContent::Call { nonce, .. } | EnvelopeContent::Query { nonce, .. } => nonce.as_deref(),
            EnvelopeContent::ReadState { .. } => self.read_state_nonce.as_deref(),
        }
    }

    /// The request id: what the sender signs, and what names a call.
    pub fn id(&self) -> RequestId {
        match (self.content(), &self.read_state_nonce) {
            (EnvelopeContent::ReadState { ingress_expiry, sender, paths }, Some(nonce)) => {
                let content = ReadStateContent {
                    request_type: "read_state",
                    ingress_expiry: *ingress_expiry,
                    sender,
                    paths,
                    nonce,
                };
                to_request_id(&content).expect("plain fields hash")
            }
            (content, _) => content.to_request_id(),
        }
    }
}
