//! A valid module over the 2 MiB above which icp-cli and the pocket-ic
//! client install through the chunk store: a memory and a 3 MiB data segment.

pub fn over_2_mib() -> Vec<u8> {
    let bytes: String = (0..3 << 20).map(|i: u32| format!("\\{:02x}", (i * 7 % 251) as u8)).collect();
    let wasm = wat::parse_str(format!("(module (memory 64) (data (i32.const 0) \"{bytes}\"))")).unwrap();
    assert!(wasm.len() > 3 << 20);
    wasm
}
