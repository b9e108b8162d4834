//! `POST /blobstore`: blobs kept by their SHA-256, as PocketIC's other
//! clients upload them (gzipped when they say so).

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Read;
use std::sync::Mutex;

#[derive(Default)]
pub struct BlobStore {
    blobs: Mutex<BTreeMap<String, Vec<u8>>>,
}

impl BlobStore {
    /// Stores the blob (unpacked if `gzip`) and answers its id: the hex SHA-256 of what was sent.
    pub fn insert(&self, sent: &[u8], gzip: bool) -> std::io::Result<String> {
        let id = hex::encode(Sha256::digest(sent));
        let blob = if gzip {
            let mut blob = vec![];
            flate2::read::GzDecoder::new(sent).read_to_end(&mut blob)?;
            blob
        } else {
            sent.to_vec()
        };
        self.blobs.lock().expect("not poisoned").insert(id.clone(), blob);
        Ok(id)
    }

    pub fn get(&self, id: &str) -> Option<Vec<u8>> {
        self.blobs.lock().expect("not poisoned").get(id).cloned()
    }
}
