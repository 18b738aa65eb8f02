//! Compact JSON of arbitrary Python values: the text of an Anthropic `tool_use.input` or a tool
//! definition (priced by the estimator), and the exact byte length of a request (`wire_bytes`).
//!
//! Hostile values: a dict is read through a snapshot of its items (`dict.items()` copied into a
//! list), so a key's `__str__` or a value's `model_dump` that changes the dict being read cannot
//! make the iteration fail (PyO3's dict iterator panics on a size change: a `PanicException`,
//! which `except Exception` does not catch). A container met again inside itself is a cycle: a
//! `ValueError` naming its path (`$.a.b[2]`), as is nesting deeper than [`MAX_DEPTH`].

use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple,
};

use crate::json_string::{json_string_len, push_json_string};

/// Deeper than any real message; values nested deeper are refused with a path.
pub const MAX_DEPTH: usize = 512;

/// Where serialized JSON goes: into a string, or only into a byte count.
trait Sink {
    fn raw(&mut self, s: &str);
    fn string(&mut self, s: &str);
}

impl Sink for String {
    fn raw(&mut self, s: &str) {
        self.push_str(s);
    }
    fn string(&mut self, s: &str) {
        push_json_string(self, s);
    }
}

struct Counter(usize);

impl Sink for Counter {
    fn raw(&mut self, s: &str) {
        self.0 += s.len();
    }
    fn string(&mut self, s: &str) {
        self.0 += json_string_len(s);
    }
}

fn write_str<S: Sink>(s: &Bound<'_, PyString>, out: &mut S) {
    match s.to_str() {
        Ok(v) => out.string(v),
        Err(_) => out.string(&s.to_string_lossy()),
    }
}

/// One step of the path to a value, kept only to name where a failure happened.
enum Seg {
    Key(String),
    Index(usize),
    Dump,
}

/// Why a value cannot be serialized: a Python exception (raised by a callback, kept as is) or a
/// shape we refuse (cycle, depth), with the path from the root, innermost step last.
enum Fail {
    Py(PyErr),
    Shape {
        reason: &'static str,
        path: Vec<Seg>,
    },
}

impl From<PyErr> for Fail {
    fn from(e: PyErr) -> Self {
        Fail::Py(e)
    }
}

impl Fail {
    /// Prepend the step that led into the failing value (called while unwinding).
    fn at(mut self, seg: impl FnOnce() -> Seg) -> Self {
        if let Fail::Shape { path, .. } = &mut self {
            path.push(seg());
        }
        self
    }

    /// The dotted path from the root (`a.b[2]`, empty for the root itself). A path past 12
    /// steps (nesting past the depth bound is 512) keeps its outer 6 and inner 3 around the
    /// count of those left out: an error of 1,000 characters of `.a.a.a` said no more.
    fn path_text(path: &[Seg]) -> String {
        const OUTER: usize = 6;
        const INNER: usize = 3;
        let mut p = String::new();
        let n = path.len();
        for (k, s) in path.iter().rev().enumerate() {
            if n > 12 && (OUTER..n - INNER).contains(&k) {
                if k == OUTER {
                    p.push_str(&format!(".…({} more)…", n - OUTER - INNER));
                }
                continue;
            }
            match s {
                Seg::Key(k) => {
                    if !p.is_empty() {
                        p.push('.');
                    }
                    p.push_str(k);
                }
                Seg::Index(i) => p.push_str(&format!("[{i}]")),
                Seg::Dump => p.push_str(".model_dump()"),
            }
        }
        p
    }

    #[cold]
    fn into_py(self) -> PyErr {
        match self {
            Fail::Py(e) => e,
            Fail::Shape { reason, path } => {
                let p = Fail::path_text(&path);
                let dot = if p.is_empty() || p.starts_with('[') {
                    ""
                } else {
                    "."
                };
                PyValueError::new_err(format!("{reason} at ${dot}{p}: cannot serialize"))
            }
        }
    }
}

fn key_text(k: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(match k.cast::<PyString>() {
        Ok(s) => s.to_string_lossy().into_owned(),
        Err(_) => k.str()?.to_string_lossy().into_owned(),
    })
}

/// Containers on the path from the root to the value being written (cycle detection).
struct Walk<'o, S> {
    out: &'o mut S,
    open: Vec<usize>,
}

impl<S: Sink> Walk<'_, S> {
    fn enter(&mut self, v: &Bound<'_, PyAny>) -> Result<(), Fail> {
        let id = v.as_ptr() as usize;
        if self.open.contains(&id) {
            return Err(Fail::Shape {
                reason: "a container that contains itself (cycle)",
                path: Vec::new(),
            });
        }
        if self.open.len() >= MAX_DEPTH {
            return Err(Fail::Shape {
                reason: "value nested deeper than 512 levels",
                path: Vec::new(),
            });
        }
        self.open.push(id);
        Ok(())
    }

    fn write(&mut self, v: &Bound<'_, PyAny>) -> Result<(), Fail> {
        if let Ok(s) = v.cast::<PyString>() {
            write_str(s, self.out);
        } else if v.is_none() {
            self.out.raw("null");
        } else if let Ok(b) = v.cast::<PyBool>() {
            self.out.raw(if b.is_true() { "true" } else { "false" });
        } else if v.is_instance_of::<PyInt>() {
            self.out.raw(&v.str()?.to_cow()?);
        } else if let Ok(f) = v.cast::<PyFloat>() {
            let x = f.value();
            // Python's json writes repr() and NaN / Infinity / -Infinity for the specials.
            if x.is_nan() {
                self.out.raw("NaN");
            } else if x.is_infinite() {
                self.out.raw(if x > 0.0 { "Infinity" } else { "-Infinity" });
            } else {
                self.out.raw(&v.repr()?.to_cow()?);
            }
        } else if let Ok(d) = v.cast::<PyDict>() {
            self.enter(v)?;
            // A snapshot: callbacks below (key `__str__`, value `model_dump`) may change `d`.
            let items = d.items();
            self.out.raw("{");
            for (i, kv) in items.iter().enumerate() {
                let (k, val): (Bound<'_, PyAny>, Bound<'_, PyAny>) = kv.extract()?;
                if i > 0 {
                    self.out.raw(",");
                }
                match k.cast::<PyString>() {
                    Ok(ks) => write_str(ks, self.out),
                    Err(_) => self.out.string(&k.str()?.to_cow()?),
                }
                self.out.raw(":");
                self.write(&val)
                    .map_err(|e| e.at(|| Seg::Key(key_text(&k).unwrap_or_else(|_| "?".into()))))?;
            }
            self.out.raw("}");
            self.open.pop();
        } else if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
            self.enter(v)?;
            self.out.raw("[");
            // The list iterator re-reads the length each step: a callback that resizes the
            // list ends or extends the walk, never reads out of bounds.
            for (i, item) in v.try_iter()?.enumerate() {
                if i > 0 {
                    self.out.raw(",");
                }
                self.write(&item?).map_err(|e| e.at(|| Seg::Index(i)))?;
            }
            self.out.raw("]");
            self.open.pop();
        } else if v.is_instance_of::<PyBytes>() || v.is_instance_of::<PyByteArray>() {
            // SDKs send raw bytes base64-encoded.
            let n = v.len()?;
            let b64 = n.div_ceil(3) * 4;
            self.out.string(&"A".repeat(b64));
        } else if let Some(dump) = v.getattr_opt(intern!(v.py(), "model_dump"))? {
            // SDK (pydantic) objects: what the SDK would send. The object stays on the path
            // while its dump is written: a dump that returns the object again is a cycle.
            self.enter(v)?;
            let kwargs = PyDict::new(v.py());
            kwargs.set_item("mode", "json")?;
            kwargs.set_item("exclude_none", true)?;
            kwargs.set_item("by_alias", true)?;
            let dumped = dump.call((), Some(&kwargs))?;
            self.write(&dumped).map_err(|e| e.at(|| Seg::Dump))?;
            self.open.pop();
        } else if super::py_input::is_other_mapping(v) {
            // A mapping that is not a dict (`MappingProxyType`) is written as the dict it
            // reads as; it stays on the path, so one that holds itself is a cycle.
            self.enter(v)?;
            let d = v.py().get_type::<PyDict>().call1((v,))?;
            self.write(&d)?;
            self.open.pop();
        } else {
            self.out.string(&v.str()?.to_cow()?);
        }
        Ok(())
    }
}

fn write<S: Sink>(v: &Bound<'_, PyAny>, out: &mut S) -> PyResult<()> {
    Walk {
        out,
        open: Vec::new(),
    }
    .write(v)
    .map_err(Fail::into_py)
}

/// Compact JSON text of a Python value.
pub fn json_text(v: &Bound<'_, PyAny>) -> PyResult<String> {
    let mut s = String::new();
    write(v, &mut s)?;
    Ok(s)
}

static INVALID_MESSAGE: pyo3::sync::PyOnceLock<Py<pyo3::types::PyType>> =
    pyo3::sync::PyOnceLock::new();

/// Byte length of the compact JSON of message `index`; a cycle or excessive depth inside it is
/// `contextfold.InvalidMessageError` naming the index and the path (`content[0].self`).
pub fn message_json_len(m: &Bound<'_, PyAny>, index: usize) -> PyResult<usize> {
    let mut c = Counter(0);
    let r = Walk {
        out: &mut c,
        open: Vec::new(),
    }
    .write(m);
    match r {
        Ok(()) => Ok(c.0),
        Err(Fail::Py(e)) => Err(e),
        Err(Fail::Shape { reason, path }) => {
            let py = m.py();
            let field = Fail::path_text(&path);
            let cls = INVALID_MESSAGE.import(py, "contextfold.errors", "InvalidMessageError")?;
            Err(PyErr::from_value(cls.call1((reason, index, field))?))
        }
    }
}

/// Byte length of the compact UTF-8 JSON of a Python value.
pub fn json_len(v: &Bound<'_, PyAny>) -> PyResult<usize> {
    let mut c = Counter(0);
    write(v, &mut c)?;
    Ok(c.0)
}
