//! What an object that is not a dict is worth on the wire, when the core prices a value by its
//! JSON size (a part or item of a type no format reads, `Part::Opaque`).
//!
//! Objects are read by attribute, and only through the wire keys the formats look up (`role`,
//! `content`, `tool_calls`, `type`, `text`, ...; `crate::wire::input::KEY_NAMES`); a method is
//! never a field. Where the whole value is priced by its size:
//! - a model of a known SDK (the OpenAI, Anthropic, Google GenAI, Mistral, Cohere, Groq and
//!   Ollama clients) is its JSON-mode dump without nulls, by alias: what that SDK sends;
//! - any other pydantic model (an application's own message class, with ids, timestamps,
//!   metadata beside what it says) is its wire-key fields only: its bookkeeping is never priced;
//! - anything else (dicts, lists, scalars) its compact JSON.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use super::json_out;

/// Top-level packages whose pydantic models dump to their wire form.
const KNOWN_SDKS: &[&str] = &[
    "openai",
    "anthropic",
    "google",
    "mistralai",
    "cohere",
    "groq",
    "ollama",
];

/// Whether `v` is a pydantic model of a package not in [`KNOWN_SDKS`].
fn is_unknown_model(v: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = v.py();
    let cls = v.get_type();
    if !cls.hasattr(intern!(py, "__pydantic_fields__"))? {
        return Ok(false);
    }
    let module = cls.getattr(intern!(py, "__module__"))?;
    let module = module
        .cast::<PyString>()
        .map(|m| m.to_cow().map(|c| c.into_owned()));
    let root = match module {
        Ok(Ok(m)) => m.split('.').next().unwrap_or("").to_string(),
        _ => String::new(),
    };
    Ok(!KNOWN_SDKS.contains(&root.as_str()))
}

/// Bytes of the compact JSON `v` is priced by (see the module docs); `keys` are the interned
/// wire keys.
pub(super) fn json_len(v: &Bound<'_, PyAny>, keys: &[Py<PyString>]) -> PyResult<usize> {
    if v.is_instance_of::<PyDict>() || !is_unknown_model(v)? {
        return json_out::json_len(v);
    }
    let py = v.py();
    let wire = PyDict::new(py);
    for k in keys {
        let k = k.bind(py);
        if let Some(x) = v.getattr_opt(k)? {
            if !x.is_none() && !x.is_callable() {
                wire.set_item(k, x)?;
            }
        }
    }
    json_out::json_len(wire.as_any())
}
