//! Errors of the core. The kind tells the JS facade which constructor to throw (the spec and the
//! issue ask for `SyntaxError` on text that is not JSON and `TypeError` on a JSON value of the wrong shape).

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The text is not JSON.
    Syntax,
    /// The value has the wrong shape or inconsistent contents.
    Type,
    /// The value is well-formed but outside what can be done with it (an output past its limit).
    Range,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
}

impl Error {
    pub fn syntax(message: impl Into<String>) -> Self {
        Error {
            kind: ErrorKind::Syntax,
            message: message.into(),
        }
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Error {
            kind: ErrorKind::Type,
            message: message.into(),
        }
    }
    pub fn range(message: impl Into<String>) -> Self {
        Error {
            kind: ErrorKind::Range,
            message: message.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
