//! The `steady` binary end to end: the shell's example session, `check` on a clean and on a corrupted
//! directory, and every bench scenario's table and JSON output (at a small scale: figures, not speed,
//! are what is checked here).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn steady(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_steady"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start steady");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().expect("steady ran")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn shell_session(dir: &Path, script: &str) -> String {
    let output = steady(
        &["shell", dir.to_str().unwrap(), "--page-size", "4096"],
        script,
    );
    assert!(
        output.status.success(),
        "shell failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout(&output)
}

#[test]
fn the_readme_session_works_and_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("steady-data");
    let out = shell_session(
        &data,
        "put apple red\nput banana yellow\nget apple\nscan\ndel apple\nget apple\nbogus\nquit\n",
    );
    assert_eq!(
        out,
        "red\napple\tred\nbanana\tyellow\n(2 entries)\ndeleted\n(not found)\n\
         error: unknown command \"bogus\" (try help)\n"
    );
    let out = shell_session(&data, "scan\nrscan\n");
    assert_eq!(
        out,
        "banana\tyellow\n(1 entries)\nbanana\tyellow\n(1 entries)\n"
    );
    let check = steady(&["check", data.to_str().unwrap()], "");
    assert!(check.status.success(), "{}", stdout(&check));
    assert!(stdout(&check).contains("0 problems"), "{}", stdout(&check));
}

#[test]
fn check_names_a_corrupted_page_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("db");
    let mut script = String::new();
    for i in 0..2000 {
        script.push_str(&format!("put key{i:05} value-{i}\n"));
    }
    shell_session(&data, &script);
    let page = first_leaf_page(&data) as usize;
    let file = data.join("space_000001.sdb");
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[page * 4096 + 2000] ^= 0x55;
    std::fs::write(&file, bytes).unwrap();
    let check = steady(&["check", data.to_str().unwrap()], "");
    assert!(!check.status.success());
    let report = stdout(&check);
    assert!(
        report.contains(&format!(
            "space 1 page {page}: page {page} of space 1 is corrupt"
        )),
        "{report}"
    );
    let out = shell_session(&data, "scan\n");
    assert!(
        out.contains(&format!("page {page} of space 1 is corrupt")),
        "{out}"
    );
}

/// The first page the key-value tree's leaf segment owns.
fn first_leaf_page(data: &Path) -> u32 {
    let vfs = steady_storage::io::OsVfs::new(data, false).unwrap();
    let space = steady_storage::space::Space::open(&vfs, 1).unwrap();
    let leaves = space.trees()[0].leaf_segment;
    let (page, _) = space
        .allocated_pages()
        .into_iter()
        .find(|&(_, owner)| owner == leaves)
        .expect("a leaf page");
    page
}

#[test]
fn every_bench_prints_a_table_and_the_same_figures_as_json() {
    let list = steady(&["bench", "list"], "");
    let names: Vec<String> = stdout(&list)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    assert!(names.len() >= 2, "{names:?}");
    for name in names {
        let table = steady(&["bench", &name, "--scale", "0.1"], "");
        assert!(
            table.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&table.stderr)
        );
        let table = stdout(&table);
        let json = steady(&["bench", &name, "--scale", "0.1", "--json"], "");
        assert!(
            json.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&json.stderr)
        );
        let value: serde_json::Value =
            serde_json::from_str(stdout(&json).trim()).expect("one JSON object");
        assert_eq!(value["scenario"], name.as_str());
        let figures = value["figures"].as_array().expect("figures");
        assert!(!figures.is_empty());
        for figure in figures {
            let figure_name = figure["name"].as_str().unwrap();
            assert!(
                table.contains(figure_name),
                "{name}: table lacks {figure_name}:\n{table}"
            );
        }
    }
}
