//! The `steady` binary end to end: the README's SQL shell session, errors in the shell, `check` on a clean and on a corrupted
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

/// The README's example session: what is typed after each prompt, and the output it shows.
fn readme_session() -> (String, String) {
    let readme = include_str!("../../../README.md");
    let (_, after_marker) = readme
        .split_once("<!-- shell-session -->\n```text\n")
        .expect("the README marks its shell session");
    let (block, _) = after_marker.split_once("\n```").expect("the block ends");
    let mut lines = block
        .lines()
        .skip_while(|line| prompt_input(line).is_none());
    let (mut input, mut output) = (String::new(), String::new());
    for line in lines.by_ref() {
        let text = prompt_input(line).unwrap_or(line);
        let target = if prompt_input(line).is_some() {
            &mut input
        } else {
            &mut output
        };
        target.push_str(text);
        target.push('\n');
    }
    (input, output)
}

/// What follows a shell prompt (`steady=> `, `steady-> `, `steady=*> `...) on a transcript line.
fn prompt_input(line: &str) -> Option<&str> {
    let (marks, input) = line.strip_prefix("steady")?.split_once("> ")?;
    let is_prompt = (1..=2).contains(&marks.len()) && marks.chars().all(|c| "=-'\"$*!".contains(c));
    is_prompt.then_some(input)
}

#[test]
fn the_readme_shell_session_prints_what_the_readme_shows_and_survives_a_restart() {
    let (input, expected) = readme_session();
    assert!(input.contains("CREATE TABLE accounts"), "{input}");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("steady-data");
    let out = shell_session(&data, &input);
    assert_eq!(
        out, expected,
        "the README's shell session (README.md, after <!-- shell-session -->) no longer shows \
         what the shell prints; this is the output now:\n{out}"
    );
    let out = shell_session(&data, "SELECT owner, balance FROM accounts ORDER BY id;\n");
    for row in [
        "alice |  100.50",
        "bob   |   95.00",
        "dave  |   25.00",
        "(4 rows)",
    ] {
        assert!(out.contains(row), "{out}");
    }
    let check = steady(&["check", data.to_str().unwrap()], "");
    assert!(check.status.success(), "{}", stdout(&check));
    assert!(stdout(&check).contains("0 problems"), "{}", stdout(&check));
}

#[test]
fn an_error_shows_its_sqlstate_and_the_session_goes_on_unless_told_to_stop() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("db");
    let script = "CREATE TABLE t (id integer PRIMARY KEY, v text);\n\
                  INSERT INTO t VALUES (1, 'a');\n\
                  INSERT INTO t VALUES (1, 'b'); INSERT INTO t VALUES (2, 'c');\n\
                  SELECT id, v FROM t ORDER BY id;\n";
    let output = steady(&["shell", data.to_str().unwrap()], script);
    assert!(output.status.success());
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.contains(
            "steady:<stdin>:3: ERROR:  23505: duplicate key value violates unique constraint \
             \"t_pkey\"\nDETAIL:  Key (id)=(1) already exists.\n"
        ),
        "{err}"
    );
    assert!(
        stdout(&output).ends_with("INSERT 0 1\n id | v\n----+---\n  1 | a\n  2 | c\n(2 rows)\n\n"),
        "{}",
        stdout(&output)
    );
    let stopped = steady(
        &["shell", data.to_str().unwrap(), "--stop-on-error"],
        "INSERT INTO t VALUES (3, 'd');\nINSERT INTO t VALUES (1, 'e');\nSELECT 1;\n",
    );
    assert_eq!(stopped.status.code(), Some(3));
    assert_eq!(stdout(&stopped), "INSERT 0 1\n");
}

#[test]
fn check_names_a_corrupted_page_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("db");
    let rows: Vec<String> = (0..2000)
        .map(|i| format!("('key{i:05}', 'value-{i}')"))
        .collect();
    let script = format!(
        "CREATE TABLE kv (k text PRIMARY KEY, v text);\nINSERT INTO kv VALUES {};\n",
        rows.join(", ")
    );
    shell_session(&data, &script);
    let page = first_leaf_page(&data) as usize;
    let file = data.join("space_000001.sdb");
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[page * 4096 + 2000] ^= 0x55;
    std::fs::write(&file, bytes).unwrap();
    // Long after its write, the doublewrite area no longer holds a copy of the page.
    let area = data.join("doublewrite.sdb");
    let area_len = std::fs::metadata(&area).unwrap().len() as usize;
    std::fs::write(&area, vec![0u8; area_len]).unwrap();
    let check = steady(&["check", data.to_str().unwrap()], "");
    assert!(!check.status.success());
    let report = stdout(&check);
    assert!(
        report.contains(&format!(
            "space 1 page {page}: page {page} of space 1 is corrupt"
        )),
        "{report}"
    );
    let output = steady(
        &["shell", data.to_str().unwrap()],
        "SELECT count(*) FROM kv;\n",
    );
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.contains(&format!("page {page} of space 1 is corrupt")),
        "{err}"
    );
}

/// The first page the table's leaf segment owns (the table is the only tree of space 1).
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

/// Runs `command` under a pseudo-terminal (`script` from util-linux), as on an operator's
/// terminal: what it wrote, stdout and stderr together.
fn on_a_terminal(command: &str) -> String {
    let output = Command::new("script")
        .args(["-qec", command, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .expect("script (util-linux) runs: apt-get install bsdutils");
    assert!(output.status.success(), "{command}: {output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn check_recovers_a_crashed_directory_first_and_shows_progress_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut shell = Command::new(env!("CARGO_BIN_EXE_steady"))
        .args(["shell", data.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = shell.stdin.take().unwrap();
    writeln!(
        input,
        "CREATE TABLE t (id integer PRIMARY KEY, pad text);\n\
         CREATE INDEX t_pad ON t (pad);\n\
         INSERT INTO t SELECT g, repeat('x', 100) || g FROM generate_series(1, 50000) g;\n\
         SELECT count(*) AS loaded FROM t;"
    )
    .unwrap();
    // Once the count is printed the rows are committed; the shell then waits for more input
    // and is killed without a checkpoint, so its changes are in the redo log only.
    let mut out = std::io::BufReader::new(shell.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("50000") {
        line.clear();
        let read = std::io::BufRead::read_line(&mut out, &mut line).unwrap();
        assert!(read > 0, "the shell ended before the count");
    }
    shell.kill().unwrap();
    shell.wait().unwrap();
    drop(input);

    let check = format!("{} check {}", env!("CARGO_BIN_EXE_steady"), data.display());
    let shown = on_a_terminal(&check);
    assert!(shown.contains("recovering ["), "no recovery bar: {shown}");
    assert!(shown.contains("checking ["), "no page bar: {shown}");
    // Recovered once, so a second check has nothing to replay and draws no recovery bar.
    let report = steady(&["check", data.to_str().unwrap()], "");
    let text = stdout(&report);
    assert!(report.status.success(), "{text}");
    assert!(!text.contains("recovered"), "{text}");
    assert!(text.contains("1 indexes checked: 0 problems"), "{text}");
    assert!(
        shown.contains("recovered: ") && shown.contains(" 0 problems"),
        "{shown}"
    );
    // Off a terminal nothing is drawn: no bar, no escape codes.
    assert!(!text.contains('\u{1b}') && !String::from_utf8_lossy(&report.stderr).contains('['));
}

#[test]
fn a_file_piped_into_the_shell_shows_a_load_bar_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("load.sql");
    let mut sql = String::from("CREATE TABLE t (id integer PRIMARY KEY);\n");
    for i in 0..2000 {
        sql.push_str(&format!("INSERT INTO t VALUES ({i});\n"));
    }
    sql.push_str("SELECT count(*) AS rows FROM t;\n");
    std::fs::write(&script, sql).unwrap();
    let data = dir.path().join("data");
    let command = format!(
        "{} shell {} < {} > {}",
        env!("CARGO_BIN_EXE_steady"),
        data.display(),
        script.display(),
        dir.path().join("out").display()
    );
    let shown = on_a_terminal(&command);
    assert!(shown.contains("loading ["), "no load bar: {shown}");
    let out = std::fs::read_to_string(dir.path().join("out")).unwrap();
    assert!(out.contains("2000\n(1 row)"), "{out}");
}

#[test]
fn check_and_backup_refuse_a_directory_without_a_database_and_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let backup_to = dir.path().join("copy");
    for args in [
        vec!["check", empty.to_str().unwrap()],
        vec![
            "backup",
            empty.to_str().unwrap(),
            backup_to.to_str().unwrap(),
        ],
    ] {
        let output = steady(&args, "");
        let err = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?}: {err}");
        assert!(
            err.contains("is not a SteadyDB data directory"),
            "{args:?}: {err}"
        );
        let left: Vec<_> = std::fs::read_dir(&empty).unwrap().collect();
        assert!(left.is_empty(), "{args:?} created {left:?}");
        assert!(!backup_to.exists());
    }
}
