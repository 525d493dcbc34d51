//! The outputs being written, and their removal when a signal ends the
//! process: no temporary file outlives an interrupted command.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
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

/// Every directory being built under a temporary name now, by its id.
static TREES: std::sync::Mutex<Vec<(u64, PathBuf)>> = std::sync::Mutex::new(Vec::new());

fn trees() -> std::sync::MutexGuard<'static, Vec<(u64, PathBuf)>> {
    TREES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A directory built under a temporary name (`.offload-kit-…`) and
/// renamed to its own once complete ([`TempTree::persist`]): dropped
/// before, or ended by a signal, it is removed with all it holds.
pub(crate) struct TempTree {
    id: u64,
    path: PathBuf,
    /// Renamed to its own name: no longer removed.
    kept: bool,
}

impl TempTree {
    /// A new empty directory in `parent`.
    pub(crate) fn new_in(parent: &Path) -> std::io::Result<TempTree> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        // Made under the lock, so a signal finds it made and listed, or
        // not made.
        let mut list = trees();
        let path = tempfile::Builder::new()
            .prefix(".offload-kit-")
            .tempdir_in(parent)?
            .keep();
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        list.push((id, path.clone()));
        Ok(TempTree {
            id,
            path,
            kept: false,
        })
    }

    /// The directory.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Renames the directory to `to` (which must not exist), under the
    /// lock: a signal finds it still temporary, or in place.
    pub(crate) fn persist(mut self, to: &Path) -> std::io::Result<()> {
        let mut list = trees();
        std::fs::rename(&self.path, to)?;
        list.retain(|(id, _)| *id != self.id);
        self.kept = true;
        Ok(())
    }
}

impl Drop for TempTree {
    fn drop(&mut self) {
        if self.kept {
            return;
        }
        let mut list = trees();
        let _ = std::fs::remove_dir_all(&self.path);
        list.retain(|(id, _)| *id != self.id);
    }
}

/// Removes output `id` from `list` (the pending outputs, locked).
pub(super) fn unregister_locked(list: &mut Vec<Pending>, id: u64) {
    list.retain(|p| p.id != id);
}

/// Starts a thread that, on SIGINT, SIGTERM or SIGHUP, removes every
/// named temporary output and every temporary directory, then ends the
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
            let dirs = trees();
            for (_, path) in dirs.iter() {
                let _ = std::fs::remove_dir_all(path);
            }
            let _ = signal_hook::low_level::emulate_default_handler(sig);
            std::process::exit(128 + sig);
        }
    });
}
