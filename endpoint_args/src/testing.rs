//! For tests (feature `testing`): what a `.did` file says the rejects
//! must name, arguments that decode as no endpoint's type, and the reject
//! they must get.

use candid::types::FuncMode;
use candid::{CandidType, encode_args, encode_one};
use candid_parser::utils::CandidSource;

/// A method of a service that takes arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The method's name.
    pub method: String,
    /// Its argument types, as an undecodable argument's reject names them.
    pub expected: String,
    /// A query (called with a query call), not an update.
    pub query: bool,
}

/// Every method of the service in `did` that takes arguments, in the
/// file's order; panics if `did` is not a valid service.
pub fn endpoints_with_arguments(did: &str) -> Vec<Endpoint> {
    let (env, actor) = CandidSource::Text(did).load().expect("a valid .did");
    let actor = actor.expect("the .did declares a service");
    let methods = env.as_service(&actor).expect("a service");
    methods
        .iter()
        .map(|(method, func)| (method, env.as_func(func).expect("a method is a function")))
        .filter(|(_, func)| !func.args.is_empty())
        .map(|(method, func)| Endpoint {
            method: method.clone(),
            expected: crate::type_list(&func.args),
            query: func.modes.iter().any(|m| matches!(m, FuncMode::Query | FuncMode::CompositeQuery)),
        })
        .collect()
}

/// The start of the reject message for an argument of `method` that is
/// not a candid `expected`.
pub fn reject_for(method: &str, expected: &str) -> String {
    format!("{method}: the argument is not a candid `{expected}`; encode it with")
}

/// Candid of a shape no endpoint's argument has.
#[derive(CandidType)]
struct Nonce {
    nonce: u64,
}

/// Arguments that decode as no endpoint's type of this workspace, named:
/// bytes that are not candid, candid of other types, and no argument.
pub fn undecodable_arguments() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("bytes that are not candid", b"\x00\x01 not candid at all".to_vec()),
        ("a text", encode_one("seven").unwrap()),
        ("a bool", encode_one(true).unwrap()),
        ("a record of another shape", encode_one(Nonce { nonce: 7 }).unwrap()),
        ("no argument", encode_args(()).unwrap()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_with_arguments_and_their_types() {
        let did = "type P = record { n : nat64 };
            service : { a : () -> (); b : (P, opt nat8) -> (); c : (nat64) -> (nat64) query }";
        let endpoints = endpoints_with_arguments(did);
        let found: Vec<_> =
            endpoints.iter().map(|e| (e.method.as_str(), e.expected.as_str(), e.query)).collect();
        assert_eq!(found, [("b", "(P, opt nat8)", false), ("c", "nat64", true)]);
    }

    #[test]
    fn the_undecodable_arguments_are_refused_with_the_rejects_start() {
        for (what, argument) in undecodable_arguments() {
            let e = crate::decode::<(u64, Option<u8>)>(&argument).expect_err(what);
            assert!(e.message("m").starts_with(&reject_for("m", "(nat64, opt nat8)")), "{what}");
        }
    }
}
