//! Layers that point one way: the top-level modules of src/ (library and binary) and which of them each
//! one's code names (`crate::X`, `rocescope::X`, `super::X` from a module's root file). The graph must have
//! no cycle, and every edge must go down the layer order the architecture sets (docs/architecture.md):
//!
//! parsers (crate) <- source, host <- analysis <- filter <- pipeline <- report <- capture, dissect, export, inject <- tui
//!     <- commands, generator, lab <- cli <- main
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each top-level module and its layer: a module may name only modules of lower layers.
const LAYERS: [(&str, u32); 18] = [
    ("source", 1),
    ("host", 1),
    ("analysis", 2),
    ("filter", 3),
    ("pipeline", 4),
    ("report", 5),
    ("capture", 6),
    ("dissect", 6),
    ("export", 6),
    ("inject", 6),
    ("tui", 7),
    ("conform", 7),
    ("mesh", 7),
    ("commands", 8),
    ("generator", 8),
    ("lab", 8),
    ("cli", 9),
    ("main", 10),
];

fn layer(module: &str) -> Option<u32> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module a file of src/ belongs to (`main` for main.rs, none for lib.rs).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    match first {
        "lib.rs" => None,
        "main.rs" => Some("main".to_string()),
        f => Some(f.trim_end_matches(".rs").to_string()),
    }
}

/// The modules named after `prefix` (`crate::`, `rocescope::`) in `text`.
fn named_after(text: &str, prefix: &str, out: &mut BTreeSet<String>) {
    let mut rest = text;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            out.insert(name);
        }
    }
}

/// module -> the other top-level modules it names.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        let Some(m) = module_of(src, &f) else {
            continue;
        };
        let text = std::fs::read_to_string(&f).unwrap();
        let mut named = BTreeSet::new();
        named_after(&text, "crate::", &mut named);
        named_after(&text, "rocescope::", &mut named);
        // `super::` in a top-level module's own root file names the crate root's modules.
        let in_src = f.parent() == Some(src);
        let module_root = f.file_name().is_some_and(|n| n == "mod.rs")
            && f.parent().and_then(Path::parent) == Some(src);
        if in_src || module_root {
            named_after(&text, "super::", &mut named);
        }
        let entry = g.entry(m.clone()).or_default();
        entry.extend(named.into_iter().filter(|n| *n != m && layer(n).is_some()));
    }
    g
}

/// A cycle in `g`, if there is one (as the list of modules around it).
fn cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        g: &BTreeMap<String, BTreeSet<String>>,
        m: &str,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == m) {
            let mut c = path[i..].to_vec();
            c.push(m.to_string());
            return Some(c);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_string());
        for n in g.get(m).into_iter().flatten() {
            if let Some(c) = visit(g, n, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(m.to_string());
        None
    }
    let mut done = BTreeSet::new();
    g.keys()
        .find_map(|m| visit(g, m, &mut Vec::new(), &mut done))
}

#[test]
fn the_cycle_check_finds_a_cycle() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let edge = |g: &mut BTreeMap<String, BTreeSet<String>>, a: &str, b: &str| {
        g.entry(a.to_string()).or_default().insert(b.to_string());
    };
    edge(&mut g, "report", "analysis");
    edge(&mut g, "analysis", "source");
    assert_eq!(cycle(&g), None);
    edge(&mut g, "source", "report");
    assert_eq!(
        cycle(&g),
        Some(vec![
            "analysis".to_string(),
            "source".to_string(),
            "report".to_string(),
            "analysis".to_string()
        ])
    );
}

#[test]
fn top_level_modules_point_one_way() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let g = graph(&src);
    for m in g.keys() {
        assert!(
            layer(m).is_some(),
            "src/{m}: a top-level module with no layer: add it to LAYERS and docs/architecture.md"
        );
    }
    assert_eq!(cycle(&g), None, "a cycle between top-level modules");
    let mut upward = Vec::new();
    for (m, named) in &g {
        for n in named {
            if layer(n) >= layer(m) {
                upward.push(format!("{m} -> {n}"));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "edges against the layer order: {upward:?}"
    );
    // The check sees the edges it should: the pipeline feeds the engine, the report reads it and the host.
    assert!(g["pipeline"].contains("analysis") && g["report"].contains("analysis"));
    assert!(g["report"].contains("host") && g["capture"].contains("host"));
}
