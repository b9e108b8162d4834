//! Host functions about the canister: id, balances, controllers, variables.

use candid::Principal;

use wasmi::Error;

use super::linker::{Registry, def};
use super::memory::{copy_out, read, read_string, write_u128};
use super::{Ctx, EntryKind, trap};

pub(super) fn register(r: &mut Registry) {
    def!(r, "canister_self_size", |c: Ctx<'_>| -> i32 { c.data().id.as_slice().len() as i32 });
    def!(r, "canister_self_copy", |c: Ctx<'_>, dst: i32, off: i32, size: i32| -> Result<(), Error> {
        let bytes = c.data().id.as_slice().to_vec();
        copy_out(&mut c, dst, off, size, &bytes)
    });
    def!(r, "canister_cycle_balance128", |c: Ctx<'_>, dst: i32| -> Result<(), Error> {
        let balance = c.data().balance_seen();
        write_u128(&mut c, dst, balance)
    });
    def!(r, "canister_liquid_cycle_balance128", |c: Ctx<'_>, dst: i32| -> Result<(), Error> {
        let liquid = c.data().liquid_balance_seen();
        write_u128(&mut c, dst, liquid)
    });
    def!(r, "canister_status", |c: Ctx<'_>| -> i32 {
        let _ = &c;
        1
    });
    def!(r, "canister_version", |c: Ctx<'_>| -> i64 { c.data().canister_version as i64 });
    def!(r, "is_controller", |c: Ctx<'_>, src: i32, size: i32| -> Result<i32, Error> {
        let bytes = read(&c, src, size)?;
        let principal =
            Principal::try_from_slice(&bytes).or_else(|_| trap("is_controller: not a principal"))?;
        Ok(i32::from(c.data().controllers.contains(&principal)))
    });
    def!(r, "in_replicated_execution", |c: Ctx<'_>| -> Result<i32, Error> {
        Ok(i32::from(c.data_mut().exec()?.context.kind != EntryKind::Query))
    });

    def!(r, "env_var_count", |c: Ctx<'_>| -> i32 { c.data().env_vars.len() as i32 });
    def!(r, "env_var_name_size", |c: Ctx<'_>, index: i32| -> Result<i32, Error> {
        Ok(env_var_name(&c, index, "env_var_name_size")?.len() as i32)
    });
    def!(r, "env_var_name_copy", |c: Ctx<'_>,
                                  index: i32,
                                  dst: i32,
                                  off: i32,
                                  size: i32|
     -> Result<(), Error> {
        let name = env_var_name(&c, index, "env_var_name_copy")?;
        copy_out(&mut c, dst, off, size, name.as_bytes())
    });
    def!(r, "env_var_name_exists", |c: Ctx<'_>, src: i32, size: i32| -> Result<i32, Error> {
        let name = read_string(&c, src, size, "env_var_name_exists: name")?;
        Ok(i32::from(c.data().env_vars.contains_key(&name)))
    });
    def!(r, "env_var_value_size", |c: Ctx<'_>, src: i32, size: i32| -> Result<i32, Error> {
        Ok(env_var_value(&c, src, size, "env_var_value_size")?.len() as i32)
    });
    def!(r, "env_var_value_copy", |c: Ctx<'_>,
                                   src: i32,
                                   size: i32,
                                   dst: i32,
                                   off: i32,
                                   len: i32|
     -> Result<(), Error> {
        let value = env_var_value(&c, src, size, "env_var_value_copy")?;
        copy_out(&mut c, dst, off, len, value.as_bytes())
    });
}

/// The name of variable `index`; `function` traps if there is none.
fn env_var_name(c: &Ctx<'_>, index: i32, function: &str) -> Result<String, Error> {
    match c.data().env_vars.keys().nth(index as u32 as usize) {
        Some(name) => Ok(name.clone()),
        None => trap(format!("{function}: no variable at index {index}")),
    }
}

/// The value of the variable whose name is at `src`; `function` traps if
/// there is none.
fn env_var_value(c: &Ctx<'_>, src: i32, size: i32, function: &str) -> Result<String, Error> {
    let name = read_string(c, src, size, &format!("{function}: name"))?;
    match c.data().env_vars.get(&name) {
        Some(value) => Ok(value.clone()),
        None => trap(format!("{function}: no variable {name:?}")),
    }
}
