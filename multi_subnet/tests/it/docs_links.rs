//! No dead link between the README, the pages under docs/ and the
//! library's README and CHANGELOG: every relative
//! link names a file that exists, and every `#anchor` a heading of its
//! target, as GitHub makes anchors of headings. External links are not
//! followed.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// README.md, every .md under docs/, and the library's README and CHANGELOG.
fn documents(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, found);
            } else if path.extension().is_some_and(|e| e == "md") {
                found.push(path);
            }
        }
    }
    let mut found = vec![root.join("README.md")];
    let library = ["fanout/README.md", "fanout/CHANGELOG.md"].map(|page| root.join(page));
    found.extend(library.into_iter().filter(|page| page.is_file()));
    walk(&root.join("docs"), &mut found);
    found.sort();
    found
}

/// A heading's anchor as GitHub makes it: lowercased, punctuation other than
/// `-` and `_` dropped, each space a `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// A document's links (destinations as written) and its headings' anchors,
/// a repeated heading's numbered -1, -2, ... as GitHub numbers them.
fn read(text: &str) -> (Vec<String>, BTreeSet<String>) {
    let (mut links, mut anchors) = (vec![], BTreeSet::new());
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut heading: Option<String> = None;
    for event in Parser::new_ext(text, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH) {
        match event {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                links.push(dest_url.to_string())
            }
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let base = slug(&heading.take().unwrap());
                let n = seen.entry(base.clone()).or_default();
                anchors.insert(if *n == 0 { base.clone() } else { format!("{base}-{n}") });
                *n += 1;
            }
            _ => {}
        }
    }
    (links, anchors)
}

/// Every dead link of the documents, as "file: link (why)".
fn dead_links(root: &Path) -> Vec<String> {
    let docs: BTreeMap<PathBuf, (Vec<String>, BTreeSet<String>)> = documents(root)
        .into_iter()
        .map(|path| {
            let text = fs::read_to_string(&path).unwrap();
            (path.canonicalize().unwrap(), read(&text))
        })
        .collect();
    let mut dead = vec![];
    for (path, (links, _)) in &docs {
        let shown = path.strip_prefix(root.canonicalize().unwrap()).unwrap().display();
        for link in links {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = link.split_once('#').unwrap_or((link, ""));
            let target = if file.is_empty() { path.clone() } else { path.parent().unwrap().join(file) };
            let Ok(target) = target.canonicalize() else {
                dead.push(format!("{shown}: {link} (no such file)"));
                continue;
            };
            if anchor.is_empty() {
                continue;
            }
            match docs.get(&target) {
                Some((_, anchors)) if anchors.contains(anchor) => {}
                Some(_) => dead.push(format!("{shown}: {link} (no such heading)")),
                None => dead.push(format!("{shown}: {link} (an anchor into what is no checked page)")),
            }
        }
    }
    dead
}

#[test]
fn every_relative_link_and_anchor_of_the_docs_leads_somewhere() {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let dead = dead_links(root);
    assert!(dead.is_empty(), "dead links:\n{}", dead.join("\n"));
}

#[test]
fn anchors_are_githubs() {
    let (_, anchors) = read("# Retries: jobs\n## `sim::Faults` & co.\n## Scale\n## Scale\n## Scale\n");
    let expected = ["retries-jobs", "simfaults--co", "scale", "scale-1", "scale-2"];
    assert_eq!(anchors, expected.map(String::from).into());
}

#[test]
fn a_dead_file_or_anchor_is_found() {
    let dir = std::env::temp_dir().join(format!("docs_links_{}", std::process::id()));
    fs::create_dir_all(dir.join("docs")).unwrap();
    fs::write(
        dir.join("README.md"),
        "# Top\n[ok](docs/a.md#a-page) [ok](#top) [web](https://example.com/x)\n\
         [gone](docs/b.md) [no heading](docs/a.md#nowhere) [here](#bottom)\n",
    )
    .unwrap();
    fs::write(dir.join("docs/a.md"), "# A page\n[back](../README.md#top)\n").unwrap();
    let dead = dead_links(&dir);
    fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        dead,
        [
            "README.md: docs/b.md (no such file)",
            "README.md: docs/a.md#nowhere (no such heading)",
            "README.md: #bottom (no such heading)"
        ]
    );
}
