//! The ordered frame pool that parallel compression (`frames.rs`) and
//! parallel decoding (`parallel.rs`) share: workers take frame numbers in
//! order, at most `ahead` frames past the last one the writer released,
//! each into a buffer from a pool of reused ones; the writer takes the
//! finished frames in order and hands their buffers back.
//!
//! Nobody waits forever: a worker that stops for any reason (a panic too)
//! is counted, and the writer gives up once every worker has stopped with
//! its frame still missing; the first failure, or the writer quitting,
//! stops every worker at its next frame.

use crate::sync::Monitor;

/// What the workers and the writer share.
struct Shared<E> {
    /// The next frame to hand out.
    next: u64,
    /// Frames the writer is done with: a worker may take frame `next`
    /// only while `next < released + ahead`.
    released: u64,
    /// Finished frames waiting for the writer: (number, contents).
    done: Vec<(u64, Vec<u8>)>,
    /// Buffers to reuse.
    spare: Vec<Vec<u8>>,
    /// Workers that have stopped, for any reason.
    stopped: u32,
    /// The first failure.
    failed: Option<E>,
    /// Set when the writer gives up.
    quit: bool,
}

/// A pool of `workers` workers over `count` frames; `E` is a failure.
pub(super) struct Pool<E> {
    state: Monitor<Shared<E>>,
    count: u64,
    ahead: u64,
    workers: u32,
}

/// Why the writer gets no frame.
pub(super) enum Missing<E> {
    /// A worker failed with this.
    Failed(E),
    /// Every worker stopped without it.
    Stopped,
}

impl<E> Pool<E> {
    /// A pool for frames `0..count` on `workers` workers, which may run
    /// `ahead` frames past the writer.
    pub(super) fn new(count: u64, workers: u32, ahead: u64) -> Pool<E> {
        Pool {
            state: Monitor::new(Shared {
                next: 0,
                released: 0,
                done: Vec::new(),
                spare: Vec::new(),
                stopped: 0,
                failed: None,
                quit: false,
            }),
            count,
            ahead,
            workers,
        }
    }

    /// Counts a worker that never started (its thread could not be made).
    pub(super) fn not_started(&self) {
        self.state.lock().stopped += 1;
        self.state.notify();
    }

    /// A worker's guard: counts the worker stopped when dropped, and on a
    /// panic records `on_panic()` as the failure, since its frame will
    /// never come.
    pub(super) fn stopping(&self, on_panic: fn() -> E) -> Stopping<'_, E> {
        Stopping {
            pool: self,
            on_panic,
        }
    }

    /// A worker's next frame and a buffer (empty) for it, once the frame
    /// is within `ahead` of the writer; `None` when the worker should stop
    /// (no frames left, a failure, the writer gone).
    pub(super) fn take(&self) -> Option<(u64, Vec<u8>)> {
        let mut s = self.state.lock();
        while !s.quit
            && s.failed.is_none()
            && s.next < self.count
            && s.next >= s.released + self.ahead
        {
            s = self.state.wait(s);
        }
        if s.quit || s.failed.is_some() || s.next >= self.count {
            return None;
        }
        let i = s.next;
        s.next += 1;
        let buf = s.spare.pop().unwrap_or_default();
        Some((i, buf))
    }

    /// A worker's result for frame `i`: the frame, or a failure (the
    /// first one is kept, and stops everyone).
    pub(super) fn finish(&self, i: u64, result: Result<Vec<u8>, E>) {
        let mut s = self.state.lock();
        match result {
            Ok(buf) => s.done.push((i, buf)),
            Err(e) => {
                s.failed.get_or_insert(e);
            }
        }
        drop(s);
        self.state.notify();
    }

    /// A failure outside any frame (a worker that cannot set up).
    pub(super) fn fail(&self, e: E) {
        self.state.lock().failed.get_or_insert(e);
        self.state.notify();
    }

    /// The writer's frame `i`, waiting for it; a frame already finished
    /// comes before any failure.
    pub(super) fn frame(&self, i: u64) -> Result<Vec<u8>, Missing<E>> {
        let mut s = self.state.lock();
        loop {
            if let Some(k) = s.done.iter().position(|(n, _)| *n == i) {
                return Ok(s.done.swap_remove(k).1);
            }
            if let Some(e) = s.failed.take() {
                s.quit = true;
                drop(s);
                self.state.notify();
                return Err(Missing::Failed(e));
            }
            if s.stopped == self.workers {
                return Err(Missing::Stopped);
            }
            s = self.state.wait(s);
        }
    }

    /// A frame's buffer back, the frame done with: lets the workers run
    /// one frame further.
    pub(super) fn release(&self, mut buf: Vec<u8>) {
        buf.clear();
        let mut s = self.state.lock();
        s.spare.push(buf);
        s.released += 1;
        drop(s);
        self.state.notify();
    }

    /// The writer gives up: every worker stops at its next frame.
    pub(super) fn quit(&self) {
        self.state.lock().quit = true;
        self.state.notify();
    }

    /// The writer's guard: quits when dropped, however the writer ends
    /// (a panic too), so no worker waits for it forever and the threads'
    /// scope can end.
    pub(super) fn writing(&self) -> Writing<'_, E> {
        Writing(self)
    }
}

/// See [`Pool::writing`].
pub(super) struct Writing<'a, E>(&'a Pool<E>);

impl<E> Drop for Writing<'_, E> {
    fn drop(&mut self) {
        self.0.quit();
    }
}

/// See [`Pool::stopping`].
pub(super) struct Stopping<'a, E> {
    pool: &'a Pool<E>,
    on_panic: fn() -> E,
}

impl<E> Drop for Stopping<'_, E> {
    fn drop(&mut self) {
        let mut s = self.pool.state.lock();
        s.stopped += 1;
        if std::thread::panicking() {
            s.failed.get_or_insert_with(self.on_panic);
        }
        drop(s);
        self.pool.state.notify();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `workers` threads over `count` frames, frame `i` holding the
    /// byte `i` (a failure at `fail_at`, a panic at `panic_at`), and
    /// returns what the writer got in order, and how it ended.
    fn run(
        count: u64,
        workers: u32,
        fail_at: Option<u64>,
        panic_at: Option<u64>,
    ) -> (Vec<u8>, Option<String>) {
        let pool: Pool<String> = Pool::new(count, workers, 2);
        std::thread::scope(|scope| {
            for _ in 0..workers {
                let pool = &pool;
                scope.spawn(move || {
                    let _stopping = pool.stopping(|| "panicked".to_string());
                    while let Some((i, mut buf)) = pool.take() {
                        assert!(Some(i) != panic_at, "a worker panics");
                        let r = if Some(i) == fail_at {
                            Err(format!("frame {i} failed"))
                        } else {
                            buf.push(u8::try_from(i).unwrap());
                            Ok(buf)
                        };
                        pool.finish(i, r);
                    }
                });
            }
            let mut got = Vec::new();
            for i in 0..count {
                match pool.frame(i) {
                    Ok(buf) => {
                        got.extend_from_slice(&buf);
                        pool.release(buf);
                    }
                    Err(Missing::Failed(e)) => return (got, Some(e)),
                    Err(Missing::Stopped) => return (got, Some("stopped".into())),
                }
            }
            (got, None)
        })
    }

    #[test]
    fn frames_come_in_order_and_failures_stop_everyone() {
        for workers in 1..4 {
            let (got, end) = run(50, workers, None, None);
            assert_eq!(got, (0..50).collect::<Vec<u8>>());
            assert_eq!(end, None);
            let (got, end) = run(50, workers, Some(20), None);
            assert!(got.len() <= 20 && got.iter().copied().eq(0..u8::try_from(got.len()).unwrap()));
            assert_eq!(end.as_deref(), Some("frame 20 failed"));
        }
        let (_, end) = run(0, 2, None, None);
        assert_eq!(end, None);
    }

    #[test]
    fn a_panicking_worker_is_a_failure_not_a_hang() {
        let r = std::panic::catch_unwind(|| run(10, 2, None, Some(3)));
        // The scope re-raises the worker's panic once the writer is done;
        // what matters is that the writer was not left waiting.
        assert!(r.is_err());
    }
}
