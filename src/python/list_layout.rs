//! Reading a history list's items by address: the list as is (or a copy of another
//! sequence), one item's address, and the whole item array read in place once a probe proved
//! CPython's list layout. The ledgers compare these addresses to find the unchanged prefix.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};

use super::messages::Walker;

/// The history as a list (a list is used as is; other sequences are copied into one).
pub(super) fn as_list<'py>(messages: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
    if let Ok(l) = messages.cast::<PyList>() {
        return Ok(l.clone());
    }
    // The history reader's own check: a str, a mapping or a value that is no iterable is named
    // ("messages must be a list of messages, got int"); an iterator's own error passes through.
    let items = Walker::snapshot(messages)?;
    PyList::new(messages.py(), items)
}

/// The address of message `i` of `list` (identity only, never dereferenced later).
#[inline]
pub(super) fn id_at(list: &Bound<'_, PyList>, i: usize) -> usize {
    // SAFETY: `i < len(list)` (callers bound it), the GIL is held and no Python code runs between
    // the length read and this call; PyList_GetItem returns a borrowed pointer used as a number.
    unsafe { ffi::PyList_GetItem(list.as_ptr(), i as ffi::Py_ssize_t) as usize }
}

/// The memory layout of a CPython list object (`PyListObject`, unchanged from 3.0 to 3.14 in
/// GIL-enabled builds): header, size, item array. The limited API hides it; it is used only
/// after `list_layout_ok` proved it on a live list, and only to read the item pointers.
#[repr(C)]
struct ListLayout {
    ob_refcnt: ffi::Py_ssize_t,
    ob_type: *mut ffi::PyTypeObject,
    ob_size: ffi::Py_ssize_t,
    ob_item: *mut *mut ffi::PyObject,
}

static LAYOUT_OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

/// Probe the layout once: a list of 5 distinct objects must read back, through the mirror
/// struct, exactly what `PyList_GetItem` returns.
fn list_layout_ok(py: Python<'_>) -> bool {
    // A free-threaded build has a larger object header: the probe fails there and the
    // per-item C call is used (abi3 wheels do not load on those builds anyway).
    *LAYOUT_OK.get_or_init(|| {
        let items: Vec<Bound<'_, PyAny>> = (0..5)
            .map(|i| PyString::new(py, &format!("probe-{i}")).into_any())
            .collect();
        let Ok(list) = PyList::new(py, &items) else {
            return false;
        };
        // SAFETY: `list` is a live exact list and the GIL is held; the fields read are within
        // the object's allocation on every CPython whose header is two words.
        let raw = unsafe { &*(list.as_ptr() as *const ListLayout) };
        raw.ob_size == 5
            && raw.ob_type == std::ptr::addr_of_mut!(ffi::PyList_Type)
            && !raw.ob_item.is_null()
            && (0..5).all(|i| {
                // SAFETY: `ob_size` is 5 and `ob_item` non-null (checked just above), so slots
                // 0..5 are inside the list's item array.
                (unsafe { *raw.ob_item.add(i) }) as usize == id_at(&list, i)
            })
    })
}

/// The item pointers of an exact list, as addresses, when the layout probe passed.
pub(super) fn item_addresses<'a>(list: &'a Bound<'_, PyList>) -> Option<&'a [usize]> {
    if !list.is_exact_instance_of::<PyList>() || !list_layout_ok(list.py()) {
        return None;
    }
    // SAFETY: layout proven by the probe; the slice is read while the GIL is held and no Python
    // code runs (nothing can resize the list) for as long as the borrow of `list` lasts in the
    // caller, which only compares the addresses.
    unsafe {
        let raw = &*(list.as_ptr() as *const ListLayout);
        if raw.ob_size <= 0 || raw.ob_item.is_null() {
            return Some(&[]);
        }
        Some(std::slice::from_raw_parts(
            raw.ob_item as *const usize,
            raw.ob_size as usize,
        ))
    }
}
