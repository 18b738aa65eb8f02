//! Compact JSON of arbitrary Python values: the text of an Anthropic `tool_use.input` or a tool
//! definition (priced by the estimator), and the exact byte length of a request (`wire_bytes`).

use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple,
};

use crate::wire::json_size::{json_string_len, push_json_string};

// Deeper than any real message; also stops cyclic containers.
const MAX_DEPTH: usize = 512;

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

fn write<S: Sink>(v: &Bound<'_, PyAny>, out: &mut S, depth: usize) -> PyResult<()> {
    if depth > MAX_DEPTH {
        return Err(PyValueError::new_err(
            "value nested deeper than 512 levels (or cyclic): cannot serialize",
        ));
    }
    if let Ok(s) = v.cast::<PyString>() {
        write_str(s, out);
    } else if v.is_none() {
        out.raw("null");
    } else if let Ok(b) = v.cast::<PyBool>() {
        out.raw(if b.is_true() { "true" } else { "false" });
    } else if v.is_instance_of::<PyInt>() {
        out.raw(&v.str()?.to_cow()?);
    } else if let Ok(f) = v.cast::<PyFloat>() {
        let x = f.value();
        // Python's json writes repr() and NaN / Infinity / -Infinity for the specials.
        if x.is_nan() {
            out.raw("NaN");
        } else if x.is_infinite() {
            out.raw(if x > 0.0 { "Infinity" } else { "-Infinity" });
        } else {
            out.raw(&v.repr()?.to_cow()?);
        }
    } else if let Ok(d) = v.cast::<PyDict>() {
        out.raw("{");
        // A private copy: serializing a value may run Python code (`model_dump`, `__str__`)
        // that changes the caller's dict, which must not disturb (or panic) this iteration.
        let snapshot = d.copy()?;
        for (i, (k, val)) in snapshot.iter().enumerate() {
            if i > 0 {
                out.raw(",");
            }
            match k.cast::<PyString>() {
                Ok(ks) => write_str(ks, out),
                Err(_) => out.string(&k.str()?.to_cow()?),
            }
            out.raw(":");
            write(&val, out, depth + 1)?;
        }
        out.raw("}");
    } else if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        out.raw("[");
        for (i, item) in v.try_iter()?.enumerate() {
            if i > 0 {
                out.raw(",");
            }
            write(&item?, out, depth + 1)?;
        }
        out.raw("]");
    } else if v.is_instance_of::<PyBytes>() || v.is_instance_of::<PyByteArray>() {
        // SDKs send raw bytes base64-encoded.
        let n = v.len()?;
        let b64 = n.div_ceil(3) * 4;
        out.string(&"A".repeat(b64));
    } else if let Some(dump) = v.getattr_opt(intern!(v.py(), "model_dump"))? {
        // SDK (pydantic) objects: what the SDK would send.
        let kwargs = PyDict::new(v.py());
        kwargs.set_item("mode", "json")?;
        kwargs.set_item("exclude_none", true)?;
        kwargs.set_item("by_alias", true)?;
        let dumped = dump.call((), Some(&kwargs))?;
        write(&dumped, out, depth + 1)?;
    } else {
        out.string(&v.str()?.to_cow()?);
    }
    Ok(())
}

/// Compact JSON text of a Python value.
pub fn json_text(v: &Bound<'_, PyAny>) -> PyResult<String> {
    let mut s = String::new();
    write(v, &mut s, 0)?;
    Ok(s)
}

/// Byte length of the compact UTF-8 JSON of a Python value.
pub fn json_len(v: &Bound<'_, PyAny>) -> PyResult<usize> {
    let mut c = Counter(0);
    write(v, &mut c, 0)?;
    Ok(c.0)
}
