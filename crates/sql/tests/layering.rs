//! The SQL crate is cut by stage (see the crate doc): each stage folder may use only the stages
//! listed before it, so no import cycle can form between stages. This test reads every source
//! file's `crate::` paths (comments excluded) and fails on a path that reaches up or across.

use std::path::{Path, PathBuf};

/// Stage folders, lowest first. `lib.rs` and `error.rs` at the crate root are shared by all.
const STAGES: &[&str] = &[
    "types",
    "parser",
    "execution",
    "system",
    "planner",
    "session",
];

fn rank(stage: &str) -> Option<usize> {
    STAGES.iter().position(|s| *s == stage)
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The stages a file's code (not its comments) names through `crate::<stage>`.
fn stages_used(text: &str) -> Vec<String> {
    let mut used = Vec::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            used.push(name);
        }
    }
    used
}

#[test]
fn every_stage_uses_only_the_stages_below_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut violations = Vec::new();
    let mut checked = 0;
    for file in &files {
        let relative = file.strip_prefix(&root).unwrap();
        let mut parts = relative.components();
        let first = parts.next().unwrap().as_os_str().to_str().unwrap();
        let Some(own) = rank(first).filter(|_| parts.next().is_some()) else {
            assert!(
                ["lib.rs", "error.rs"].contains(&first),
                "{first} is neither a stage folder nor a shared root file"
            );
            if first == "error.rs" {
                let used = stages_used(&std::fs::read_to_string(file).unwrap());
                assert!(used.is_empty(), "error.rs uses {used:?}");
            }
            continue;
        };
        for used in stages_used(&std::fs::read_to_string(file).unwrap()) {
            checked += 1;
            match rank(&used) {
                Some(target) if target > own => {
                    violations.push(format!("{} uses crate::{used}", relative.display()))
                }
                Some(_) => {}
                None => assert!(
                    used == "error" || used == "SqlError",
                    "{}: crate::{used} is not a stage",
                    relative.display()
                ),
            }
        }
    }
    assert!(
        checked > 100,
        "only {checked} crate paths found: the scan is broken"
    );
    assert!(
        violations.is_empty(),
        "stages reaching up:\n{}",
        violations.join("\n")
    );
}

/// The crates stack storage → engine → sql → server → steady, with `steady-types` a leaf beside
/// storage. A library crate depends only on the layer right below it (and the leaf); only the
/// binary reaches further down, for `steady check` and `steady bench`.
#[test]
fn no_library_crate_skips_a_layer() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let allowed: &[(&str, &[&str])] = &[
        ("types", &[]),
        ("storage", &[]),
        ("engine", &["steady-storage", "steady-types"]),
        ("sql", &["steady-engine", "steady-types"]),
        ("server", &["steady-sql"]),
    ];
    for (name, below) in allowed {
        let manifest = std::fs::read_to_string(crates.join(name).join("Cargo.toml")).unwrap();
        let dependencies = manifest
            .split("[dependencies]")
            .nth(1)
            .unwrap_or("")
            .split("\n[")
            .next()
            .unwrap();
        let used: Vec<&str> = dependencies
            .lines()
            .filter_map(|line| line.split(['.', ' ', '=']).next())
            .filter(|dep| dep.starts_with("steady-"))
            .collect();
        for dep in &used {
            assert!(
                below.contains(dep),
                "{name} depends on {dep}, which is not the layer below it"
            );
        }
        assert_eq!(
            used.len(),
            below.len(),
            "{name} uses {used:?}, expected {below:?}"
        );
    }
}
