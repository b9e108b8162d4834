//! Canister snapshots: `take_canister_snapshot`, `load_canister_snapshot`,
//! `list_canister_snapshots` and `delete_canister_snapshot`, for
//! controllers. The model keeps what the IC lists of each snapshot and
//! what loading one puts back of the canister's record (its module's hash,
//! size and metadata, its chunk store); the engine keeps the module and
//! memories.

use candid::Principal;
use ic_error_types::ErrorCode;
use ic_management_canister_types::{
    DeleteCanisterSnapshotArgs, LoadCanisterSnapshotArgs, Snapshot, TakeCanisterSnapshotArgs,
};

use super::canister::SnapshotInfo;
use super::{CallResult, Host, reply, unsupported};
use crate::Reject;
use crate::engine::Engine;

/// How many snapshots a canister keeps at most (the replica's
/// `max_number_of_snapshots_per_canister`).
pub const MAX_SNAPSHOTS_PER_CANISTER: usize = 10;

/// `take_canister_snapshot`: a new snapshot, replacing `replace_snapshot`
/// if given; refused past [`MAX_SNAPSHOTS_PER_CANISTER`].
pub(super) fn take(ic: &mut impl Host, canister: Principal, args: TakeCanisterSnapshotArgs) -> CallResult {
    if args.uninstall_code == Some(true) {
        return Err(unsupported("take_canister_snapshot with uninstall_code"));
    }
    let info = ic.canister(canister)?;
    match &args.replace_snapshot {
        Some(replaced) => {
            position(&info.snapshots, canister, replaced)?;
        }
        None if info.snapshots.len() >= MAX_SNAPSHOTS_PER_CANISTER => {
            return Err(Reject::new(
                ErrorCode::CanisterRejectedMessage,
                format!(
                    "Canister {canister} has reached the maximum number of snapshots allowed: {MAX_SNAPSHOTS_PER_CANISTER}. Delete one, or give its id as replace_snapshot."
                ),
            ));
        }
        None => {}
    }
    let id = [&info.next_snapshot.to_be_bytes()[..], canister.as_slice()].concat();
    let total_size = ic.engine_mut().take_snapshot(canister, id.clone())?;
    if let Some(replaced) = &args.replace_snapshot {
        ic.engine_mut().delete_snapshot(canister, replaced)?;
    }
    let taken_at = ic.engine().time();
    let info = ic.canister_mut(canister);
    info.snapshots.retain(|s| Some(&s.id) != args.replace_snapshot.as_ref());
    info.snapshots.push(SnapshotInfo {
        id: id.clone(),
        taken_at,
        total_size,
        module_hash: info.module_hash.clone(),
        module_size: info.module_size,
        metadata: info.metadata.clone(),
        chunks: info.chunks.clone(),
    });
    info.next_snapshot += 1;
    reply(Snapshot { id, taken_at_timestamp: taken_at, total_size })
}

/// `load_canister_snapshot`: the canister's module and memories as the
/// snapshot holds them.
pub(super) fn load(ic: &mut impl Host, canister: Principal, args: LoadCanisterSnapshotArgs) -> CallResult {
    let info = ic.canister(canister)?;
    let snapshot = info.snapshots[position(&info.snapshots, canister, &args.snapshot_id)?].clone();
    ic.engine_mut().load_snapshot(canister, &args.snapshot_id)?;
    let info = ic.canister_mut(canister);
    info.module_hash = snapshot.module_hash;
    info.module_size = snapshot.module_size;
    info.metadata = snapshot.metadata;
    info.chunks = snapshot.chunks;
    reply(())
}

/// `list_canister_snapshots`: oldest first.
pub(super) fn list(ic: &impl Host, canister: Principal) -> CallResult {
    let snapshots = &ic.canister(canister)?.snapshots;
    let listed: Vec<Snapshot> = snapshots
        .iter()
        .map(|s| Snapshot { id: s.id.clone(), taken_at_timestamp: s.taken_at, total_size: s.total_size })
        .collect();
    reply(listed)
}

/// `delete_canister_snapshot`.
pub(super) fn delete(
    ic: &mut impl Host,
    canister: Principal,
    args: DeleteCanisterSnapshotArgs,
) -> CallResult {
    let at = position(&ic.canister(canister)?.snapshots, canister, &args.snapshot_id)?;
    ic.engine_mut().delete_snapshot(canister, &args.snapshot_id)?;
    ic.canister_mut(canister).snapshots.remove(at);
    reply(())
}

/// Where the canister's snapshot `id` is among its snapshots.
fn position(snapshots: &[SnapshotInfo], canister: Principal, id: &[u8]) -> Result<usize, Reject> {
    snapshots.iter().position(|s| s.id == id).ok_or_else(|| {
        let id: String = id.iter().map(|b| format!("{b:02x}")).collect();
        Reject::new(
            ErrorCode::CanisterSnapshotNotFound,
            format!("Could not find the snapshot ID {id} for canister {canister}."),
        )
    })
}
