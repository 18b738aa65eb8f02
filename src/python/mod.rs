//! The only place that speaks PyO3: converts Python objects into core views, calls the core with
//! the GIL released where the work is heavy, and converts results back.

use pyo3::prelude::*;

#[pymodule(gil_used = false)]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
