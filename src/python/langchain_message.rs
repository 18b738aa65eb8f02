//! LangChain messages (`langchain_core.messages.BaseMessage` and subclasses): recognised here,
//! read by meaning in the core (`crate::wire::langchain`, generic over the input trait, so the
//! same reader runs in `cargo test`), and sized as langchain-core renders them for OpenAI.
//!
//! Detection never imports LangChain: `BaseMessage` is looked up in `sys.modules` (no LangChain
//! message can exist before `langchain_core.messages.base` is imported) and cached once found;
//! exact dicts skip the check entirely.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyType};

use super::py_input::{Keep, PyInput};
use crate::message::Message;
use crate::wire::read::Reader;
use crate::wire::ReadResult;

static SYS_MODULES: PyOnceLock<Py<PyDict>> = PyOnceLock::new();
static BASE_MESSAGE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// `langchain_core.messages.BaseMessage` once someone has imported it (never imported here).
fn base_message(py: Python<'_>) -> Option<&Py<PyType>> {
    if let Some(cls) = BASE_MESSAGE.get(py) {
        return Some(cls);
    }
    let modules = SYS_MODULES
        .get_or_try_init(py, || -> PyResult<Py<PyDict>> {
            Ok(py
                .import("sys")?
                .getattr("modules")?
                .cast_into::<PyDict>()?
                .unbind())
        })
        .ok()?
        .bind(py);
    let module = modules
        .get_item(intern!(py, "langchain_core.messages.base"))
        .ok()??;
    let cls = module
        .getattr(intern!(py, "BaseMessage"))
        .ok()?
        .cast_into::<PyType>()
        .ok()?;
    Some(BASE_MESSAGE.get_or_init(py, || cls.unbind()))
}

/// Whether `m` is a LangChain message. Exact dicts (most histories) cost one type compare.
#[inline]
pub(super) fn is_message(m: &Bound<'_, PyAny>) -> bool {
    if m.is_exact_instance_of::<PyDict>() {
        return false;
    }
    match base_message(m.py()) {
        Some(cls) => m.is_instance(cls.bind(m.py())).unwrap_or(false),
        None => false,
    }
}

/// Read one LangChain message by meaning (`crate::wire::langchain`: the same reader `cargo
/// test` runs on JSON values). Its blocks are read with a reader of their own: what their
/// shape says of a format never becomes the message's format.
pub(super) fn read<'k, 'py>(
    m: &Bound<'py, PyAny>,
    keep: &'k Keep<'py>,
) -> ReadResult<Message<'k>, PyErr> {
    let r = Reader::new();
    crate::wire::langchain::read(&PyInput::new(m.clone(), keep), &r)
}

static TO_OPENAI: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Bytes of the compact JSON of a LangChain message as langchain-core renders it for OpenAI
/// chat (`convert_to_openai_messages`): the size of what is sent, without its bookkeeping.
/// Only called for a message `is_message` recognized, so LangChain is already imported.
pub(super) fn wire_json_len(m: &Bound<'_, PyAny>) -> PyResult<usize> {
    let py = m.py();
    let convert = TO_OPENAI.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        Ok(py
            .import("langchain_core.messages")?
            .getattr("convert_to_openai_messages")?
            .unbind())
    })?;
    super::json_out::json_len(&convert.bind(py).call1((m,))?)
}
