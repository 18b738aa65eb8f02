//! Errors of the core. Plain Rust; the bindings map them to Python exceptions.

use std::fmt;

/// A message of a history that the core cannot interpret.
///
/// `index` is the position of the offending message in the caller's list and `field` the path
/// inside it (`"content[2].image_url.url"`), so the Python exception can say exactly where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidMessage {
    pub index: usize,
    pub field: String,
    pub reason: String,
}

impl InvalidMessage {
    #[cold]
    pub fn new(index: usize, field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            index,
            field: field.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for InvalidMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "message {} field {:?}: {}",
            self.index, self.field, self.reason
        )
    }
}

impl std::error::Error for InvalidMessage {}
