//! Host functions for certified data: what a canister certifies, and the
//! subnet's certificate a non-replicated query reads it back with.

use wasmi::Error;

use super::linker::{Contexts, Registry, Word, def, wrong_mode};
use super::memory::{copy_out, read};
use super::{Ctx, EntryKind, trap};

/// The most a canister may certify (`CERTIFIED_DATA_MAX_LENGTH` in the replica).
pub const CERTIFIED_DATA_MAX_LENGTH: usize = 32;

/// Where the spec allows `certified_data_set`: I G U Ry Rt T.
const MAY_CERTIFY: Contexts = Contexts::only(&[
    EntryKind::Init,
    EntryKind::PostUpgrade,
    EntryKind::PreUpgrade,
    EntryKind::Update,
    EntryKind::ReplyCallback,
    EntryKind::RejectCallback,
    EntryKind::GlobalTimer,
    EntryKind::Heartbeat,
]);

/// Where a certificate can be read: a non-replicated query or a composite
/// query (NRQ CQ).
const MAY_READ_CERTIFICATE: Contexts = Contexts::only(&[EntryKind::Query, EntryKind::CompositeQuery]);

pub(super) fn register<I: Word>(r: &mut Registry) {
    def!(r, "certified_data_set" in MAY_CERTIFY, |c: Ctx<'_>, src: I, size: I| -> Result<(), Error> {
        let len = size.to_u64();
        if len > CERTIFIED_DATA_MAX_LENGTH as u64 {
            return trap(format!(
                "Canister violated contract: ic0_certified_data_set failed because the passed data must be no larger than {CERTIFIED_DATA_MAX_LENGTH} bytes. Found {len} bytes."
            ));
        }
        let data = read(&c, src, size)?;
        c.data_mut().exec()?.effects.certified_data = Some(data);
        Ok(())
    });
    def!(r, "data_certificate_present", |c: Ctx<'_>| -> Result<i32, Error> {
        Ok(i32::from(c.data_mut().exec()?.context.data_certificate.is_some()))
    });
    def!(r, "data_certificate_size" in MAY_READ_CERTIFICATE, |c: Ctx<'_>| -> Result<I, Error> {
        Ok(I::of_len(certificate(&mut c, "data_certificate_size")?.len()))
    });
    def!(r, "data_certificate_copy" in MAY_READ_CERTIFICATE, |c: Ctx<'_>,
                                                             dst: I,
                                                             off: I,
                                                             size: I|
     -> Result<(), Error> {
        let certificate = certificate(&mut c, "data_certificate_copy")?;
        copy_out(&mut c, dst, off, size, &certificate)
    });
}

/// The running query's certificate; a query without one traps as the
/// replica's does, as if it were in the wrong mode.
fn certificate(c: &mut Ctx<'_>, function: &str) -> Result<Vec<u8>, Error> {
    let exec = c.data_mut().exec()?;
    match &exec.context.data_certificate {
        Some(certificate) => Ok(certificate.clone()),
        None => wrong_mode(function, exec.context.kind),
    }
}
