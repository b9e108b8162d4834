//! A canister's settings as the management canister keeps and reports them
//! (`canister_status`). Controllers and environment variables live in the
//! engine, which enforces them; the others are kept here, with the
//! replica's defaults, checked as the replica checks them, and reported;
//! the simulator does not enforce them (`docs/simulator.md`).

use candid::Nat;
use ic_management_canister_types::{CanisterSettings, DefiniteCanisterSettings};

/// The settings a new canister has on the replica, but for its
/// controllers and environment variables.
pub fn defaults() -> DefiniteCanisterSettings {
    DefiniteCanisterSettings {
        // 30 days.
        freezing_threshold: Nat::from(2_592_000u64),
        reserved_cycles_limit: Nat::from(5_000_000_000_000u64),
        log_memory_limit: Nat::from(4096u64),
        // `DEFAULT_WASM_MEMORY_LIMIT`.
        wasm_memory_limit: Nat::from(3u64 << 30),
        ..DefiniteCanisterSettings::default()
    }
}

/// The largest `memory_allocation`, `wasm_memory_limit` and
/// `wasm_memory_threshold` the replica takes: 2^48 - 1 bytes.
const MAX_MEMORY_SETTING: u64 = (1 << 48) - 1;

/// Applies what `settings` gives over `kept`; refuses, changing nothing,
/// a value the replica refuses.
pub fn apply(kept: &mut DefiniteCanisterSettings, settings: &CanisterSettings) -> Result<(), String> {
    let at_most = |name: &str, value: &Option<Nat>, max: u64| match value {
        Some(n) if u64::try_from(&n.0).map_or(true, |n| n > max) => {
            Err(format!("{name} must be at most {max}, but is {n}"))
        }
        _ => Ok(()),
    };
    at_most("compute_allocation", &settings.compute_allocation, 100)?;
    at_most("memory_allocation", &settings.memory_allocation, MAX_MEMORY_SETTING)?;
    at_most("freezing_threshold", &settings.freezing_threshold, u64::MAX)?;
    at_most("wasm_memory_limit", &settings.wasm_memory_limit, MAX_MEMORY_SETTING)?;
    at_most("wasm_memory_threshold", &settings.wasm_memory_threshold, MAX_MEMORY_SETTING)?;
    let set = |kept: &mut Nat, value: &Option<Nat>| {
        if let Some(value) = value {
            *kept = value.clone();
        }
    };
    set(&mut kept.compute_allocation, &settings.compute_allocation);
    set(&mut kept.memory_allocation, &settings.memory_allocation);
    set(&mut kept.freezing_threshold, &settings.freezing_threshold);
    set(&mut kept.reserved_cycles_limit, &settings.reserved_cycles_limit);
    set(&mut kept.minimum_incoming_canister_call_cycles, &settings.minimum_incoming_canister_call_cycles);
    set(&mut kept.log_memory_limit, &settings.log_memory_limit);
    set(&mut kept.wasm_memory_limit, &settings.wasm_memory_limit);
    set(&mut kept.wasm_memory_threshold, &settings.wasm_memory_threshold);
    if let Some(visibility) = &settings.log_visibility {
        kept.log_visibility = visibility.clone();
    }
    if let Some(visibility) = &settings.snapshot_visibility {
        kept.snapshot_visibility = visibility.clone();
    }
    if let Some(visibility) = &settings.status_visibility {
        kept.status_visibility = visibility.clone();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ic_management_canister_types::LogVisibility;

    #[test]
    fn given_settings_replace_kept_ones_and_a_refused_one_changes_nothing() {
        let mut kept = defaults();
        let given = CanisterSettings {
            freezing_threshold: Some(Nat::from(86_400u64)),
            log_visibility: Some(LogVisibility::Public),
            ..CanisterSettings::default()
        };
        apply(&mut kept, &given).unwrap();
        assert_eq!(kept.freezing_threshold, Nat::from(86_400u64));
        assert_eq!(kept.log_visibility, LogVisibility::Public);
        assert_eq!(kept.wasm_memory_limit, Nat::from(3u64 << 30), "not given: kept");

        let refused = CanisterSettings {
            compute_allocation: Some(Nat::from(101u8)),
            freezing_threshold: Some(Nat::from(1u8)),
            ..CanisterSettings::default()
        };
        let error = apply(&mut kept, &refused).unwrap_err();
        assert_eq!(error, "compute_allocation must be at most 100, but is 101");
        assert_eq!(kept.freezing_threshold, Nat::from(86_400u64), "nothing changed");
    }
}
