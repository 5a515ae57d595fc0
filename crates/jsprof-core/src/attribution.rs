//! resource (URL or path) -> which code it is: app, an npm dependency, a `node:` internal, generated
//! code, or native.
//!
//! CONTRACT (stable API other modules use): `Attributor::new()`,
//! `Attributor::attribute(&mut self, resource: &str) -> Attribution`.
//!
//! The rules, in order:
//! - `""` (builtins, native code, code without a script) -> `native`, nothing else.
//! - `node:…` -> `node`, nothing else.
//! - `evalmachine.<anonymous>` (V8's name for `vm` code compiled without a filename) -> `generated`.
//! - a `file:` URL (percent-decoded; `file:///C:/…` and `file://host/share/…` are Windows paths) or an
//!   absolute path (POSIX `/…`, Windows `C:\…`, `C:/…`, `\\server\share\…`, `\\?\C:\…`) is a file:
//!   - inside a `node_modules` folder -> `dependency`; the package is the innermost `node_modules/<name>`
//!     (or `node_modules/@scope/name`) that is a folder holding the file; `root` is that folder; the
//!     version is read from `<root>/package.json`, or else taken from a pnpm store folder
//!     (`.pnpm/<name>@<version>_<peers>`) or a Yarn cache zip (`<name>-npm-<version>-<hash>.zip`);
//!   - otherwise -> `app`; the package is the one of the nearest `package.json` with a `name` (folders
//!     are searched upwards; a `package.json` without `name`, like a `{"type":"module"}` marker, is
//!     skipped), `root` its folder, the version its `version`.
//! - any other URL with an authority (`http://…`, `https://…`) -> `dependency` or `app` by the same path
//!   rules, with the package and version the path itself carries, never a `root` and never a read.
//! - anything else (`data:`, `wasm:`, `[eval]`, relative names) -> `app` with no package, version or
//!   root.
//!
//! A frame without a resource is native code (a builtin) when it has no position, and generated code
//! when it has one: V8 gives code compiled from a string without a URL (`new Function`, `eval`) a
//! script of its own with positions but no URL ([`frame_without_resource`]). Generated code is charged
//! like app and dependency code (its builtins are its time), and named by the package that called it,
//! since a V8 profile does not say which code compiled it.
//!
//! `root` is a filesystem path in the style of the resource: `/…` with `/` for POSIX paths, `C:\…` (or
//! `\\server\share\…`) with `\` for Windows paths, percent-decoded, with `.`/`..` resolved.
//! Each folder's `package.json` is read at most once per `Attributor` (an unreadable or absent one is
//! remembered too); paths in the other platform's style are never read.

use std::collections::HashMap;
use std::fmt;

use percent_encoding::percent_decode_str;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    App,
    Dependency,
    Node,
    /// Code compiled at run time from a string without a URL: `new Function`, `eval`, `vm` without a
    /// filename (ajv's validators, fast-json-stringify's serializers, template engines).
    Generated,
    Native,
}

/// V8's script name for `vm` code compiled without a filename.
pub(crate) const VM_ANONYMOUS: &str = "evalmachine.<anonymous>";

/// The one name every view gives the code a frame belongs to, by package: `summarize`'s and `jsprof
/// report`'s rows, the `package` label of pprof and OTLP samples, the flame graphs' tooltips. App and
/// dependency code is its package's name (an app's from its `package.json`); code of no package is its
/// kind in parentheses: `(app)`, `(dependency)`, `(node)`, `(native)`, and generated code
/// `(generated)` (which the views that know its caller name by it: [`generated_name`]). npm forbids
/// parentheses in package names, so such a name is never a package's — `node` and `native` are both
/// names of real npm packages.
pub(crate) fn package_name(attribution: &Attribution) -> String {
    match (attribution.kind, &attribution.package) {
        (Kind::App | Kind::Dependency, Some(package)) => package.clone(),
        (Kind::Generated, _) => generated_name(None),
        (kind, _) => format!("({})", kind.as_str()),
    }
}

/// How generated code is named where a package would be: by the package of the code that called it,
/// `(generated, called from express)`, or `(generated)` when no app or dependency code called it.
pub(crate) fn generated_name(caller: Option<&str>) -> String {
    match caller {
        Some(caller) => format!("(generated, called from {caller})"),
        None => "(generated)".to_owned(),
    }
}

/// The attribution of a frame that has no resource: generated code when it has a position (`line`),
/// native code (a builtin) otherwise.
pub(crate) fn frame_without_resource(line: Option<u32>) -> Attribution {
    Attribution::bare(if line.is_some() {
        Kind::Generated
    } else {
        Kind::Native
    })
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::App => "app",
            Kind::Dependency => "dependency",
            Kind::Node => "node",
            Kind::Generated => "generated",
            Kind::Native => "native",
        }
    }

    /// App, dependency or generated code: what a sample is charged to before builtins and internals.
    pub fn is_code(self) -> bool {
        matches!(self, Kind::App | Kind::Dependency | Kind::Generated)
    }
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

impl Attribution {
    fn bare(kind: Kind) -> Self {
        Attribution {
            kind,
            package: None,
            version: None,
            root: None,
        }
    }
}

/// Reads a file's text, `None` when it cannot.
pub(crate) type FileReader = Box<dyn FnMut(&str) -> Option<String> + Send>;

/// What a `package.json` says about its package.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Manifest {
    name: Option<String>,
    version: Option<String>,
}

/// Attributes resources, reading each package root's package.json at most once.
pub struct Attributor {
    reader: FileReader,
    /// folder -> its package.json (None: absent, unreadable or not JSON).
    manifests: HashMap<String, Option<Manifest>>,
    /// resource -> its attribution, for files (the walk up their folders is done once).
    resolved: HashMap<String, Attribution>,
    reads: usize,
}

impl fmt::Debug for Attributor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Attributor")
            .field("folders", &self.manifests.len())
            .field("reads", &self.reads)
            .finish()
    }
}

impl Default for Attributor {
    fn default() -> Self {
        Self::new()
    }
}

/// The largest `package.json` read (real ones are a few KB; the biggest on npm are under 1 MB).
const MAX_MANIFEST_BYTES: u64 = 4 << 20;

/// The longest path the filesystem opens (Linux's PATH_MAX). A resource longer than this names no file
/// on disk, so no folder of it is looked up: a crafted 100,000-component path costs no reads.
const MAX_DISK_PATH_BYTES: usize = 4096;

/// Reads a `package.json` from the filesystem: a regular file of at most [`MAX_MANIFEST_BYTES`],
/// opened without blocking (a FIFO or a symlink to `/dev/zero` is skipped, not waited on), and never
/// a path in the other platform's style (a Windows path on Linux would be read as a relative path).
fn read_from_disk(path: &str) -> Option<String> {
    let posix = path.starts_with('/');
    if posix == cfg!(windows) {
        return None;
    }
    let bytes = crate::files::read_regular(std::path::Path::new(path), MAX_MANIFEST_BYTES).ok()?;
    String::from_utf8(bytes).ok()
}

impl Attributor {
    /// An attributor that reads `package.json` files from the filesystem.
    pub fn new() -> Self {
        Self::with_reader(Box::new(read_from_disk))
    }

    /// An attributor that reads files through `reader` (given the file's path in the resource's style).
    pub fn with_reader(reader: FileReader) -> Self {
        Attributor {
            reader,
            manifests: HashMap::new(),
            resolved: HashMap::new(),
            reads: 0,
        }
    }

    /// How many files this attributor has asked its reader for (each at most once).
    pub fn reads(&self) -> usize {
        self.reads
    }

    /// Forgets every `package.json` read so far (the next attributions read them again).
    pub fn clear(&mut self) {
        self.manifests.clear();
        self.resolved.clear();
    }

    pub fn attribute(&mut self, resource: &str) -> Attribution {
        if resource.is_empty() {
            return Attribution::bare(Kind::Native);
        }
        if resource.starts_with("node:") {
            return Attribution::bare(Kind::Node);
        }
        if resource == VM_ANONYMOUS {
            return Attribution::bare(Kind::Generated);
        }
        if let Some(known) = self.resolved.get(resource) {
            return known.clone();
        }
        match Location::parse(resource) {
            Some(Location::File(path)) => {
                let attribution = self.attribute_file(&path);
                self.resolved.insert(resource.to_owned(), attribution.clone());
                attribution
            }
            Some(Location::Remote(segments)) => match find_dependency(&segments, false) {
                Some(dep) => Attribution {
                    kind: Kind::Dependency,
                    version: dep
                        .name
                        .as_ref()
                        .and_then(|name| version_from_path(&segments, &dep, name)),
                    package: dep.name,
                    root: None,
                },
                None => Attribution::bare(Kind::App),
            },
            None => Attribution::bare(Kind::App),
        }
    }

    fn attribute_file(&mut self, path: &FsPath) -> Attribution {
        let windows = path.style == Style::Windows;
        let full = path.join(path.segments.len());
        let on_disk = full.len() <= MAX_DISK_PATH_BYTES;
        if let Some(dep) = find_dependency(&path.segments, windows) {
            let Some(name) = dep.name.clone() else {
                return Attribution::bare(Kind::Dependency);
            };
            let root = path.join(dep.end);
            let manifest = if on_disk {
                self.manifest(&root, path.style)
            } else {
                None
            };
            let version = manifest
                .and_then(|m| m.version)
                .or_else(|| version_from_path(&path.segments, &dep, &name));
            return Attribution {
                kind: Kind::Dependency,
                package: Some(name),
                version,
                root: Some(root),
            };
        }
        if !on_disk {
            return Attribution::bare(Kind::App);
        }
        // App code: the nearest package.json that names a package, from the file's folder upwards.
        // Each folder is a prefix of the full path (cut at a separator), not joined anew per level.
        let mut ends: Vec<usize> = full
            .char_indices()
            .filter(|&(_, c)| c == path.style.separator())
            .map(|(i, _)| i)
            .collect();
        ends.retain(|&i| i >= path.prefix.len());
        ends.truncate(path.segments.len()); // the last segment is the file itself
        for (depth, &end) in ends.iter().enumerate().rev() {
            // The root folder keeps its separator (`/`, `C:\`); deeper ones end before it.
            let folder = if depth == 0 {
                &full[..end + 1]
            } else {
                &full[..end]
            };
            if let Some(Manifest {
                name: Some(name),
                version,
            }) = self.manifest(folder, path.style)
            {
                return Attribution {
                    kind: Kind::App,
                    package: Some(name),
                    version,
                    root: Some(folder.to_owned()),
                };
            }
        }
        Attribution::bare(Kind::App)
    }

    /// The `package.json` of `folder`, read on first use only.
    fn manifest(&mut self, folder: &str, style: Style) -> Option<Manifest> {
        if let Some(known) = self.manifests.get(folder) {
            return known.clone();
        }
        let file = style.child(folder, "package.json");
        self.reads += 1;
        let manifest = (self.reader)(&file).and_then(|text| parse_manifest(&text));
        self.manifests.insert(folder.to_owned(), manifest.clone());
        manifest
    }
}

fn parse_manifest(text: &str) -> Option<Manifest> {
    let value: serde_json::Value = serde_json::from_str(text.trim_start_matches('\u{feff}')).ok()?;
    let object = value.as_object()?;
    let string = |key: &str| {
        object
            .get(key)
            .and_then(|v| v.as_str())
            .filter(|s| !s.is_empty())
            .map(String::from)
    };
    Some(Manifest {
        name: string("name"),
        version: string("version"),
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Posix,
    Windows,
}

impl Style {
    fn separator(self) -> char {
        match self {
            Style::Posix => '/',
            Style::Windows => '\\',
        }
    }

    fn child(self, folder: &str, name: &str) -> String {
        let mut s = folder.to_owned();
        if !s.ends_with(self.separator()) {
            s.push(self.separator());
        }
        s.push_str(name);
        s
    }
}

/// An absolute filesystem path: `prefix` (`""` for POSIX, `C:` for a drive, `\\server` for UNC) and
/// its normalized segments (no empty, `.` or `..` segments).
#[derive(Debug, Clone, PartialEq, Eq)]
struct FsPath {
    style: Style,
    prefix: String,
    segments: Vec<String>,
}

impl FsPath {
    fn new(style: Style, prefix: &str, rest: &str) -> Self {
        let split: Vec<&str> = match style {
            Style::Posix => rest.split('/').collect(),
            Style::Windows => rest.split(['/', '\\']).collect(),
        };
        FsPath {
            style,
            prefix: prefix.to_owned(),
            segments: normalize(split),
        }
    }

    /// The path of the first `n` segments.
    fn join(&self, n: usize) -> String {
        let sep = self.style.separator();
        let mut s = self.prefix.clone();
        s.push(sep);
        for (i, segment) in self.segments[..n].iter().enumerate() {
            if i > 0 {
                s.push(sep);
            }
            s.push_str(segment);
        }
        s
    }
}

fn normalize(parts: Vec<&str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for part in parts {
        match part {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            _ => out.push(part.to_owned()),
        }
    }
    out
}

/// Where a resource's code comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Location {
    File(FsPath),
    /// A non-file URL with an authority: only the segments of its path.
    Remote(Vec<String>),
}

fn is_drive(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && b[0].is_ascii_alphabetic() && (b[1] == b':' || b[1] == b'|')
}

fn drive_prefix(s: &str) -> String {
    format!("{}:", &s[..1])
}

/// The URL scheme of `s` (`http`, `file`…), if it starts with one.
fn scheme(s: &str) -> Option<&str> {
    let colon = s.find(':')?;
    let candidate = &s[..colon];
    let mut chars = candidate.chars();
    let first = chars.next()?;
    let valid = first.is_ascii_alphabetic() && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    valid.then_some(candidate)
}

fn strip_query_and_fragment(s: &str) -> &str {
    let end = s.find(['?', '#']).unwrap_or(s.len());
    &s[..end]
}

fn decode(s: &str) -> String {
    percent_decode_str(s).decode_utf8_lossy().into_owned()
}

impl Location {
    fn parse(resource: &str) -> Option<Location> {
        // Windows paths first: `C:\…`/`C:/…` would otherwise look like a URL with the scheme `C`.
        if let Some(path) = parse_windows_path(resource) {
            return Some(Location::File(path));
        }
        if resource.starts_with('/') {
            return Some(Location::File(FsPath::new(Style::Posix, "", resource)));
        }
        let scheme = scheme(resource)?;
        let rest = &resource[scheme.len() + 1..];
        if scheme.eq_ignore_ascii_case("file") {
            return parse_file_url(rest).map(Location::File);
        }
        let after_authority = rest.strip_prefix("//")?;
        let path = after_authority.find('/').map_or("", |i| &after_authority[i..]);
        let decoded = decode(strip_query_and_fragment(path));
        Some(Location::Remote(normalize(decoded.split('/').collect())))
    }
}

fn parse_windows_path(s: &str) -> Option<FsPath> {
    if let Some(rest) = s.strip_prefix(r"\\?\").or_else(|| s.strip_prefix(r"\\.\")) {
        if let Some(unc) = rest.strip_prefix(r"UNC\") {
            return parse_unc(unc);
        }
        return parse_windows_path(rest);
    }
    if let Some(unc) = s.strip_prefix(r"\\") {
        return parse_unc(unc);
    }
    let b = s.as_bytes();
    if b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && (b[2] == b'\\' || b[2] == b'/') {
        return Some(FsPath::new(Style::Windows, &drive_prefix(s), &s[3..]));
    }
    None
}

fn parse_unc(s: &str) -> Option<FsPath> {
    let (server, rest) = s.split_once(['\\', '/'])?;
    (!server.is_empty()).then(|| FsPath::new(Style::Windows, &format!(r"\\{server}"), rest))
}

/// `rest` is what follows `file:`.
fn parse_file_url(rest: &str) -> Option<FsPath> {
    let rest = strip_query_and_fragment(rest);
    let (host, path) = match rest.strip_prefix("//") {
        Some(after) => match after.find('/') {
            Some(i) => (&after[..i], &after[i..]),
            None => (after, ""),
        },
        None => ("", rest),
    };
    let path = decode(path);
    let host = decode(host);
    if !host.is_empty() && !host.eq_ignore_ascii_case("localhost") {
        return Some(FsPath::new(Style::Windows, &format!(r"\\{host}"), &path));
    }
    let trimmed = path.trim_start_matches('/');
    if is_drive(trimmed) && (trimmed.len() == 2 || trimmed[2..].starts_with(['/', '\\'])) {
        return Some(FsPath::new(Style::Windows, &drive_prefix(trimmed), &trimmed[2..]));
    }
    if path.is_empty() {
        return None;
    }
    Some(FsPath::new(Style::Posix, "", &path))
}

/// A `node_modules` folder in a path and the package it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Dependency {
    /// Index of the `node_modules` segment.
    node_modules: usize,
    /// `name` or `@scope/name`; None when the file is in `node_modules` but in no package folder.
    name: Option<String>,
    /// Number of segments up to and including the package folder.
    end: usize,
}

fn is_node_modules(segment: &str, windows: bool) -> bool {
    if windows {
        segment.eq_ignore_ascii_case("node_modules")
    } else {
        segment == "node_modules"
    }
}

/// The innermost `node_modules/<name>` (or `node_modules/@scope/<name>`) folder holding the file
/// (the last segment); `node_modules/.pnpm`, `.bin`, `.cache` and the like hold no package.
fn find_dependency(segments: &[String], windows: bool) -> Option<Dependency> {
    let last = segments.len().checked_sub(1)?;
    let mut outermost = None;
    for i in (0..segments.len()).rev() {
        if !is_node_modules(&segments[i], windows) {
            continue;
        }
        outermost.get_or_insert(i);
        let Some(first) = segments.get(i + 1).filter(|_| i + 1 < last) else {
            continue;
        };
        if first.starts_with('.') {
            continue;
        }
        if first.starts_with('@') {
            if i + 2 < last {
                let name = format!("{first}/{}", segments[i + 2]);
                return Some(Dependency {
                    node_modules: i,
                    name: Some(name),
                    end: i + 3,
                });
            }
            continue;
        }
        return Some(Dependency {
            node_modules: i,
            name: Some(first.clone()),
            end: i + 2,
        });
    }
    outermost.map(|i| Dependency {
        node_modules: i,
        name: None,
        end: i + 1,
    })
}

/// The version a pnpm store folder or a Yarn cache zip right above the package's `node_modules` names.
fn version_from_path(segments: &[String], dep: &Dependency, name: &str) -> Option<String> {
    let above = segments.get(dep.node_modules.checked_sub(1)?)?;
    if dep.node_modules >= 2 && segments[dep.node_modules - 2] == ".pnpm" {
        return pnpm_version(above, name);
    }
    if above.to_ascii_lowercase().ends_with(".zip") {
        return yarn_version(above, name);
    }
    None
}

/// `lodash@4.17.21`, `@scope+name@1.2.3_peer@4.0.0`, `name@1.0.0(peer@2)` -> the version, when the
/// folder is the named package's own.
fn pnpm_version(folder: &str, name: &str) -> Option<String> {
    let encoded_name = name.replacen('/', "+", 1);
    let rest = folder.strip_prefix(&encoded_name)?.strip_prefix('@')?;
    let end = rest.find(['_', '(']).unwrap_or(rest.len());
    let version = &rest[..end];
    (!version.is_empty()).then(|| version.to_owned())
}

/// `lodash-npm-4.17.21-6382451519-eb835a2e51.zip`, `@babel-core-npm-7.0.0-beta.1-0a1b2c3d4e.zip` ->
/// the version, when the zip is the named package's own.
fn yarn_version(zip: &str, name: &str) -> Option<String> {
    let stem = &zip[..zip.len() - 4];
    let slug = name.replacen('/', "-", 1);
    let mut version = stem.strip_prefix(&slug)?.strip_prefix("-npm-")?;
    // Strip the trailing hashes (hex, 6+ characters); what is left is the version.
    while let Some((head, tail)) = version.rsplit_once('-') {
        if tail.len() >= 6 && tail.bytes().all(|b| b.is_ascii_hexdigit()) {
            version = head;
        } else {
            break;
        }
    }
    (!version.is_empty()).then(|| version.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// An attributor over an in-memory filesystem that logs every read.
    fn fake(files: &[(&str, &str)]) -> (Attributor, Arc<Mutex<Vec<String>>>) {
        let files: HashMap<String, String> = files
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect();
        let log = Arc::new(Mutex::new(Vec::new()));
        let seen = log.clone();
        let reader = Box::new(move |path: &str| {
            seen.lock().unwrap().push(path.to_owned());
            files.get(path).cloned()
        });
        (Attributor::with_reader(reader), log)
    }

    fn pkg(name: &str, version: &str) -> String {
        format!(r#"{{"name":"{name}","version":"{version}"}}"#)
    }

    fn dep(package: &str, version: Option<&str>, root: Option<&str>) -> Attribution {
        Attribution {
            kind: Kind::Dependency,
            package: Some(package.into()),
            version: version.map(Into::into),
            root: root.map(Into::into),
        }
    }

    #[test]
    fn empty_is_native_and_node_scheme_is_node() {
        let (mut a, log) = fake(&[]);
        assert_eq!(a.attribute(""), Attribution::bare(Kind::Native));
        assert_eq!(a.attribute("node:internal/timers"), Attribution::bare(Kind::Node));
        assert!(log.lock().unwrap().is_empty());
    }

    #[test]
    fn plain_scoped_and_nested_dependencies() {
        let lodash = pkg("lodash", "4.17.21");
        let scoped = pkg("@s/n", "1.0.0");
        let inner = pkg("inner", "2.0.0");
        let (mut a, _) = fake(&[
            ("/p/node_modules/lodash/package.json", &lodash),
            ("/p/node_modules/@s/n/package.json", &scoped),
            ("/p/node_modules/outer/node_modules/inner/package.json", &inner),
        ]);
        assert_eq!(
            a.attribute("file:///p/node_modules/lodash/fp/map.js"),
            dep("lodash", Some("4.17.21"), Some("/p/node_modules/lodash"))
        );
        assert_eq!(
            a.attribute("/p/node_modules/@s/n/index.js"),
            dep("@s/n", Some("1.0.0"), Some("/p/node_modules/@s/n"))
        );
        assert_eq!(
            a.attribute("/p/node_modules/outer/node_modules/inner/lib/x.js"),
            dep(
                "inner",
                Some("2.0.0"),
                Some("/p/node_modules/outer/node_modules/inner")
            )
        );
    }

    #[test]
    fn pnpm_and_yarn_versions_come_from_the_path_when_unreadable() {
        let (mut a, _) = fake(&[]);
        assert_eq!(
            a.attribute("/p/node_modules/.pnpm/lodash@4.17.21/node_modules/lodash/lodash.js"),
            dep(
                "lodash",
                Some("4.17.21"),
                Some("/p/node_modules/.pnpm/lodash@4.17.21/node_modules/lodash")
            )
        );
        let scoped = "/p/node_modules/.pnpm/@scope+name@1.2.3_peer@4.0.0/node_modules/@scope/name/i.js";
        assert_eq!(a.attribute(scoped).version.as_deref(), Some("1.2.3"));
        assert_eq!(a.attribute(scoped).package.as_deref(), Some("@scope/name"));
        // A dependency linked inside another package's store folder has no version from that folder.
        let other = "/p/node_modules/.pnpm/a@1.0.0/node_modules/b/i.js";
        assert_eq!(
            a.attribute(other),
            dep("b", None, Some("/p/node_modules/.pnpm/a@1.0.0/node_modules/b"))
        );
        let yarn = "/p/.yarn/cache/lodash-npm-4.17.21-6382451519-eb835a2e51.zip/node_modules/lodash/a.js";
        assert_eq!(a.attribute(yarn).version.as_deref(), Some("4.17.21"));
        let yarn_scoped =
            "/p/.yarn/cache/@babel-core-npm-7.0.0-beta.1-0a1b2c3d4e.zip/node_modules/@babel/core/a.js";
        let got = a.attribute(yarn_scoped);
        assert_eq!(
            (got.package.as_deref(), got.version.as_deref()),
            (Some("@babel/core"), Some("7.0.0-beta.1"))
        );
    }

    #[test]
    fn version_on_disk_wins_over_the_path() {
        let manifest = pkg("lodash", "9.9.9");
        let (mut a, _) = fake(&[(
            "/p/node_modules/.pnpm/lodash@4.17.21/node_modules/lodash/package.json",
            &manifest,
        )]);
        let got = a.attribute("/p/node_modules/.pnpm/lodash@4.17.21/node_modules/lodash/lodash.js");
        assert_eq!(got.version.as_deref(), Some("9.9.9"));
    }

    #[test]
    fn percent_encoded_and_windows_forms() {
        let manifest = pkg("x", "1.0.0");
        let (mut a, _) = fake(&[
            ("/my dir/node_modules/x/package.json", &manifest),
            (r"C:\proj\node_modules\x\package.json", &manifest),
        ]);
        assert_eq!(
            a.attribute("file:///my%20dir/node_modules/x/i.js?v=1#frag"),
            dep("x", Some("1.0.0"), Some("/my dir/node_modules/x"))
        );
        let root = Some(r"C:\proj\node_modules\x");
        assert_eq!(
            a.attribute("file:///C:/proj/node_modules/x/i.js"),
            dep("x", Some("1.0.0"), root)
        );
        assert_eq!(
            a.attribute(r"C:\proj\node_modules\x\i.js"),
            dep("x", Some("1.0.0"), root)
        );
        // Windows folder names match case-insensitively; the root keeps the resource's spelling.
        assert_eq!(
            a.attribute("C:/proj/Node_Modules/x/i.js").root.as_deref(),
            Some(r"C:\proj\Node_Modules\x")
        );
        assert_eq!(
            a.attribute(r"\\?\C:\proj\node_modules\x\i.js"),
            dep("x", Some("1.0.0"), root)
        );
        assert_eq!(
            a.attribute("file://server/share/node_modules/y/i.js")
                .root
                .as_deref(),
            Some(r"\\server\share\node_modules\y")
        );
        assert_eq!(
            a.attribute(r"\\server\share\node_modules\y\i.js").root.as_deref(),
            Some(r"\\server\share\node_modules\y")
        );
    }

    #[test]
    fn app_code_takes_the_nearest_named_package_json() {
        let root = pkg("mono", "0.0.0");
        let web = pkg("@mono/web", "1.0.0");
        let api = pkg("@mono/api", "2.0.0");
        let (mut a, _) = fake(&[
            ("/m/package.json", &root),
            ("/m/packages/web/package.json", &web),
            ("/m/packages/api/package.json", &api),
            ("/m/packages/api/src/esm/package.json", r#"{"type":"module"}"#),
        ]);
        let app = |package: &str, version: &str, root: &str| Attribution {
            kind: Kind::App,
            package: Some(package.into()),
            version: Some(version.into()),
            root: Some(root.into()),
        };
        assert_eq!(
            a.attribute("/m/packages/web/src/a.js"),
            app("@mono/web", "1.0.0", "/m/packages/web")
        );
        assert_eq!(
            a.attribute("file:///m/packages/api/src/esm/b.mjs"),
            app("@mono/api", "2.0.0", "/m/packages/api")
        );
        assert_eq!(a.attribute("/m/scripts/c.js"), app("mono", "0.0.0", "/m"));
        assert_eq!(a.attribute("/elsewhere/d.js"), Attribution::bare(Kind::App));
    }

    #[test]
    fn reads_each_folder_once() {
        let manifest = pkg("x", "1.0.0");
        let (mut a, log) = fake(&[
            ("/p/node_modules/x/package.json", &manifest),
            ("/p/package.json", &manifest),
        ]);
        for _ in 0..3 {
            a.attribute("/p/node_modules/x/a.js");
            a.attribute("/p/node_modules/x/lib/b.js");
            a.attribute("/p/node_modules/missing/c.js");
            a.attribute("/p/src/app.js");
            a.attribute("/p/src/other.js");
        }
        let log = log.lock().unwrap();
        let mut unique = log.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), log.len(), "a file was read twice: {log:?}");
        assert_eq!(a.reads(), log.len());
        assert_eq!(log.len(), 4, "{log:?}");
    }

    #[test]
    fn clear_forgets_what_was_read() {
        let manifest = pkg("x", "1.0.0");
        let (mut a, log) = fake(&[("/p/node_modules/x/package.json", &manifest)]);
        a.attribute("/p/node_modules/x/a.js");
        a.attribute("/p/node_modules/x/a.js");
        assert_eq!(a.reads(), 1);
        a.clear();
        assert_eq!(
            a.attribute("/p/node_modules/x/a.js").version.as_deref(),
            Some("1.0.0")
        );
        assert_eq!(a.reads(), 2);
        assert_eq!(log.lock().unwrap().len(), 2);
    }

    #[test]
    fn other_schemes_and_pseudo_names_are_app_without_package() {
        let (mut a, log) = fake(&[]);
        for r in [
            "data:text/javascript,1",
            "[eval]",
            "wasm://wasm/abc",
            "x.js",
            "file:",
        ] {
            assert_eq!(a.attribute(r), Attribution::bare(Kind::App), "{r}");
        }
        assert_eq!(
            a.attribute("https://cdn.example/app.js"),
            Attribution::bare(Kind::App)
        );
        assert_eq!(a.attribute(VM_ANONYMOUS), Attribution::bare(Kind::Generated));
        assert_eq!(
            frame_without_resource(Some(1)),
            Attribution::bare(Kind::Generated)
        );
        assert_eq!(frame_without_resource(None), Attribution::bare(Kind::Native));
        assert_eq!(
            a.attribute("https://h/node_modules/lodash/lodash.js"),
            dep("lodash", None, None)
        );
        assert!(
            log.lock().unwrap().is_empty(),
            "non-file resources are never read"
        );
    }

    #[test]
    fn files_in_node_modules_but_in_no_package() {
        let (mut a, _) = fake(&[]);
        let bare = Attribution::bare(Kind::Dependency);
        assert_eq!(a.attribute("/p/node_modules/.bin/tool"), bare);
        assert_eq!(a.attribute("/p/node_modules/loose.js"), bare);
        assert_eq!(a.attribute("/p/node_modules/@scope/x.js"), bare);
        // `..` is resolved before looking for node_modules.
        assert_eq!(
            a.attribute("/p/node_modules/x/../../src/a.js"),
            Attribution::bare(Kind::App)
        );
    }

    #[test]
    fn reads_real_files_and_never_foreign_style_paths() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("node_modules").join("real");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("package.json"), pkg("real", "3.2.1")).unwrap();
        let mut a = Attributor::new();
        let file = root.join("index.js");
        let got = a.attribute(file.to_str().unwrap());
        assert_eq!(got, dep("real", Some("3.2.1"), Some(root.to_str().unwrap())));
        if !cfg!(windows) {
            assert_eq!(read_from_disk(r"C:\x\package.json"), None);
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_package_json_that_is_a_fifo_or_dev_zero_is_skipped_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let fifo_app = dir.path().join("fifo-app");
        std::fs::create_dir_all(&fifo_app).unwrap();
        let c = std::ffi::CString::new(fifo_app.join("package.json").to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let zero_app = dir.path().join("zero-app");
        std::fs::create_dir_all(&zero_app).unwrap();
        std::os::unix::fs::symlink("/dev/zero", zero_app.join("package.json")).unwrap();
        std::fs::write(dir.path().join("package.json"), pkg("outer", "1.0.0")).unwrap();
        let mut a = Attributor::new();
        for app in [&fifo_app, &zero_app] {
            let got = a.attribute(app.join("index.js").to_str().unwrap());
            assert_eq!(got.package.as_deref(), Some("outer"), "{got:?}");
        }
    }

    #[test]
    fn the_upward_walk_is_bounded_and_linear_for_crafted_paths() {
        // Longer than any path the filesystem opens: no folder is looked up at all.
        let deep = format!("/{}index.js", "a/".repeat(100_000));
        let (mut a, log) = fake(&[]);
        assert_eq!(a.attribute(&deep), Attribution::bare(Kind::App));
        assert_eq!(log.lock().unwrap().len(), 0);
        let deep_dep = format!("/{}node_modules/x/index.js", "a/".repeat(100_000));
        assert_eq!(a.attribute(&deep_dep).package.as_deref(), Some("x"));
        assert_eq!(log.lock().unwrap().len(), 0);
        // Within the limit: each folder once, deepest first, the root last.
        let (mut a, log) = fake(&[]);
        a.attribute("/p/q/r.js");
        assert_eq!(
            *log.lock().unwrap(),
            ["/p/q/package.json", "/p/package.json", "/package.json"]
        );
        let (mut a, log) = fake(&[]);
        a.attribute(r"\\srv\share\d\f.js");
        assert_eq!(
            *log.lock().unwrap(),
            [
                r"\\srv\share\d\package.json",
                r"\\srv\share\package.json",
                r"\\srv\package.json"
            ]
        );
    }
}
