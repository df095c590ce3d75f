//! The dependency rules of `docs/architecture.md`, checked against the source: which module of
//! `layers/src` may name which through `crate::` paths.
//!
//! - no routing layer names another (any layer of a user's may sit between two of ours); only
//!   `stack.rs`, the composition, names them all;
//! - the core types (context, deployments, outcome, errors, body, tables) name no layer;
//! - the state store names no layer;
//! - nothing in the crate names the services crate or the facade.
//!
//! Comment lines are skipped (an intra-doc link is documentation, not a dependency), and so is a
//! file's test module (from its `#[cfg(test)]` line on: tests may build any layer).

use std::{
    collections::{BTreeMap, BTreeSet},
    fs,
    path::{Path, PathBuf},
};

/// The routing layers: none may name another.
const LAYERS: &[&str] = &[
    "select",
    "precall",
    "cooldown",
    "retry",
    "fallback",
    "deadline",
    "span",
    "classify",
    "preroute",
    "health",
    "continuation",
];

/// The composition of the layers: may name every one.
const COMPOSITION: &[&str] = &["stack", "lib"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("read layers/src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file belongs to: `select` for `select/service.rs`, `stack` for
/// `stack.rs`.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).expect("under src");
    let first = rel.components().next().expect("a component").as_os_str().to_string_lossy().into_owned();
    first.strip_suffix(".rs").map(str::to_owned).unwrap_or(first)
}

fn leading_ident(s: &str) -> Option<String> {
    let ident: String = s.trim_start().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    (!ident.is_empty()).then_some(ident)
}

/// The top-level modules a file names through `crate::` paths, `use crate::{a, b::c}` groups
/// included.
fn crate_refs(code: &str) -> BTreeSet<String> {
    let mut refs = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // The items at depth 0 of the group.
            let mut depth = 0usize;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        refs.extend(leading_ident(&item));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 {
                    item.push(c);
                }
            }
            refs.extend(leading_ident(&item));
        } else {
            refs.extend(leading_ident(rest));
        }
    }
    refs
}

/// Every module's `crate::` references, comment lines left out.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 20, "found the layers' sources ({} files)", files.len());
    let mut by_module: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let text = fs::read_to_string(&file).expect("read a source file");
        let code: String = text
            .lines()
            .take_while(|l| l.trim() != "#[cfg(test)]")
            .filter(|l| !l.trim_start().starts_with("//"))
            .flat_map(|l| [l, "\n"])
            .collect();
        let module = module_of(&src, &file);
        let refs: Vec<String> = crate_refs(&code).into_iter().filter(|r| *r != module).collect();
        by_module.entry(module).or_default().extend(refs);
    }
    by_module
}

fn violations(imports: &BTreeMap<String, BTreeSet<String>>, from: impl Fn(&str) -> bool) -> Vec<String> {
    imports
        .iter()
        .filter(|(module, _)| from(module))
        .flat_map(|(module, refs)| {
            refs.iter().filter(|r| LAYERS.contains(&r.as_str())).map(move |r| format!("{module} -> {r}"))
        })
        .collect()
}

#[test]
fn the_reference_parser_reads_paths_and_groups() {
    let refs = crate_refs("use crate::{a, b::{c, d}, e::F};\nlet x = crate::g::h();\n");
    assert_eq!(refs.into_iter().collect::<Vec<_>>(), ["a", "b", "e", "g"]);
}

#[test]
fn no_routing_layer_names_another() {
    let imports = imports();
    for layer in LAYERS {
        assert!(imports.contains_key(*layer), "the layer `{layer}` exists (update LAYERS when one is renamed)");
    }
    let found = violations(&imports, |m| LAYERS.contains(&m));
    assert!(found.is_empty(), "layers naming other layers: {found:?}");
}

#[test]
fn core_types_and_the_store_name_no_layer() {
    let imports = imports();
    let found = violations(&imports, |m| !LAYERS.contains(&m) && !COMPOSITION.contains(&m));
    assert!(found.is_empty(), "core modules or the store naming a layer: {found:?}");
    for (module, refs) in &imports {
        if !COMPOSITION.contains(&module.as_str()) {
            assert!(!refs.contains("stack"), "{module} names the composition");
        }
    }
}

#[test]
fn the_layers_crate_names_neither_the_services_nor_the_facade() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    for file in files {
        // Tracing targets (`target: "switchyard::retry"`) are names, not paths.
        let text = fs::read_to_string(&file).expect("read a source file").replace("\"switchyard::", "\"");
        for needle in ["switchyard_services", "switchyard::"] {
            assert!(!text.contains(needle), "{} names `{needle}`", file.display());
        }
    }
    let manifest = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).expect("manifest");
    assert!(!manifest.contains("switchyard-services"), "layers/Cargo.toml depends on the services crate");
}
