//! A frontend canister: static files that its controllers store, certified
//! (ic-asset-certification, response certification v2) and served from
//! `http_request`, so that a browser loads them through an HTTP gateway
//! with their certificate verified. The files survive an upgrade.

mod site;

use ic_http_certification::{HttpRequest, HttpResponse};
use site::{File, Site};
use std::cell::RefCell;

thread_local! {
    static SITE: RefCell<Site> = RefCell::new(Site::default());
}

/// Stores `file` (controllers only) and certifies it; rejects, saying
/// why, what it does not store.
#[ic_cdk::update]
fn store(file: File) {
    if !ic_cdk::api::is_controller(&ic_cdk::api::msg_caller()) {
        ic_cdk::trap("only a controller of this canister may store files");
    }
    let stored = format!("stored /{} ({} bytes, {})", file.path, file.body.len(), file.content_type);
    if let Err(refused) = SITE.with_borrow_mut(|site| site.store(file)) {
        ic_cdk::trap(refused);
    }
    certify();
    // The canister's log (`icp canister logs frontend`) says what is served.
    ic_cdk::println!("{stored}");
}

#[ic_cdk::query]
fn http_request(request: HttpRequest<'static>) -> HttpResponse<'static> {
    let certificate = ic_cdk::api::data_certificate().unwrap_or_default();
    SITE.with_borrow(|site| site.serve(&certificate, &request))
}

#[ic_cdk::init]
fn init() {
    certify();
}

#[ic_cdk::pre_upgrade]
fn pre_upgrade() {
    let files = SITE.with_borrow(Site::files);
    ic_cdk::storage::stable_save((files,)).expect("the files fit in stable memory");
}

#[ic_cdk::post_upgrade]
fn post_upgrade() {
    let (files,): (Vec<File>,) =
        ic_cdk::storage::stable_restore().expect("the files saved before the upgrade");
    SITE.with_borrow_mut(|site| files.into_iter().try_for_each(|file| site.store(file)))
        .expect("files stored before certify again");
    certify();
}

fn certify() {
    ic_cdk::api::certified_data_set(SITE.with_borrow(Site::root_hash));
}

ic_cdk::export_candid!();

#[cfg(test)]
mod candid_interface {
    use candid_parser::utils::{CandidSource, service_equal};

    #[test]
    fn frontend_did_matches_the_code() {
        let declared = include_str!("../frontend.did");
        let exported = super::__export_service();
        service_equal(CandidSource::Text(declared), CandidSource::Text(&exported))
            .unwrap_or_else(|e| panic!("frontend.did differs from the code: {e}\n{exported}"));
    }
}
