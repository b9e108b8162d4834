//! The callee canister: the target of the caller's fan-out.

#[ic_cdk::update]
fn ping() {}

ic_cdk::export_candid!();

#[cfg(test)]
mod candid_interface {
    use candid_parser::utils::{CandidSource, service_equal};

    #[test]
    fn callee_did_matches_the_code() {
        let declared = include_str!("../callee.did");
        let exported = super::__export_service();
        service_equal(CandidSource::Text(declared), CandidSource::Text(&exported))
            .unwrap_or_else(|e| panic!("callee.did differs from the code: {e}\n{exported}"));
    }
}
