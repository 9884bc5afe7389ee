//! Progress of long CLI work on stderr (`indicatif`): crash recovery when a command opens a data
//! directory, `steady check`'s page scan, each phase of a `steady bench` scenario, and a script
//! piped into `steady shell` (a bulk load such as a dump).
//!
//! Bars draw only when stderr is a terminal: indicatif hides a stderr target otherwise, so logs,
//! pipes and tests see no escape codes and pay almost nothing. A bar ends cleared, leaving the
//! command's own output as it was.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use steady_storage::store::{RecoveryProgress, RecoveryWatch};

const TICK: Duration = Duration::from_millis(120);

/// A bar of `total` steps of `unit` labelled `label`, with the time spent and the time left.
pub fn bar(total: u64, label: &str, unit: &str) -> ProgressBar {
    let template = format!(
        "{{msg}} [{{bar:30}}] {{human_pos}}/{{human_len}} {unit} ({{elapsed}}, {{eta}} left)"
    );
    drawn(Some(total), &template, label)
}

/// A bar of `total` bytes labelled `label`.
pub fn byte_bar(total: u64, label: &str) -> ProgressBar {
    let template = "{msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta} left)";
    drawn(Some(total), template, label)
}

/// A spinner with the time spent, for work whose length is not known; its message names the
/// current phase ([`ProgressBar::set_message`]).
pub fn spinner(label: &str) -> ProgressBar {
    drawn(None, "{spinner} {msg} ({elapsed})", label)
}

/// A bar (or, without a total, a spinner) on stderr in `template`, redrawn every [`TICK`].
fn drawn(total: Option<u64>, template: &str, label: &str) -> ProgressBar {
    let style = ProgressStyle::with_template(template)
        .expect("a valid template")
        .progress_chars("=> ");
    let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::stderr())
        .with_style(style)
        .with_message(label.to_owned());
    bar.enable_steady_tick(TICK);
    bar
}

/// What the store calls during crash recovery: a bar of redo records replayed, shown once
/// recovery turns out to have records to replay.
pub fn recovery_watch() -> RecoveryWatch {
    RecoveryWatch::new(recovery_bar())
}

/// The function behind [`recovery_watch`], for a caller that also wants the figures.
pub fn recovery_bar() -> impl Fn(RecoveryProgress) + Send + Sync + 'static {
    let shown: Arc<OnceLock<ProgressBar>> = Arc::default();
    move |progress: RecoveryProgress| {
        if progress.records_total == 0 {
            return;
        }
        let bar = shown.get_or_init(|| bar(progress.records_total, "recovering", "redo records"));
        bar.set_position(progress.records_done);
        if progress.records_done == progress.records_total {
            bar.finish_and_clear();
        }
    }
}
