//! One thread kept for work beside the caller's, instead of a thread spawned per call.
//!
//! A digest scans its span's identifiers on a second thread while its own walks the span
//! (`digest::digest_reading`). A SWE compaction's digest takes about 2 ms, and a new thread
//! each time paid its creation, its stack's first pages and a fresh allocator heap whose pages
//! the caller then freed from afar; a thread that waits for the next job pays none of these.
//! `beside` lends it to one caller at a time: a second caller meanwhile (two compactions on two
//! Python threads) gets a scoped thread of its own, as before.
//!
//! A process forked from one that started the helper (`multiprocessing`'s default on Linux)
//! inherits its queue but not its thread: a job sent there would wait forever. The helper
//! is known by the process that started it, and a child starts its own.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender};
use std::sync::{Mutex, TryLockError};

/// A job for the helper: it runs the work and reports how it ended.
type Job = Box<dyn FnOnce() + Send + 'static>;

/// The helper's queue and the id of the process that started it, once started (None: not
/// yet, or the system refused the thread).
static HELPER: Mutex<Option<(u32, Sender<Job>)>> = Mutex::new(None);

/// Run `aside` on the helper thread while `here` runs on this one, and return `here`'s result
/// once both are done. Either's panic is resumed here, after both have ended. Where no thread
/// can be had, `aside` runs on this thread after `here`: work split so that either half may
/// take all of it (the scan's `Claims`) comes out the same.
pub fn beside<'a, R>(aside: impl FnOnce() + Send + 'a, here: impl FnOnce() -> R) -> R {
    let mut lent = match HELPER.try_lock() {
        Ok(guard) => guard,
        Err(TryLockError::Poisoned(p)) => p.into_inner(),
        // In use by another caller: a scoped thread of this call's own.
        Err(TryLockError::WouldBlock) => return scoped(aside, here),
    };
    let process = std::process::id();
    if lent
        .as_ref()
        .is_none_or(|(started_by, _)| *started_by != process)
    {
        // (A parent's queue is forgotten, not dropped: nothing of it runs here.)
        std::mem::forget(lent.take());
        *lent = start().map(|queue| (process, queue));
    }
    let Some((_, queue)) = lent.as_ref() else {
        let r = here();
        aside();
        return r;
    };
    let (done, ended) = sync_channel::<std::thread::Result<()>>(1);
    let job: Box<dyn FnOnce() + Send + 'a> = Box::new(move || {
        let _ = done.send(catch_unwind(AssertUnwindSafe(aside)));
    });
    // SAFETY: the job borrows the caller's data for 'a, and the helper may run it only while
    // those borrows live: this function does not return, nor unwind, before the job has ended
    // (`Wait` blocks for its report even when `here` panics), and the job's report is sent
    // after `aside` and everything it captured are gone. A job the helper never runs (its
    // queue closed) comes back in the send's error and is run or dropped here.
    let job: Job = unsafe { std::mem::transmute::<Box<dyn FnOnce() + Send + 'a>, Job>(job) };
    if let Err(unsent) = queue.send(job) {
        *lent = None;
        let r = here();
        (unsent.0)();
        return r;
    }
    let wait = Wait(Some(ended));
    let r = here();
    wait.finish();
    r
}

/// Blocks until the helper reports its job ended, also while unwinding.
struct Wait(Option<Receiver<std::thread::Result<()>>>);

impl Wait {
    fn finish(mut self) {
        if let Some(Ok(Err(panic))) = self.0.take().map(|r| r.recv()) {
            resume_unwind(panic);
        }
    }
}

impl Drop for Wait {
    fn drop(&mut self) {
        if let Some(r) = self.0.take() {
            // (An error: the job was dropped unrun; nothing of it runs after this.)
            let _ = r.recv();
        }
    }
}

/// The helper thread, started: its queue, or None where the system refuses a thread.
fn start() -> Option<Sender<Job>> {
    let (queue, jobs) = channel::<Job>();
    std::thread::Builder::new()
        .name("contextfold-helper".into())
        .spawn(move || {
            for job in jobs {
                job();
            }
        })
        .ok()?;
    Some(queue)
}

/// `beside` on a thread spawned for the call (`aside` after `here` on this one where refused).
fn scoped<'a, R>(aside: impl FnOnce() + Send + 'a, here: impl FnOnce() -> R) -> R {
    // (Shared by the thread and this one: whichever runs it takes it.)
    let aside = Mutex::new(Some(aside));
    let run = || {
        let taken = aside.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(a) = taken {
            a();
        }
    };
    std::thread::scope(|s| {
        let spawned = std::thread::Builder::new().spawn_scoped(s, run);
        let r = here();
        match spawned {
            Ok(handle) => {
                if let Err(panic) = handle.join() {
                    resume_unwind(panic);
                }
            }
            Err(_) => run(),
        }
        r
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn both_halves_run_and_borrow_the_callers_data() {
        for _ in 0..100 {
            let data: Vec<usize> = (0..1000).collect();
            let sum = AtomicUsize::new(0);
            let here = beside(
                || {
                    sum.fetch_add(data[..500].iter().sum::<usize>(), Ordering::Relaxed);
                },
                || data[500..].iter().sum::<usize>(),
            );
            assert_eq!(
                here + sum.load(Ordering::Relaxed),
                data.iter().sum::<usize>()
            );
        }
    }

    #[test]
    fn a_panic_aside_is_resumed_here_and_the_helper_serves_again() {
        let caught = catch_unwind(|| beside(|| panic!("aside"), || 1));
        assert!(caught.is_err());
        assert_eq!(beside(|| (), || 2), 2);
    }

    #[test]
    fn callers_at_once_each_get_a_thread() {
        let total = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..50 {
                        beside(
                            || {
                                total.fetch_add(1, Ordering::Relaxed);
                            },
                            || total.fetch_add(1, Ordering::Relaxed),
                        );
                    }
                });
            }
        });
        assert_eq!(total.load(Ordering::Relaxed), 400);
    }
}
