//! The arguments every pricing binding shares, read once at the boundary: `provider=` /
//! `model=` into an estimator, `image_sizes=` into the sizes the core could not read.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyTuple};
use std::collections::HashMap;

use crate::estimate::Estimator;
use crate::image::Dims;
use crate::image_tokens::{size_correction, unsized_refs, ImageRule};
use crate::message::Message;
use crate::provider::Provider;

pub(crate) fn provider(name: &str) -> PyResult<Provider> {
    Provider::parse(name).map_err(PyValueError::new_err)
}

/// The estimator of the `provider=` / `model=` arguments every pricing function takes (a
/// `ValueError` for an unknown provider; an unknown model falls back to the provider's family).
pub(crate) fn estimator(provider: &str, model: Option<&str>) -> PyResult<Estimator> {
    Ok(Estimator::new(
        self::provider(provider)?,
        model.unwrap_or(""),
    ))
}

/// Pixel sizes of the remote images of `ms` that the caller's `image_sizes` knows: a mapping
/// from URL (or file id) to `(width, height)`, or a callable returning `(width, height)` or
/// None. Only the references the core could not size are looked up, once each.
pub(crate) fn resolve_sizes(
    image_sizes: Option<&Bound<'_, PyAny>>,
    ms: &[Message<'_>],
) -> PyResult<HashMap<String, Dims>> {
    let mut out = HashMap::new();
    let Some(src) = image_sizes.filter(|s| !s.is_none()) else {
        return Ok(out);
    };
    let dict = src.cast::<PyDict>().ok();
    let is_mapping = dict.is_some() || src.hasattr("keys")?;
    if !is_mapping && !src.is_callable() {
        return Err(PyTypeError::new_err(format!(
            "image_sizes must be a mapping from URL to (width, height) or a callable, got {}",
            src.get_type().name()?
        )));
    }
    for r in unsized_refs(ms) {
        let v = match (&dict, is_mapping) {
            (Some(d), _) => d.get_item(r)?,
            (None, true) => Some(src.call_method1("get", (r,))?),
            (None, false) => Some(src.call1((r,))?),
        };
        let Some(v) = v.filter(|v| !v.is_none()) else {
            continue;
        };
        let (width, height) = pixel_pair(&v).ok_or_else(|| {
            PyTypeError::new_err(format!(
                "image_sizes[{r:?}] must be (width, height) in pixels or None"
            ))
        })?;
        if width == 0 || height == 0 {
            return Err(PyValueError::new_err(format!(
                "image_sizes[{r:?}] must be positive, got ({width}, {height})"
            )));
        }
        out.insert(r.to_string(), Dims { width, height });
    }
    Ok(out)
}

/// `(width, height)` of an `image_sizes` value: a tuple or a list of two ints (a JSON cache of
/// sizes gives lists back), never bools (`(True, True)` is no size of 1 x 1 pixels).
fn pixel_pair(v: &Bound<'_, PyAny>) -> Option<(u32, u32)> {
    if !(v.is_instance_of::<PyTuple>() || v.is_instance_of::<PyList>()) || v.len().ok()? != 2 {
        return None;
    }
    let side = |i: usize| {
        let x = v.get_item(i).ok()?;
        (!x.is_instance_of::<PyBool>())
            .then(|| x.extract::<u32>().ok())
            .flatten()
    };
    Some((side(0)?, side(1)?))
}

/// Tokens to add to each message's price for the images `sizes` knows.
pub(crate) fn size_fixes(
    rule: ImageRule,
    ms: &[Message<'_>],
    sizes: &HashMap<String, Dims>,
) -> Vec<i64> {
    if sizes.is_empty() {
        return vec![0; ms.len()];
    }
    let size_of = |u: &str| sizes.get(u).copied();
    ms.iter()
        .map(|m| size_correction(rule, m, &size_of))
        .collect()
}

pub(crate) fn add_signed(x: u64, d: i64) -> u64 {
    x.saturating_add_signed(d)
}
