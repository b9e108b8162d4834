//! The sweep's SVG charts: parsed and rendered as a browser would, they
//! name the engine and topology and carry one series per strategy.

use clap::Parser;
use multi_subnet::charts;
use multi_subnet::cli::{Cli, Command};
use multi_subnet::engines::EngineFactory;
use multi_subnet::report::{Metering, SweepReport};
use multi_subnet::sweep;
use resvg::{tiny_skia, usvg};

fn texts(group: &usvg::Group, out: &mut Vec<String>) {
    for node in group.children() {
        match node {
            usvg::Node::Group(g) => texts(g, out),
            usvg::Node::Text(t) => out.push(t.chunks().iter().map(|c| c.text()).collect()),
            _ => {}
        }
    }
}

#[test]
fn charts_name_engine_topology_and_every_strategy_and_render() {
    let args = "multi_subnet sweep --calls 10,100 --strategies sequential,parallel,bounded,batched --k 10 \
                --topologies same-subnet,cross-subnet --wait bounded --callees 1 --repeat 1 --time-step-ns 1000000000";
    let Some(Command::Sweep(spec)) = Cli::try_parse_from(args.split_whitespace()).unwrap().command else {
        panic!("not a sweep");
    };
    let factory = EngineFactory::Sim;
    let runs =
        sweep::run(&factory, &spec.grid(), &canister_wasm::caller_and_callee().unwrap(), || {}).unwrap();
    let report = SweepReport {
        engine: factory.kind(),
        metering: Metering::Replica,
        engine_description: factory.description(),
        runs,
    };
    let dir = tempfile::tempdir().unwrap();
    let written = charts::write_all(&report, dir.path()).unwrap();
    assert_eq!(written.len(), 3 * 2, "three figures per topology");

    let mut options = usvg::Options::default();
    options.fontdb_mut().load_system_fonts();
    let family = options.fontdb.faces().find_map(|face| face.families.first().map(|f| f.0.clone()));
    let family = family.expect("no font loaded: install fonts-dejavu-core (scripts/setup.sh does)");
    // The charts ask for "sans-serif"; let it be whatever font this machine has.
    options.fontdb_mut().set_sans_serif_family(family);
    for path in written {
        let svg = std::fs::read_to_string(&path).unwrap();
        let tree = usvg::Tree::from_str(&svg, &options).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut found = vec![];
        texts(tree.root(), &mut found);
        let all = found.join("\n");
        let topology =
            if path.to_string_lossy().contains("cross-subnet") { "cross-subnet" } else { "same-subnet" };
        assert!(all.contains("engine: sim"), "{}: {all}", path.display());
        assert!(all.contains(topology), "{}: {all}", path.display());
        for series in ["sequential", "parallel", "bounded k=10", "batched k=10"] {
            assert!(found.iter().any(|t| t == series), "{}: no series {series}: {all}", path.display());
        }
        let size = tree.size().to_int_size();
        let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height()).unwrap();
        resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
        let inked =
            pixmap.pixels().iter().filter(|p| p.red() < 200 || p.green() < 200 || p.blue() < 200).count();
        assert!(inked > 1000, "{}: rendered almost nothing ({inked} dark pixels)", path.display());
        if let Some(dir) = std::env::var_os("CHART_PNG_DIR") {
            let name = path.file_stem().unwrap().to_string_lossy().to_string() + ".png";
            pixmap.save_png(std::path::Path::new(&dir).join(name)).unwrap();
        }
    }
}
