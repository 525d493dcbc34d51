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
    /// The directory opened and locked (`flock`) while it is built: a
    /// later run that can take the lock knows its builder is gone
    /// ([`TempTree::reap_in`]).
    _lock: Option<std::fs::File>,
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
        let lock = std::fs::File::open(&path).ok().filter(|f| {
            rustix::fs::flock(f, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_ok()
        });
        Ok(TempTree {
            id,
            path,
            kept: false,
            _lock: lock,
        })
    }

    /// Removes the temporary directories in `parent` that a run killed
    /// outright (SIGKILL, a power cut: no handler ran) left: each
    /// `.offload-kit-*` directory (not a link) untouched for a minute
    /// whose lock no process holds. Its builder would hold the lock while
    /// it lives, so a live run's directory is never taken. What could not
    /// be removed is left; the names of those removed.
    pub(crate) fn reap_in(parent: &Path) -> Vec<PathBuf> {
        let mut reaped = Vec::new();
        let Ok(entries) = std::fs::read_dir(parent) else {
            return reaped;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let old = e.metadata().ok().filter(|m| m.is_dir()).and_then(|m| {
                let age = m.modified().ok()?.elapsed().ok()?;
                (age >= std::time::Duration::from_secs(60)).then_some(())
            });
            if !name.as_encoded_bytes().starts_with(b".offload-kit-") || old.is_none() {
                continue;
            }
            let path = e.path();
            let Ok(dir) = open_no_follow(&path) else {
                continue;
            };
            let free =
                rustix::fs::flock(&dir, rustix::fs::FlockOperation::NonBlockingLockExclusive);
            if free.is_ok() && std::fs::remove_dir_all(&path).is_ok() {
                reaped.push(path);
            }
        }
        reaped
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

/// The directory `path` opened to be locked, never through a symbolic
/// link.
fn open_no_follow(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc_flags())
        .open(path)
}

/// `O_DIRECTORY | O_NOFOLLOW`.
fn libc_flags() -> i32 {
    (rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::NOFOLLOW).bits() as i32
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

#[cfg(test)]
mod tests {
    use super::TempTree;
    use std::time::{Duration, SystemTime};

    /// Sets the modification time of `path` `secs` seconds back.
    fn age(path: &std::path::Path, secs: u64) {
        let f = std::fs::File::open(path).unwrap();
        f.set_modified(SystemTime::now() - Duration::from_secs(secs))
            .unwrap();
    }

    #[test]
    fn only_an_old_unlocked_temporary_directory_is_reaped() {
        let parent = tempfile::tempdir().unwrap();
        let p = parent.path();
        // Left by a run killed outright: old, and nobody holds its lock.
        let dead = p.join(".offload-kit-dead");
        std::fs::create_dir_all(dead.join("inner")).unwrap();
        std::fs::write(dead.join("inner/f"), b"x").unwrap();
        age(&dead, 120);
        // A live run's, even when old.
        let live = TempTree::new_in(p).unwrap();
        age(live.path(), 120);
        // A fresh one nobody holds (its builder may not have locked it yet).
        let fresh = p.join(".offload-kit-fresh");
        std::fs::create_dir(&fresh).unwrap();
        // A user's directory, and a link to a directory, both old.
        let mine = p.join("mine");
        std::fs::create_dir(&mine).unwrap();
        age(&mine, 120);
        let target = tempfile::tempdir().unwrap();
        std::fs::write(target.path().join("keep"), b"k").unwrap();
        std::os::unix::fs::symlink(target.path(), p.join(".offload-kit-link")).unwrap();

        let reaped = TempTree::reap_in(p);
        assert_eq!(reaped, vec![dead.clone()]);
        assert!(!dead.exists());
        assert!(live.path().is_dir() && fresh.is_dir() && mine.is_dir());
        assert!(target.path().join("keep").is_file());
        drop(live);
    }
}
