//! `_core.PricedRequest`: a request's provider, model, wire format, tools, system prompt and
//! response format, read and priced once (`crate::priced_request`), and the one prologue every
//! pricing binding opens with (`request_parts`: the estimator and the request's extras).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::compaction::WireFormat;
use crate::encoding::Encoding;
use crate::estimate::{Estimator, RequestExtras};
use crate::priced_request::PricedRequest as CorePricedRequest;

use super::estimator_args::{estimator, provider as parse_provider};
use super::messages::{Keep, Walker};

/// The estimator of `provider=` / `model=` and the tools, system prompt and response format
/// read by `w`: what every pricing binding reads before the messages.
pub(super) fn request_parts<'k, 'py>(
    w: &Walker<'k, 'py>,
    provider: &str,
    model: Option<&str>,
    tools: Option<&Bound<'py, PyAny>>,
    system: Option<&Bound<'py, PyAny>>,
    response_format: Option<&Bound<'py, PyAny>>,
) -> PyResult<(Estimator, RequestExtras<'k>)> {
    let extras = w.extras(tools, system, response_format)?;
    let est = estimator(provider, model)?.with_media_resolution(extras.media_resolution);
    Ok((est, extras))
}

pub(super) fn text_encoding(name: Option<&str>) -> PyResult<Option<Encoding>> {
    name.map(|name| {
        Encoding::parse(name).ok_or_else(|| {
            PyValueError::new_err(format!(
                "unknown text_encoding {name:?}; valid: {}",
                Encoding::NAMES.join(", ")
            ))
        })
    })
    .transpose()
}

/// A request's fixed parts, read and priced once; a compaction plan, a verification, a prune
/// and a session take it instead of reading the tools and system prompt on every call.
#[pyclass(frozen, module = "contextfold._core", name = "PricedRequest")]
pub struct PyPricedRequest {
    pub(super) request: CorePricedRequest,
    /// The wire format its history is written in (None: any; a plan needs one).
    pub(super) format: Option<WireFormat>,
}

impl PyPricedRequest {
    /// The wire format a plan or a verification needs.
    pub(super) fn format(&self) -> PyResult<WireFormat> {
        self.format.ok_or_else(|| {
            PyValueError::new_err("this PricedRequest has no wire format: pass format=")
        })
    }
}

#[pymethods]
impl PyPricedRequest {
    #[new]
    #[pyo3(signature = (*, provider="openai", model=None, tools=None, system=None, response_format=None, format=None, text_encoding=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        provider: &str,
        model: Option<String>,
        tools: Option<&Bound<'_, PyAny>>,
        system: Option<&Bound<'_, PyAny>>,
        response_format: Option<&Bound<'_, PyAny>>,
        format: Option<&str>,
        text_encoding: Option<&str>,
    ) -> PyResult<Self> {
        let provider = parse_provider(provider)?;
        let format = format
            .map(|f| WireFormat::parse(f).map_err(PyValueError::new_err))
            .transpose()?;
        let encoding = self::text_encoding(text_encoding)?;
        let keep = Keep::new();
        let extras = Walker::new(py, &keep).extras(tools, system, response_format)?;
        Ok(PyPricedRequest {
            request: CorePricedRequest::new(provider, model, encoding, extras),
            format,
        })
    }

    #[getter]
    fn provider(&self) -> &'static str {
        self.request.provider.name()
    }

    #[getter]
    fn model(&self) -> Option<String> {
        self.request.model.clone()
    }

    #[getter]
    #[pyo3(name = "format")]
    fn wire_format(&self) -> Option<&'static str> {
        self.format.map(WireFormat::name)
    }

    #[getter]
    fn text_encoding(&self) -> Option<&'static str> {
        self.request.encoding.map(Encoding::name)
    }

    /// Tokens of everything around the messages: reply priming, system prompt, tools,
    /// response format.
    #[getter]
    fn overhead_tokens(&self) -> u32 {
        self.request.overhead
    }

    fn __repr__(&self) -> String {
        format!(
            "PricedRequest(provider={:?}, model={:?}, format={:?}, overhead_tokens={})",
            self.provider(),
            self.request.model,
            self.wire_format(),
            self.request.overhead
        )
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyPricedRequest>()
}
