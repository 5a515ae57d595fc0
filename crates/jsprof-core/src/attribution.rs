//! resource (URL or path) -> which code it is: app, an npm dependency, a `node:` internal, or native.
//! CONTRACT (stable API other modules use; the implementation is being written):
//! `Attributor::new()`, `Attributor::attribute(&mut self, resource: &str) -> Attribution`.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    App,
    Dependency,
    Node,
    Native,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Attribution {
    pub kind: Kind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
}

/// Attributes resources, reading each package root's package.json at most once.
#[derive(Debug, Default)]
pub struct Attributor {}

impl Attributor {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn attribute(&mut self, resource: &str) -> Attribution {
        let kind = if resource.is_empty() {
            Kind::Native
        } else if resource.starts_with("node:") {
            Kind::Node
        } else if resource.contains("/node_modules/") {
            Kind::Dependency
        } else {
            Kind::App
        };
        Attribution {
            kind,
            package: None,
            version: None,
            root: None,
        }
    }
}
