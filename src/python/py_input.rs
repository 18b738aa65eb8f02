//! Python values as the core's JSON-like [`Input`]: dicts, lists, strings, bytes, numbers and
//! SDK objects (pydantic models of the OpenAI / Anthropic clients, read by attribute), and the
//! strong references (`Keep`) that keep every borrowed string alive while the GIL is released.
//!
//! Strings are borrowed, never copied: each one is held as a `PyBackedStr` (a strong reference
//! to the immutable str plus its UTF-8) in `Keep`, so the borrowed `&str` stay valid while the
//! GIL is released and other threads mutate the caller's containers. Dicts are read with
//! interned keys; SDK objects by attribute, so no `model_dump()` of the whole history is made.

use std::borrow::Cow;

use pyo3::exceptions::{PyException, PyKeyError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::pybacked::{PyBackedBytes, PyBackedStr};
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyMapping, PyString, PyTuple,
    PyType,
};
use typed_arena::Arena;

use crate::wire::input::KEY_NAMES;
use crate::wire::{Input, Key, ReadError, Shape};

use super::json_out::json_text;
use super::sdk_objects;

/// Strong references to every Python string and bytes object a view borrows from.
pub struct Keep<'py> {
    /// The interned field names (set by the first `Walker`; kept here so a value is 2 words).
    pub(super) keys: std::cell::OnceCell<&'static [Py<PyString>]>,
    /// The field whose read raised a Python exception last (for the error's `field`).
    pub(super) failed: std::cell::Cell<Option<Cow<'static, str>>>,
    pub(super) strs: Arena<PyBackedStr>,
    pub(super) bytes: Arena<PyBackedBytes>,
    pub(super) _py: std::marker::PhantomData<Python<'py>>,
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
pub(super) fn message_error(
    py: Python<'_>,
    index: usize,
    failed: Option<Cow<'static, str>>,
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
            let err = invalid(py, index, failed.as_deref().unwrap_or(""), &reason);
            err.set_cause(py, Some(cause));
            err
        }
    }
}

pub(super) fn is_invalid_message(py: Python<'_>, e: &PyErr) -> bool {
    INVALID_MESSAGE
        .import(py, "contextfold.errors", "InvalidMessageError")
        .is_ok_and(|cls| e.value(py).is_instance(cls).unwrap_or(false))
}

/// A `TypeError` saying where (`tools[3]`, `system`) a request's extras are wrong, caused by
/// the original exception when reading raised one.
#[cold]
pub(super) fn extras_error(py: Python<'_>, at: &str, e: ReadError<PyErr>) -> PyErr {
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

pub(super) fn keys(py: Python<'_>) -> &'static [Py<PyString>] {
    KEYS.get_or_init(py, || {
        KEY_NAMES
            .iter()
            .map(|n| PyString::intern(py, n).unbind())
            .collect()
    })
}

/// Whether `v` is a mapping that is not a dict (`types.MappingProxyType`, any
/// `collections.abc.Mapping`): read by key as a dict is. The C slot check comes first so the
/// ABC check (an `isinstance` through Python) is never made for SDK objects, which have no
/// `__getitem__`; exact dicts never get here.
pub(super) fn is_other_mapping(v: &Bound<'_, PyAny>) -> bool {
    // SAFETY: `v` is a live object and the GIL is held; `PyMapping_Check` only reads its type.
    let subscriptable = unsafe { pyo3::ffi::PyMapping_Check(v.as_ptr()) } != 0;
    subscriptable && !v.is_instance_of::<PyDict>() && v.cast::<PyMapping>().is_ok()
}

/// `v[key]` of a mapping, `None` when the key is absent.
fn mapping_get<'py>(
    v: &Bound<'py, PyAny>,
    key: &Bound<'py, PyString>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    match v.get_item(key) {
        Ok(x) => Ok(Some(x)),
        Err(e) if e.is_instance_of::<PyKeyError>(v.py()) => Ok(None),
        Err(e) => Err(e),
    }
}

pub(super) fn type_name(v: &Bound<'_, PyAny>) -> String {
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

impl<'k, 'py> PyInput<'k, 'py> {
    /// The entries of a value that is not a dict: a mapping's items, a pydantic model's
    /// fields (what its dict form holds, by field name; a Gemini SDK `Tool` names its kinds
    /// as the dict does), `None` for anything else.
    #[cold]
    fn other_entries(&self) -> PyResult<Option<Vec<(String, Self)>>> {
        let py = self.v.py();
        let pairs: Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)> = if is_other_mapping(&self.v) {
            // A snapshot, as for a dict.
            let items = self.v.call_method0(intern!(py, "items"))?;
            items
                .try_iter()?
                .map(|kv| kv?.extract())
                .collect::<PyResult<_>>()?
        } else if let Some(fields) = self
            .v
            .get_type()
            .getattr_opt(intern!(py, "__pydantic_fields__"))?
            .filter(|f| f.is_instance_of::<PyDict>())
        {
            let mut out = Vec::new();
            for name in fields.cast::<PyDict>()?.keys() {
                if let Some(x) = self.v.getattr_opt(name.cast::<PyString>()?)? {
                    if !x.is_callable() {
                        out.push((name, x));
                    }
                }
            }
            out
        } else {
            return Ok(None);
        };
        let mut out = Vec::with_capacity(pairs.len());
        for (k, v) in pairs {
            if let Ok(k) = k.cast::<PyString>() {
                out.push((k.to_string_lossy().into_owned(), self.wrap(v)));
            }
        }
        Ok(Some(out))
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
        } else if is_other_mapping(v) {
            Shape::Map
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
        } else if is_other_mapping(&self.v) {
            mapping_get(&self.v, k)
        } else {
            // A method (pydantic's `json()`) is not a field: absent, never priced as text.
            self.v
                .getattr_opt(k)
                .map(|v| v.filter(|v| !v.is_callable()))
        }
        .inspect_err(|_| self.keep.failed.set(Some(Cow::Borrowed(key.as_str()))))?;
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
            return self.other_entries();
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

    #[cold]
    fn failed_at(&self, path: &dyn std::fmt::Display) {
        self.keep.failed.set(Some(Cow::Owned(path.to_string())));
    }

    fn json_len(&self) -> PyResult<usize> {
        sdk_objects::json_len(&self.v, self.keep.keys.get_or_init(|| keys(self.v.py())))
    }
}
