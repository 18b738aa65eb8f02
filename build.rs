//! The bindings' `cfg(Py_GIL_DISABLED)` (and the other PyO3 cfgs) for the interpreter built for.

fn main() {
    #[cfg(feature = "python")]
    pyo3_build_config::use_pyo3_cfgs();
}
