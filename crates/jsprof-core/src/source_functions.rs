//! Where each function of a script begins and which lines it holds, from the script's source text
//! (oxc's parser): what tells, for one of V8's per-line ticks, which function's code the line is
//! (`crate::convert::inlined`).
//!
//! - A function is found by the position V8 gives its node (`callFrame.lineNumber`/`columnNumber`,
//!   0-based, the column in UTF-16 units): the start of its parameters — `(` of `function f(`, of a
//!   method, of an arrow's `(a) =>`, or an arrow's lone parameter. The script's own top-level code is
//!   the function at 0:0 (V8's node for a module or a CommonJS wrapper), unless a function starts there.
//! - A line is held by the innermost function whose source holds all of the line's text (blanks
//!   aside): a line shared with code around the function (`const f = (x) => {`, `arr.map((x) => x * 2)`
//!   in its caller) is held by the function around it, since a tick on it could be either's. Lines of
//!   top-level code only are held by the top level.
//!
//! JavaScript's line terminators (`\n`, `\r\n`, a lone `\r`, U+2028, U+2029) count lines as V8 counts
//! them. A text that oxc cannot parse at all gives no table.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use oxc_allocator::Allocator;
use oxc_ast::ast::{ArrowFunctionExpression, Function};
use oxc_ast_visit::{walk, Visit};
use oxc_parser::{ParseOptions, Parser};
use oxc_span::SourceType;
use oxc_syntax::scope::ScopeFlags;

/// The most bytes of source read and parsed for one script (larger ones give no table).
pub(crate) const MAX_SOURCE_BYTES: usize = 64 << 20;

/// A script's functions: where each begins (as V8 positions a function node), and each line's holder.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ScriptFunctions {
    /// (0-based line, UTF-16 column of the parameters' start) -> function index.
    by_position: HashMap<(u32, u32), u32>,
    /// For each 0-based line, the index of the function holding it ([`NONE`]: none).
    holders: Vec<u32>,
}

const NONE: u32 = u32::MAX;
/// The top level's index.
const TOP: u32 = 0;

/// What the file's name says it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptKind {
    /// `.mjs`, `.mts`: an ES module.
    Module,
    /// `.cjs`, `.cts`: a CommonJS script.
    Script,
    /// `.js` and anything else: either (a module is tried first, then a script).
    Either,
}

impl ScriptKind {
    /// The kind a script's URL or path says, and whether it is TypeScript (`.ts`, `.mts`, `.cts`,
    /// `.tsx`: Node strips its types by blanking them, so its positions are the file's).
    pub fn of_url(url: &str) -> (ScriptKind, bool) {
        let path = url.split(['?', '#']).next().unwrap_or(url);
        let ext = path.rsplit_once('.').map_or("", |(_, e)| e).to_ascii_lowercase();
        match ext.as_str() {
            "mjs" => (ScriptKind::Module, false),
            "mts" => (ScriptKind::Module, true),
            "cjs" => (ScriptKind::Script, false),
            "cts" => (ScriptKind::Script, true),
            "ts" | "tsx" => (ScriptKind::Either, true),
            _ => (ScriptKind::Either, false),
        }
    }
}

/// A function's span (UTF-8 byte offsets) and where its parameters start.
struct Found {
    start: u32,
    end: u32,
    params: u32,
}

#[derive(Default)]
struct Collect {
    found: Vec<Found>,
}

impl<'a> Visit<'a> for Collect {
    fn visit_function(&mut self, f: &Function<'a>, flags: ScopeFlags) {
        self.found.push(Found {
            start: f.span.start,
            end: f.span.end,
            params: f.params.span.start,
        });
        walk::walk_function(self, f, flags);
    }

    fn visit_arrow_function_expression(&mut self, f: &ArrowFunctionExpression<'a>) {
        self.found.push(Found {
            start: f.span.start,
            end: f.span.end,
            params: f.params.span.start,
        });
        walk::walk_arrow_function_expression(self, f);
    }
}

/// The functions of `text`, parsed as `kind` says; None when oxc could not parse it at all.
fn parse(text: &str, kind: ScriptKind, typescript: bool) -> Option<Vec<Found>> {
    let tries: &[bool] = match kind {
        ScriptKind::Module => &[true],
        ScriptKind::Script => &[false],
        ScriptKind::Either => &[true, false],
    };
    for &module in tries {
        let source_type = if module {
            SourceType::mjs()
        } else {
            SourceType::cjs()
        }
        .with_typescript(typescript);
        let allocator = Allocator::default();
        let options = ParseOptions {
            allow_return_outside_function: true,
            allow_v8_intrinsics: true,
            ..ParseOptions::default()
        };
        let parsed = Parser::new(&allocator, text, source_type)
            .with_options(options)
            .parse();
        if parsed.panicked || !parsed.diagnostics.is_empty() {
            continue;
        }
        let mut collect = Collect::default();
        collect.visit_program(&parsed.program);
        return Some(collect.found);
    }
    None
}

/// Line starts (byte offsets) by JavaScript's line terminators.
fn line_starts(text: &str) -> Vec<u32> {
    let mut starts = vec![0u32];
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => starts.push(i as u32 + 1),
            b'\r' => {
                if bytes.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                starts.push(i as u32 + 1);
            }
            // U+2028, U+2029: E2 80 A8 / E2 80 A9.
            0xE2 if bytes.get(i + 1) == Some(&0x80) && matches!(bytes.get(i + 2), Some(0xA8 | 0xA9)) => {
                i += 2;
                starts.push(i as u32 + 1);
            }
            _ => {}
        }
        i += 1;
    }
    starts
}

impl ScriptFunctions {
    /// The table of a script's source; `url` (or path) says its kind. None when it cannot be parsed.
    pub fn of_source(text: &str, url: &str) -> Option<ScriptFunctions> {
        if text.len() > MAX_SOURCE_BYTES {
            return None;
        }
        let (kind, typescript) = ScriptKind::of_url(url);
        let mut found = parse(text, kind, typescript)?;
        found.sort_by_key(|f| (f.start, std::cmp::Reverse(f.end)));
        let starts = line_starts(text);
        let line_of = |offset: u32| (starts.partition_point(|&s| s <= offset) - 1) as u32;
        // Each line's first and last byte of text (blanks aside), or None for a blank line.
        let ends: Vec<Option<(u32, u32)>> = (0..starts.len())
            .map(|l| {
                let from = starts[l] as usize;
                let to = starts.get(l + 1).map_or(text.len(), |&s| s as usize);
                let line = &text[from..to];
                let first = line.char_indices().find(|(_, c)| !c.is_whitespace())?.0;
                let (last, c) = line.char_indices().rev().find(|(_, c)| !c.is_whitespace())?;
                Some(((from + first) as u32, (from + last + c.len_utf8()) as u32))
            })
            .collect();
        let mut table = ScriptFunctions {
            by_position: HashMap::with_capacity(found.len() + 1),
            holders: vec![NONE; starts.len()],
        };
        // The top level holds every line with text; functions (outer first) take theirs over.
        for (l, e) in ends.iter().enumerate() {
            if e.is_some() {
                table.holders[l] = TOP;
            }
        }
        table.by_position.insert((0, 0), TOP);
        for (i, f) in found.iter().enumerate() {
            let index = i as u32 + 1;
            let line = line_of(f.params);
            let line_start = starts[line as usize] as usize;
            let column = text
                .get(line_start..f.params as usize)
                .map_or(0, |s| s.encode_utf16().count()) as u32;
            table.by_position.insert((line, column), index);
            let (first, last) = (line_of(f.start), line_of(f.end.saturating_sub(1).max(f.start)));
            for l in first..=last {
                if let Some((a, b)) = ends[l as usize] {
                    if a >= f.start && b <= f.end {
                        table.holders[l as usize] = index;
                    }
                }
            }
        }
        Some(table)
    }

    /// The function whose node V8 positions at `line`:`column` (0-based, UTF-16 column).
    pub fn function_at(&self, line: u32, column: u32) -> Option<u32> {
        self.by_position.get(&(line, column)).copied()
    }

    /// The function holding 1-based `line` (V8's `positionTicks` lines), if any holds it whole.
    pub fn holder(&self, line: u32) -> Option<u32> {
        let l = line.checked_sub(1)? as usize;
        self.holders.get(l).copied().filter(|&h| h != NONE)
    }

    /// Bytes the table holds, about (for a cache's bound).
    pub fn weight(&self) -> usize {
        self.holders.len() * 4 + self.by_position.len() * 16
    }
}

/// Scripts' function tables from their files (a `file:` URL or an absolute path), each read and parsed
/// once per state of its file (length and modification time): a process-wide cache of at most
/// [`CACHE_WEIGHT`] (emptied when full). Other URLs (`node:`, `http:`, `evalmachine.<anonymous>`) have
/// no file.
#[derive(Debug, Clone, Copy, Default)]
pub struct SourceFiles;

/// The most the cache of [`SourceFiles`] holds, in table bytes (about).
pub(crate) const CACHE_WEIGHT: usize = 256 << 20;

type Cached = (u64, Option<SystemTime>, Option<Arc<ScriptFunctions>>);

static CACHE: Mutex<Option<(HashMap<PathBuf, Cached>, usize)>> = Mutex::new(None);

fn path_of(url: &str) -> Option<PathBuf> {
    if url.starts_with("file:") {
        return url::Url::parse(url).ok()?.to_file_path().ok();
    }
    let path = PathBuf::from(url);
    path.is_absolute().then_some(path)
}

impl crate::convert::ScriptSources for SourceFiles {
    fn functions(&self, url: &str) -> Option<Arc<ScriptFunctions>> {
        let path = path_of(url)?;
        let meta = std::fs::metadata(&path).ok()?;
        if !meta.is_file() || meta.len() > MAX_SOURCE_BYTES as u64 {
            return None;
        }
        let (len, modified) = (meta.len(), meta.modified().ok());
        let lock = || CACHE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((map, _)) = lock().as_ref() {
            if let Some((l, m, table)) = map.get(&path) {
                if *l == len && *m == modified {
                    return table.clone();
                }
            }
        }
        // Read and parsed outside the lock: other threads' conversions do not wait for this one.
        let bytes = std::fs::read(&path).ok()?;
        let text = String::from_utf8_lossy(&bytes);
        // Node reads a script without its byte order mark.
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        let table = ScriptFunctions::of_source(text, url).map(Arc::new);
        let weight = table.as_ref().map_or(64, |t| t.weight());
        let mut cache = lock();
        let (map, total) = cache.get_or_insert_with(Default::default);
        if *total + weight > CACHE_WEIGHT {
            map.clear();
            *total = 0;
        }
        *total += weight;
        map.insert(path, (len, modified, table.clone()));
        table
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const APP: &str = "'use strict'\nfunction inner(x) {\n  let s = 0\n  for (let i = 0; i < 200; i++) s += i\n  return s\n}\nfunction outer(n) {\n  let acc = 0\n  for (let i = 0; i < n; i++) acc ^= inner(i)\n  return acc\n}\nconst twice = (x) => x * 2\nconst squares = [1, 2].map((y) => {\n  return y * y\n})\nouter(10)\n";

    #[test]
    fn finds_functions_where_v8_positions_them() {
        let t = ScriptFunctions::of_source(APP, "file:///app.js").unwrap();
        let inner = t.function_at(1, 14).unwrap();
        let outer = t.function_at(6, 14).unwrap();
        assert_ne!(inner, outer);
        assert_eq!(t.function_at(0, 0), Some(TOP));
        assert!(t.function_at(11, 14).is_some(), "the arrow `(x) => x * 2`");
        assert!(t.function_at(12, 27).is_some(), "the arrow passed to map");
        assert_eq!(t.function_at(1, 13), None);
        // Lines: inner's body is inner's; its signature line is all inner's too.
        assert_eq!(t.holder(2), Some(inner));
        assert_eq!(t.holder(4), Some(inner));
        assert_eq!(t.holder(6), Some(inner));
        assert_eq!(t.holder(9), Some(outer));
        // A line shared with the code around a function is the code around it's.
        assert_eq!(t.holder(12), Some(TOP), "const twice = (x) => x * 2");
        assert_eq!(t.holder(13), Some(TOP), "const squares = [1, 2].map((y) => {{");
        assert_eq!(t.holder(14), t.function_at(12, 27), "return y * y");
        assert_eq!(t.holder(16), Some(TOP));
        assert_eq!(t.holder(0), None);
        assert_eq!(t.holder(99), None);
    }

    #[test]
    fn counts_lines_and_columns_as_v8_does() {
        // A lone \r and U+2028 end lines; a column counts UTF-16 units (é is 1, 😀 is 2).
        let text =
            "let a = 1\r\nlet b = 2\rlet c = 3\u{2028}const s = '😀é', f = function (x) {\n  return x\n}\n";
        let t = ScriptFunctions::of_source(text, "/srv/a.cjs").unwrap();
        let f = t
            .function_at(3, 30)
            .expect("the function on the 4th line, column 30 in UTF-16 units");
        assert_eq!(t.holder(5), Some(f));
        assert_eq!(t.holder(4), Some(TOP));
    }

    #[test]
    fn reads_modules_commonjs_and_typescript_and_refuses_what_it_cannot_parse() {
        assert!(ScriptFunctions::of_source("export function f(a) { return a }\n", "file:///m.mjs").is_some());
        assert!(ScriptFunctions::of_source("return 1\n", "file:///c.cjs").is_some());
        assert!(ScriptFunctions::of_source("import x from 'y'\nwith (x) {}\n", "file:///c.js").is_none());
        let ts =
            ScriptFunctions::of_source("function f(a: number): number {\n  return a\n}\n", "file:///t.ts")
                .unwrap();
        assert!(ts.function_at(0, 10).is_some());
        assert!(ScriptFunctions::of_source("function (", "file:///bad.js").is_none());
    }

    #[test]
    fn reads_files_by_url_or_path_and_reads_them_again_once_changed() {
        use crate::convert::ScriptSources;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a b.js");
        std::fs::write(&file, "\u{feff}function f(x) {\n  return x\n}\n").unwrap();
        let url = url::Url::from_file_path(&file).unwrap().to_string();
        assert!(url.contains("a%20b.js"), "{url}");
        let by_url = SourceFiles.functions(&url).unwrap();
        assert_eq!(
            by_url.function_at(0, 10),
            Some(1),
            "the byte order mark is not a column"
        );
        assert_eq!(SourceFiles.functions(file.to_str().unwrap()), Some(by_url));
        std::fs::write(&file, "\n\nfunction f(x) {\n  return x\n}\n").unwrap();
        assert_eq!(SourceFiles.functions(&url).unwrap().function_at(2, 10), Some(1));
        assert!(SourceFiles.functions("node:fs").is_none());
        assert!(SourceFiles.functions("relative/a.js").is_none());
        assert!(SourceFiles.functions(&format!("{url}.missing")).is_none());
    }
}
