//! A history's messages read once per compaction. One `Compactor.compact` call hands the core
//! the same Python objects again and again: the first plan reads the whole history, the tail
//! fill's plan reads it again with one message changed, the digest reads the fold, and each
//! check reads the result (its head and tail the history's own objects). On the 10k synthetic
//! history the reads after the first took ~22 ms of the ~136 ms its core calls took
//! (`benches/ab_read_cache.py`, 0.86x with the cache). A `MessageCache` keeps each
//! object's reading by the object's identity for the length of one compaction: the Compactor
//! never changes a message object in place (an edit copies what it changes,
//! `prune::CopyOnWrite`), so an object seen once reads the same again.

use std::borrow::Cow;
use std::sync::Mutex;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use rustc_hash::FxHashMap;

use super::messages::{Keep, Walker, CHUNK};
use crate::estimate::Estimator;
use crate::identifier_index::Ident;
use crate::message::Message;

/// What one cache has read.
struct Reads {
    /// Each read object's place in `messages`, by the object's address.
    at: FxHashMap<usize, usize>,
    /// The readings. They borrow the texts `keep` holds: declared before it, so dropped first.
    messages: Vec<Message<'static>>,
    /// The objects read, held so that no address in `at` can be reused by a new object.
    objects: Vec<Py<PyAny>>,
    keep: Box<Keep<'static>>,
    /// The identifier index of the last fold digested (`crate::digest::digest_indexed`).
    ranked: Option<RankedIndex>,
}

/// A fold's identifier index as its digest ranked it, kept for the digests of the same fold
/// at other rooms (a compaction whose digest came out over its share writes it again smaller):
/// the index depends on the fold's messages and the previous summary alone, and its scan was
/// about a third of each digest.
struct RankedIndex {
    /// The fold's message objects, by address (the cache holds every object it read, so no
    /// address here is another object's while it lives).
    fold: Vec<usize>,
    previous: Option<String>,
    ranked: Vec<Ident>,
}

// SAFETY: `Reads` is only reached through the cache's mutex, with the GIL held whenever a
// Python object is touched (`read_all` takes `Python`). What keeps it from being `Send` is
// `Keep`'s `PhantomData<Python>` marker and its `Cell`s: the Python references it holds
// (`PyBackedStr`, `PyBackedBytes`, `Py`) are themselves `Send`, and the cells are only used
// inside a read, under the lock.
unsafe impl Send for Reads {}

impl Reads {
    /// The messages of `seq`, each object read at most once over the cache's life (a new one is
    /// read into the cache; errors name the message's index in `seq`), and with `est`, each
    /// one's estimated tokens, priced as [`Walker::messages_priced`] prices them: a chunk at a
    /// time, right after the chunk is read (see there why). A sequence the cache has not seen
    /// any of (the first read of a compaction) comes back as the cache's own readings, uncopied.
    fn read_all<'s>(
        &'s mut self,
        py: Python<'_>,
        seq: &Bound<'_, PyAny>,
        mut est: Option<&mut Estimator>,
    ) -> PyResult<(Cow<'s, [Message<'s>]>, Vec<u32>)> {
        let items = Walker::snapshot(seq)?;
        self.at.reserve(items.len());
        let start = self.messages.len();
        // Empty while every item so far was new and read in order (`messages[start..]`).
        let mut copied: Vec<Message<'static>> = Vec::new();
        let mut whole = true;
        let mut costs = Vec::new();
        let keep: &Keep<'static> = &self.keep;
        let mut walker = Walker::new(py, keep);
        for (i, m) in items.iter().enumerate() {
            let address = m.as_ptr() as usize;
            if let Some(&j) = self.at.get(&address) {
                if whole {
                    whole = false;
                    copied.reserve(items.len());
                    copied.extend(self.messages[start..].iter().cloned());
                }
                copied.push(self.messages[j].clone());
            } else {
                walker.set_index(i);
                let read = walker.message(m)?;
                // SAFETY: the reading borrows only texts `keep` holds (its arenas never move
                // or free an entry while `keep` lives) or owns what it copied; `keep` is boxed,
                // never replaced, and dropped after `messages` (field order). Every reading
                // handed out is bound to a borrow of `self`.
                let read = unsafe { std::mem::transmute::<Message<'_>, Message<'static>>(read) };
                self.at.insert(address, self.messages.len());
                if !whole {
                    copied.push(read.clone());
                }
                self.messages.push(read);
                self.objects.push(m.clone().unbind());
            }
            if let Some(est) = est.as_deref_mut() {
                let done = if whole {
                    &self.messages[start..]
                } else {
                    &copied[..]
                };
                if done.len() - costs.len() == CHUNK {
                    costs.extend(Walker::priced(&done[costs.len()..], est));
                }
            }
        }
        let mut done: Cow<'s, [Message<'s>]> = if whole {
            Cow::Borrowed(&self.messages[start..])
        } else {
            Cow::Owned(copied)
        };
        if let Some(est) = est.as_deref_mut() {
            costs.extend(Walker::priced(&done[costs.len()..], est));
        }
        // A call sent by reference is bound to its output over the whole history
        // (`wire::item_reference`): a copy, only when the history holds one.
        if crate::wire::item_reference::any(&done) {
            let bound = crate::wire::item_reference::bind(done.to_mut());
            if let (Some(est), false) = (est, bound.is_empty()) {
                costs = Walker::repriced(&done, costs, &bound, est);
            }
        }
        Ok((done, costs))
    }
}

/// Messages read once per compaction, by object identity (see the module doc). Pass one to
/// `compaction_plan`, `compaction_verify` and `extractive_digest` through one compaction, and
/// drop it after: an object changed in place after it was read would read as it was.
#[pyclass(module = "contextfold._core", frozen)]
pub struct MessageCache {
    reads: Mutex<Reads>,
}

#[pymethods]
impl MessageCache {
    #[new]
    fn new() -> Self {
        MessageCache {
            reads: Mutex::new(Reads {
                at: FxHashMap::default(),
                messages: Vec::new(),
                objects: Vec::new(),
                keep: Box::new(Keep::new()),
                ranked: None,
            }),
        }
    }

    /// How many distinct message objects the cache has read.
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.lock(py)?.0.messages.len())
    }

    /// A copy or a pickle is a new, empty cache: what it holds is readings of this process's
    /// objects (a summarizer that copies or ships its `SummaryRequest` still can).
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> (Bound<'py, pyo3::types::PyType>, ()) {
        (slf.get_type(), ())
    }
}

/// A locked cache: the messages it reads live as long as the lock.
pub struct Locked<'c>(std::sync::MutexGuard<'c, Reads>);

/// The message objects of a history given as a list, by address (None for any other sequence:
/// an iterator read here would be spent).
pub fn fold_of(seq: &Bound<'_, PyAny>) -> Option<Vec<usize>> {
    let list = seq.cast::<pyo3::types::PyList>().ok()?;
    Some(list.iter().map(|m| m.as_ptr() as usize).collect())
}

impl MessageCache {
    /// The index a digest of `fold` (`fold_of`) with `previous` ranked in this cache's
    /// compaction, if it is the last fold digested.
    pub fn ranked_of(
        &self,
        py: Python<'_>,
        fold: &[usize],
        previous: Option<&str>,
    ) -> PyResult<Option<Vec<Ident>>> {
        let locked = self.lock(py)?;
        Ok(locked
            .0
            .ranked
            .as_ref()
            .filter(|r| r.fold == fold && r.previous.as_deref() == previous)
            .map(|r| r.ranked.clone()))
    }

    /// Keep `ranked`, the index of `fold` with `previous`, for the digests of it that follow.
    pub fn keep_ranked(
        &self,
        py: Python<'_>,
        fold: Vec<usize>,
        previous: Option<&str>,
        ranked: Vec<Ident>,
    ) -> PyResult<()> {
        self.lock(py)?.0.ranked = Some(RankedIndex {
            fold,
            previous: previous.map(str::to_string),
            ranked,
        });
        Ok(())
    }
}

impl MessageCache {
    /// The cache, locked (waiting without the GIL; a poisoned lock is a RuntimeError).
    pub fn lock<'c>(&'c self, py: Python<'_>) -> PyResult<Locked<'c>> {
        self.reads
            .lock_py_attached(py)
            .map(Locked)
            .map_err(|_| PyRuntimeError::new_err("message cache lock poisoned"))
    }
}

impl Locked<'_> {
    /// The messages of `seq` (any sequence but a str or a dict), read through the cache.
    pub fn messages<'s>(
        &'s mut self,
        py: Python<'_>,
        seq: &Bound<'_, PyAny>,
    ) -> PyResult<Cow<'s, [Message<'s>]>> {
        Ok(self.0.read_all(py, seq, None)?.0)
    }

    /// The messages of `seq` read through the cache, and their estimated tokens as
    /// [`Walker::messages_priced`] gives them.
    pub fn messages_priced<'s>(
        &'s mut self,
        py: Python<'_>,
        seq: &Bound<'_, PyAny>,
        est: &mut Estimator,
    ) -> PyResult<(Cow<'s, [Message<'s>]>, Vec<u32>)> {
        self.0.read_all(py, seq, Some(est))
    }
}

/// The messages of `seq`: through `cache` (locked) when there is one, else read afresh into
/// `keep`. What each core entry point that takes a `cache` reads its history with.
pub fn read_messages<'s, 'py>(
    py: Python<'py>,
    seq: &Bound<'py, PyAny>,
    cache: Option<&'s mut Locked<'_>>,
    keep: &'s Keep<'py>,
) -> PyResult<Cow<'s, [Message<'s>]>> {
    match cache {
        Some(l) => l.messages(py, seq),
        None => Ok(Cow::Owned(Walker::new(py, keep).messages(seq)?)),
    }
}

/// `f` over the messages of `seq`, read through `cache` (locked for the call) when there is one,
/// else afresh: the prologue of every core entry point that takes a `cache`.
pub fn with_messages<'py, R>(
    py: Python<'py>,
    seq: &Bound<'py, PyAny>,
    cache: Option<&MessageCache>,
    f: impl for<'s> FnOnce(&'s [Message<'s>]) -> PyResult<R>,
) -> PyResult<R> {
    let keep = Keep::new();
    let mut locked = cache.map(|c| c.lock(py)).transpose()?;
    let ms = read_messages(py, seq, locked.as_mut(), &keep)?;
    f(&ms)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<MessageCache>()
}
