//! The crate's modules import each other without a circle: executors (`sync/`) import the
//! syncer (`controller`) and the planners, the syncer imports planners, and no planner imports
//! the syncer or an executor. A circle would tie a pure planner to the I/O that applies it.
//!
//! Read from the source text: each top-level module of `src/` (a file, or a folder with its
//! files) and the modules its non-test code names as `crate::<module>`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Every `.rs` file below `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).expect("readable src") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            files.extend(sources(&path));
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
    files
}

/// The code of a file without comments and without its `#[cfg(test)]` part (unit tests may
/// reach anywhere).
fn non_test_code(text: &str) -> String {
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    code.lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first path segment of each item of a `use crate::{..}` group, and of each
/// `crate::<segment>` path.
fn named_modules(code: &str) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    for (index, _) in code.match_indices("crate::") {
        let rest = &code[index + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut item_start = true;
            for (offset, ch) in group.char_indices() {
                match ch {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && (c.is_alphanumeric() || c == '_') => {
                        let ident: String = group[offset..]
                            .chars()
                            .take_while(|c| c.is_alphanumeric() || *c == '_')
                            .collect();
                        named.insert(ident);
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            let ident: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            named.insert(ident);
        }
    }
    named
}

/// Module -> the modules it imports.
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let module_of = |path: &Path| -> String {
        let relative = path.strip_prefix(&src).expect("below src");
        let first = relative.components().next().expect("a component");
        let name = first.as_os_str().to_string_lossy();
        name.trim_end_matches(".rs").to_owned()
    };
    let files = sources(&src);
    let modules: BTreeSet<String> = files.iter().map(|path| module_of(path)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for path in &files {
        let module = module_of(path);
        if module == "lib" {
            continue;
        }
        let code = non_test_code(&fs::read_to_string(path).expect("readable source"));
        let imports: Vec<String> = named_modules(&code)
            .into_iter()
            .filter(|named| *named != module && modules.contains(named))
            .collect();
        graph.entry(module).or_default().extend(imports);
    }
    graph
}

/// A circle through `from`, if the graph has one reachable from it.
fn circle_from(
    graph: &BTreeMap<String, BTreeSet<String>>,
    from: &str,
    path: &mut Vec<String>,
    done: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    if let Some(start) = path.iter().position(|module| module == from) {
        let mut circle = path[start..].to_vec();
        circle.push(from.to_owned());
        return Some(circle);
    }
    if !done.insert(from.to_owned()) {
        return None;
    }
    path.push(from.to_owned());
    for next in graph.get(from).into_iter().flatten() {
        if let Some(circle) = circle_from(graph, next, path, done) {
            return Some(circle);
        }
    }
    path.pop();
    None
}

#[test]
fn the_modules_import_each_other_without_a_circle() {
    let graph = module_graph();
    assert!(
        graph["sync"].contains("controller") && graph["controller"].contains("progress"),
        "the graph is read: {graph:?}"
    );
    let mut done = BTreeSet::new();
    for module in graph.keys() {
        let circle = circle_from(&graph, module, &mut Vec::new(), &mut done);
        assert_eq!(circle, None, "an import circle");
    }
}

#[test]
fn no_planner_imports_the_syncer_or_an_executor() {
    let graph = module_graph();
    let io = ["controller", "sync", "handlers", "writes"];
    for (module, imports) in &graph {
        if io.contains(&module.as_str()) {
            continue;
        }
        let reaching: Vec<&String> = imports
            .iter()
            .filter(|import| io.contains(&import.as_str()))
            .collect();
        assert!(reaching.is_empty(), "{module} imports {reaching:?}");
    }
}
