//! `steady shell [DIR]`: an embedded session on a data directory.
//!
//! Until the SQL layer exists, the session is a key-value one on a single B+tree (index 1 of space 1)
//! of the directory, going through the real storage engine. Commands are read one per line from the
//! terminal or from standard input; the directory is checkpointed on `quit` and at end of input.

use std::io::{BufRead, IsTerminal, Write};
use std::ops::Bound;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use steady_storage::btree::BTree;
use steady_storage::store::{Store, StoreConfig};

const KV_INDEX: u64 = 1;

const HELP: &str = "\
commands:
  put KEY VALUE      store VALUE under KEY (replacing any old value)
  get KEY            print the value of KEY
  del KEY            delete KEY
  scan [FROM [TO]]   print entries with FROM <= key < TO, in key order
  rscan              print all entries in reverse key order
  stats              buffer pool and tree figures
  checkpoint         write all dirty pages and sync the files
  help, quit";

pub fn run(dir: &Path, page_size: usize) -> anyhow::Result<ExitCode> {
    let config = StoreConfig {
        page_size,
        ..Default::default()
    };
    let store =
        Store::open_dir(dir, &config).with_context(|| format!("opening {}", dir.display()))?;
    let tree = open_kv_tree(&store)?;
    let interactive = std::io::stdin().is_terminal();
    if interactive {
        println!(
            "SteadyDB shell on {} (page size {}). Type help.",
            dir.display(),
            store.page_size()
        );
    }
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    loop {
        if interactive {
            print!("steady> ");
            std::io::stdout().flush()?;
        }
        let Some(line) = lines.next() else { break };
        let line = line?;
        match execute(&store, &tree, line.trim()) {
            Ok(Flow::Continue) => {}
            Ok(Flow::Quit) => break,
            Err(err) => println!("error: {err:#}"),
        }
    }
    drop(tree);
    store.close()?;
    Ok(ExitCode::SUCCESS)
}

fn open_kv_tree(store: &Store) -> anyhow::Result<BTree> {
    let space = match store.space(1) {
        Some(space) => space,
        None => store.create_space()?,
    };
    let tree = if space.trees().iter().any(|t| t.index_id == KV_INDEX) {
        BTree::open(store.pool().clone(), space, KV_INDEX)?
    } else {
        BTree::create(store.pool().clone(), space, KV_INDEX)?
    };
    Ok(tree)
}

enum Flow {
    Continue,
    Quit,
}

fn execute(store: &Store, tree: &BTree, line: &str) -> anyhow::Result<Flow> {
    let mut words = line.splitn(3, char::is_whitespace);
    let command = words.next().unwrap_or("");
    let mut arg = || words.next().map(str::trim).filter(|w| !w.is_empty());
    match command {
        "" => {}
        "put" => {
            let (key, value) = (required(arg(), "KEY")?, required(arg(), "VALUE")?);
            tree.insert(key.as_bytes(), value.as_bytes())?;
        }
        "get" => match tree.get(required(arg(), "KEY")?.as_bytes())? {
            Some(value) => println!("{}", String::from_utf8_lossy(&value)),
            None => println!("(not found)"),
        },
        "del" => {
            let found = tree.delete(required(arg(), "KEY")?.as_bytes())?;
            println!(
                "{}",
                if found.is_some() {
                    "deleted"
                } else {
                    "(not found)"
                }
            );
        }
        "scan" => {
            let from = arg().map(|s| s.as_bytes().to_vec());
            let to = arg().map(|s| s.as_bytes().to_vec());
            let start = from.as_deref().map_or(Bound::Unbounded, Bound::Included);
            let end = to.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
            print_entries(tree.range(start, end))?;
        }
        "rscan" => print_entries(tree.range_rev(Bound::Unbounded, Bound::Unbounded))?,
        "stats" => print_stats(store, tree)?,
        "checkpoint" => store.checkpoint()?,
        "help" => println!("{HELP}"),
        "quit" | "exit" | "\\q" => return Ok(Flow::Quit),
        other => anyhow::bail!("unknown command {other:?} (try help)"),
    }
    Ok(Flow::Continue)
}

fn required<'a>(word: Option<&'a str>, name: &str) -> anyhow::Result<&'a str> {
    word.with_context(|| format!("missing {name}"))
}

fn print_entries(
    entries: impl Iterator<Item = steady_storage::Result<(Vec<u8>, Vec<u8>)>>,
) -> anyhow::Result<()> {
    let mut count = 0;
    for entry in entries {
        let (key, value) = entry?;
        println!(
            "{}\t{}",
            String::from_utf8_lossy(&key),
            String::from_utf8_lossy(&value)
        );
        count += 1;
    }
    println!("({count} entries)");
    Ok(())
}

fn print_stats(store: &Store, tree: &BTree) -> anyhow::Result<()> {
    let pool = store.pool_stats();
    let shape = tree.stats()?;
    println!(
        "buffer pool: {} frames, {} read requests, {} reads, {} written, {} evictions, {} dirty",
        pool.frames,
        pool.read_requests,
        pool.reads,
        pool.pages_written,
        pool.evictions,
        pool.dirty_pages
    );
    println!("tree: {shape:?}");
    println!("redo log: {:?}", store.wal_stats());
    Ok(())
}
