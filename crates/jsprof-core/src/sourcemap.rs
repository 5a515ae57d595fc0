//! Source maps: a trace's frames moved from the generated code V8 ran (`dist/*.js`, a bundle) to the
//! code people wrote (`src/*.ts`, the packages inside the bundle).
//!
//! CONTRACT: [`resolve`]`(tables, &MapOptions, &MapCache) -> Resolved`. The maps are decoded by the
//! `sourcemap` crate (Sentry's); this module only finds them, bounds the work and rewrites the tables.
//!
//! Where a resource's map comes from, first found wins:
//! 1. `MapOptions::explicit`: a map named by the caller for that exact resource string (a path, a
//!    `file:` URL, or the map's JSON text);
//! 2. the generated file's last `//# sourceMappingURL=` comment (also `//@`): a `data:` URL (base64 or
//!    percent-encoded) is the map itself, anything else is resolved against the file's URL;
//! 3. `<file>.map` beside the file.
//!
//! Only `file:` URLs and absolute paths are read, only regular files (never a FIFO or a device, which
//! could block or never end), and at most `MapOptions::max_bytes` bytes of each (generated files and maps
//! alike). Nothing here fails: a frame whose map is missing or broken stays as it is and [`Stats`] says
//! why, once per frame and once per resource.
//!
//! A frame of a map is moved to the mapping at or before its position **on the same generated line**
//! (V8 gives the function's `(`, which tsc maps exactly): `line`/`column` become the original's (1-based),
//! the resource the original source (`sources[i]`, after `sourceRoot`, resolved against the map's URL: a
//! local file becomes a `file:///…` URL, `webpack://…` and the like stay as written). The name becomes the
//! map's `names` entry of the mapping that starts exactly where the generated name is written: right
//! before the frame's position (`function a(`, `a(){`), or, in the generated text (kept for files whose
//! comment names a map; ASCII lines only), where the function is assigned to that name (`a=function(`,
//! `a=(`, `a=async b=>`, `{a:(`); otherwise the generated name stays. Frames that become equal are merged and the stacks rebuilt (still a trie, ids in
//! first-use order); `Resolved::stack_map` says where each old stack went, so samples keep their order.
//!
//! [`MapCache`] keeps parsed maps and located comments across calls, keyed by path and the file's size,
//! modification time and inode (a rewritten file is read again), within [`CACHE_BUDGET`] bytes.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde::Serialize;
use sourcemap::DecodedMap;
use url::Url;

use crate::files::{self, ReadProblem};
use crate::trace::{Frame, ProfilerTrace, Stack, TraceBuilder};

/// Default cap on the bytes read of one file (generated script or map).
pub(crate) const DEFAULT_MAX_BYTES: u64 = 256 * 1024 * 1024;
/// What a [`MapCache`] keeps at most, counted in the memory its entries take once decoded (a map's
/// mappings, its strings; a generated file's text and line index), not in bytes of the files read. A
/// map or text that alone would take more is not decoded (a map: `mapTooLarge`) or not kept (a text).
pub(crate) const CACHE_BUDGET: u64 = 512 * 1024 * 1024;
/// What one call may read from disk in all: one file of `max_bytes`, plus this much per frame with a
/// position (a tiny trace naming many huge files must not cost minutes of reads).
pub(crate) const READ_BYTES_PER_FRAME: u64 = 1024 * 1024;
/// The memory one decoded mapping (segment) takes.
const TOKEN_BYTES: u64 = std::mem::size_of::<sourcemap::RawToken>() as u64;

/// A map the caller names for one resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExplicitMap {
    /// A filesystem path or a `file:` URL.
    Location(String),
    /// The map's JSON text.
    Text(String),
}

#[derive(Debug, Clone)]
pub struct MapOptions {
    /// resource string (exactly as in `trace.resources`) -> its map.
    pub explicit: HashMap<String, ExplicitMap>,
    /// Read the generated file for its `sourceMappingURL` comment.
    pub comments: bool,
    /// Look for `<file>.map` beside the file.
    pub adjacent: bool,
    /// Cap on the bytes read of one file.
    pub max_bytes: u64,
}

impl Default for MapOptions {
    fn default() -> Self {
        MapOptions {
            explicit: HashMap::new(),
            comments: true,
            adjacent: true,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

/// Why a frame was not mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Reason {
    /// The frame has no resource, line or column (builtins, native code).
    NoPosition,
    /// The resource is not a local file (`node:` internals, `http:`, `eval` code) and no map was named.
    NotAFile,
    /// No `sourceMappingURL` comment and no `.map` beside the file.
    NoMap,
    /// A map was named (comment or option) but there is no such file.
    MapNotFound,
    /// The map (or the generated file) could not be read: not a regular file, no permission, I/O error,
    /// a remote URL.
    MapUnreadable,
    /// The map (or the generated file) is larger than `max_bytes`.
    MapTooLarge,
    /// The map is not a valid source map (not JSON, bad mappings, a bad `data:` URL).
    MapInvalid,
    /// The map has no mapping with a source on the frame's generated line, at or before its column.
    NoMapping,
}

impl Reason {
    pub const ALL: [Reason; 8] = [
        Reason::NoPosition,
        Reason::NotAFile,
        Reason::NoMap,
        Reason::MapNotFound,
        Reason::MapUnreadable,
        Reason::MapTooLarge,
        Reason::MapInvalid,
        Reason::NoMapping,
    ];
}

/// Why a resource's map could not be used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    pub reason: Reason,
    pub message: String,
}

impl Failure {
    fn new(reason: Reason, message: impl Into<String>) -> Self {
        Failure {
            reason,
            message: message.into(),
        }
    }
}

/// What happened to one resource of the input trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceStats {
    pub resource: String,
    /// Where its map came from: a path, `"inline"` (a `data:` URL) or `"explicit"` (JSON text given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub map: Option<String>,
    /// Frames of this resource, and how many of them were mapped.
    pub frames: u32,
    pub mapped: u32,
    /// Why its map could not be used (absent when it was, even if some positions had no mapping).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Failure>,
}

/// How many frames of the input trace were mapped, and why the others were not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    pub frames: u32,
    pub mapped: u32,
    /// Every `Reason` (camelCase) with its count of frames, zeros included.
    pub unmapped: BTreeMap<Reason, u32>,
    /// One entry per resource of the input trace, in its order.
    pub resources: Vec<ResourceStats>,
}

/// The mapped tables (no samples) and where each old stack went.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub trace: ProfilerTrace,
    /// old stack id -> new stack id.
    pub stack_map: Vec<u32>,
    pub stats: Stats,
}

/// A file's identity as the filesystem sees it: a rewritten file has another one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    inode: u64,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(meta);
        #[cfg(not(unix))]
        let inode = 0;
        Stamp {
            len: meta.len(),
            modified: meta.modified().ok(),
            inode,
        }
    }
}

/// A decoded map and the URL its relative `sources` are resolved against.
struct LoadedMap {
    map: DecodedMap,
    base: Option<Url>,
    /// Where it came from, for [`ResourceStats::map`].
    origin: String,
}

type Loaded = std::result::Result<Arc<LoadedMap>, Failure>;

/// A generated file's text, kept (with its map) to find the names of assigned functions.
struct GeneratedText {
    bytes: Vec<u8>,
    /// Where each line starts, and whether it is all ASCII (the only lines names are looked for in:
    /// there a UTF-16 column is a byte offset; minifiers write ASCII).
    line_starts: Vec<usize>,
    ascii: Vec<bool>,
}

impl GeneratedText {
    fn new(bytes: Vec<u8>) -> GeneratedText {
        // Sized exactly (what the cache counts is what it holds).
        let mut line_starts = Vec::with_capacity(memchr::memchr_iter(b'\n', &bytes).count() + 1);
        line_starts.push(0);
        line_starts.extend(memchr::memchr_iter(b'\n', &bytes).map(|i| i + 1));
        let ascii = (0..line_starts.len())
            .map(|l| {
                let end = line_starts.get(l + 1).map_or(bytes.len(), |e| e - 1);
                bytes[line_starts[l]..end].is_ascii()
            })
            .collect();
        GeneratedText {
            bytes,
            line_starts,
            ascii,
        }
    }

    /// The memory a text of `bytes` with `lines` lines takes once indexed (its bytes, a start and a
    /// flag per line).
    fn memory_of(bytes: u64, lines: u64) -> u64 {
        bytes + lines * (std::mem::size_of::<usize>() as u64 + 1)
    }

    /// The memory it takes.
    fn memory(&self) -> u64 {
        Self::memory_of(self.bytes.len() as u64, self.line_starts.len() as u64)
    }

    /// Line `line` (0-based) without its line break, if it is all ASCII.
    fn ascii_line(&self, line: u32) -> Option<&[u8]> {
        let l = line as usize;
        if !*self.ascii.get(l)? {
            return None;
        }
        let end = self.line_starts.get(l + 1).map_or(self.bytes.len(), |e| e - 1);
        let text = &self.bytes[self.line_starts[l]..end];
        Some(text.strip_suffix(b"\r").unwrap_or(text))
    }
}

fn is_identifier_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}

/// Where the name a function is assigned to starts, when that name is `name`: the function (or an
/// arrow's parameters) at byte `at` of `line` follows `name =` or `name:`, with `function`, `function*`
/// and `async` allowed between (`a=function(`, `a=async(`, `a:(`, `a=b=>`).
fn assigned_name_start(line: &[u8], at: usize, name: &str) -> Option<usize> {
    let mut i = at.min(line.len());
    let skip_space = |i: &mut usize| {
        while *i > 0 && line[*i - 1].is_ascii_whitespace() {
            *i -= 1;
        }
    };
    let keyword = |i: usize, word: &[u8]| -> Option<usize> {
        let start = i.checked_sub(word.len())?;
        let whole = &line[start..i] == word && (start == 0 || !is_identifier_byte(line[start - 1]));
        whole.then_some(start)
    };
    skip_space(&mut i);
    if i > 0 && line[i - 1] == b'*' {
        i -= 1;
        skip_space(&mut i);
    }
    if let Some(start) = keyword(i, b"function") {
        i = start;
        skip_space(&mut i);
    }
    if let Some(start) = keyword(i, b"async") {
        i = start;
        skip_space(&mut i);
    }
    let op = *line.get(i.checked_sub(1)?)?;
    if op != b'=' && op != b':' {
        return None;
    }
    i -= 1;
    // `a==(`, `a+=(`, `a?b:(`…: not an assignment of a name.
    if op == b'=' && i > 0 && !(is_identifier_byte(line[i - 1]) || line[i - 1].is_ascii_whitespace()) {
        return None;
    }
    skip_space(&mut i);
    let end = i;
    while i > 0 && is_identifier_byte(line[i - 1]) {
        i -= 1;
    }
    let starts_clean = i == 0 || !(line[i - 1] == b'.' || line[i - 1] == b'?');
    (i < end && &line[i..end] == name.as_bytes() && starts_clean).then_some(i)
}

/// What the cache keeps of a generated file: its comment, and its text when it has a map.
#[derive(Clone)]
struct ScriptInfo {
    reference: ScriptRef,
    text: Option<Arc<GeneratedText>>,
}

/// A generated file's [`ScriptInfo`], or why it could not be read (kept too: a failure is not retried
/// while the file is unchanged).
type ScriptResult = std::result::Result<ScriptInfo, Failure>;

/// What a generated file says about its map.
#[derive(Clone)]
enum ScriptRef {
    /// No `sourceMappingURL` comment.
    None,
    /// A comment naming a map file (resolved against the script's URL once), or why it names none.
    Map(std::result::Result<PathBuf, Failure>),
    /// A `data:` URL comment, decoded.
    Inline(Loaded),
}

struct Entry<T> {
    stamp: Stamp,
    value: T,
    bytes: u64,
    used: u64,
}

#[derive(Default)]
struct CacheInner {
    maps: HashMap<PathBuf, Entry<Loaded>>,
    scripts: HashMap<PathBuf, Entry<ScriptResult>>,
    bytes: u64,
    /// At most this many bytes are kept ([`CACHE_BUDGET`] unless made with [`MapCache::with_budget`]).
    budget: u64,
    clock: u64,
    reads: u64,
}

/// Parsed maps and located comments, reused across calls while the files are unchanged.
pub struct MapCache {
    inner: Mutex<CacheInner>,
}

impl Default for MapCache {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for MapCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.lock();
        f.debug_struct("MapCache")
            .field("maps", &inner.maps.len())
            .field("scripts", &inner.scripts.len())
            .field("bytes", &inner.bytes)
            .finish()
    }
}

impl MapCache {
    pub fn new() -> Self {
        Self::with_budget(CACHE_BUDGET)
    }

    /// A cache that keeps at most `budget` bytes (counted in bytes of the files read).
    pub fn with_budget(budget: u64) -> Self {
        MapCache {
            inner: Mutex::new(CacheInner {
                budget,
                ..CacheInner::default()
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CacheInner> {
        // Only caches behind it: usable after a panic elsewhere.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What the cache keeps at most (bytes of memory).
    pub fn budget(&self) -> u64 {
        self.lock().budget
    }

    /// The memory its entries take now (as counted against the budget).
    pub fn bytes(&self) -> u64 {
        self.lock().bytes
    }

    /// How many files (scripts and maps) this cache has read from disk.
    pub fn reads(&self) -> u64 {
        self.lock().reads
    }

    /// Forgets everything read so far.
    pub fn clear(&self) {
        let mut inner = self.lock();
        inner.maps.clear();
        inner.scripts.clear();
        inner.bytes = 0;
    }

    /// The value kept for `path` in one of the cache's tables, if the file is still the same.
    fn get<T: Clone>(&self, table: Table<T>, path: &Path, stamp: Stamp) -> Option<T> {
        let mut inner = self.lock();
        inner.clock += 1;
        let now = inner.clock;
        let entry = table(&mut inner).get_mut(path).filter(|e| e.stamp == stamp)?;
        entry.used = now;
        Some(entry.value.clone())
    }

    /// Keeps `value` for this version of `path`, counting `bytes` against the budget.
    fn put<T>(&self, table: Table<T>, path: PathBuf, stamp: Stamp, value: T, bytes: u64) {
        let mut inner = self.lock();
        inner.clock += 1;
        let used = inner.clock;
        let entry = Entry {
            stamp,
            value,
            bytes,
            used,
        };
        if let Some(old) = table(&mut inner).insert(path, entry) {
            inner.bytes -= old.bytes;
        }
        inner.bytes += bytes;
        inner.evict();
    }

    fn count_read(&self) {
        self.lock().reads += 1;
    }
}

/// One of [`CacheInner`]'s tables.
type Table<T> = fn(&mut CacheInner) -> &mut HashMap<PathBuf, Entry<T>>;

fn maps_table(inner: &mut CacheInner) -> &mut HashMap<PathBuf, Entry<Loaded>> {
    &mut inner.maps
}

fn scripts_table(inner: &mut CacheInner) -> &mut HashMap<PathBuf, Entry<ScriptResult>> {
    &mut inner.scripts
}

impl CacheInner {
    /// Drops the least recently used entries until the cache is within its budget.
    fn evict(&mut self) {
        while self.bytes > self.budget {
            let oldest_map = self
                .maps
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(p, e)| (p.clone(), e.used));
            let oldest_script = self
                .scripts
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(p, e)| (p.clone(), e.used));
            let freed = match (oldest_map, oldest_script) {
                (Some((p, a)), Some((_, b))) if a <= b => self.maps.remove(&p).map(|e| e.bytes),
                (_, Some((p, _))) => self.scripts.remove(&p).map(|e| e.bytes),
                (Some((p, _)), None) => self.maps.remove(&p).map(|e| e.bytes),
                (None, None) => None,
            };
            match freed {
                Some(b) => self.bytes -= b,
                None => break,
            }
        }
    }
}

/// The local file a resource (or map location) names: a `file:` URL or an absolute path.
fn local_path(location: &str) -> Option<PathBuf> {
    if location.starts_with("file:") {
        return Url::parse(location).ok()?.to_file_path().ok();
    }
    let path = Path::new(location);
    path.is_absolute().then(|| path.to_path_buf())
}

fn file_url(path: &Path) -> Option<Url> {
    Url::from_file_path(path).ok()
}

/// The metadata of a regular file, or why it is not one.
fn regular_file(path: &Path, max_bytes: u64, what: &str) -> std::result::Result<std::fs::Metadata, Failure> {
    files::regular_metadata(path, max_bytes).map_err(|p| failure(p, path, what))
}

/// Reads a regular file of at most `max_bytes`, without blocking (see `files::read_regular`).
fn read_regular(path: &Path, max_bytes: u64, what: &str) -> std::result::Result<Vec<u8>, Failure> {
    files::read_regular(path, max_bytes).map_err(|p| failure(p, path, what))
}

fn failure(problem: ReadProblem, path: &Path, what: &str) -> Failure {
    let shown = path.display();
    match problem {
        ReadProblem::NotFound(e) => Failure::new(Reason::MapNotFound, format!("{what} {shown}: {e}")),
        ReadProblem::Unreadable(e) => Failure::new(Reason::MapUnreadable, format!("{what} {shown}: {e}")),
        ReadProblem::NotRegular => Failure::new(
            Reason::MapUnreadable,
            format!("{what} {shown} is not a regular file"),
        ),
        ReadProblem::TooLarge { len, max } => Failure::new(
            Reason::MapTooLarge,
            format!("{what} {shown} has {len} bytes or more, more than the limit of {max}"),
        ),
        ReadProblem::SizeLies { stated } => Failure::new(
            Reason::MapUnreadable,
            format!(
                "{what} {shown} states {stated} bytes but has more (a special file such as /proc, or it grew while read)"
            ),
        ),
    }
}

/// At most how much memory a map's text takes once decoded: a mapping per `,` or `;` followed by
/// something else than a separator or the string's end (an upper bound: those in its strings count
/// too; empty lines do not) plus its strings (at most its text).
fn decoded_bound(bytes: &[u8]) -> u64 {
    let segments = memchr::memchr2_iter(b',', b';', bytes)
        .filter(|&i| !matches!(bytes.get(i + 1), Some(b',' | b';' | b'"') | None))
        .count() as u64;
    (segments + 1) * TOKEN_BYTES + bytes.len() as u64
}

/// The memory a decoded map takes: its mappings and its strings (at most its text's length).
fn decoded_size(map: &DecodedMap, text_len: u64, bound: u64) -> u64 {
    match map {
        DecodedMap::Regular(m) => u64::from(m.get_token_count()) * TOKEN_BYTES + text_len,
        _ => bound,
    }
}

/// Decodes a map whose decoded form takes at most `limit` bytes (else `mapTooLarge`, not decoded). A
/// panic of the decoder on a hostile map makes that one map invalid, not the call. Also returns the
/// memory it takes.
fn decode_within(bytes: &[u8], base: Option<Url>, origin: String, limit: u64) -> (Loaded, u64) {
    let bound = decoded_bound(bytes);
    if bound > limit {
        let mib = |b: u64| b.div_ceil(1024 * 1024);
        let failure = Failure::new(
            Reason::MapTooLarge,
            format!(
                "{origin}: would take up to {} MiB once decoded, more than the source-map cache's budget of {} MiB",
                mib(bound),
                mib(limit)
            ),
        );
        return (Err(failure), 64);
    }
    let loaded = decode(bytes, base, origin);
    let size = match &loaded {
        Ok(m) => decoded_size(&m.map, bytes.len() as u64, bound),
        Err(_) => 64,
    };
    (loaded, size)
}

/// Decodes a map. A panic of the decoder on a hostile map makes that one map invalid, not the call.
fn decode(bytes: &[u8], base: Option<Url>, origin: String) -> Loaded {
    let decoded = std::panic::catch_unwind(|| sourcemap::decode_slice(bytes));
    match decoded {
        Ok(Ok(map)) => Ok(Arc::new(LoadedMap { map, base, origin })),
        Ok(Err(e)) => Err(Failure::new(
            Reason::MapInvalid,
            format!("{origin}: not a valid source map: {e}"),
        )),
        Err(_) => Err(Failure::new(
            Reason::MapInvalid,
            format!("{origin}: not a valid source map (the decoder failed on it)"),
        )),
    }
}

/// The bytes of a `data:` URL (RFC 2397): base64 or percent-encoded.
fn data_url_bytes(url: &str) -> std::result::Result<Vec<u8>, String> {
    let rest = url
        .get(5..)
        .filter(|_| url[..5].eq_ignore_ascii_case("data:"))
        .ok_or("not a data: URL")?;
    let (header, data) = rest.split_once(',').ok_or("a data: URL without ','")?;
    let mut params = header.split(';');
    let media = params.next().unwrap_or("").trim().to_ascii_lowercase();
    if !(media.is_empty() || media == "application/json" || media == "text/json" || media.ends_with("+json"))
    {
        return Err(format!("a data: URL of type {media}, not application/json"));
    }
    let base64 = params.any(|p| p.trim().eq_ignore_ascii_case("base64"));
    let decoded: Vec<u8> = percent_encoding::percent_decode_str(data).collect();
    if !base64 {
        return Ok(decoded);
    }
    let text: Vec<u8> = decoded
        .into_iter()
        .filter(|b| !b.is_ascii_whitespace() && *b != b'=')
        .collect();
    data_encoding::BASE64_NOPAD
        .decode(&text)
        .map_err(|e| format!("bad base64 in a data: URL: {e}"))
}

fn decode_data_url(url: &str, base: Option<Url>, limit: u64) -> (Loaded, u64) {
    match data_url_bytes(url) {
        Ok(bytes) => decode_within(&bytes, base, "inline".to_owned(), limit),
        Err(message) => (
            Err(Failure::new(Reason::MapInvalid, format!("inline map: {message}"))),
            64,
        ),
    }
}

/// The URL of the last `//# sourceMappingURL=` (or `//@`) comment of a script.
fn find_comment(script: &[u8]) -> Option<String> {
    const KEY: &[u8] = b"sourceMappingURL=";
    let finder = memchr::memmem::FinderRev::new(KEY);
    let mut end = script.len();
    while let Some(at) = finder.rfind(&script[..end]) {
        end = at;
        let line_start = memchr::memrchr(b'\n', &script[..at]).map_or(0, |i| i + 1);
        let Ok(before) = std::str::from_utf8(&script[line_start..at]) else {
            continue;
        };
        let before = before.trim();
        let is_comment = ["//#", "//@"]
            .iter()
            .any(|p| before.strip_prefix(p).is_some_and(|rest| rest.is_empty()));
        if !is_comment {
            continue;
        }
        let value_start = at + KEY.len();
        let line_end =
            memchr::memchr2(b'\n', b'\r', &script[value_start..]).map_or(script.len(), |i| value_start + i);
        let Ok(value) = std::str::from_utf8(&script[value_start..line_end]) else {
            continue;
        };
        let value = value.trim();
        if value.is_empty() || value.contains(char::is_whitespace) {
            continue;
        }
        return Some(value.to_owned());
    }
    None
}

/// Finds, reads and decodes maps, through the cache.
struct Loader<'a> {
    options: &'a MapOptions,
    cache: &'a MapCache,
    /// Bytes this call may still read from disk, of `read_budget` in all.
    read_left: std::cell::Cell<u64>,
    read_budget: u64,
    /// Files this call could not use (a script or a map), so none is tried twice.
    failed: std::cell::RefCell<HashMap<(bool, PathBuf), Failure>>,
}

impl Loader<'_> {
    /// The map of a resource, or why there is none, and the resource's text when it was read.
    fn map_of(&self, resource: &str) -> (Loaded, Option<Arc<GeneratedText>>) {
        let mut text = None;
        let loaded = self.find_map(resource, &mut text);
        (loaded, text)
    }

    fn find_map(&self, resource: &str, text: &mut Option<Arc<GeneratedText>>) -> Loaded {
        if let Some(explicit) = self.options.explicit.get(resource) {
            // Map text given for a resource: its relative sources are relative to the resource itself
            // (a local file's URL, or the resource's own URL: `https://cdn/app.js` + `src/a.ts`).
            let base = match local_path(resource) {
                Some(path) => file_url(&path),
                None => Url::parse(resource).ok(),
            };
            return match explicit {
                ExplicitMap::Text(text) => {
                    decode_within(text.as_bytes(), base, "explicit".to_owned(), self.cache.budget()).0
                }
                ExplicitMap::Location(location) => match local_path(location) {
                    Some(path) => self.map_file(&path),
                    None => Err(Failure::new(
                        Reason::MapUnreadable,
                        format!("map {location} is neither an absolute path nor a file: URL"),
                    )),
                },
            };
        }
        let Some(script) = local_path(resource) else {
            return Err(Failure::new(Reason::NotAFile, "not a local file"));
        };
        let mut script_problem = None;
        if self.options.comments {
            match self.script_info(&script) {
                Ok(info) => {
                    *text = info.text;
                    match info.reference {
                        ScriptRef::Inline(loaded) => return loaded,
                        ScriptRef::Map(path) => return path.and_then(|p| self.map_file(&p)),
                        ScriptRef::None => {}
                    }
                }
                Err(failure) => script_problem = Some(failure),
            }
        }
        if self.options.adjacent {
            let mut beside = script.clone().into_os_string();
            beside.push(".map");
            let beside = PathBuf::from(beside);
            match self.map_file(&beside) {
                Err(f) if f.reason == Reason::MapNotFound => {}
                other => return other,
            }
        }
        let mut message = String::from("no sourceMappingURL comment and no .map beside the file");
        if let Some(problem) = script_problem {
            message = format!("{message} ({})", problem.message);
        }
        Err(Failure::new(Reason::NoMap, message))
    }

    /// The map file a comment's URL names, resolved against the script's URL.
    fn referenced(script: &Path, url: &str) -> std::result::Result<PathBuf, Failure> {
        let resolved = file_url(script).and_then(|base| base.join(url).ok());
        match resolved {
            Some(u) if u.scheme() == "file" => u
                .to_file_path()
                .map_err(|()| Failure::new(Reason::MapUnreadable, format!("map {u} is not a local path"))),
            Some(u) => Err(Failure::new(
                Reason::MapUnreadable,
                format!("map {u} is not a local file (only file: maps are read)"),
            )),
            None => Err(Failure::new(
                Reason::MapInvalid,
                format!("sourceMappingURL {url:?} is not a URL"),
            )),
        }
    }

    /// Takes `len` bytes from what this call may read, or says why not.
    fn take_read(&self, len: u64, path: &Path, what: &str) -> std::result::Result<(), Failure> {
        let left = self.read_left.get();
        if len > left {
            return Err(Failure::new(
                Reason::MapTooLarge,
                format!(
                    "{what} {} not read: its {len} bytes would take this trace's reads past {} bytes (one file of the limit plus {} per frame with a position)",
                    path.display(),
                    self.read_budget,
                    READ_BYTES_PER_FRAME
                ),
            ));
        }
        self.read_left.set(left - len);
        Ok(())
    }

    /// Reads a file, within the per-file limit and this call's read budget (what it reads counts, a
    /// file whose size lies costs at most a byte more than it states).
    fn read(
        &self,
        path: &Path,
        meta: &std::fs::Metadata,
        what: &str,
    ) -> std::result::Result<Vec<u8>, Failure> {
        self.take_read(meta.len().saturating_add(1), path, what)?;
        let bytes = read_regular(path, self.options.max_bytes, what);
        // Refund what was not read (a file that shrank, or a failure before reading).
        let read = bytes.as_ref().map_or(0, |b| b.len() as u64);
        let unread = meta.len().saturating_add(1).saturating_sub(read);
        self.read_left.set(self.read_left.get().saturating_add(unread));
        bytes
    }

    /// A failure this call already met for a script (`false`) or a map (`true`), or runs `f` and
    /// remembers its failure.
    fn once<T>(
        &self,
        is_map: bool,
        path: &Path,
        f: impl FnOnce() -> std::result::Result<T, Failure>,
    ) -> std::result::Result<T, Failure> {
        let key = (is_map, path.to_path_buf());
        if let Some(failure) = self.failed.borrow().get(&key) {
            return Err(failure.clone());
        }
        let result = f();
        if let Err(failure) = &result {
            self.failed.borrow_mut().insert(key, failure.clone());
        }
        result
    }

    /// What a script's comment says (and its text, when it names a map), read once per version of
    /// the file (a failure too).
    fn script_info(&self, script: &Path) -> std::result::Result<ScriptInfo, Failure> {
        self.once(false, script, || {
            let meta = regular_file(script, self.options.max_bytes, "script")?;
            let stamp = Stamp::of(&meta);
            if let Some(known) = self.cache.get(scripts_table, script, stamp) {
                return known;
            }
            let bytes = match self.read(script, &meta, "script") {
                Ok(bytes) => bytes,
                Err(failure) if failure.reason == Reason::MapTooLarge => return Err(failure),
                Err(failure) => {
                    // Kept for this version of the file: not read again while it is unchanged.
                    let path = script.to_path_buf();
                    self.cache
                        .put(scripts_table, path, stamp, Err(failure.clone()), 64);
                    return Err(failure);
                }
            };
            self.cache.count_read();
            let budget = self.cache.budget();
            let mut kept = 64;
            let reference = match find_comment(&bytes) {
                None => ScriptRef::None,
                Some(url) if url.len() >= 5 && url[..5].eq_ignore_ascii_case("data:") => {
                    let (loaded, size) = decode_data_url(&url, file_url(script), budget);
                    kept += size;
                    ScriptRef::Inline(loaded)
                }
                Some(url) => ScriptRef::Map(Self::referenced(script, &url)),
            };
            // The text (for names of assigned functions) only when it has a map and fits the budget
            // beside it.
            let lines = memchr::memchr_iter(b'\n', &bytes).count() as u64 + 1;
            let text_memory = GeneratedText::memory_of(bytes.len() as u64, lines);
            let text = match reference {
                ScriptRef::None => None,
                _ if kept + text_memory > budget => None,
                _ => {
                    let text = GeneratedText::new(bytes);
                    kept += text.memory();
                    Some(Arc::new(text))
                }
            };
            let info = ScriptInfo { reference, text };
            let path = script.to_path_buf();
            self.cache.put(scripts_table, path, stamp, Ok(info.clone()), kept);
            Ok(info)
        })
    }

    /// A map file, read and decoded once per version of the file (a failure too).
    fn map_file(&self, path: &Path) -> Loaded {
        self.once(true, path, || {
            let meta = regular_file(path, self.options.max_bytes, "map")?;
            let stamp = Stamp::of(&meta);
            if let Some(known) = self.cache.get(maps_table, path, stamp) {
                return known;
            }
            let (loaded, size) = match self.read(path, &meta, "map") {
                Ok(bytes) => {
                    self.cache.count_read();
                    let origin = path.display().to_string();
                    decode_within(&bytes, file_url(path), origin, self.cache.budget())
                }
                Err(failure) if failure.reason == Reason::MapTooLarge => return Err(failure),
                Err(failure) => (Err(failure), 64),
            };
            self.cache
                .put(maps_table, path.to_path_buf(), stamp, loaded.clone(), size);
            loaded
        })
    }
}

/// Where a frame goes in the original source.
struct Original {
    /// Its resource's id in the new trace.
    resource_id: u32,
    line: u32,
    column: u32,
    name: Option<String>,
}

fn utf16_len(s: &str) -> u32 {
    s.encode_utf16().count() as u32
}

impl LoadedMap {
    /// The original position of a generated one (0-based), and the original name of `generated_name`.
    /// `sources` remembers each source's resource id in `builder`.
    fn lookup(
        &self,
        line: u32,
        column: u32,
        generated_name: &str,
        sources: &mut foldhash::HashMap<String, u32>,
        builder: &mut TraceBuilder,
        text: Option<&GeneratedText>,
    ) -> Option<Original> {
        let token = self.map.lookup_token(line, column)?;
        if token.get_dst_line() != line || !token.has_source() || token.get_src_line() == u32::MAX {
            return None;
        }
        let source = token.get_source()?;
        let resource_id = match sources.get(source) {
            Some(&id) => id,
            None => {
                let id = builder.resource_id(&self.source_url(source));
                sources.insert(source.to_owned(), id);
                id
            }
        };
        let name = self.original_name(line, column, generated_name, text);
        Some(Original {
            resource_id,
            line: token.get_src_line().saturating_add(1),
            column: token.get_src_col().saturating_add(1),
            name,
        })
    }

    /// The map's name for `generated_name`, from the mapping that starts exactly where that name is
    /// written: right before the function's `(` (`function a(`, `a(){`), else, with the generated text,
    /// where the function is assigned to it (`a=function(`, `a=(`, `a:(`).
    fn original_name(
        &self,
        line: u32,
        column: u32,
        generated_name: &str,
        text: Option<&GeneratedText>,
    ) -> Option<String> {
        let name_at = |start: u32| {
            self.map
                .lookup_token(line, start)
                .filter(|t| t.get_dst() == (line, start))
                .and_then(|t| t.get_name())
                .filter(|n| !n.is_empty())
                .map(str::to_owned)
        };
        let name_len = utf16_len(generated_name);
        if name_len == 0 {
            return None;
        }
        if let Some(name) = column.checked_sub(name_len).and_then(name_at) {
            return Some(name);
        }
        let source_line = text?.ascii_line(line)?;
        let start = assigned_name_start(source_line, column as usize, generated_name)?;
        name_at(start as u32)
    }

    /// A `sources` entry (with `sourceRoot` already prefixed by the crate) as a resource string.
    fn source_url(&self, source: &str) -> String {
        if let Ok(absolute) = Url::parse(source) {
            // `webpack://app/./x` stays as written; `file:` URLs come out normalized.
            return if absolute.scheme() == "file" {
                absolute.to_string()
            } else {
                source.to_owned()
            };
        }
        if Path::new(source).is_absolute() {
            if let Some(u) = file_url(Path::new(source)) {
                return u.to_string();
            }
        }
        match self.base.as_ref().and_then(|b| b.join(source).ok()) {
            Some(u) => u.to_string(),
            None => source.to_owned(),
        }
    }
}

/// Maps every frame of `tables` (a valid trace: see [`ProfilerTrace::validate`]; its samples are not
/// looked at) whose map can be found, through `cache`.
pub fn resolve(tables: &ProfilerTrace, options: &MapOptions, cache: &MapCache) -> Resolved {
    let positioned = tables
        .frames
        .iter()
        .filter(|f| f.resource_id.is_some() && f.line.is_some() && f.column.is_some())
        .count() as u64;
    let read_budget = options
        .max_bytes
        .saturating_add(1)
        .saturating_add(positioned.saturating_mul(READ_BYTES_PER_FRAME));
    let loader = Loader {
        options,
        cache,
        read_left: std::cell::Cell::new(read_budget),
        read_budget,
        failed: std::cell::RefCell::default(),
    };
    let mut unmapped: BTreeMap<Reason, u32> = Reason::ALL.iter().map(|r| (*r, 0)).collect();
    let mut resources: Vec<ResourceStats> = tables
        .resources
        .iter()
        .map(|r| ResourceStats {
            resource: r.clone(),
            map: None,
            frames: 0,
            mapped: 0,
            error: None,
        })
        .collect();
    let mut maps: Vec<Option<(Loaded, Option<Arc<GeneratedText>>)>> = vec![None; tables.resources.len()];
    let mut sources: Vec<foldhash::HashMap<String, u32>> =
        vec![foldhash::HashMap::default(); tables.resources.len()];
    let mut builder = TraceBuilder::new();
    let mut frame_map = Vec::with_capacity(tables.frames.len());
    let mut mapped = 0u32;
    for frame in &tables.frames {
        let outcome = match (frame.resource_id, frame.line, frame.column) {
            (Some(r), Some(line), Some(column)) if line > 0 && column > 0 => {
                let r = r as usize;
                resources[r].frames += 1;
                let (loaded, text) = maps[r].get_or_insert_with(|| loader.map_of(&tables.resources[r]));
                match loaded {
                    Ok(map) => {
                        resources[r].map.get_or_insert_with(|| map.origin.clone());
                        match map.lookup(
                            line - 1,
                            column - 1,
                            &frame.name,
                            &mut sources[r],
                            &mut builder,
                            text.as_deref(),
                        ) {
                            Some(original) => {
                                resources[r].mapped += 1;
                                Ok(original)
                            }
                            None => Err(Reason::NoMapping),
                        }
                    }
                    Err(failure) => {
                        resources[r].error.get_or_insert_with(|| failure.clone());
                        Err(failure.reason)
                    }
                }
            }
            (Some(r), _, _) => {
                resources[r as usize].frames += 1;
                Err(Reason::NoPosition)
            }
            _ => Err(Reason::NoPosition),
        };
        let new_frame = match outcome {
            Ok(original) => {
                mapped += 1;
                Frame {
                    name: original.name.unwrap_or_else(|| frame.name.clone()),
                    resource_id: Some(original.resource_id),
                    line: Some(original.line),
                    column: Some(original.column),
                }
            }
            Err(reason) => {
                *unmapped.entry(reason).or_default() += 1;
                Frame {
                    name: frame.name.clone(),
                    resource_id: frame
                        .resource_id
                        .map(|r| builder.resource_id(&tables.resources[r as usize])),
                    line: frame.line,
                    column: frame.column,
                }
            }
        };
        frame_map.push(new_frame);
    }
    // Frames and stacks in the order the old stacks use them (parents come before children there).
    let mut frame_ids: Vec<Option<u32>> = vec![None; frame_map.len()];
    let frame_count = frame_map.len();
    let mut frames_in_order = frame_map.into_iter().map(Some).collect::<Vec<_>>();
    let mut frame_id = |builder: &mut TraceBuilder, old: usize| -> u32 {
        if let Some(id) = frame_ids[old] {
            return id;
        }
        let frame = frames_in_order[old].take().expect("each frame is taken once");
        let id = builder.frame_id(frame);
        frame_ids[old] = Some(id);
        id
    };
    let order = stack_order(&tables.stacks);
    let mut new_ids = vec![0u32; tables.stacks.len()];
    for old in order {
        let s = &tables.stacks[old];
        let frame = frame_id(&mut builder, s.frame_id as usize);
        let parent = s.parent_id.map(|p| new_ids[p as usize]);
        new_ids[old] = builder.stack_id(frame, parent);
    }
    // Frames no stack uses stay in the table too.
    for old in 0..frame_count {
        frame_id(&mut builder, old);
    }
    let trace = builder.finish();
    Resolved {
        trace: ProfilerTrace {
            samples: Vec::new(),
            ..trace
        },
        stack_map: new_ids,
        stats: Stats {
            frames: tables.frames.len() as u32,
            mapped,
            unmapped,
            resources,
        },
    }
}

/// The stacks in an order where every parent comes before its children (the input's own order when it
/// already is, as in every trace jsprof makes). The stacks are acyclic (validated).
fn stack_order(stacks: &[Stack]) -> Vec<usize> {
    let in_order = stacks
        .iter()
        .enumerate()
        .all(|(i, s)| s.parent_id.is_none_or(|p| (p as usize) < i));
    if in_order {
        return (0..stacks.len()).collect();
    }
    let mut done = vec![false; stacks.len()];
    let mut order = Vec::with_capacity(stacks.len());
    for start in 0..stacks.len() {
        let mut chain = Vec::new();
        let mut at = Some(start);
        while let Some(i) = at.filter(|i| !done[*i]) {
            chain.push(i);
            at = stacks[i].parent_id.map(|p| p as usize);
        }
        for i in chain.into_iter().rev() {
            done[i] = true;
            order.push(i);
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::TraceSample;
    use sourcemap::SourceMapBuilder;

    /// (dst_line, dst_col, src_line, src_col, source, name), all 0-based.
    type Mapping<'a> = (u32, u32, u32, u32, &'a str, Option<&'a str>);

    fn map_json(mappings: &[Mapping], source_root: Option<&str>) -> String {
        let mut b = SourceMapBuilder::new(Some("out.js"));
        if let Some(root) = source_root {
            b.set_source_root(Some(root));
        }
        for &(dl, dc, sl, sc, source, name) in mappings {
            b.add(dl, dc, sl, sc, Some(source), name, false);
        }
        let mut out = Vec::new();
        b.into_sourcemap().to_writer(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn frame(name: &str, resource: u32, line: u32, column: u32) -> Frame {
        Frame {
            name: name.into(),
            resource_id: Some(resource),
            line: Some(line),
            column: Some(column),
        }
    }

    fn url(path: &Path) -> String {
        Url::from_file_path(path).unwrap().to_string()
    }

    /// A trace of `frames`, one stack per frame chained root -> leaf, and one sample per stack.
    fn chain(resources: Vec<String>, frames: Vec<Frame>) -> ProfilerTrace {
        let stacks: Vec<Stack> = (0..frames.len() as u32)
            .map(|i| Stack {
                frame_id: i,
                parent_id: i.checked_sub(1),
            })
            .collect();
        let samples = (0..stacks.len() as u32)
            .map(|i| TraceSample {
                timestamp: i as f64,
                stack_id: Some(i),
                marker: None,
            })
            .collect();
        ProfilerTrace {
            jsprof: None,
            resources,
            frames,
            stacks,
            samples,
        }
    }

    fn reason_counts(stats: &Stats) -> Vec<(Reason, u32)> {
        stats
            .unmapped
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(r, n)| (*r, *n))
            .collect()
    }

    #[test]
    fn maps_positions_names_and_resolves_sources_against_the_map() {
        let dir = tempfile::tempdir().unwrap();
        let dist = dir.path().join("dist");
        std::fs::create_dir(&dist).unwrap();
        let script = dist.join("app.js");
        // generated: line 0 `function a(b){` name `a` at col 9, `(` at col 10; line 2 `x(` unmapped col.
        std::fs::write(
            &script,
            "function a(b){}\n\n  x()\n//# sourceMappingURL=maps/app.js.map\n",
        )
        .unwrap();
        std::fs::create_dir(dist.join("maps")).unwrap();
        let json = map_json(
            &[
                (0, 0, 4, 7, "../../src/app.ts", None),
                (0, 9, 4, 16, "../../src/app.ts", Some("handleRequest")),
                (0, 10, 4, 29, "../../src/app.ts", None),
                (2, 5, 9, 0, "../../src/app.ts", None),
            ],
            None,
        );
        std::fs::write(dist.join("maps/app.js.map"), json).unwrap();
        let trace = chain(
            vec![url(&script), "node:internal/x".into()],
            vec![
                frame("a", 0, 1, 11),
                frame("x", 0, 3, 3), // before the line's first mapping
                frame("run", 1, 5, 5),
                Frame {
                    name: "now".into(),
                    resource_id: None,
                    line: None,
                    column: None,
                },
            ],
        );
        let cache = MapCache::new();
        let out = resolve(&trace, &MapOptions::default(), &cache);
        let src = url(&dir.path().join("src/app.ts"));
        assert_eq!(out.trace.frames[0], frame("handleRequest", 0, 5, 30));
        assert_eq!(out.trace.resources[0], src);
        assert_eq!(out.trace.frames[1], frame("x", 1, 3, 3));
        assert_eq!(out.trace.resources[1], url(&script));
        assert_eq!(out.stats.mapped, 1);
        assert_eq!(
            reason_counts(&out.stats),
            vec![
                (Reason::NoPosition, 1),
                (Reason::NotAFile, 1),
                (Reason::NoMapping, 1)
            ]
        );
        let r = &out.stats.resources[0];
        assert_eq!((r.frames, r.mapped, r.error.is_none()), (2, 1, true));
        assert_eq!(
            r.map.as_deref(),
            Some(dist.join("maps/app.js.map").to_str().unwrap())
        );
        assert_eq!(
            out.stats.resources[1].error.as_ref().unwrap().reason,
            Reason::NotAFile
        );
        assert_eq!(out.stack_map, vec![0, 1, 2, 3]);
    }

    #[test]
    fn names_are_taken_only_from_a_mapping_that_ends_at_the_frame_position() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("b.js");
        // `var q=function(t){}`: the name `q` (col 4) does not end at `(` (col 14), and without a
        // sourceMappingURL comment the text is not kept to look further: the name stays.
        std::fs::write(&script, "var q=function(t){}").unwrap();
        let json = map_json(
            &[
                (0, 4, 0, 6, "s.ts", Some("original")),
                (0, 14, 0, 20, "s.ts", None),
            ],
            Some("https://example.com/root/"),
        );
        std::fs::write(dir.path().join("b.js.map"), json).unwrap();
        let trace = chain(
            vec![url(&script)],
            vec![frame("q", 0, 1, 15), frame("", 0, 1, 15)],
        );
        let out = resolve(&trace, &MapOptions::default(), &MapCache::new());
        assert_eq!(
            out.trace.resources,
            vec!["https://example.com/root/s.ts".to_string()]
        );
        assert_eq!(out.trace.frames[0], frame("q", 0, 1, 21));
        assert_eq!(out.trace.frames[1], frame("", 0, 1, 21));
    }

    #[test]
    fn names_of_assigned_functions_come_from_the_generated_text() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("n.js");
        let lines = [
            "var q=function(t){}",   // q at 4, `(` at 14
            "f(q,function(t){})",    // q at 2 is an argument, not a name: `(` at 12
            "var d=async e=>e",      // d at 4, the arrow starts at its parameter, 12
            "o={k:(t)=>t}",          // k at 3, `(` at 5
            "a==(t)",                // a comparison, `(` at 3
            "var \u{e9}=1,x=(t)=>t", // not ASCII (not looked into): x at 8, `(` at 10
        ];
        std::fs::write(
            &script,
            format!("{}\n//# sourceMappingURL=n.js.map\n", lines.join("\n")),
        )
        .unwrap();
        let json = map_json(
            &[
                (0, 4, 0, 0, "s.ts", Some("handler")),
                (0, 14, 0, 9, "s.ts", None),
                (1, 2, 1, 0, "s.ts", Some("nope")),
                (1, 12, 1, 9, "s.ts", None),
                (2, 4, 2, 0, "s.ts", Some("arrow")),
                (2, 12, 2, 9, "s.ts", None),
                (3, 3, 3, 0, "s.ts", Some("key")),
                (3, 5, 3, 9, "s.ts", None),
                (4, 0, 4, 0, "s.ts", Some("nope")),
                (4, 3, 4, 9, "s.ts", None),
                (5, 8, 5, 0, "s.ts", Some("nope")),
                (5, 10, 5, 9, "s.ts", None),
            ],
            None,
        );
        std::fs::write(dir.path().join("n.js.map"), json).unwrap();
        let frames = vec![
            frame("q", 0, 1, 15),
            frame("", 0, 1, 15),
            frame("q", 0, 2, 13),
            frame("d", 0, 3, 13),
            frame("k", 0, 4, 6),
            frame("a", 0, 5, 4),
            frame("x", 0, 6, 11),
        ];
        let out = resolve(
            &chain(vec![url(&script)], frames),
            &MapOptions::default(),
            &MapCache::new(),
        );
        let names: Vec<&str> = out.trace.frames.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["handler", "", "q", "arrow", "key", "a", "x"]);
        assert_eq!(out.stats.mapped, 7);
    }

    #[test]
    fn assigned_name_start_reads_only_assignments_of_that_name() {
        let at = |line: &str, name: &str| {
            assigned_name_start(line.as_bytes(), line.find(['(', 'e']).unwrap(), name)
        };
        assert_eq!(at("var q=function(", "q"), Some(4));
        assert_eq!(at("q = async function* (", "q"), Some(0));
        assert_eq!(at("{k:(", "k"), Some(1));
        assert_eq!(at("x.q=(", "q"), None, "a member: V8 names it x.q");
        assert_eq!(at("q+=(", "q"), None);
        assert_eq!(at("q=(", "r"), None);
        assert_eq!(at("asyncq=(", "asyncq"), Some(0));
        assert_eq!(assigned_name_start(b"", 0, "q"), None);
        assert_eq!(assigned_name_start(b"=(", 1, "q"), None);
    }

    #[test]
    fn frames_that_become_equal_are_merged_and_stacks_renumbered() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("c.js");
        std::fs::write(&script, "f(){}g(){}").unwrap();
        // Two generated functions from one original position (inlined copies, say).
        let json = map_json(
            &[
                (0, 1, 2, 3, "webpack://app/./src/c.ts", None),
                (0, 6, 2, 3, "webpack://app/./src/c.ts", None),
            ],
            None,
        );
        std::fs::write(dir.path().join("c.js.map"), json).unwrap();
        // stacks: 0 = f, 1 = g (both roots); 2 = f -> f
        let trace = ProfilerTrace {
            jsprof: None,
            resources: vec![url(&script)],
            frames: vec![frame("h", 0, 1, 2), frame("h", 0, 1, 7)],
            stacks: vec![
                Stack {
                    frame_id: 0,
                    parent_id: None,
                },
                Stack {
                    frame_id: 1,
                    parent_id: None,
                },
                Stack {
                    frame_id: 0,
                    parent_id: Some(1),
                },
            ],
            samples: vec![],
        };
        let out = resolve(&trace, &MapOptions::default(), &MapCache::new());
        assert_eq!(out.trace.frames, vec![frame("h", 0, 3, 4)]);
        assert_eq!(out.trace.resources, vec!["webpack://app/./src/c.ts".to_string()]);
        assert_eq!(out.stack_map, vec![0, 0, 1]);
        assert_eq!(
            out.trace.stacks,
            vec![
                Stack {
                    frame_id: 0,
                    parent_id: None
                },
                Stack {
                    frame_id: 0,
                    parent_id: Some(0)
                }
            ]
        );
    }

    #[test]
    fn stacks_listed_children_first_are_rebuilt_parents_first() {
        let stacks = vec![
            Stack {
                frame_id: 0,
                parent_id: Some(2),
            },
            Stack {
                frame_id: 0,
                parent_id: None,
            },
            Stack {
                frame_id: 0,
                parent_id: Some(1),
            },
        ];
        assert_eq!(stack_order(&stacks), vec![1, 2, 0]);
    }

    #[test]
    fn inline_maps_base64_and_percent_encoded() {
        let dir = tempfile::tempdir().unwrap();
        let json = map_json(&[(0, 0, 1, 2, "orig.ts", None)], None);
        let b64 = data_encoding::BASE64.encode(json.as_bytes());
        let pct: String =
            percent_encoding::utf8_percent_encode(&json, percent_encoding::NON_ALPHANUMERIC).to_string();
        let mut resources = Vec::new();
        for (i, comment) in [
            format!("data:application/json;charset=utf-8;base64,{b64}"),
            format!("data:application/json,{pct}"),
            "data:application/json;base64,!!!".to_string(),
            "data:text/html,<p>".to_string(),
        ]
        .iter()
        .enumerate()
        {
            let script = dir.path().join(format!("i{i}.js"));
            // An earlier comment inside code must not win: the last one does.
            std::fs::write(
                &script,
                format!("f()\nvar s='//# sourceMappingURL=nope.map'\n//# sourceMappingURL={comment}\n"),
            )
            .unwrap();
            resources.push(url(&script));
        }
        let frames = (0..4).map(|r| frame("f", r, 1, 2)).collect();
        let out = resolve(
            &chain(resources, frames),
            &MapOptions::default(),
            &MapCache::new(),
        );
        let orig = url(&dir.path().join("orig.ts"));
        assert_eq!(out.trace.resources[0], orig);
        assert_eq!(out.trace.frames[0], frame("f", 0, 2, 3));
        let frame_of_stack = |old: usize| out.trace.stacks[out.stack_map[old] as usize].frame_id;
        assert_eq!(
            frame_of_stack(1),
            0,
            "percent-encoded map: the same original frame, merged"
        );
        assert_eq!(out.stats.mapped, 2);
        assert_eq!(out.stats.resources[0].map.as_deref(), Some("inline"));
        for r in &out.stats.resources[2..] {
            assert_eq!(r.error.as_ref().unwrap().reason, Reason::MapInvalid, "{r:?}");
        }
    }

    #[test]
    fn missing_broken_oversized_and_special_files_are_reasons_not_errors() {
        let dir = tempfile::tempdir().unwrap();
        let mk = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            url(&p)
        };
        let good = map_json(&[(0, 0, 0, 0, "a.ts", None)], None);
        std::fs::write(
            dir.path().join("broken.js.map"),
            "{\"version\":3,\"mappings\":\"!!\"",
        )
        .unwrap();
        std::fs::write(dir.path().join("big.js.map"), &good).unwrap();
        std::fs::create_dir(dir.path().join("dir.map")).unwrap();
        let resources = vec![
            mk("plain.js", "f()"),
            mk("missing.js", "f()\n//# sourceMappingURL=gone.js.map"),
            mk("broken.js", "f()"),
            mk("big.js", "f()"),
            mk("dir.js", "f()\n//# sourceMappingURL=dir.map"),
            mk("remote.js", "f()\n//# sourceMappingURL=https://cdn.example/x.map"),
            url(&dir.path().join("no-such-script.js")),
        ];
        let frames = (0..resources.len() as u32).map(|r| frame("f", r, 1, 1)).collect();
        let options = MapOptions {
            max_bytes: good.len() as u64 - 1,
            ..MapOptions::default()
        };
        let out = resolve(&chain(resources, frames), &options, &MapCache::new());
        let reasons: Vec<Reason> = out
            .stats
            .resources
            .iter()
            .map(|r| r.error.as_ref().unwrap().reason)
            .collect();
        assert_eq!(
            reasons,
            vec![
                Reason::NoMap,
                Reason::MapNotFound,
                Reason::MapInvalid,
                Reason::MapTooLarge,
                Reason::MapUnreadable,
                Reason::MapUnreadable,
                Reason::NoMap,
            ]
        );
        assert_eq!(out.stats.mapped, 0);
        assert_eq!(out.trace.frames.len(), 7, "every frame stays as it was");
        assert!(out.stats.resources[1]
            .error
            .as_ref()
            .unwrap()
            .message
            .contains("gone.js.map"));
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_never_opened_for_reading() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("f.js");
        std::fs::write(&script, "f()").unwrap();
        let fifo = dir.path().join("f.js.map");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let out = resolve(
            &chain(vec![url(&script)], vec![frame("f", 0, 1, 1)]),
            &MapOptions::default(),
            &MapCache::new(),
        );
        let error = out.stats.resources[0].error.clone().unwrap();
        assert_eq!(error.reason, Reason::MapUnreadable);
        assert!(error.message.contains("not a regular file"), "{error:?}");
        // Even when asked for it by name, and from the non-blocking open itself.
        assert!(read_regular(&fifo, 100, "map")
            .unwrap_err()
            .message
            .contains("not a regular file"));
    }

    #[test]
    fn explicit_maps_win_and_the_cache_reads_each_file_once_per_version() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("e.js");
        std::fs::write(&script, "f()\n//# sourceMappingURL=e.js.map").unwrap();
        std::fs::write(
            dir.path().join("e.js.map"),
            map_json(&[(0, 0, 0, 0, "from-comment.ts", None)], None),
        )
        .unwrap();
        let other = dir.path().join("other.map");
        std::fs::write(&other, map_json(&[(0, 0, 0, 0, "from-option.ts", None)], None)).unwrap();
        let trace = chain(vec![url(&script)], vec![frame("f", 0, 1, 1)]);

        let cache = MapCache::new();
        let a = resolve(&trace, &MapOptions::default(), &cache);
        assert!(a.trace.resources[0].ends_with("/from-comment.ts"));
        assert_eq!(cache.reads(), 2, "the script and its map");
        let b = resolve(&trace, &MapOptions::default(), &cache);
        assert_eq!(a, b);
        assert_eq!(cache.reads(), 2, "nothing read again");
        std::fs::write(
            dir.path().join("e.js.map"),
            map_json(&[(0, 0, 0, 0, "rewritten-longer.ts", None)], None),
        )
        .unwrap();
        let c = resolve(&trace, &MapOptions::default(), &cache);
        assert!(c.trace.resources[0].ends_with("/rewritten-longer.ts"));
        assert_eq!(cache.reads(), 3);

        let mut options = MapOptions::default();
        options
            .explicit
            .insert(url(&script), ExplicitMap::Location(url(&other)));
        let d = resolve(&trace, &options, &cache);
        assert!(d.trace.resources[0].ends_with("/from-option.ts"));
        options.explicit.insert(
            url(&script),
            ExplicitMap::Text(map_json(&[(0, 0, 0, 0, "/abs/t.ts", None)], None)),
        );
        let e = resolve(&trace, &options, &cache);
        assert_eq!(e.trace.resources[0], "file:///abs/t.ts");
        assert_eq!(e.stats.resources[0].map.as_deref(), Some("explicit"));

        let remote = "https://cdn.example/js/app.js".to_string();
        options.explicit.insert(
            remote.clone(),
            ExplicitMap::Text(map_json(&[(0, 0, 0, 0, "../src/r.ts", None)], None)),
        );
        let r = resolve(&chain(vec![remote], vec![frame("f", 0, 1, 1)]), &options, &cache);
        assert_eq!(
            r.trace.resources,
            vec!["https://cdn.example/src/r.ts".to_string()]
        );

        let no_lookups = MapOptions {
            comments: false,
            adjacent: false,
            ..MapOptions::default()
        };
        let f = resolve(&trace, &no_lookups, &cache);
        assert_eq!(f.stats.resources[0].error.as_ref().unwrap().reason, Reason::NoMap);
        cache.clear();
        resolve(&trace, &MapOptions::default(), &cache);
        assert_eq!(cache.reads(), 6);
    }

    #[test]
    fn the_cache_keeps_the_most_recently_used_maps_within_its_budget() {
        let dir = tempfile::tempdir().unwrap();
        let mut traces = Vec::new();
        let mut size = 0;
        for name in ["a", "b"] {
            let script = dir.path().join(format!("{name}.js"));
            std::fs::write(&script, "f()").unwrap();
            let json = map_json(&[(0, 0, 0, 0, "x.ts", None)], None);
            size = json.len() as u64;
            std::fs::write(dir.path().join(format!("{name}.js.map")), json).unwrap();
            traces.push(chain(vec![url(&script)], vec![frame("f", 0, 1, 1)]));
        }
        // Room for one map (and the scripts' small entries), not two.
        let cache = MapCache::with_budget(size + 200);
        let options = MapOptions::default();
        resolve(&traces[0], &options, &cache);
        resolve(&traces[0], &options, &cache);
        assert_eq!(cache.reads(), 2, "a.js and its map, read once");
        resolve(&traces[1], &options, &cache);
        assert_eq!(cache.reads(), 4);
        resolve(&traces[1], &options, &cache);
        assert_eq!(cache.reads(), 4, "b.js.map is kept");
        let again = resolve(&traces[0], &options, &cache);
        assert_eq!(
            cache.reads(),
            6,
            "a's entries, least recently used, made room for b's"
        );
        assert_eq!(again.stats.mapped, 1);
    }

    #[cfg(unix)]
    #[test]
    fn special_files_cost_a_byte_each_and_failures_are_not_retried() {
        // A crafted trace: resources naming /proc and /dev files (sizes that lie, endless streams), a
        // FIFO, and scripts whose comments name them as maps, many times over under other spellings.
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let mut resources = Vec::new();
        for target in [
            "/proc/self/pagemap",
            "/proc/self/maps",
            "/dev/zero",
            "/dev/urandom",
        ] {
            let script = dir.path().join(format!("{}.js", target.replace('/', "_")));
            std::fs::write(&script, format!("f()\n//# sourceMappingURL={target}\n")).unwrap();
            for _ in 0..50 {
                resources.push(url(&script));
            }
            resources.push(target.to_owned());
            resources.push(format!("file://{target}"));
            resources.push(format!(
                "/proc/self/../self/{}",
                target.rsplit('/').next().unwrap()
            ));
        }
        resources.push(fifo.display().to_string());
        // Distinct strings for one file: a trailing "#n" keeps the URL's path.
        let resources: Vec<String> = resources
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                if r.starts_with("file:") {
                    format!("{r}#{i}")
                } else {
                    r
                }
            })
            .collect();
        let frames = (0..resources.len() as u32).map(|r| frame("f", r, 1, 1)).collect();
        let cache = MapCache::new();
        let out = resolve(&chain(resources, frames), &MapOptions::default(), &cache);
        assert_eq!(out.stats.mapped, 0);
        for r in &out.stats.resources {
            let error = r.error.clone().unwrap();
            assert!(
                matches!(
                    error.reason,
                    Reason::MapUnreadable | Reason::NoMap | Reason::MapNotFound | Reason::MapTooLarge
                ),
                "{r:?}"
            );
        }
        let maps = out
            .stats
            .resources
            .iter()
            .find(|r| r.resource.contains("_proc_self_maps"))
            .unwrap();
        assert!(
            maps.error
                .as_ref()
                .unwrap()
                .message
                .contains("states 0 bytes but has more"),
            "{maps:?}"
        );
        // Four scripts read once each, whatever their number of spellings; no special file counted.
        assert_eq!(cache.reads(), 4);
        assert!(cache.bytes() <= cache.budget());
    }

    #[test]
    fn a_call_reads_at_most_what_its_frames_justify() {
        let dir = tempfile::tempdir().unwrap();
        let mut resources = Vec::new();
        for name in ["a", "b", "c"] {
            let script = dir.path().join(format!("{name}.js"));
            std::fs::write(&script, "f()").unwrap();
            // 2.5 MiB maps (their source text inside).
            let content = "x".repeat(5 << 19);
            let map = format!(
                r#"{{"version":3,"sources":["{name}.ts"],"names":[],"mappings":"AAAA","sourcesContent":["{content}"]}}"#
            );
            std::fs::write(dir.path().join(format!("{name}.js.map")), map).unwrap();
            resources.push(url(&script));
        }
        let frames = (0..3).map(|r| frame("f", r, 1, 1)).collect();
        let options = MapOptions {
            max_bytes: 3 << 20,
            ..MapOptions::default()
        };
        // 3 MiB + 1 byte, plus 1 MiB for each of the three frames: two maps fit, not three.
        let out = resolve(&chain(resources, frames), &options, &MapCache::new());
        assert_eq!(out.stats.mapped, 2, "{:?}", out.stats);
        let error = out.stats.resources[2].error.clone().unwrap();
        assert_eq!(error.reason, Reason::MapTooLarge);
        assert!(
            error.message.contains("would take this trace's reads past"),
            "{error:?}"
        );
    }

    #[test]
    fn the_cache_counts_decoded_memory_not_file_bytes() {
        let dir = tempfile::tempdir().unwrap();
        // A map of minimal segments: 2 bytes of text, 28 of memory each.
        let script = dir.path().join("min.js");
        std::fs::write(&script, "f()").unwrap();
        let segments = 100_000;
        let mappings = "AAAA,".to_owned() + &"A,".repeat(segments);
        let map = format!(r#"{{"version":3,"sources":["a.ts"],"names":[],"mappings":"{mappings}A"}}"#);
        std::fs::write(dir.path().join("min.js.map"), &map).unwrap();
        let trace = chain(vec![url(&script)], vec![frame("f", 0, 1, 1)]);
        let roomy = MapCache::with_budget(64 << 20);
        assert_eq!(resolve(&trace, &MapOptions::default(), &roomy).stats.mapped, 1);
        assert!(
            roomy.bytes() >= segments as u64 * TOKEN_BYTES,
            "{} bytes counted for {segments} segments",
            roomy.bytes()
        );
        // A budget the file's bytes fit in, and its decoded form does not: not decoded at all.
        let small = MapCache::with_budget(map.len() as u64 * 4);
        let out = resolve(&trace, &MapOptions::default(), &small);
        let error = out.stats.resources[0].error.clone().unwrap();
        assert_eq!(error.reason, Reason::MapTooLarge);
        assert!(error.message.contains("once decoded"), "{error:?}");
        assert!(small.bytes() <= small.budget());

        // A generated file of bare newlines: its line index is kept only within the budget.
        let lines = dir.path().join("lines.js");
        let mut text = "\n".repeat(300_000);
        text.push_str("f()\n//# sourceMappingURL=lines.js.map\n");
        std::fs::write(&lines, text).unwrap();
        std::fs::write(
            dir.path().join("lines.js.map"),
            map_json(&[(300_000, 0, 0, 0, "l.ts", None)], None),
        )
        .unwrap();
        let trace = chain(vec![url(&lines)], vec![frame("f", 0, 300_001, 1)]);
        let cache = MapCache::with_budget(1 << 20);
        assert_eq!(resolve(&trace, &MapOptions::default(), &cache).stats.mapped, 1);
        assert!(
            cache.bytes() <= cache.budget(),
            "{} > {}",
            cache.bytes(),
            cache.budget()
        );
        // Where it fits, what it takes is counted: a start and a flag per line beside the bytes.
        let roomy = MapCache::with_budget(64 << 20);
        assert_eq!(resolve(&trace, &MapOptions::default(), &roomy).stats.mapped, 1);
        assert!(roomy.bytes() >= 300_000 * 9, "{}", roomy.bytes());
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        /// VLQ-ish `mappings` (valid and not), with sections and names sometimes.
        fn map_text() -> impl Strategy<Value = String> {
            let mappings = "[A-Za-z0-9+/,;!]{0,80}";
            let sources = prop::collection::vec("[a-z./:]{0,12}", 0..4);
            let names = prop::collection::vec("[a-z]{0,4}", 0..4);
            (mappings, sources, names, any::<bool>(), "[a-z/]{0,6}").prop_map(|(m, sources, names, index, root)| {
                let map = serde_json::json!({
                    "version": 3, "sources": sources, "names": names, "mappings": m, "sourceRoot": root
                });
                if index {
                    serde_json::json!({"version": 3, "sections": [{"offset": {"line": 0, "column": 2}, "map": map}]}).to_string()
                } else {
                    map.to_string()
                }
            })
        }

        proptest! {
            #[test]
            fn any_map_comment_or_position_maps_or_says_why_never_panics(
                map in map_text(),
                comment in "[ -~]{0,40}",
                inline in any::<bool>(),
                positions in prop::collection::vec((0u32..4, 0u32..30, "[a-z]{0,3}"), 1..6),
            ) {
                let dir = tempfile::tempdir().unwrap();
                let script = dir.path().join("s.js");
                let reference = if inline {
                    format!("data:application/json;base64,{}", data_encoding::BASE64.encode(map.as_bytes()))
                } else {
                    std::fs::write(dir.path().join("s.js.map"), &map).unwrap();
                    "s.js.map".to_string()
                };
                std::fs::write(&script, format!("x\n//# sourceMappingURL={comment}\n//# sourceMappingURL={reference}\n")).unwrap();
                let frames = positions.iter().map(|(l, c, n)| frame(n, 0, l + 1, c + 1)).collect();
                let out = resolve(&chain(vec![url(&script)], frames), &MapOptions::default(), &MapCache::new());
                let unmapped: u32 = out.stats.unmapped.values().sum();
                prop_assert_eq!(out.stats.mapped + unmapped, out.stats.frames);
                prop_assert_eq!(out.stack_map.len(), positions.len());
                out.trace.validate().unwrap();
                prop_assert!(find_comment(comment.as_bytes()).is_none_or(|c| !c.contains(char::is_whitespace)));
                let _ = data_url_bytes(&comment);
            }
        }
    }

    #[test]
    fn find_comment_takes_the_last_real_comment() {
        assert_eq!(
            find_comment(b"a\n//# sourceMappingURL=a.map\n  //@ sourceMappingURL=b.map  \n"),
            Some("b.map".into())
        );
        assert_eq!(find_comment(b"x = '//# sourceMappingURL=a.map'"), None);
        assert_eq!(find_comment(b"//# sourceMappingURL=\n"), None);
        assert_eq!(
            find_comment(b"//# sourceMappingURL=a.map\r\n//# sourceMappingURL= has space"),
            Some("a.map".into())
        );
        assert_eq!(find_comment(b""), None);
        assert_eq!(
            find_comment(b"//# sourceMappingURL=a.map\n\xff\xfe //# sourceMappingURL=b.map"),
            Some("a.map".into())
        );
    }
}
