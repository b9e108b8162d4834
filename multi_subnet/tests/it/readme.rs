//! The sweep tables of docs/strategies.md (once the README's, whence the
//! name) are what its command produces.

use clap::Parser;
use multi_subnet::cli::{Cli, Command};

const BEGIN: &str = "<!-- sweep-tables: ";
const END: &str = "<!-- /sweep-tables -->";

#[test]
fn the_docs_sweep_tables_are_regenerated_identically() {
    let page =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/strategies.md")).unwrap();
    let start = page.find(BEGIN).expect("docs/strategies.md marks its sweep tables");
    let (marker, rest) = page[start + BEGIN.len()..].split_once(" -->\n").unwrap();
    let tables = &rest[..rest.find(END).expect("the tables end")];
    assert!(
        page.contains(&format!("cargo run --release -- sweep {marker}")),
        "docs/strategies.md shows the command that made the tables ({marker})"
    );
    let args = ["multi_subnet", "sweep"].into_iter().chain(marker.split_whitespace());
    let Some(Command::Sweep(sweep)) = Cli::try_parse_from(args).unwrap().command else {
        panic!("not a sweep: {marker}");
    };
    let regenerated = sweep.report().unwrap().markdown_deterministic();
    assert_eq!(
        tables, regenerated,
        "docs/strategies.md: the sweep tables are stale; rerun the command, paste its markdown"
    );
}
