//! An endpoint's candid argument, decoded as ic-cdk decodes it, but an
//! argument that does not decode is rejected with a message that names the
//! method and the candid type it expects, instead of ic-cdk's Rust panic
//! text (`Panicked at 'called `Result::unwrap()` on an `Err` value ...`).
//!
//! Use it with ic-cdk's `decode_with`, `hidden` (ic-cdk would export the
//! argument as `blob`), and candid's own `candid_method` on the same
//! function, so that `export_candid!` exports the real argument types:
//!
//! ```text
//! #[ic_cdk::update(decode_with = "endpoint_args::decode_one", hidden)]
//! #[candid::candid_method(update)]
//! fn run_plan(plan: Plan) -> Report { ... }
//! ```
//!
//! The trap happens before the endpoint runs, so nothing has changed.

#[cfg(feature = "testing")]
pub mod testing;

use candid::types::internal::TypeContainer;
use candid::utils::ArgumentDecoder;
use candid::{CandidType, DecoderConfig};

/// An argument that did not decode: what was expected and why it failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undecodable {
    /// The arguments' candid types as the `.did` writes them: `Plan`,
    /// `nat64`, `(Plan, opt RetryPolicy)`.
    pub expected: String,
    /// The decoder's reason.
    pub reason: String,
}

impl Undecodable {
    /// The reject message for `method`.
    pub fn message(&self, method: &str) -> String {
        format!(
            "{method}: the argument is not a candid `{}`; encode it with this method's argument type \
             from the canister's candid interface (its public `candid:service` metadata) and call again: {}",
            self.expected, self.reason
        )
    }
}

/// An endpoint's arguments as a tuple, with their candid types.
pub trait Args: for<'a> ArgumentDecoder<'a> {
    /// The candid types, named as in the `.did` (records and variants by
    /// their names).
    fn types() -> Vec<candid::types::Type>;
}

macro_rules! args_tuple {
    ($($t:ident),+) => {
        impl<$($t: CandidType + for<'a> candid::Deserialize<'a>),+> Args for ($($t,)+) {
            fn types() -> Vec<candid::types::Type> {
                let mut env = TypeContainer::new();
                vec![$(env.add::<$t>()),+]
            }
        }
    };
}
args_tuple!(A);
args_tuple!(A, B);
args_tuple!(A, B, C);

/// The candid types of `T` as the `.did` writes an argument list: one type
/// alone (`Plan`), several in parentheses (`(Plan, opt RetryPolicy)`).
pub fn expected<T: Args>() -> String {
    type_list(&T::types())
}

/// Argument types as a `.did` writes them: one alone, several in
/// parentheses.
pub fn type_list(types: &[candid::types::Type]) -> String {
    let types: Vec<String> = types.iter().map(ToString::to_string).collect();
    match types.as_slice() {
        [one] => one.clone(),
        many => format!("({})", many.join(", ")),
    }
}

/// Decodes `bytes` exactly as ic-cdk 0.20's endpoint macros do (no bytes
/// are an empty argument list; skipping quota 10,000).
pub fn decode<T: Args>(bytes: &[u8]) -> Result<T, Undecodable> {
    let bytes: &[u8] = if bytes.is_empty() { b"DIDL\x00\x00" } else { bytes };
    let mut config = DecoderConfig::new();
    config.set_skipping_quota(10_000);
    candid::utils::decode_args_with_config(bytes, &config)
        .map_err(|e| Undecodable { expected: expected::<T>(), reason: reason(&e) })
}

/// The longest reason a message quotes, in bytes.
pub const MAX_REASON: usize = 500;

/// The decoder's error on one line, without the hex dump of the whole
/// input that candid puts first (it grows with the argument), and at most
/// [`MAX_REASON`] bytes.
fn reason(e: &candid::Error) -> String {
    let full = format!("{e:#}");
    let mut reason = full.lines().filter(|line| !line.starts_with("input: ")).collect::<Vec<_>>().join(", ");
    if reason.len() > MAX_REASON {
        let cut = (0..=MAX_REASON - 3).rev().find(|&i| reason.is_char_boundary(i)).unwrap_or(0);
        reason.truncate(cut);
        reason.push_str("...");
    }
    reason
}

/// For `decode_with` on an endpoint with several arguments: the argument
/// tuple, or a trap naming the method and the types expected.
pub fn decode_args<T: Args>(bytes: Vec<u8>) -> T {
    decode(&bytes).unwrap_or_else(|e| ic_cdk::trap(e.message(&ic_cdk::api::msg_method_name())))
}

/// For `decode_with` on an endpoint with one argument.
pub fn decode_one<A>(bytes: Vec<u8>) -> A
where
    (A,): Args,
{
    decode_args::<(A,)>(bytes).0
}

#[cfg(test)]
mod tests {
    use super::*;
    use candid::{Principal, encode_args, encode_one};

    #[derive(CandidType, serde::Deserialize, Debug, PartialEq)]
    struct Plan {
        n: u64,
    }

    #[derive(CandidType, serde::Deserialize, Debug, PartialEq)]
    enum Wait {
        Bounded,
    }

    #[test]
    fn the_expected_types_are_written_as_in_a_did_file() {
        assert_eq!(expected::<(u64,)>(), "nat64");
        assert_eq!(expected::<(Principal,)>(), "principal");
        assert_eq!(expected::<(Plan,)>(), "Plan");
        assert_eq!(expected::<(Plan, Option<Wait>)>(), "(Plan, opt Wait)");
    }

    #[test]
    fn a_valid_argument_decodes_and_no_bytes_are_an_empty_list() {
        let plan = Plan { n: 3 };
        assert_eq!(decode::<(Plan,)>(&encode_one(&plan).unwrap()), Ok((Plan { n: 3 },)));
        let (plan, wait) = decode::<(Plan, Option<Wait>)>(&encode_args((&plan,)).unwrap()).unwrap();
        assert_eq!((plan, wait), (Plan { n: 3 }, None));
        assert_eq!(decode::<(Option<u64>,)>(&[]), Ok((None,)));
    }

    #[test]
    fn an_undecodable_argument_names_the_method_the_type_and_the_reason() {
        let garbage = decode::<(Plan, Option<Wait>)>(b"not candid").unwrap_err();
        let message = garbage.message("start_job");
        assert!(
            message.starts_with("start_job: the argument is not a candid `(Plan, opt Wait)`;"),
            "{message}"
        );
        assert!(message.ends_with(&garbage.reason), "{message}");
        assert!(!garbage.reason.is_empty());

        let wrong_type = decode::<(u64,)>(&encode_one("ten").unwrap()).unwrap_err();
        assert!(
            wrong_type.message("ping_once").starts_with("ping_once: the argument is not a candid `nat64`;")
        );
        assert!(wrong_type.reason.contains("text"), "{}", wrong_type.reason);
        assert_eq!(decode::<(u64,)>(&[]).unwrap_err().expected, "nat64");
    }

    #[test]
    fn the_reason_is_one_bounded_line_without_the_input_dump() {
        let big = encode_one(vec![7u64; 10_000]).unwrap();
        let e = decode::<(u64,)>(&big).unwrap_err();
        assert!(e.reason.contains("expect_type: nat64"), "{}", e.reason);
        assert!(!e.reason.contains("input: ") && !e.reason.contains('\n'), "{}", e.reason);
        let long_garbage = vec![b'x'; 10_000];
        let e = decode::<(u64,)>(&long_garbage).unwrap_err();
        assert_eq!(e.reason.len(), MAX_REASON, "{}", e.reason);
        assert!(e.reason.starts_with("Cannot parse header") && e.reason.ends_with("..."), "{}", e.reason);
    }
}
