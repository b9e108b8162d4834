//! The IC's message vocabulary: requests, responses, rejects (with the
//! replica's error codes).

use candid::Principal;
pub use ic_reject::{ErrorCode, Reject, RejectCode};
use serde::{Deserialize, Serialize};

/// What a call context answers with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Payload {
    Reply(#[serde(with = "serde_bytes")] Vec<u8>),
    Reject(Reject),
}

impl Payload {
    /// A reject with the replica's error code (which implies its reject code).
    pub fn reject(error_code: ErrorCode, message: impl Into<String>) -> Self {
        Payload::Reject(Reject::new(error_code, message))
    }

    pub fn size(&self) -> usize {
        match self {
            Payload::Reply(data) => data.len(),
            Payload::Reject(reject) => reject.message.len(),
        }
    }
}

/// Identifies a callback within its (calling) canister.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CallbackId(pub u64);

/// Identifies a call context within its canister.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CallContextId(pub u64);

/// Identifies an ingress message, in submission order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct MessageId(pub u64);

/// An inter-canister call on its way to the callee.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Request {
    pub sender: Principal,
    pub receiver: Principal,
    pub method: String,
    #[serde(with = "serde_bytes")]
    pub arg: Vec<u8>,
    pub cycles: u128,
    pub callback: CallbackId,
    /// A bounded-wait call's deadline, in whole seconds since the epoch.
    pub deadline: Option<u64>,
}

/// An answer on its way back to the caller.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Response {
    pub originator: Principal,
    pub callback: CallbackId,
    pub payload: Payload,
    /// Attached cycles the callee did not accept.
    pub refund: u128,
    /// Made by the caller's own subnet when the call's deadline passed.
    pub deadline_expired: bool,
}

impl Request {
    /// The answer to a request that never reached its method: the reject,
    /// and the attached cycles back.
    pub fn rejected(&self, reject: Reject) -> Response {
        Response {
            originator: self.sender,
            callback: self.callback,
            payload: Payload::Reject(reject),
            refund: self.cycles,
            deadline_expired: false,
        }
    }
}

/// A user's update call.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Ingress {
    pub id: MessageId,
    pub sender: Principal,
    pub receiver: Principal,
    pub method: String,
    #[serde(with = "serde_bytes")]
    pub arg: Vec<u8>,
}

/// Anything in a canister's input queue.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Message {
    Ingress(Ingress),
    Request(Request),
    Response(Response),
}

impl Message {
    pub fn receiver(&self) -> Principal {
        match self {
            Message::Ingress(m) => m.receiver,
            Message::Request(m) => m.receiver,
            Message::Response(m) => m.originator,
        }
    }
}
