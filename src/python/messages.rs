//! Python values as the core's JSON-like [`Input`], and the entry points other bindings use to
//! read a history: `Keep::new()`, `Walker::new(py, &keep)`, `.messages(obj)`,
//! `.extras(tools, system)` (and `.message(obj)` with `.set_index(i)` for one message).
//!
//! The formats are understood by the core (`crate::wire`); this file only reads Python values.
//! Strings are borrowed, never copied: each one is held as a `PyBackedStr` (a strong reference
//! to the immutable str plus its UTF-8) in `Keep`, so the borrowed `&str` stay valid while the
//! GIL is released and other threads mutate the caller's containers. Dicts are read with
//! interned keys; SDK objects (pydantic models of the OpenAI / Anthropic clients) by attribute,
//! so no `model_dump()` of the whole history is ever made.

use std::borrow::Cow;

use pyo3::exceptions::{PyException, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::{PyBackedBytes, PyBackedStr};
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType,
};
use typed_arena::Arena;

use crate::estimate::{Estimator, RequestExtras};
use crate::message::Message;
use crate::wire::input::KEY_NAMES;
use crate::wire::{read_extras, read_message, ExtrasError, Input, Key, ReadError, Shape};

use super::json_out::json_text;
use super::{langchain_message, sdk_objects};

/// Strong references to every Python string and bytes object a view borrows from.
pub struct Keep<'py> {
    /// The interned field names (set by the first `Walker`; kept here so a value is 2 words).
    keys: std::cell::OnceCell<&'static [Py<PyString>]>,
    /// The field whose read raised a Python exception last (for the error's `field`).
    failed: std::cell::Cell<Option<&'static str>>,
    strs: Arena<PyBackedStr>,
    bytes: Arena<PyBackedBytes>,
    _py: std::marker::PhantomData<Python<'py>>,
}

impl Default for Keep<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'py> Keep<'py> {
    pub fn new() -> Self {
        Keep {
            keys: std::cell::OnceCell::new(),
            failed: std::cell::Cell::new(None),
            strs: Arena::with_capacity(64),
            bytes: Arena::new(),
            _py: std::marker::PhantomData,
        }
    }

    /// The text of a str, valid as long as `self` (lossy copy for lone surrogates).
    #[inline]
    pub(super) fn str<'k>(&'k self, s: &Bound<'py, PyString>) -> Cow<'k, str> {
        match PyBackedStr::try_from(s.clone()) {
            Ok(b) => {
                let text: &str = self.strs.alloc(b);
                crate::text_stats::prefetch_sample(text.as_bytes());
                Cow::Borrowed(text)
            }
            // Lone surrogates have no UTF-8 form: price a lossy copy instead of failing.
            Err(_) => Cow::Owned(s.to_string_lossy().into_owned()),
        }
    }

    /// The bytes of a bytes object (borrowed) or of a bytearray (a private copy, since it may
    /// change while the GIL is released).
    fn bytes<'k>(&'k self, b: &Bound<'py, PyAny>) -> Option<&'k [u8]> {
        let backed = if let Ok(bytes) = b.cast::<PyBytes>() {
            PyBackedBytes::from(bytes.clone())
        } else if let Ok(ba) = b.cast::<PyByteArray>() {
            PyBackedBytes::from(ba.clone())
        } else {
            return None;
        };
        Some(&**self.bytes.alloc(backed))
    }
}

static INVALID_MESSAGE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// `contextfold.InvalidMessageError(reason, index, field)`.
#[cold]
pub fn invalid(py: Python<'_>, index: usize, field: &str, reason: &str) -> PyErr {
    match INVALID_MESSAGE.import(py, "contextfold.errors", "InvalidMessageError") {
        Ok(cls) => match cls.call1((reason, index, field)) {
            Ok(exc) => PyErr::from_value(exc),
            Err(e) => e,
        },
        Err(e) => e,
    }
}

/// The Python error of a read error in message `index`. An exception raised while reading (an
/// SDK property that fails, a value that contains itself) becomes an `InvalidMessageError`
/// naming the message and, where known, the field whose read raised it, with the original as
/// its `__cause__`; what is not an `Exception` (KeyboardInterrupt, SystemExit) passes through.
#[cold]
fn message_error(
    py: Python<'_>,
    index: usize,
    failed: Option<&'static str>,
    e: ReadError<PyErr>,
) -> PyErr {
    match e {
        ReadError::Invalid { field, reason } => invalid(py, index, &field, &reason),
        ReadError::Source(cause) => {
            if !cause.is_instance_of::<PyException>(py) || is_invalid_message(py, &cause) {
                return cause;
            }
            let reason = format!(
                "could not be read: {}: {}",
                cause
                    .get_type(py)
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default(),
                cause.value(py)
            );
            let err = invalid(py, index, failed.unwrap_or(""), &reason);
            err.set_cause(py, Some(cause));
            err
        }
    }
}

fn is_invalid_message(py: Python<'_>, e: &PyErr) -> bool {
    INVALID_MESSAGE
        .import(py, "contextfold.errors", "InvalidMessageError")
        .is_ok_and(|cls| e.value(py).is_instance(cls).unwrap_or(false))
}

/// A `TypeError` saying where (`tools[3]`, `system`) a request's extras are wrong, caused by
/// the original exception when reading raised one.
#[cold]
fn extras_error(py: Python<'_>, at: &str, e: ReadError<PyErr>) -> PyErr {
    match e {
        ReadError::Invalid { field, reason } if field.is_empty() || field == at => {
            PyTypeError::new_err(format!("{at}: {reason}"))
        }
        ReadError::Invalid { field, reason } => PyTypeError::new_err(format!("{field}: {reason}")),
        ReadError::Source(cause) => {
            // A bad value (a schema that contains itself, nesting past the bound) stays a
            // ValueError; anything else that raised while reading is reported as a TypeError.
            let text = format!("{at}: could not be read: {cause}");
            let err = if cause.is_instance_of::<PyValueError>(py) {
                PyValueError::new_err(text)
            } else {
                PyTypeError::new_err(text)
            };
            err.set_cause(py, Some(cause));
            err
        }
    }
}

/// The interned field names, by [`Key::index`].
static KEYS: PyOnceLock<Vec<Py<PyString>>> = PyOnceLock::new();

fn keys(py: Python<'_>) -> &'static [Py<PyString>] {
    KEYS.get_or_init(py, || {
        KEY_NAMES
            .iter()
            .map(|n| PyString::intern(py, n).unbind())
            .collect()
    })
}

fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".to_string())
}

/// A Python value read as JSON: dicts by key, SDK objects by attribute.
#[derive(Clone)]
pub struct PyInput<'k, 'py> {
    v: Bound<'py, PyAny>,
    keep: &'k Keep<'py>,
}

impl<'k, 'py> PyInput<'k, 'py> {
    pub(super) fn new(v: Bound<'py, PyAny>, keep: &'k Keep<'py>) -> Self {
        PyInput { v, keep }
    }

    /// The Python value itself.
    pub(super) fn value(&self) -> &Bound<'py, PyAny> {
        &self.v
    }

    #[inline]
    fn wrap(&self, v: Bound<'py, PyAny>) -> Self {
        PyInput { v, keep: self.keep }
    }

    #[inline]
    fn key(&self, key: Key) -> &Bound<'py, PyString> {
        let py = self.v.py();
        let keys = *self.keep.keys.get_or_init(|| keys(py));
        keys[key.index()].bind(py)
    }

    /// One pass over an exact dict's items with borrowed references, keys matched by identity
    /// with the interned names (dict literals and `json.loads` keys of these names are usually
    /// the same objects), by text otherwise. Reads CPython's dict internals without holding
    /// references, so it only exists where the GIL serializes access to the dict.
    #[cfg(not(Py_GIL_DISABLED))]
    fn exact_dict_fields<const N: usize>(&self, keys: &[Key; N]) -> [Option<Self>; N] {
        use pyo3::ffi;
        let py = self.v.py();
        let mut out = [const { None }; N];
        let names = *self.keep.keys.get_or_init(|| self::keys(py));
        let ptrs: [*mut ffi::PyObject; N] =
            std::array::from_fn(|i| names[keys[i].index()].as_ptr());
        let mut pos: ffi::Py_ssize_t = 0;
        let mut k: *mut ffi::PyObject = std::ptr::null_mut();
        let mut v: *mut ffi::PyObject = std::ptr::null_mut();
        // SAFETY: `self.v` is an exact dict and the GIL is held for the whole pass; no Python
        // code runs inside it (only pointer compares and reads of str objects' cached UTF-8),
        // so the dict cannot change and the borrowed `k` / `v` stay valid until used.
        while unsafe { ffi::PyDict_Next(self.v.as_ptr(), &mut pos, &mut k, &mut v) } != 0 {
            // SAFETY: `v` is a live borrowed reference from the dict (see above).
            if v == unsafe { ffi::Py_None() } {
                continue;
            }
            let slot = match ptrs.iter().position(|&p| p == k) {
                Some(i) => i,
                None => {
                    // SAFETY: `k` is a live borrowed reference held by the dict.
                    let key = unsafe { Borrowed::from_ptr(py, k) };
                    let Ok(key) = key.cast::<PyString>() else {
                        continue;
                    };
                    let Ok(text) = key.to_str() else {
                        continue;
                    };
                    match keys.iter().position(|k| k.as_str() == text) {
                        Some(i) => i,
                        None => continue,
                    }
                }
            };
            // SAFETY: `v` is a live borrowed reference from the dict; this increfs it.
            out[slot] = Some(self.wrap(unsafe { Bound::from_borrowed_ptr(py, v) }));
        }
        out
    }
}

impl<'k, 'py> Input<'k> for PyInput<'k, 'py> {
    type Error = PyErr;

    #[inline]
    fn shape(&self) -> Shape {
        let v = &self.v;
        if v.is_instance_of::<PyString>() {
            Shape::Str
        } else if v.is_none() {
            Shape::Null
        } else if v.is_instance_of::<PyDict>() {
            Shape::Map
        } else if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
            Shape::List
        } else if v.is_instance_of::<PyBool>() {
            Shape::Bool
        } else if v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>() {
            Shape::Number
        } else if v.is_instance_of::<PyBytes>() || v.is_instance_of::<PyByteArray>() {
            Shape::Bytes
        } else {
            Shape::Object
        }
    }

    fn type_name(&self) -> String {
        type_name(&self.v)
    }

    #[inline]
    fn get(&self, key: Key) -> PyResult<Option<Self>> {
        let k = self.key(key);
        let v = if let Ok(d) = self.v.cast::<PyDict>() {
            d.get_item(k)
        } else {
            // A method (pydantic's `json()`) is not a field: absent, never priced as text.
            self.v
                .getattr_opt(k)
                .map(|v| v.filter(|v| !v.is_callable()))
        }
        .inspect_err(|_| self.keep.failed.set(Some(key.as_str())))?;
        Ok(v.filter(|v| !v.is_none()).map(|v| self.wrap(v)))
    }

    fn get_many<const N: usize>(&self, keys: &[Key; N]) -> PyResult<[Option<Self>; N]> {
        #[cfg(not(Py_GIL_DISABLED))]
        if self.v.is_exact_instance_of::<PyDict>() {
            return Ok(self.exact_dict_fields(keys));
        }
        let mut out = [const { None }; N];
        for (slot, &k) in out.iter_mut().zip(keys) {
            *slot = self.get(k)?;
        }
        Ok(out)
    }

    #[inline]
    fn str(&self) -> PyResult<Option<Cow<'k, str>>> {
        Ok(self.v.cast::<PyString>().ok().map(|s| self.keep.str(s)))
    }

    #[inline]
    fn bytes(&self) -> PyResult<Option<&'k [u8]>> {
        Ok(self.keep.bytes(&self.v))
    }

    fn items(&self) -> PyResult<Option<Vec<Self>>> {
        // A snapshot: the reads that follow may run Python code that changes the list.
        if let Ok(l) = self.v.cast::<PyList>() {
            return Ok(Some(l.iter().map(|v| self.wrap(v)).collect()));
        }
        if let Ok(t) = self.v.cast::<PyTuple>() {
            return Ok(Some(t.iter().map(|v| self.wrap(v)).collect()));
        }
        Ok(None)
    }

    fn entries(&self) -> PyResult<Option<Vec<(String, Self)>>> {
        let Ok(d) = self.v.cast::<PyDict>() else {
            return Ok(None);
        };
        // `items()` is a new list: a snapshot, whatever later reads do to the dict.
        let mut out = Vec::with_capacity(d.len());
        for item in d.items().iter() {
            let (k, v): (Bound<'py, PyAny>, Bound<'py, PyAny>) = item.extract()?;
            if let Ok(k) = k.cast::<PyString>() {
                out.push((k.to_string_lossy().into_owned(), self.wrap(v)));
            }
        }
        Ok(Some(out))
    }

    fn json_text(&self) -> PyResult<String> {
        json_text(&self.v)
    }

    fn json_len(&self) -> PyResult<usize> {
        sdk_objects::json_len(&self.v, self.keep.keys.get_or_init(|| keys(self.v.py())))
    }
}

/// Messages read before they are priced: their samples (a few cache lines each) stay well
/// inside L1/L2 between the read and the pricing.
const CHUNK: usize = 32;

/// Reads one history, knowing which message it is in for error messages.
pub struct Walker<'k, 'py> {
    py: Python<'py>,
    keep: &'k Keep<'py>,
    index: usize,
}

impl<'k, 'py> Walker<'k, 'py> {
    pub fn new(py: Python<'py>, keep: &'k Keep<'py>) -> Self {
        keep.keys.get_or_init(|| keys(py));
        Walker { py, keep, index: 0 }
    }

    pub(super) fn input(&self, v: &Bound<'py, PyAny>) -> PyInput<'k, 'py> {
        PyInput::new(v.clone(), self.keep)
    }

    /// Set the message index that errors report (for callers that read messages one by one).
    pub fn set_index(&mut self, index: usize) {
        self.index = index;
    }

    /// Read a whole history (any sequence but a str or a dict).
    pub fn messages(&mut self, seq: &Bound<'py, PyAny>) -> PyResult<Vec<Message<'k>>> {
        let items = Self::snapshot(seq)?;
        let mut out = Vec::with_capacity(items.len());
        for (i, m) in items.into_iter().enumerate() {
            self.index = i;
            out.push(self.read(m)?);
        }
        Ok(out)
    }

    /// Read a history a chunk of messages at a time, handing each chunk's views to `f`, then
    /// dropping them (and their string references).
    ///
    /// For walks that price as they read (`estimate`): each text's sample is read while the
    /// cache lines the reader just touched (and prefetched) are still in the CPU's cache, where
    /// reading the whole history first and pricing it after loaded every sample from memory a
    /// second time (`estimate` of the 10k synthetic history, this way and the prefetch together:
    /// 0.75-0.98x the time of the read-then-price build).
    pub fn chunks(
        py: Python<'py>,
        seq: &Bound<'py, PyAny>,
        mut f: impl FnMut(&[Message<'_>]),
    ) -> PyResult<()> {
        let items = Self::snapshot(seq)?;
        for (c, chunk) in items.chunks(CHUNK).enumerate() {
            let keep = Keep::new();
            let mut w = Walker::new(py, &keep);
            let mut ms = Vec::with_capacity(chunk.len());
            for (j, m) in chunk.iter().enumerate() {
                w.index = c * CHUNK + j;
                ms.push(w.read(m.clone())?);
            }
            f(&ms);
        }
        Ok(())
    }

    /// Read a whole history as [`Walker::messages`] does, and the estimated tokens of each
    /// message (`est.each`), priced a chunk at a time right after the chunk is read, while its
    /// samples are still in the CPU's cache (see [`Walker::chunks`]). `est` settles its
    /// serving platform on each chunk before pricing it (`Estimator::settle_platform`).
    pub fn messages_priced(
        &mut self,
        seq: &Bound<'py, PyAny>,
        est: &mut Estimator,
    ) -> PyResult<(Vec<Message<'k>>, Vec<u32>)> {
        let items = Self::snapshot(seq)?;
        let mut out = Vec::with_capacity(items.len());
        let mut costs = Vec::with_capacity(items.len());
        for (i, m) in items.into_iter().enumerate() {
            self.index = i;
            out.push(self.read(m)?);
            if out.len() - costs.len() == CHUNK {
                let chunk = &out[costs.len()..];
                est.settle_platform(chunk);
                costs.extend(est.each(chunk));
            }
        }
        let chunk = &out[costs.len()..];
        est.settle_platform(chunk);
        costs.extend(est.each(chunk));
        Ok((out, costs))
    }

    /// The items of a history (any sequence but a str or a dict), as a snapshot: reading one
    /// message may run Python code (a property, a `model_dump`) that changes the list.
    pub(super) fn snapshot(seq: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        if seq.is_instance_of::<PyString>() || seq.is_instance_of::<PyDict>() {
            return Err(PyTypeError::new_err(format!(
                "messages must be a list of messages, got {}",
                type_name(seq)
            )));
        }
        if let Ok(list) = seq.cast::<PyList>() {
            Ok(list.iter().collect())
        } else {
            seq.try_iter()?.collect()
        }
    }

    /// Read one message (any supported format).
    pub fn message(&self, m: &Bound<'py, PyAny>) -> PyResult<Message<'k>> {
        self.read(m.clone())
    }

    fn read(&self, m: Bound<'py, PyAny>) -> PyResult<Message<'k>> {
        self.keep.failed.set(None);
        if langchain_message::is_message(&m) {
            return langchain_message::read(&m, self.keep)
                .map_err(|e| message_error(self.py, self.index, self.keep.failed.take(), e));
        }
        read_message(&PyInput::new(m, self.keep))
            .map_err(|e| message_error(self.py, self.index, self.keep.failed.take(), e))
    }

    /// Extras of a request: optional tools, system and structured-output schema.
    pub fn extras(
        &self,
        tools: Option<&Bound<'py, PyAny>>,
        system: Option<&Bound<'py, PyAny>>,
        response_format: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<RequestExtras<'k>> {
        let tools = tools.map(|t| self.input(t));
        let system = system.map(|s| self.input(s));
        // A pydantic model class (what OpenAI's `parse` takes) stands for its JSON schema; an
        // SDK object (OpenAI's `ResponseFormatJSONSchema`) for its wire dict, aliases included
        // (its `schema_` field travels as `schema`).
        let converted;
        let response_format = match response_format {
            Some(r) if r.is_instance_of::<PyType>() && r.hasattr("model_json_schema")? => {
                converted = r.call_method0("model_json_schema")?;
                Some(&converted)
            }
            Some(r) if !r.is_instance_of::<PyDict>() && r.hasattr("model_dump")? => {
                let kw = PyDict::new(self.py);
                kw.set_item("mode", "json")?;
                kw.set_item("by_alias", true)?;
                kw.set_item("exclude_none", true)?;
                converted = r.call_method("model_dump", (), Some(&kw))?;
                Some(&converted)
            }
            r => r,
        }
        .map(|r| self.input(r));
        read_extras(tools.as_ref(), system.as_ref(), response_format.as_ref()).map_err(
            |e| match e {
                ExtrasError::Tools(Some(j), e) => extras_error(self.py, &format!("tools[{j}]"), e),
                ExtrasError::Tools(None, e) => extras_error(self.py, "tools", e),
                ExtrasError::System(e) => extras_error(self.py, "system", e),
                ExtrasError::ResponseFormat(e) => extras_error(self.py, "response_format", e),
            },
        )
    }
}
