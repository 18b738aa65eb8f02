//! The frozen option objects the Python layer builds once and passes to every call:
//! `CompactionOptions` (the compaction plan's fixed knobs: head, tail floor, masking) and
//! `PruneOptions` (`contextfold.prune`'s). Each wraps the core's plain struct; its knobs are
//! named here once (the `match` of each `set`), their defaults are the core's `Default`, and a
//! wrong type or value raises at construction, naming the knob.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt};

use crate::compaction::PlanOptions;
use crate::prune::PruneOptions as CorePruneOptions;

/// Larger than any token budget, message count or character cap can matter (the Python
/// layer's `_args.HUGE`): counts beyond it mean "all of it" and stay clear of overflow.
const HUGE: u64 = 1 << 62;

/// Shortened arguments stay valid JSON with a marker saying so (`shrink_json`'s floor).
const MIN_ARGUMENTS_CHARS: usize = 64;

/// A non-negative int option (a bool is not a count; huge ones are clamped to `HUGE`).
fn count(name: &str, v: &Bound<'_, PyAny>) -> PyResult<u64> {
    if v.is_instance_of::<PyBool>() || !v.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!(
            "{name} must be an int, got {}",
            v.get_type().name()?
        )));
    }
    match v.extract::<i64>() {
        Ok(n) if n < 0 => Err(PyValueError::new_err(format!(
            "{name} must be >= 0, got {n}"
        ))),
        Ok(n) => Ok((n as u64).min(HUGE)),
        Err(_) if v.gt(0)? => Ok(HUGE),
        Err(_) => Err(PyValueError::new_err(format!(
            "{name} must be >= 0, got {v}"
        ))),
    }
}

fn flag(name: &str, v: &Bound<'_, PyAny>) -> PyResult<bool> {
    v.cast::<PyBool>().map(|b| b.is_true()).map_err(|_| {
        PyTypeError::new_err(format!(
            "{name} must be a bool, got {}",
            v.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })
}

fn real(name: &str, v: &Bound<'_, PyAny>) -> PyResult<f64> {
    if v.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "{name} must be a number, got bool"
        )));
    }
    v.extract()
}

/// The tokens of a tool result's cap: the core counts it in 32 bits, a larger cap means
/// "never shortened".
fn tokens_u32(name: &str, v: &Bound<'_, PyAny>) -> PyResult<u32> {
    Ok(count(name, v)?.min(u64::from(u32::MAX)) as u32)
}

#[cold]
fn unexpected(what: &str, key: &str) -> PyErr {
    PyTypeError::new_err(format!(
        "{what}() got an unexpected keyword argument {key:?}"
    ))
}

/// Each `(name, value)` of `options` passed to `set`.
fn each(
    options: Option<&Bound<'_, PyDict>>,
    mut set: impl FnMut(&str, &Bound<'_, PyAny>) -> PyResult<()>,
) -> PyResult<()> {
    for (k, v) in options.into_iter().flat_map(|d| d.iter()) {
        set(&k.extract::<String>()?, &v)?;
    }
    Ok(())
}

pub(super) fn check_tail(soft_ceiling: f64, min_tail: usize) -> PyResult<()> {
    if !(soft_ceiling >= 1.0 && soft_ceiling.is_finite()) {
        return Err(PyValueError::new_err(format!(
            "soft_ceiling must be a finite number >= 1.0, got {soft_ceiling}"
        )));
    }
    if min_tail == 0 {
        return Err(PyValueError::new_err("min_tail must be at least 1"));
    }
    Ok(())
}

fn check_arguments(arguments_max_chars: usize) -> PyResult<()> {
    if arguments_max_chars < MIN_ARGUMENTS_CHARS {
        return Err(PyValueError::new_err(
            "arguments_max_chars must be at least 64 (room for a valid JSON marker)",
        ));
    }
    Ok(())
}

/// The compaction plan's knobs that stay the same from call to call (`compaction::PlanOptions`
/// without the sizes, format and overhead each call gives), with the share of its size a
/// summary keeps at least (`summary_floor_share`).
#[pyclass(frozen, skip_from_py_object, module = "contextfold._core")]
#[derive(Clone)]
pub struct CompactionOptions {
    pub(super) plan: PlanOptions,
    pub(super) summary_floor_share: f64,
}

/// The knobs a prune and a compaction share (the tail walk's floors and the masking limits):
/// the same names and the same checks for both.
struct Shared<'a> {
    protect_first_n: &'a mut usize,
    min_tail: &'a mut usize,
    soft_ceiling: &'a mut f64,
    tool_result_max_tokens: &'a mut u32,
    arguments_max_chars: &'a mut usize,
    prune_images: &'a mut bool,
    dedupe: &'a mut bool,
    cache_block_tokens: &'a mut u64,
}

impl Shared<'_> {
    /// Set knob `name` to `v`; false when `name` is not one of these knobs.
    fn set(self, name: &str, v: &Bound<'_, PyAny>) -> PyResult<bool> {
        match name {
            "protect_first_n" => *self.protect_first_n = count(name, v)? as usize,
            "min_tail" => *self.min_tail = count(name, v)? as usize,
            "soft_ceiling" => *self.soft_ceiling = real(name, v)?,
            "tool_result_max_tokens" => *self.tool_result_max_tokens = tokens_u32(name, v)?,
            "arguments_max_chars" => *self.arguments_max_chars = count(name, v)? as usize,
            "prune_images" => *self.prune_images = flag(name, v)?,
            "dedupe" => *self.dedupe = flag(name, v)?,
            "cache_block_tokens" => *self.cache_block_tokens = count(name, v)?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

impl CompactionOptions {
    fn set(&mut self, name: &str, v: &Bound<'_, PyAny>) -> PyResult<()> {
        let p = &mut self.plan;
        let m = &mut p.mask;
        match name {
            "summary_floor_share" => self.summary_floor_share = real(name, v)?,
            "keep_tool_uses" => m.keep_tool_uses = count(name, v)? as usize,
            "exclude_tools" => m.exclude_tools = v.extract()?,
            "clear_tool_inputs" => m.clear_tool_inputs = flag(name, v)?,
            "keep_thinking_turns" => {
                m.keep_thinking_turns = match v.is_none() {
                    true => None,
                    false => Some(count(name, v)? as usize),
                }
            }
            "mask_observations" => m.mask_observations = flag(name, v)?,
            "recoverable" => m.recoverable = flag(name, v)?,
            "masks_only" => p.masks_only = flag(name, v)?,
            _ => {
                let shared = Shared {
                    protect_first_n: &mut p.protect_first_n,
                    min_tail: &mut p.min_tail,
                    soft_ceiling: &mut p.soft_ceiling,
                    tool_result_max_tokens: &mut m.tool_result_max_tokens,
                    arguments_max_chars: &mut m.arguments_max_chars,
                    prune_images: &mut m.prune_images,
                    dedupe: &mut m.dedupe,
                    cache_block_tokens: &mut m.cache_block_tokens,
                };
                if !shared.set(name, v)? {
                    return Err(unexpected("CompactionOptions", name));
                }
            }
        }
        Ok(())
    }

    fn checked(self) -> PyResult<Self> {
        check_tail(self.plan.soft_ceiling, self.plan.min_tail)?;
        check_arguments(self.plan.mask.arguments_max_chars)?;
        if !(0.0..=1.0).contains(&self.summary_floor_share) {
            return Err(PyValueError::new_err(format!(
                "summary_floor_share must be within [0, 1], got {}",
                self.summary_floor_share
            )));
        }
        Ok(self)
    }
}

#[pymethods]
impl CompactionOptions {
    #[new]
    #[pyo3(signature = (**options))]
    fn new(options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut o = CompactionOptions {
            plan: PlanOptions::default(),
            summary_floor_share: 0.0,
        };
        each(options, |k, v| o.set(k, v))?;
        o.checked()
    }

    /// A copy with `changes` applied (the knobs of the constructor).
    #[pyo3(signature = (**changes))]
    fn replace(&self, changes: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut o = self.clone();
        each(changes, |k, v| o.set(k, v))?;
        o.checked()
    }

    #[getter]
    fn min_tail(&self) -> usize {
        self.plan.min_tail
    }

    #[getter]
    fn tool_result_max_tokens(&self) -> u32 {
        self.plan.mask.tool_result_max_tokens
    }

    #[getter]
    fn arguments_max_chars(&self) -> usize {
        self.plan.mask.arguments_max_chars
    }

    #[getter]
    fn cache_block_tokens(&self) -> u64 {
        self.plan.mask.cache_block_tokens
    }

    #[getter]
    fn recoverable(&self) -> bool {
        self.plan.mask.recoverable
    }
}

/// `contextfold.prune`'s knobs (`prune::PruneOptions`).
#[pyclass(frozen, module = "contextfold._core")]
pub struct PruneOptions {
    pub(super) opt: CorePruneOptions,
}

#[pymethods]
impl PruneOptions {
    #[new]
    #[pyo3(signature = (*, protect_tail_tokens, **options))]
    fn new(
        protect_tail_tokens: &Bound<'_, PyAny>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let mut o = CorePruneOptions {
            protect_tail_tokens: count("protect_tail_tokens", protect_tail_tokens)?,
            ..CorePruneOptions::default()
        };
        each(options, |name, v| {
            let shared = Shared {
                protect_first_n: &mut o.protect_first_n,
                min_tail: &mut o.min_tail,
                soft_ceiling: &mut o.soft_ceiling,
                tool_result_max_tokens: &mut o.tool_result_max_tokens,
                arguments_max_chars: &mut o.arguments_max_chars,
                prune_images: &mut o.prune_images,
                dedupe: &mut o.dedupe,
                cache_block_tokens: &mut o.cache_block_tokens,
            };
            match shared.set(name, v)? {
                true => Ok(()),
                false => Err(unexpected("PruneOptions", name)),
            }
        })?;
        check_tail(o.soft_ceiling, o.min_tail)?;
        check_arguments(o.arguments_max_chars)?;
        Ok(PruneOptions { opt: o })
    }

    #[getter]
    fn protect_tail_tokens(&self) -> u64 {
        self.opt.protect_tail_tokens
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CompactionOptions>()?;
    m.add_class::<PruneOptions>()?;
    Ok(())
}
