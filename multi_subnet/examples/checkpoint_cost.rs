//! What a checkpoint of `multi_subnet network --state-dir` costs per MiB of
//! canister memory: how long the rounds stop while the simulator copies
//! its state, and how long encoding it and writing the file take (off the
//! rounds' thread for a checkpoint), for one canister whose heap holds 0
//! to 1,024 MiB of non-zero bytes, and for the same bytes in stable memory.
//!
//! `cargo run --release -p multi_subnet --example checkpoint_cost`;
//! docs/network.md gives the figures.

use candid::Principal;
use comfy_table::Table;
use std::time::Duration;

const SIZES_MIB: [u32; 4] = [0, 64, 256, 1024];
const SAVES: usize = 3;

/// A canister whose `canister_init` fills `mib` MiB of its heap, or of its
/// stable memory, with non-zero bytes.
fn filler(mib: u32, stable: bool) -> Vec<u8> {
    let bytes = mib << 20;
    let pages = mib * 16;
    let fill = if stable {
        format!(
            "(drop (call $stable_grow (i64.const {pages}))) (memory.fill (i32.const 0) (i32.const 7) (i32.const 65536))
             (local.set $at (i64.const 0))
             (block $done (loop $next
               (br_if $done (i64.ge_u (local.get $at) (i64.const {bytes})))
               (call $stable_write (local.get $at) (i64.const 0) (i64.const 65536))
               (local.set $at (i64.add (local.get $at) (i64.const 65536)))
               (br $next)))"
        )
    } else {
        format!(
            "(drop (memory.grow (i32.const {pages}))) (memory.fill (i32.const 65536) (i32.const 7) (i32.const {bytes}))"
        )
    };
    wat::parse_str(format!(
        r#"(module
             (import "ic0" "stable64_grow" (func $stable_grow (param i64) (result i64)))
             (import "ic0" "stable64_write" (func $stable_write (param i64 i64 i64)))
             (memory 1)
             (func (export "canister_init") (local $at i64) {fill}))"#
    ))
    .expect("valid wat")
}

fn main() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let mut table = Table::new();
    table.set_header([
        "memory",
        "MiB",
        "state file MiB",
        "rounds stopped (ms)",
        "encoded and written (ms)",
        "stopped per MiB (ms)",
    ]);
    for stable in [false, true] {
        for mib in SIZES_MIB {
            let wasm = filler(mib, stable);
            let make = move |_: Option<&[u8]>| {
                let mut sim = sim::Sim::builder().with_subnet().with_host_memory_budget(8 << 30).build();
                let canister =
                    sim.create_canister(0, vec![Principal::anonymous()]).map_err(|e| e.to_string())?;
                sim.install_canister(canister, &wasm, vec![], Principal::anonymous())
                    .map_err(|e| e.to_string())?;
                let network = ic_model::sim_engine::network(sim, ic_model::Keys::from_seed(0))?;
                Ok(Box::new(network) as Box<dyn ic_http::Backend>)
            };
            let state_dir = dir.path().join(format!("{stable}-{mib}"));
            let persistence = ic_http::Persistence {
                dir: state_dir,
                backend_format: ic_model::Ic::<sim::Sim>::saved_format(),
                checkpoint_every: Duration::from_secs(3600),
            };
            let network = ic_http::Network::start_saved(make, ic_http::Options::default(), persistence)
                .map_err(anyhow::Error::msg)?;
            let saves: Vec<ic_http::SaveReport> =
                (0..SAVES).map(|_| network.save()).collect::<Result<_, _>>().map_err(anyhow::Error::msg)?;
            let best = |f: fn(&ic_http::SaveReport) -> Duration| saves.iter().map(f).min().expect("saved");
            let (stopped, written) = (best(|s| s.snapshot), best(|s| s.write));
            let ms = |d: Duration| d.as_secs_f64() * 1e3;
            table.add_row([
                if stable { "stable" } else { "heap" }.to_string(),
                mib.to_string(),
                format!("{:.1}", saves[0].bytes as f64 / f64::from(1 << 20)),
                format!("{:.1}", ms(stopped)),
                format!("{:.1}", ms(written)),
                if mib == 0 { "-".into() } else { format!("{:.2}", ms(stopped) / f64::from(mib)) },
            ]);
        }
    }
    println!("best of {SAVES} saves each; the rounds stop only while the state is copied\n{table}");
    Ok(())
}
