//! The outputs being written, and their removal when a signal ends the
//! process: no temporary file and no old file moved aside outlives an
//! interrupted command.

use std::path::PathBuf;

/// An output being written, for the signal handler: its temporary file,
/// and the old file moved aside (to be put back at `path`).
pub(super) struct Pending {
    pub(super) id: u64,
    pub(super) temp: PathBuf,
    pub(super) aside: Option<PathBuf>,
    pub(super) path: PathBuf,
}

/// Every output being written now (outputs are written on several threads
/// by `extract`).
static PENDING: std::sync::Mutex<Vec<Pending>> = std::sync::Mutex::new(Vec::new());

pub(super) fn pending() -> std::sync::MutexGuard<'static, Vec<Pending>> {
    PENDING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub(super) fn unregister(id: u64) {
    if id != 0 {
        pending().retain(|p| p.id != id);
    }
}

/// Starts a thread that, on SIGINT, SIGTERM or SIGHUP, removes every
/// temporary output and puts back every old file moved aside, then ends the
/// process as the signal would have (so no `.offload-kit-*` file outlives
/// an interrupted command). Called once, at start.
pub fn clean_up_on_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            // Held until the process ends: no output starts or commits
            // after the clean-up.
            let list = pending();
            for p in list.iter() {
                let _ = std::fs::remove_file(&p.temp);
                if let Some(old) = &p.aside {
                    let _ = std::fs::rename(old, &p.path);
                }
            }
            let _ = signal_hook::low_level::emulate_default_handler(sig);
            std::process::exit(128 + sig);
        }
    });
}
