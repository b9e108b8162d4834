//! The table in docs/pocket-ic-offline.md of every endpoint the pocket-ic
//! 16.1 client calls, with what `serve` does with it: made here from the
//! client's own source (each `let endpoint = "..."` of its
//! `nonblocking.rs`, and the server's paths it joins) and from asking a
//! running server each one. The docs' table must be this one;
//! `UPDATE_DOCS=1` writes it there.

use std::path::{Path, PathBuf};

const DOCS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/pocket-ic-offline.md");
const START: &str = "<!-- endpoint table: start -->";
const END: &str = "<!-- endpoint table: end -->";

/// The pocket-ic crate's source directory, as cargo resolved it for this
/// machine (other platforms' dependencies need not be downloaded).
fn pocket_ic_source() -> PathBuf {
    let rustc = std::process::Command::new("rustc").arg("-vV").output().expect("rustc runs");
    let rustc = String::from_utf8(rustc.stdout).unwrap();
    let host = rustc.lines().find_map(|line| line.strip_prefix("host: ")).expect("rustc names its host");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked", "--offline", "--filter-platform", host])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let packages = metadata["packages"].as_array().unwrap();
    let pocket_ic = packages.iter().find(|p| p["name"] == "pocket-ic").expect("pocket-ic in the lock file");
    Path::new(pocket_ic["manifest_path"].as_str().unwrap()).parent().unwrap().to_path_buf()
}

/// `(path, scope)` of each endpoint the client calls, in the order it
/// first names them: an instance's (after `/instances/<id>/`) or the
/// server's.
fn client_endpoints(source: &str) -> Vec<(String, &'static str)> {
    let mut found: Vec<(String, &'static str)> = vec![];
    for line in source.lines() {
        let quoted = |prefix: &str| {
            let rest = line.split_once(prefix)?.1;
            Some(rest.split_once('"')?.0.trim_end_matches('/').to_string())
        };
        let endpoint = if let Some(path) = quoted("let endpoint = \"") {
            (path, "instance")
        } else if let Some(path) = quoted("let endpoint = format!(\"") {
            (path.replace("{}", "<subnet>"), "instance")
        } else if let Some(path) = quoted("server_url.join(\"") {
            (path, "server")
        } else {
            continue;
        };
        if !found.contains(&endpoint) {
            found.push(endpoint);
        }
    }
    found
}

/// What the server answers for the endpoint: served, served once the
/// instance is live, or refused as one it does not support (with a GET
/// and a POST alike).
fn on_serve(base: &str, instance: usize, (path, scope): &(String, &str)) -> &'static str {
    let url = match *scope {
        "instance" => format!("{base}instances/{instance}/{path}"),
        _ => format!("{base}{path}"),
    };
    let client = reqwest::blocking::Client::new();
    let answers = [
        client.get(&url).send().unwrap(),
        client.post(&url).header("content-type", "application/json").body("{}").send().unwrap(),
    ]
    .map(|response| (response.status(), response.text().unwrap()));
    let unsupported = |(status, body): &(reqwest::StatusCode, String)| {
        *status == reqwest::StatusCode::NOT_FOUND && body.contains("does not support this endpoint")
    };
    if answers.iter().all(unsupported) {
        "404, naming the endpoint and this simulator"
    } else if answers.iter().any(|(_, body)| body.contains("is not live")) {
        "served while the instance is live (`auto_progress`); before, 400 saying so"
    } else {
        "served"
    }
}

fn table() -> String {
    let source = std::fs::read_to_string(pocket_ic_source().join("src/nonblocking.rs")).unwrap();
    let endpoints = client_endpoints(&source);
    assert!(endpoints.len() > 20, "the client names its endpoints as this test expects: {endpoints:?}");
    let server = sim_server::Running::start().unwrap();
    let pic = pocket_ic::PocketIcBuilder::new()
        .with_server_url(server.url.parse().unwrap())
        .with_application_subnet()
        .build();
    let mut table = String::from("| endpoint | of | on `serve` and `pocket-ic-sim` |\n|---|---|---|\n");
    for endpoint in &endpoints {
        let state = on_serve(&server.url, pic.instance_id(), endpoint);
        table += &format!("| `{}` | {} | {state} |\n", endpoint.0, endpoint.1);
    }
    table
}

#[test]
fn the_docs_endpoint_table_is_the_clients_endpoints_asked_of_a_server() {
    let table = table();
    let docs = std::fs::read_to_string(DOCS).unwrap();
    let (before, rest) = docs.split_once(START).expect("the table's start marker");
    let (current, after) = rest.split_once(END).expect("the table's end marker");
    let wanted = format!("\n{table}");
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(DOCS, format!("{before}{START}{wanted}{END}{after}")).unwrap();
        return;
    }
    assert_eq!(
        current, wanted,
        "regenerate it: UPDATE_DOCS=1 cargo test -p sim_server --test it endpoint_table"
    );
}
