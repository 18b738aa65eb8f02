//! The physical floor of estimating a history, for the benchmarks only: one C-level walk over
//! the same Python objects that takes every string's length and reads a `SAMPLE_BYTES` sample
//! of it, and does nothing else (no message views, no pricing, no references kept).
//!
//! `estimate` cannot be cheaper than this walk (it must at least find every string and read a
//! sample of it), so `benches/bench_estimate.py` reports `estimate` as a multiple of it, side by
//! side in the same run: a ratio that stays meaningful on a noisy shared machine.

use pyo3::ffi;
use pyo3::prelude::*;

use crate::text_stats::{window_starts, LONG_TEXT, SAMPLE_BYTES, WINDOW};

/// Dicts and lists nested deeper than this are not walked (a history's values are shallow; the
/// bound only keeps a self-containing value from overflowing the stack).
const MAX_DEPTH: usize = 64;

/// Sum of the first `SAMPLE_BYTES` bytes and the length of every str reachable from `obj`
/// through dict values, lists and tuples. Borrowed references only, like the reader's fast path.
#[cfg(not(Py_GIL_DISABLED))]
fn walk(obj: *mut ffi::PyObject, depth: usize, windows: bool) -> u64 {
    if depth > MAX_DEPTH {
        return 0;
    }
    // SAFETY: `obj` is a live borrowed reference (the argument, or an item of a container that
    // the caller holds) and the GIL is held for the whole walk, which runs no Python code, so no
    // container can change and every borrowed item stays alive while it is read.
    unsafe {
        if ffi::PyUnicode_Check(obj) != 0 {
            let mut len: ffi::Py_ssize_t = 0;
            let data = ffi::PyUnicode_AsUTF8AndSize(obj, &mut len);
            if data.is_null() {
                ffi::PyErr_Clear();
                return 0;
            }
            let bytes = std::slice::from_raw_parts(data.cast::<u8>(), len as usize);
            // (With `windows`, the estimate's own sample: a text of up to `LONG_TEXT` bytes
            // whole, `Estimator::sampled_text`, but for Gemini's weights.)
            let head = if windows && bytes.len() <= LONG_TEXT {
                bytes.len()
            } else {
                SAMPLE_BYTES
            };
            let sample = &bytes[..bytes.len().min(head)];
            let mut sum = sample
                .iter()
                .fold(0u64, |a, &b| a.wrapping_add(u64::from(b)));
            if windows && bytes.len() > LONG_TEXT {
                // The estimate's own sample of a long text: its windows, where they start.
                for at in window_starts(bytes.len()) {
                    let window = &bytes[at..(at + WINDOW).min(bytes.len())];
                    sum = window
                        .iter()
                        .fold(sum, |a, &b| a.wrapping_add(u64::from(b)));
                }
            }
            return std::hint::black_box(sum).wrapping_add(len as u64);
        }
        if ffi::PyDict_Check(obj) != 0 {
            let mut pos: ffi::Py_ssize_t = 0;
            let mut k: *mut ffi::PyObject = std::ptr::null_mut();
            let mut v: *mut ffi::PyObject = std::ptr::null_mut();
            let mut sum = 0u64;
            while ffi::PyDict_Next(obj, &mut pos, &mut k, &mut v) != 0 {
                sum = sum.wrapping_add(walk(v, depth + 1, windows));
            }
            return sum;
        }
        if ffi::PyList_Check(obj) != 0 {
            let mut sum = 0u64;
            for i in 0..ffi::PyList_Size(obj) {
                sum = sum.wrapping_add(walk(ffi::PyList_GetItem(obj, i), depth + 1, windows));
            }
            return sum;
        }
        if ffi::PyTuple_Check(obj) != 0 {
            let mut sum = 0u64;
            for i in 0..ffi::PyTuple_Size(obj) {
                sum = sum.wrapping_add(walk(ffi::PyTuple_GetItem(obj, i), depth + 1, windows));
            }
            return sum;
        }
        0
    }
}

/// Walk `messages` as cheaply as Python objects can be walked: every string's length plus a
/// sum over its first 128 bytes, and with `windows` over what the estimate reads beyond that (a
/// text of up to 1 KiB whole, the three 64-byte windows of a longer one: the floor of the
/// estimate's own sample). For benchmarks
/// (the floor `estimate` is measured against); the result is a checksum with no meaning of its
/// own.
#[pyfunction]
#[pyo3(signature = (messages, /, *, windows=false))]
fn _floor_walk(messages: &Bound<'_, PyAny>, windows: bool) -> u64 {
    #[cfg(not(Py_GIL_DISABLED))]
    {
        walk(messages.as_ptr(), 0, windows)
    }
    #[cfg(Py_GIL_DISABLED)]
    {
        // The borrowed-reference walk needs the GIL to keep containers still; free-threaded
        // builds have no floor to compare with.
        let _ = (messages, windows);
        0
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_floor_walk, m)?)
}
