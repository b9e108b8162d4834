//! Host functions about the canister: id, balances, controllers, variables.

use candid::Principal;

use wasmi::Error;

use super::linker::{Contexts, Registry, Word, def};
use super::memory::{copy_out, read, read_string, u128_of, write_u128};
use super::{Ctx, EntryKind, trap, trap_with};
use crate::message::ErrorCode;

pub(super) fn register<I: Word>(r: &mut Registry) {
    def!(r, "canister_self_size", |c: Ctx<'_>| -> I { I::of_len(c.data().id.as_slice().len()) });
    def!(r, "canister_self_copy", |c: Ctx<'_>, dst: I, off: I, size: I| -> Result<(), Error> {
        let bytes = c.data().id.as_slice().to_vec();
        copy_out(&mut c, dst, off, size, &bytes)
    });
    def!(r, "canister_cycle_balance128", |c: Ctx<'_>, dst: I| -> Result<(), Error> {
        let balance = c.data().balance_seen();
        write_u128(&mut c, dst, balance)
    });
    def!(r, "canister_liquid_cycle_balance128", |c: Ctx<'_>, dst: I| -> Result<(), Error> {
        let liquid = c.data().liquid_balance_seen();
        write_u128(&mut c, dst, liquid)
    });
    def!(r, "canister_status", |c: Ctx<'_>| -> i32 {
        let _ = &c;
        1
    });
    def!(r, "canister_version", |c: Ctx<'_>| -> i64 { c.data().canister_version as i64 });
    def!(r, "is_controller", |c: Ctx<'_>, src: I, size: I| -> Result<i32, Error> {
        let bytes = read(&c, src, size)?;
        let principal =
            Principal::try_from_slice(&bytes).or_else(|_| trap("is_controller: not a principal"))?;
        Ok(i32::from(c.data().controllers.contains(&principal)))
    });
    def!(r, "in_replicated_execution", |c: Ctx<'_>| -> Result<i32, Error> {
        Ok(i32::from(c.data_mut().exec()?.context.kind.is_replicated()))
    });

    def!(r, "root_key_size" in REPLICATED, |c: Ctx<'_>| -> I { I::of_len(c.data().network.root_key.len()) });
    def!(r, "root_key_copy" in REPLICATED, |c: Ctx<'_>, dst: I, off: I, size: I| -> Result<(), Error> {
        let key = c.data().network.root_key.clone();
        copy_out(&mut c, dst, off, size, &key)
    });
    def!(r, "subnet_self_size", |c: Ctx<'_>| -> I { I::of_len(c.data().network.subnet.as_slice().len()) });
    def!(r, "subnet_self_copy", |c: Ctx<'_>, dst: I, off: I, size: I| -> Result<(), Error> {
        let subnet = c.data().network.subnet.as_slice().to_vec();
        copy_out(&mut c, dst, off, size, &subnet)
    });
    def!(r, "subnet_self_node_count", |c: Ctx<'_>| -> i32 { c.data().network.subnet_size as i32 });
    def!(r, "cycles_burn128" in MAY_BURN, |c: Ctx<'_>, high: i64, low: i64, dst: I| -> Result<(), Error> {
        // What it cannot burn it leaves: at most the liquid balance goes.
        let burned = u128_of(high, low).min(c.data().liquid_balance_seen());
        c.data_mut().exec()?.effects.cycles_withdrawn += burned;
        write_u128(&mut c, dst, burned)
    });
    def!(r, "mint_cycles128" in MAY_MINT, |c: Ctx<'_>, high: i64, low: i64, dst: I| -> Result<(), Error> {
        let minted = mint(&mut c, u128_of(high, low))?;
        write_u128(&mut c, dst, minted)
    });
    def!(r, "mint_cycles" in MAY_MINT, |c: Ctx<'_>, amount: i64| -> Result<i64, Error> {
        Ok(mint(&mut c, u128::from(amount as u64))? as i64)
    });

    def!(r, "env_var_count", |c: Ctx<'_>| -> I { I::of_len(c.data().env_vars.len()) });
    def!(r, "env_var_name_size", |c: Ctx<'_>, index: I| -> Result<I, Error> {
        Ok(I::of_len(env_var_name(&c, index, "env_var_name_size")?.len()))
    });
    def!(r, "env_var_name_copy", |c: Ctx<'_>, index: I, dst: I, off: I, size: I| -> Result<(), Error> {
        let name = env_var_name(&c, index, "env_var_name_copy")?;
        copy_out(&mut c, dst, off, size, name.as_bytes())
    });
    def!(r, "env_var_name_exists", |c: Ctx<'_>, src: I, size: I| -> Result<i32, Error> {
        let name = read_string(&c, src, size, "env_var_name_exists: name")?;
        Ok(i32::from(c.data().env_vars.contains_key(&name)))
    });
    def!(r, "env_var_value_size", |c: Ctx<'_>, src: I, size: I| -> Result<I, Error> {
        Ok(I::of_len(env_var_value(&c, src, size, "env_var_value_size")?.len()))
    });
    def!(r, "env_var_value_copy", |c: Ctx<'_>,
                                   src: I,
                                   size: I,
                                   dst: I,
                                   off: I,
                                   len: I|
     -> Result<(), Error> {
        let value = env_var_value(&c, src, size, "env_var_value_copy")?;
        copy_out(&mut c, dst, off, len, value.as_bytes())
    });
}

/// The functions of the older cycles API with 64-bit amounts, which the
/// replica links for wasm32 modules only; an amount past 64 bits traps.
pub(super) fn register_wasm32_only(r: &mut Registry) {
    def!(r, "msg_cycles_available", |c: Ctx<'_>| -> Result<i64, Error> {
        let exec = c.data_mut().exec()?;
        fits_64_bits(exec.context.cycles_available - exec.effects.cycles_accepted)
    });
    def!(r, "msg_cycles_refunded", |c: Ctx<'_>| -> Result<i64, Error> {
        fits_64_bits(c.data_mut().exec()?.context.cycles_refunded)
    });
    def!(r, "msg_cycles_accept", |c: Ctx<'_>, max: i64| -> Result<i64, Error> {
        let exec = c.data_mut().exec()?;
        let amount = u128::from(max as u64).min(exec.context.cycles_available - exec.effects.cycles_accepted);
        exec.effects.cycles_accepted += amount;
        Ok(amount as i64)
    });
    def!(r, "canister_cycle_balance", |c: Ctx<'_>| -> Result<i64, Error> {
        fits_64_bits(c.data().balance_seen())
    });
    def!(r, "call_cycles_add" in super::calls::MAY_ATTACH_CYCLES, |c: Ctx<'_>, amount: i64| -> Result<(), Error> {
        super::calls::add_cycles(c.data_mut(), u128::from(amount as u64))
    });
}

fn fits_64_bits(cycles: u128) -> Result<i64, Error> {
    match u64::try_from(cycles) {
        Ok(cycles) => Ok(cycles as i64),
        Err(_) => trap_with(
            ErrorCode::CanisterTrapped,
            "Canister trapped: cycles amount exceeds 64-bit representation",
        ),
    }
}

/// Where the replica allows `root_key_*`: replicated executions (I G U RQ
/// Ry Rt C T).
const REPLICATED: Contexts = Contexts::only(&[
    EntryKind::Init,
    EntryKind::PostUpgrade,
    EntryKind::PreUpgrade,
    EntryKind::Update,
    EntryKind::ReplicatedQuery,
    EntryKind::ReplyCallback,
    EntryKind::RejectCallback,
    EntryKind::Cleanup,
    EntryKind::GlobalTimer,
    EntryKind::Heartbeat,
]);

/// Where `cycles_burn128` may burn: the replicated executions.
const MAY_BURN: Contexts = REPLICATED;

/// Where `mint_cycles128` may be called (on the cycles minting canister).
const MAY_MINT: Contexts = Contexts::only(&[
    EntryKind::Update,
    EntryKind::ReplyCallback,
    EntryKind::RejectCallback,
    EntryKind::GlobalTimer,
    EntryKind::Heartbeat,
]);

/// The cycles minting canister's id: only it may mint.
pub const CYCLES_MINTING_CANISTER: Principal = Principal::from_slice(&[0, 0, 0, 0, 0, 0, 0, 4, 1, 1]);

/// Adds `amount` cycles to the balance, on the cycles minting canister only.
fn mint(c: &mut Ctx<'_>, amount: u128) -> Result<u128, Error> {
    let id = c.data().id;
    if id != CYCLES_MINTING_CANISTER {
        return trap(format!(
            "Canister violated contract: ic0.mint_cycles128 cannot be executed on non Cycles Minting Canister: {id} != {CYCLES_MINTING_CANISTER}"
        ));
    }
    let balance = c.data().balance_seen();
    let minted = amount.min(u128::MAX - balance);
    c.data_mut().exec()?.effects.cycles_minted += minted;
    Ok(minted)
}

/// The name of variable `index`; `function` traps if there is none.
fn env_var_name(c: &Ctx<'_>, index: impl Word, function: &str) -> Result<String, Error> {
    let index = index.to_u64();
    match usize::try_from(index).ok().and_then(|i| c.data().env_vars.keys().nth(i)) {
        Some(name) => Ok(name.clone()),
        None => trap(format!("{function}: no variable at index {index}")),
    }
}

/// The value of the variable whose name is at `src`; `function` traps if
/// there is none.
fn env_var_value<I: Word>(c: &Ctx<'_>, src: I, size: I, function: &str) -> Result<String, Error> {
    let name = read_string(c, src, size, &format!("{function}: name"))?;
    match c.data().env_vars.get(&name) {
        Some(value) => Ok(value.clone()),
        None => trap(format!("{function}: no variable {name:?}")),
    }
}
