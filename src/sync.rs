//! A mutex with its condition variable: how the crate's few cooperating
//! threads (compression workers and their writer, the raw scan's helper)
//! share state.

use std::sync::{Condvar, Mutex, MutexGuard};

/// State behind a mutex, and a condition variable for changes to it.
#[derive(Debug, Default)]
pub(crate) struct Monitor<T> {
    state: Mutex<T>,
    changed: Condvar,
}

impl<T> Monitor<T> {
    /// A monitor holding `state`.
    pub(crate) fn new(state: T) -> Monitor<T> {
        Monitor {
            state: Mutex::new(state),
            changed: Condvar::new(),
        }
    }

    /// Locks the state. A thread that panicked while holding it leaves it
    /// usable: every user keeps it consistent between statements and has a
    /// way to stop, so the others finish instead of panicking in turn.
    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for [`Monitor::notify`], with the lock released meanwhile.
    pub(crate) fn wait<'a>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        self.changed.wait(guard).unwrap_or_else(|e| e.into_inner())
    }

    /// Wakes every waiting thread to look at the state again.
    pub(crate) fn notify(&self) {
        self.changed.notify_all();
    }
}
