//! The README's sweep tables are what its command produces.

use clap::Parser;
use multi_subnet::cli::{Cli, Command};

const BEGIN: &str = "<!-- sweep-tables: ";
const END: &str = "<!-- /sweep-tables -->";

#[test]
fn the_readme_sweep_tables_are_regenerated_identically() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    let start = readme.find(BEGIN).expect("the README marks its sweep tables");
    let (marker, rest) = readme[start + BEGIN.len()..].split_once(" -->\n").unwrap();
    let tables = &rest[..rest.find(END).expect("the tables end")];
    assert!(
        readme.contains(&format!("cargo run --release -- sweep {marker}")),
        "the README shows the command that made the tables ({marker})"
    );
    let args = ["multi_subnet", "sweep"].into_iter().chain(marker.split_whitespace());
    let Some(Command::Sweep(sweep)) = Cli::try_parse_from(args).unwrap().command else {
        panic!("not a sweep: {marker}");
    };
    let regenerated = sweep.report().unwrap().markdown_deterministic();
    assert_eq!(tables, regenerated, "README tables are stale: rerun the command and paste its markdown");
}
