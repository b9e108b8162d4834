//! The files a frontend serves, each certified by ic-asset-certification's
//! router, whose root hash is what the canister certifies.

use candid::{CandidType, Deserialize};
use ic_asset_certification::{Asset, AssetConfig, AssetFallbackConfig, AssetRouter};
use ic_http_certification::{HttpRequest, HttpResponse, StatusCode};
use serde_bytes::ByteBuf;
use std::collections::BTreeMap;

/// The page served for `/` and for every path no file has.
pub const INDEX: &str = "index.html";

/// One file, as a controller stores it.
#[derive(CandidType, Deserialize, Clone, Debug, PartialEq)]
pub struct File {
    /// Where it is served, without the leading `/` (`index.html`, `app.js`).
    pub path: String,
    pub content_type: String,
    pub body: ByteBuf,
}

/// Every stored file and the certification of each.
#[derive(Default)]
pub struct Site {
    files: BTreeMap<String, File>,
    router: AssetRouter<'static>,
}

impl Site {
    /// Stores `file`, replacing one at its path, and certifies it.
    pub fn store(&mut self, file: File) -> Result<(), String> {
        if file.path.is_empty() || file.path.starts_with('/') || file.path.contains("//") {
            return Err(format!("path {:?}: give it without a leading '/', as in \"index.html\"", file.path));
        }
        if let Some(old) = self.files.remove(&file.path) {
            let (asset, config) = certified(&old);
            self.router.delete_assets(vec![asset], vec![config]).map_err(|e| e.to_string())?;
        }
        let (asset, config) = certified(&file);
        self.router.certify_assets(vec![asset], vec![config]).map_err(|e| e.to_string())?;
        self.files.insert(file.path.clone(), file);
        Ok(())
    }

    /// The files, to keep across an upgrade.
    pub fn files(&self) -> Vec<File> {
        self.files.values().cloned().collect()
    }

    /// What the canister certifies (`ic0.certified_data_set`).
    pub fn root_hash(&self) -> [u8; 32] {
        self.router.root_hash()
    }

    /// `request` answered with `certificate` (the canister's data
    /// certificate): the file and its certificate header, or 404 while no
    /// `index.html` is stored.
    pub fn serve(&self, certificate: &[u8], request: &HttpRequest) -> HttpResponse<'static> {
        self.router.serve_asset(certificate, request).unwrap_or_else(|e| {
            let body = format!("{e}: store an {INDEX} first\n").into_bytes();
            HttpResponse::builder().with_status_code(StatusCode::NOT_FOUND).with_body(body).build()
        })
    }
}

/// `file` as the router certifies it; `index.html` also answers `/` and
/// every path without a file of its own, as single-page apps expect.
fn certified(file: &File) -> (Asset<'static, 'static>, AssetConfig) {
    let index = file.path == INDEX;
    let config = AssetConfig::File {
        path: file.path.clone(),
        content_type: Some(file.content_type.clone()),
        headers: vec![("cache-control".into(), "no-cache".into())],
        fallback_for: if index {
            vec![AssetFallbackConfig { scope: "/".into(), status_code: Some(StatusCode::OK) }]
        } else {
            vec![]
        },
        aliased_by: if index { vec!["/".into()] } else { vec![] },
        encodings: vec![],
    };
    (Asset::new(file.path.clone(), file.body.to_vec()), config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, body: &str) -> File {
        File { path: path.into(), content_type: "text/html".into(), body: ByteBuf::from(body.as_bytes()) }
    }

    fn get(site: &Site, url: &str) -> HttpResponse<'static> {
        site.serve(&[1, 2, 3], &HttpRequest::get(url).build())
    }

    fn certificate_header(response: &HttpResponse) -> Option<String> {
        response
            .headers()
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("ic-certificate"))
            .map(|(_, v)| v.clone())
    }

    #[test]
    fn files_are_served_with_their_certificate_and_index_html_answers_the_rest() {
        let mut site = Site::default();
        assert_eq!(get(&site, "/").status_code(), StatusCode::NOT_FOUND);
        let empty = site.root_hash();
        site.store(file(INDEX, "<h1>home</h1>")).unwrap();
        site.store(file("about.html", "<h1>about</h1>")).unwrap();
        assert_ne!(site.root_hash(), empty);
        for (url, body) in
            [("/", "<h1>home</h1>"), ("/about.html", "<h1>about</h1>"), ("/no/such", "<h1>home</h1>")]
        {
            let response = get(&site, url);
            assert_eq!((response.status_code(), response.body()), (StatusCode::OK, body.as_bytes()), "{url}");
            let header = certificate_header(&response).unwrap_or_else(|| panic!("{url}: no IC-Certificate"));
            assert!(header.contains("version=2") && header.contains("tree=:"), "{url}: {header}");
        }
    }

    #[test]
    fn a_file_stored_again_replaces_the_old_one_and_its_certification() {
        let mut site = Site::default();
        site.store(file(INDEX, "one")).unwrap();
        let first = site.root_hash();
        site.store(file(INDEX, "two")).unwrap();
        assert_eq!(get(&site, "/").body(), b"two");
        assert_ne!(site.root_hash(), first);
        site.store(file(INDEX, "one")).unwrap();
        assert_eq!(site.root_hash(), first, "nothing of the replaced file stays certified");
        assert_eq!(site.files().len(), 1);
    }

    #[test]
    fn a_path_with_a_leading_slash_is_refused_with_the_form_to_use() {
        let mut site = Site::default();
        let refused = site.store(file("/index.html", "x")).unwrap_err();
        assert!(refused.contains("without a leading '/'"), "{refused}");
        assert!(site.files().is_empty());
    }
}
