//! The outputs being written, and their removal when a signal ends the
//! process: no temporary file outlives an interrupted command.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::sync::Arc;

/// An output being written, for the signal handler: its temporary file's
/// name (`None`: the file has none, and goes with the process) in the
/// directory handle `dir` that the output opened when it began (the
/// directory may have been renamed or moved since).
pub(super) struct Pending {
    pub(super) id: u64,
    pub(super) dir: Arc<OwnedFd>,
    pub(super) temp: Option<OsString>,
}

/// Every output being written now (outputs are written on several threads
/// by `extract`).
static PENDING: std::sync::Mutex<Vec<Pending>> = std::sync::Mutex::new(Vec::new());

pub(super) fn pending() -> std::sync::MutexGuard<'static, Vec<Pending>> {
    PENDING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Removes output `id` from `list` (the pending outputs, locked).
pub(super) fn unregister_locked(list: &mut Vec<Pending>, id: u64) {
    list.retain(|p| p.id != id);
}

/// Starts a thread that, on SIGINT, SIGTERM or SIGHUP, removes every
/// named temporary output, then ends the
/// process as the signal would have (so no `.offload-kit-*` file outlives
/// an interrupted command). Called once, at start.
///
/// # Examples
///
/// ```no_run
/// offload_kit::files::clean_up_on_signals();
/// // ... write outputs; Ctrl-C now leaves no temporary file behind.
/// ```
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
                if let Some(temp) = &p.temp {
                    let _ = rustix::fs::unlinkat(&*p.dir, temp, rustix::fs::AtFlags::empty());
                }
            }
            let _ = signal_hook::low_level::emulate_default_handler(sig);
            std::process::exit(128 + sig);
        }
    });
}
