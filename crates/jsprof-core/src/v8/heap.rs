//! V8's sampling heap profile (`HeapProfiler.getSamplingProfile` / `stopSampling`, `node --heap-prof`,
//! DevTools' Memory panel "Allocation sampling", saved as `.heapprofile`) in both directions. It knows
//! nothing of traces: the conversion to a heap profile of ours is `crate::heap`.
//!
//! The format is a *nested* tree: `{ "head": { callFrame, selfSize, id, children: [ {…}, … ] },
//! "samples": [ { size, nodeId, ordinal } ] }` (or the inspector's `{ "profile": … }` reply). A tree as
//! deep as its stacks nests the JSON as deep, and a hostile file nests it as deep as its size allows, so
//! the reader here is a loop over the text with a stack of open nodes on the heap, never recursion (which
//! serde's visitors are): any depth costs time and memory linear in the text, and a thread's stack never
//! overflows. The tree goes into the [`ProfileBuilder`] every V8 profile goes through (ids, parents, no
//! cycles), so a heap profile's nodes are a [`Profile`]'s and the V8 -> trace rules apply as they are.
//!
//! Errors: text that is not JSON is a `Syntax` error with its line and column; JSON of the wrong shape a
//! `Type` error naming the node or sample at fault (`invalid V8 heap profile: node id 7: callFrame.url is a
//! number where a string belongs`).
//!
//! What the sizes mean (V8's `SamplingHeapProfiler`): V8 samples one allocation about every
//! `samplingInterval` bytes (a Poisson process), and reports each sampled object's size multiplied by how
//! many objects it stands for (`size * round(1 / (1 - exp(-size / interval)))`): a sample's `size` is bytes
//! already scaled to the whole heap, and a node's `selfSize` the sum of its samples'. The product cannot be
//! split back into an object size and a count (524,304 bytes is 16 B × 32,769 or 24 B × 21,846 or …), so
//! no reader of this format knows how many objects a node holds, only how many samples.

use std::borrow::Cow;
use std::fmt::Write as _;

use super::{Profile, ProfileBuilder};
use crate::error::{Error, Result};

/// A V8 sampling heap profile read: the tree as a [`Profile`] (nodes only, no samples: node `i` is the
/// `i`th node in the text's order, `(root)` first), each node's `selfSize`, and V8's samples when the
/// text has them (DevTools' older files hold only sizes per node).
#[derive(Debug, Clone, PartialEq)]
pub struct HeapTree {
    pub profile: Profile,
    pub self_sizes: Vec<f64>,
    pub samples: Option<Vec<HeapTreeSample>>,
}

/// One of V8's samples: a sampled allocation at node `node` (an index into the tree's nodes), `size`
/// bytes as V8 scales it, and its `ordinal` (V8 numbers samples in time order from 1 at each start).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeapTreeSample {
    pub node: u32,
    pub size: f64,
    pub ordinal: f64,
}

/// What is wrong with a value, in the format's words.
fn shape(what: impl std::fmt::Display) -> Error {
    Error::invalid(format!("invalid V8 heap profile: {what}"))
}

/// The JSON tokens the reader needs, over the text's bytes; never recursive.
struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
}

/// The kind of the JSON value that starts with `b`, for messages (`a number where a string belongs`);
/// `None` when no value starts so.
fn kind_of(b: u8) -> Option<&'static str> {
    Some(match b {
        b'{' => "an object",
        b'[' => "an array",
        b'"' => "a string",
        b't' | b'f' => "a boolean",
        b'n' => "null",
        b'-' | b'0'..=b'9' => "a number",
        _ => return None,
    })
}

impl<'a> Scanner<'a> {
    fn new(text: &'a str) -> Self {
        Scanner {
            text,
            bytes: text.as_bytes(),
            at: 0,
        }
    }

    /// A syntax error at the current position, with its line and column (1-based).
    fn syntax(&self, what: &str) -> Error {
        let before = &self.bytes[..self.at.min(self.bytes.len())];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
        let column = self.text[line_start..self.at.min(self.text.len())]
            .chars()
            .count()
            + 1;
        Error::syntax(format!(
            "the heap profile is not valid JSON: {what} at line {line} column {column}"
        ))
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    /// The next byte after whitespace, not consumed.
    fn peek(&mut self) -> Result<u8> {
        self.skip_ws();
        self.bytes
            .get(self.at)
            .copied()
            .ok_or_else(|| self.syntax("unexpected end of the text"))
    }

    fn expect(&mut self, byte: u8) -> Result<()> {
        if self.peek()? != byte {
            return Err(self.syntax(&format!("expected '{}'", byte as char)));
        }
        self.at += 1;
        Ok(())
    }

    /// After a value in an object or array: true for `,` (another follows), false for `close`.
    fn next_or_close(&mut self, close: u8) -> Result<bool> {
        match self.peek()? {
            b',' => {
                self.at += 1;
                Ok(true)
            }
            b if b == close => {
                self.at += 1;
                Ok(false)
            }
            _ => Err(self.syntax(&format!("expected ',' or '{}'", close as char))),
        }
    }

    /// Opens an object or array: true when it is empty (and already closed).
    fn open(&mut self, open: u8, close: u8) -> Result<bool> {
        self.expect(open)?;
        if self.peek()? == close {
            self.at += 1;
            return Ok(true);
        }
        Ok(false)
    }

    /// A member name and its `:`.
    fn key(&mut self) -> Result<Cow<'a, str>> {
        if self.peek()? != b'"' {
            return Err(self.syntax("expected a member name"));
        }
        let key = self.string()?;
        self.expect(b':')?;
        Ok(key)
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let digits = std::str::from_utf8(self.bytes.get(at..at + 4)?).ok()?;
        u32::from_str_radix(digits, 16).ok()
    }

    /// A string (the opening quote next); borrowed from the text when it has no escapes. A lone
    /// surrogate escape (`JSON.stringify` writes them) becomes the visible text `\u{d800}`, as every
    /// other reader of this crate reads it.
    fn string(&mut self) -> Result<Cow<'a, str>> {
        self.expect(b'"')?;
        let start = self.at;
        let mut out: Option<String> = None;
        let mut copied = start;
        loop {
            let Some(offset) = memchr::memchr3(b'"', b'\\', b'\n', &self.bytes[self.at..]) else {
                self.at = self.bytes.len();
                return Err(self.syntax("unterminated string"));
            };
            let at = self.at + offset;
            if let Some(control) = self.bytes[self.at..at].iter().position(|&b| b < 0x20) {
                self.at += control;
                return Err(self.syntax("control character in a string"));
            }
            match self.bytes[at] {
                b'"' => {
                    self.at = at + 1;
                    return Ok(match out {
                        None => Cow::Borrowed(&self.text[start..at]),
                        Some(mut s) => {
                            s.push_str(&self.text[copied..at]);
                            Cow::Owned(s)
                        }
                    });
                }
                b'\n' => {
                    self.at = at;
                    return Err(self.syntax("control character in a string"));
                }
                _ => {
                    let s = out.get_or_insert_with(String::new);
                    s.push_str(&self.text[copied..at]);
                    self.at = at + 1;
                    let escape = self.bytes.get(self.at).copied();
                    self.at += 1;
                    match escape {
                        Some(b'"') => s.push('"'),
                        Some(b'\\') => s.push('\\'),
                        Some(b'/') => s.push('/'),
                        Some(b'b') => s.push('\u{8}'),
                        Some(b'f') => s.push('\u{c}'),
                        Some(b'n') => s.push('\n'),
                        Some(b'r') => s.push('\r'),
                        Some(b't') => s.push('\t'),
                        Some(b'u') => {
                            let Some(code) = self.hex4(self.at) else {
                                return Err(self.syntax("bad \\u escape"));
                            };
                            self.at += 4;
                            let low = (self.bytes.get(self.at..self.at + 2) == Some(b"\\u"))
                                .then(|| self.hex4(self.at + 2))
                                .flatten()
                                .filter(|low| (0xDC00..=0xDFFF).contains(low));
                            match (code, low) {
                                (0xD800..=0xDBFF, Some(low)) => {
                                    self.at += 6;
                                    let c = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                                    s.push(char::from_u32(c).unwrap_or('\u{fffd}'));
                                }
                                (0xD800..=0xDFFF, _) => {
                                    let _ = write!(s, "\\u{{{code:x}}}");
                                }
                                _ => s.push(char::from_u32(code).unwrap_or('\u{fffd}')),
                            }
                        }
                        _ => {
                            self.at -= 1;
                            return Err(self.syntax("bad escape in a string"));
                        }
                    }
                    copied = self.at;
                }
            }
        }
    }

    /// A number (JSON's grammar), or `None` (nothing consumed) when the next value is not one.
    fn number(&mut self) -> Result<Option<f64>> {
        let b = self.peek()?;
        if !(b == b'-' || b.is_ascii_digit()) {
            return Ok(None);
        }
        let start = self.at;
        let digits = |s: &mut Self| {
            let from = s.at;
            while s.bytes.get(s.at).is_some_and(u8::is_ascii_digit) {
                s.at += 1;
            }
            s.at > from
        };
        if self.bytes[self.at] == b'-' {
            self.at += 1;
        }
        if !digits(self) {
            return Err(self.syntax("bad number"));
        }
        if self.bytes.get(self.at) == Some(&b'.') {
            self.at += 1;
            if !digits(self) {
                return Err(self.syntax("bad number"));
            }
        }
        if let Some(b'e' | b'E') = self.bytes.get(self.at) {
            self.at += 1;
            if let Some(b'+' | b'-') = self.bytes.get(self.at) {
                self.at += 1;
            }
            if !digits(self) {
                return Err(self.syntax("bad number"));
            }
        }
        let value: f64 = self.text[start..self.at]
            .parse()
            .map_err(|_| self.syntax("bad number"))?;
        Ok(Some(value))
    }

    /// A literal `true`, `false` or `null`.
    fn literal(&mut self) -> Result<()> {
        for word in [&b"true"[..], b"false", b"null"] {
            if self.bytes[self.at..].starts_with(word) {
                self.at += word.len();
                return Ok(());
            }
        }
        Err(self.syntax("expected a value"))
    }

    /// Skips any value, however deeply nested, with a counter instead of recursion.
    fn skip_value(&mut self) -> Result<()> {
        let mut depth = 0usize;
        loop {
            match self.peek()? {
                b'{' | b'[' => {
                    let close = if self.bytes[self.at] == b'{' { b'}' } else { b']' };
                    let object = close == b'}';
                    self.at += 1;
                    if self.peek()? == close {
                        self.at += 1;
                    } else {
                        depth += 1;
                        if object {
                            self.key()?;
                        }
                        continue;
                    }
                }
                b'"' => {
                    self.string()?;
                }
                b'-' | b'0'..=b'9' => {
                    self.number()?;
                }
                _ => self.literal()?,
            }
            // A value ended: close what it ended, then go on with the next one.
            loop {
                if depth == 0 {
                    return Ok(());
                }
                match self.peek()? {
                    b',' => {
                        self.at += 1;
                        // Inside an object (the next member's name follows) or an array.
                        if self.peek()? == b'"' && self.member_follows() {
                            self.key()?;
                        }
                        break;
                    }
                    b'}' | b']' => {
                        self.at += 1;
                        depth -= 1;
                    }
                    _ => return Err(self.syntax("expected ',' or a closing bracket")),
                }
            }
        }
    }

    /// After a `,`: whether the string that follows is a member name (a `:` comes after it).
    fn member_follows(&mut self) -> bool {
        let saved = self.at;
        let is_key = self.string().is_ok() && self.peek().is_ok_and(|b| b == b':');
        self.at = saved;
        is_key
    }

    /// A `Type` error: the value next (of the kind it starts with) is not what belongs there; a
    /// `Syntax` error when no value starts there at all.
    fn wrong(&mut self, what: String, belongs: &str) -> Error {
        match self.peek().map(kind_of) {
            Ok(Some(found)) => shape(format!("{what}: {found} where {belongs} belongs")),
            Ok(None) => self.syntax("expected a value"),
            Err(e) => e,
        }
    }

    /// A number value, or a `Type` error naming `what` and the kind of value found.
    fn number_value(&mut self, what: impl FnOnce() -> String) -> Result<f64> {
        match self.number()? {
            Some(n) => Ok(n),
            None => Err(self.wrong(what(), "a number")),
        }
    }

    /// A string value, or a `Type` error naming `what`.
    fn string_value(&mut self, what: impl FnOnce() -> String) -> Result<Cow<'a, str>> {
        match self.peek()? {
            b'"' => self.string(),
            _ => Err(self.wrong(what(), "a string")),
        }
    }

    /// `{`, or a `Type` error naming `what`.
    fn object_start(&mut self, what: impl FnOnce() -> String) -> Result<bool> {
        match self.peek()? {
            b'{' => self.open(b'{', b'}'),
            _ => Err(self.wrong(what(), "an object")),
        }
    }

    /// `[`, or a `Type` error naming `what`.
    fn array_start(&mut self, what: impl FnOnce() -> String) -> Result<bool> {
        match self.peek()? {
            b'[' => self.open(b'[', b']'),
            _ => Err(self.wrong(what(), "an array")),
        }
    }
}

/// One node as read, before the builder links it.
struct RawNode<'a> {
    id: Option<f64>,
    name: Cow<'a, str>,
    url: Cow<'a, str>,
    line: f64,
    column: f64,
    self_size: f64,
    parent: Option<usize>,
}

/// Names node `index` in messages: by its id once read (`node id 7`), else by its place (`node #3 in
/// text order`).
fn node_name(nodes: &[RawNode], index: usize) -> String {
    match nodes.get(index).and_then(|n| n.id) {
        Some(id) => format!("node id {id}"),
        None => format!("node #{} (in text order)", index + 1),
    }
}

/// Reads a node's `callFrame` object into `node`.
fn call_frame<'a>(s: &mut Scanner<'a>, nodes: &mut [RawNode<'a>], index: usize) -> Result<()> {
    let name = |nodes: &[RawNode], member: &str| format!("{}: callFrame.{member}", node_name(nodes, index));
    if s.object_start(|| format!("{}: callFrame", node_name(nodes, index)))? {
        return Ok(());
    }
    loop {
        let key = s.key()?;
        match key.as_ref() {
            "functionName" => nodes[index].name = s.string_value(|| name(nodes, "functionName"))?,
            "url" => nodes[index].url = s.string_value(|| name(nodes, "url"))?,
            "lineNumber" => nodes[index].line = s.number_value(|| name(nodes, "lineNumber"))?,
            "columnNumber" => nodes[index].column = s.number_value(|| name(nodes, "columnNumber"))?,
            _ => s.skip_value()?,
        }
        if !s.next_or_close(b'}')? {
            return Ok(());
        }
    }
}

/// Starts a node object (the `{` next) under `parent`: pushes it, open, on `stack`.
fn start_node<'a>(
    s: &mut Scanner<'a>,
    nodes: &mut Vec<RawNode<'a>>,
    stack: &mut Vec<usize>,
    parent: Option<usize>,
) -> Result<()> {
    let what = || match parent {
        Some(p) => format!("a child of {}", node_name(nodes, p)),
        None => "head".to_owned(),
    };
    let empty = s.object_start(what)?;
    nodes.push(RawNode {
        id: None,
        name: Cow::Borrowed(""),
        url: Cow::Borrowed(""),
        line: -1.0,
        column: -1.0,
        self_size: 0.0,
        parent,
    });
    if empty {
        return Err(shape(format!("{} has no id", node_name(nodes, nodes.len() - 1))));
    }
    stack.push(nodes.len() - 1);
    Ok(())
}

/// Reads the nested tree at `head` into flat nodes (each with its parent's index). `stack` holds the
/// open nodes, outermost first; a node below another is in its `children` array.
fn read_tree<'a>(s: &mut Scanner<'a>, nodes: &mut Vec<RawNode<'a>>) -> Result<()> {
    let mut stack: Vec<usize> = Vec::new();
    start_node(s, nodes, &mut stack, None)?;
    'members: while let Some(&index) = stack.last() {
        let key = s.key()?;
        match key.as_ref() {
            "id" => nodes[index].id = Some(s.number_value(|| format!("{}: id", node_name(nodes, index)))?),
            "selfSize" => {
                nodes[index].self_size =
                    s.number_value(|| format!("{}: selfSize", node_name(nodes, index)))?
            }
            "callFrame" => call_frame(s, nodes, index)?,
            "children" => {
                if !s.array_start(|| format!("{}: children", node_name(nodes, index)))? {
                    start_node(s, nodes, &mut stack, Some(index))?;
                    continue 'members;
                }
            }
            _ => s.skip_value()?,
        }
        // A member's value ended: another member, or the node ends (and maybe its parent's children).
        loop {
            let Some(&top) = stack.last() else { return Ok(()) };
            if s.next_or_close(b'}')? {
                continue 'members;
            }
            if nodes[top].id.is_none() {
                return Err(shape(format!("{} has no id", node_name(nodes, top))));
            }
            stack.pop();
            let Some(&parent) = stack.last() else {
                return Ok(());
            };
            if s.next_or_close(b']')? {
                start_node(s, nodes, &mut stack, Some(parent))?;
                continue 'members;
            }
            // The parent's `children` ended: its next member, or its end, comes next.
        }
    }
    Ok(())
}

/// Reads the `samples` array.
fn read_samples(s: &mut Scanner) -> Result<Vec<(f64, f64, f64)>> {
    let mut out = Vec::new();
    if s.array_start(|| "samples".to_owned())? {
        return Ok(out);
    }
    loop {
        let i = out.len();
        let (mut size, mut node, mut ordinal) = (None, None, None);
        if !s.object_start(|| format!("samples[{i}]"))? {
            loop {
                let key = s.key()?;
                match key.as_ref() {
                    "size" => size = Some(s.number_value(|| format!("samples[{i}].size"))?),
                    "nodeId" => node = Some(s.number_value(|| format!("samples[{i}].nodeId"))?),
                    "ordinal" => ordinal = Some(s.number_value(|| format!("samples[{i}].ordinal"))?),
                    _ => s.skip_value()?,
                }
                if !s.next_or_close(b'}')? {
                    break;
                }
            }
        }
        let missing = |what: &str| shape(format!("samples[{i}] has no {what}"));
        let size = size.ok_or_else(|| missing("size"))?;
        let node = node.ok_or_else(|| missing("nodeId"))?;
        out.push((size, node, ordinal.unwrap_or(i as f64 + 1.0)));
        if !s.next_or_close(b']')? {
            return Ok(out);
        }
    }
}

/// A whole number within i64 (ids), or a `Type` error naming `what`.
fn whole(value: f64, what: impl FnOnce() -> String) -> Result<i64> {
    if value.fract() != 0.0 || value.abs() > 9.007_199_254_740_991e15 {
        return Err(shape(format!("{} {value} is not a whole number", what())));
    }
    Ok(value as i64)
}

/// The most bytes one node, sample or entry of a heap profile holds: 2^53, the largest whole number a
/// JSON number (an f64) holds exactly.
pub(crate) const MAX_HEAP_BYTES: u64 = 1 << 53;

/// A number of bytes of a heap profile, V8's (`selfSize`, a sample's `size`) or ours (an entry's
/// `size`): the one rule of both readers, a whole number from 0 to [`MAX_HEAP_BYTES`]; else a `Type`
/// error naming `what` (V8 writes whole bytes; 1e308, 2^53 + 2 or 1.5 bytes are no heap's).
pub(crate) fn heap_bytes(value: f64, what: impl FnOnce() -> String) -> Result<u64> {
    if !(value >= 0.0 && value <= MAX_HEAP_BYTES as f64 && value.fract() == 0.0) {
        let shown = if value.abs() < 1e16 {
            value.to_string()
        } else {
            format!("{value:e}")
        };
        return Err(not_bytes(&shown, what()));
    }
    heap_bytes_in_range(value as u64, what)
}

/// [`heap_bytes`] of a whole number already (a heap profile's entries in memory).
pub(crate) fn heap_bytes_in_range(value: u64, what: impl FnOnce() -> String) -> Result<u64> {
    if value > MAX_HEAP_BYTES {
        return Err(not_bytes(&value.to_string(), what()));
    }
    Ok(value)
}

fn not_bytes(shown: &str, what: String) -> Error {
    Error::invalid(format!(
        "{what} {shown} is not a number of bytes (a whole number from 0 to 2^53)"
    ))
}

/// A size of V8's profile, by [`heap_bytes`].
fn size(value: f64, what: impl FnOnce() -> String) -> Result<f64> {
    heap_bytes(value, what)
        .map(|bytes| bytes as f64)
        .map_err(|e| shape(e.message))
}

impl HeapTree {
    /// Reads a V8 sampling heap profile from JSON text: a `.heapprofile` file, or the inspector's
    /// `getSamplingProfile` / `stopSampling` reply (`{ "profile": { … } }`).
    pub fn from_json(text: &str) -> Result<HeapTree> {
        let mut s = Scanner::new(text);
        let mut nodes: Vec<RawNode> = Vec::new();
        let mut samples = None;
        let mut head = false;
        if s.object_start(|| "the heap profile".to_owned())? {
            return Err(shape("`head` is missing (a heap profile has head and samples)"));
        }
        let mut wrapped = false;
        loop {
            let key = s.key()?;
            match key.as_ref() {
                "head" if !head => {
                    read_tree(&mut s, &mut nodes)?;
                    head = true;
                }
                "samples" if samples.is_none() => samples = Some(read_samples(&mut s)?),
                // The inspector's reply wraps the profile: read it in place of the outer object.
                "profile" if !head && !wrapped && s.peek()? == b'{' => {
                    wrapped = true;
                    s.open(b'{', b'}')?;
                    continue;
                }
                "head" | "samples" => return Err(shape(format!("`{key}` appears twice"))),
                _ => s.skip_value()?,
            }
            if !s.next_or_close(b'}')? {
                if wrapped {
                    wrapped = false;
                    if s.next_or_close(b'}')? {
                        continue;
                    }
                }
                break;
            }
        }
        s.skip_ws();
        if s.at != s.bytes.len() {
            return Err(s.syntax("trailing characters after the profile"));
        }
        if !head {
            return Err(shape("`head` is missing (a heap profile has head and samples)"));
        }
        Self::build(nodes, samples)
    }

    fn build(nodes: Vec<RawNode>, samples: Option<Vec<(f64, f64, f64)>>) -> Result<HeapTree> {
        Self::build_tree(nodes, samples).map_err(|mut e| {
            // The builder every V8 profile goes through words its errors for CPU profiles.
            if let Some(rest) = e.message.strip_prefix("invalid V8 CPU profile: ") {
                e.message = format!("invalid V8 heap profile: {rest}");
            }
            e
        })
    }

    fn build_tree(nodes: Vec<RawNode>, samples: Option<Vec<(f64, f64, f64)>>) -> Result<HeapTree> {
        let mut builder = ProfileBuilder::with_capacity(nodes.len());
        let mut self_sizes = Vec::with_capacity(nodes.len());
        let mut ids = Vec::with_capacity(nodes.len());
        for (i, n) in nodes.iter().enumerate() {
            let id = whole(n.id.unwrap_or(f64::NAN), || {
                format!("{}: id", node_name(&nodes, i))
            })?;
            let position = |v: f64| if v.is_finite() { v as i64 } else { -1 };
            builder.add_node(id, &n.name, &n.url, position(n.line), position(n.column))?;
            self_sizes.push(size(n.self_size, || {
                format!("{}: selfSize", node_name(&nodes, i))
            })?);
            ids.push(id);
        }
        for (i, n) in nodes.iter().enumerate() {
            if let Some(p) = n.parent {
                builder.set_parent(i, ids[p])?;
            }
        }
        let (profile, node_ids) = builder.into_tree()?;
        let samples = match samples {
            None => None,
            Some(raw) => {
                let mut out = Vec::with_capacity(raw.len());
                for (i, (bytes, node, ordinal)) in raw.into_iter().enumerate() {
                    let id = whole(node, || format!("samples[{i}].nodeId"))?;
                    // V8 builds the tree, then lists the samples; an allocation sampled in between (the
                    // profile's own, while it is built) names a node the tree does not have. Such a
                    // sample is the profiler's, not the app's: left out, as V8's `selfSize`s leave it.
                    let Ok(node) = node_ids.sample_node(i, id) else {
                        continue;
                    };
                    let size = size(bytes, || format!("samples[{i}].size"))?;
                    if !ordinal.is_finite() {
                        return Err(shape(format!("samples[{i}].ordinal is not a finite number")));
                    }
                    out.push(HeapTreeSample { node, size, ordinal });
                }
                Some(out)
            }
        };
        Ok(HeapTree {
            profile,
            self_sizes,
            samples,
        })
    }
}

/// What a profile file's top level says it is, read without descending into any value (a heap
/// profile nests as deep as its stacks): V8's heap profile (`head`, or the inspector's `{ "profile": {
/// "head": … } }`), a heap profile of ours (a `jsprof` object with a `heap` member), or anything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeapFileKind {
    V8,
    Ours,
    Other,
}

/// The kind of `text` (see [`HeapFileKind`]); text that is not JSON is `Other` (its reader says why).
pub(crate) fn heap_file_kind(text: &str) -> HeapFileKind {
    fn members(s: &mut Scanner, depth: u8) -> Result<HeapFileKind> {
        if s.peek()? != b'{' || s.open(b'{', b'}')? {
            return Ok(HeapFileKind::Other);
        }
        loop {
            if s.peek()? != b'"' {
                return Ok(HeapFileKind::Other);
            }
            let key = s.string()?;
            // Told by the name alone: a truncated file still gets the heap reader's message.
            if key == "head" {
                return Ok(HeapFileKind::V8);
            }
            s.expect(b':')?;
            match key.as_ref() {
                "nodes" => return Ok(HeapFileKind::Other),
                "profile" if depth == 0 => {
                    if members(s, 1)? == HeapFileKind::V8 {
                        return Ok(HeapFileKind::V8);
                    }
                    return Ok(HeapFileKind::Other);
                }
                "jsprof" if depth == 0 && s.peek()? == b'{' => {
                    if !s.open(b'{', b'}')? {
                        loop {
                            if s.key()? == "heap" {
                                return Ok(HeapFileKind::Ours);
                            }
                            s.skip_value()?;
                            if !s.next_or_close(b'}')? {
                                break;
                            }
                        }
                    }
                    return Ok(HeapFileKind::Other);
                }
                _ => s.skip_value()?,
            }
            if !s.next_or_close(b'}')? {
                return Ok(HeapFileKind::Other);
            }
        }
    }
    members(&mut Scanner::new(text), 0).unwrap_or(HeapFileKind::Other)
}

/// One node of a heap profile to write: its call frame (0-based positions, -1 unknown), its own size,
/// and its parent (an index into the list, before it).
#[derive(Debug, Clone, PartialEq)]
pub struct HeapNodeOut {
    pub name: String,
    pub url: String,
    pub line: i64,
    pub column: i64,
    pub self_size: f64,
    pub parent: Option<usize>,
}

/// Writes a V8 sampling heap profile: `nodes` (node 0 the root; each parent before its children)
/// nested as V8 writes them (`callFrame`, `selfSize`, `id`, `children`), ids `index + 1`, and `samples`
/// (`(node index, size)`, ordinals 1, 2, …). Iterative, like the reader: any depth.
pub fn write_heap_profile(nodes: &[HeapNodeOut], samples: &[(usize, f64)]) -> String {
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for (i, n) in nodes.iter().enumerate() {
        if let Some(p) = n.parent {
            children[p].push(i);
        }
    }
    let mut out = String::with_capacity(64 + nodes.len() * 160 + samples.len() * 48);
    let number = |v: f64| {
        if v.fract() == 0.0 && v.abs() < 9e15 {
            format!("{}", v as i64)
        } else {
            format!("{v}")
        }
    };
    let quoted = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned());
    out.push_str("{\"head\":");
    // (node, next child to write); a node's members are written when it is pushed.
    let mut stack: Vec<(usize, usize)> = Vec::new();
    let open = |out: &mut String, i: usize| {
        let n = &nodes[i];
        let _ = write!(
            out,
            "{{\"callFrame\":{{\"functionName\":{},\"scriptId\":\"0\",\"url\":{},\"lineNumber\":{},\"columnNumber\":{}}},\"selfSize\":{},\"id\":{},\"children\":[",
            quoted(&n.name),
            quoted(&n.url),
            n.line,
            n.column,
            number(n.self_size),
            i + 1
        );
    };
    if !nodes.is_empty() {
        open(&mut out, 0);
        stack.push((0, 0));
    }
    while let Some((node, next)) = stack.last_mut() {
        if let Some(&child) = children[*node].get(*next) {
            if *next > 0 {
                out.push(',');
            }
            *next += 1;
            open(&mut out, child);
            stack.push((child, 0));
        } else {
            out.push_str("]}");
            stack.pop();
        }
    }
    if nodes.is_empty() {
        out.push_str("null");
    }
    out.push_str(",\"samples\":[");
    for (k, &(node, size)) in samples.iter().enumerate() {
        if k > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            "{{\"size\":{},\"nodeId\":{},\"ordinal\":{}}}",
            number(size),
            node + 1,
            k + 1
        );
    }
    out.push_str("]}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use crate::v8::NodeKind;

    const SMALL: &str = r#"{"head":{"callFrame":{"functionName":"(root)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1},"selfSize":0,"id":1,"children":[
        {"callFrame":{"functionName":"main","scriptId":"3","url":"file:///app/a.js","lineNumber":4,"columnNumber":13},"selfSize":100,"id":2,"children":[
            {"callFrame":{"functionName":"leak","scriptId":"3","url":"file:///app/a.js","lineNumber":9,"columnNumber":2},"selfSize":300,"id":3,"children":[]}]},
        {"callFrame":{"functionName":"(V8 API)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1},"selfSize":0,"id":4,"children":[]}]},
      "samples":[{"size":100,"nodeId":2,"ordinal":1},{"size":200,"nodeId":3,"ordinal":2},{"size":100,"nodeId":3,"ordinal":3}]}"#;

    #[test]
    fn reads_the_nested_tree_and_samples() {
        let t = HeapTree::from_json(SMALL).unwrap();
        let p = &t.profile;
        assert_eq!(p.nodes.len(), 4);
        assert_eq!(p.nodes[0].kind, NodeKind::Root);
        assert_eq!(p.nodes[1].parent, Some(0));
        assert_eq!(p.nodes[2].parent, Some(1));
        assert_eq!(p.nodes[3].parent, Some(0));
        assert_eq!(p.string(p.nodes[2].name), "leak");
        assert_eq!((p.nodes[2].line, p.nodes[2].column), (9, 2));
        assert_eq!(t.self_sizes, vec![0.0, 100.0, 300.0, 0.0]);
        let samples = t.samples.unwrap();
        assert_eq!(samples.len(), 3);
        assert_eq!(
            (samples[1].node, samples[1].size, samples[1].ordinal),
            (2, 200.0, 2.0)
        );
    }

    #[test]
    fn reads_the_inspector_reply_other_member_orders_and_unknown_members() {
        let wrapped = format!(r#"{{"profile":{SMALL}}}"#);
        assert_eq!(
            HeapTree::from_json(&wrapped).unwrap(),
            HeapTree::from_json(SMALL).unwrap()
        );
        // Node 26's v8.startHeapProfile writes samples first and id before callFrame.
        let text = r#"{"samples":[{"size":8,"nodeId":2,"ordinal":1}],"x":{"y":[1,[2,{"z":null}]],"w":"s"},
            "head":{"selfSize":0,"id":1,"callFrame":{"functionName":"(root)","url":"","extra":[{}]},
            "children":[{"selfSize":8,"id":2,"callFrame":{"functionName":"f","url":"file:///f.js","lineNumber":0,"columnNumber":0},"children":[]}]}}"#;
        let t = HeapTree::from_json(text).unwrap();
        assert_eq!(t.profile.nodes.len(), 2);
        assert_eq!(t.samples.unwrap()[0].node, 1);
        // Children before the id, and no samples (DevTools' older files).
        let text = r#"{"head":{"children":[{"children":[],"id":9,"selfSize":5,"callFrame":{"functionName":"g","url":""}}],"id":1,"callFrame":{"functionName":"(root)","url":""}}}"#;
        let t = HeapTree::from_json(text).unwrap();
        assert_eq!(t.samples, None);
        assert_eq!(t.self_sizes, vec![0.0, 5.0]);
        assert_eq!(t.profile.nodes[1].parent, Some(0));
    }

    #[test]
    fn reads_any_depth_without_recursion() {
        let depth = 200_000;
        let mut text = String::from(r#"{"head":"#);
        for i in 0..depth {
            text.push_str(&format!(
                r#"{{"callFrame":{{"functionName":"f{i}","url":"file:///x.js","lineNumber":{i},"columnNumber":0}},"selfSize":1,"id":{},"children":["#,
                i + 1
            ));
        }
        for _ in 0..depth {
            text.push_str("]}");
        }
        text.push_str(r#","samples":[{"size":1,"nodeId":200000,"ordinal":1}]}"#);
        let t = HeapTree::from_json(&text).unwrap();
        assert_eq!(t.profile.nodes.len(), depth);
        assert_eq!(t.profile.nodes[depth - 1].parent, Some(depth as u32 - 2));
        // And writes it back iteratively.
        let nodes: Vec<HeapNodeOut> = (0..depth)
            .map(|i| HeapNodeOut {
                name: format!("f{i}"),
                url: "file:///x.js".into(),
                line: i as i64,
                column: 0,
                self_size: 1.0,
                parent: i.checked_sub(1),
            })
            .collect();
        let back = HeapTree::from_json(&write_heap_profile(&nodes, &[(depth - 1, 1.0)])).unwrap();
        assert_eq!(back.profile.nodes.len(), depth);
        assert_eq!(back.samples.unwrap()[0].node, depth as u32 - 1);
    }

    #[test]
    fn leaves_out_samples_of_nodes_the_tree_does_not_have() {
        // V8 lists the samples after building the tree: one taken in between names a node it lacks.
        let text = SMALL.replace(
            r#"{"size":100,"nodeId":3,"ordinal":3}"#,
            r#"{"size":100,"nodeId":99,"ordinal":3}"#,
        );
        let t = HeapTree::from_json(&text).unwrap();
        let samples = t.samples.unwrap();
        assert_eq!(samples.len(), 2);
        assert!(samples.iter().all(|s| s.node < 4));
    }

    #[test]
    fn writes_what_it_reads() {
        let t = HeapTree::from_json(SMALL).unwrap();
        let p = &t.profile;
        let nodes: Vec<HeapNodeOut> = p
            .nodes
            .iter()
            .zip(&t.self_sizes)
            .map(|(n, &self_size)| HeapNodeOut {
                name: p.string(n.name).to_owned(),
                url: p.string(n.url).to_owned(),
                line: n.line.into(),
                column: n.column.into(),
                self_size,
                parent: n.parent.map(|p| p as usize),
            })
            .collect();
        let samples: Vec<(usize, f64)> = t
            .samples
            .as_ref()
            .unwrap()
            .iter()
            .map(|s| (s.node as usize, s.size))
            .collect();
        let text = write_heap_profile(&nodes, &samples);
        assert_eq!(HeapTree::from_json(&text).unwrap(), t);
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            value["head"]["children"][0]["children"][0]["callFrame"]["functionName"],
            "leak"
        );
    }

    fn err(text: &str) -> Error {
        HeapTree::from_json(text).unwrap_err()
    }

    #[test]
    fn says_what_is_wrong_in_one_line() {
        let e = err("{\"head\":");
        assert_eq!(e.kind, ErrorKind::Syntax);
        assert_eq!(
            e.message,
            "the heap profile is not valid JSON: unexpected end of the text at line 1 column 9"
        );
        let e = err("{\"head\":{\"id\":1,\n \"children\":[}]}}");
        assert_eq!(e.kind, ErrorKind::Syntax);
        assert!(e.message.ends_with("at line 2 column 14"), "{}", e.message);
        let cases = [
            (r#"{"samples":[]}"#, "`head` is missing"),
            (r#"[]"#, "the heap profile: an array where an object belongs"),
            (
                r#"{"head":{"id":"1"}}"#,
                "node #1 (in text order): id: a string where a number belongs",
            ),
            (
                r#"{"head":{"callFrame":{}}}"#,
                "node #1 (in text order) has no id",
            ),
            (
                r#"{"head":{"id":1,"callFrame":{"url":7}}}"#,
                "node id 1: callFrame.url: a number where a string belongs",
            ),
            (
                r#"{"head":{"id":1,"children":{}}}"#,
                "node id 1: children: an object where an array belongs",
            ),
            (
                r#"{"head":{"id":1,"children":[3]}}"#,
                "a child of node id 1: a number where an object belongs",
            ),
            (
                r#"{"head":{"id":1,"children":[{"id":1}]}}"#,
                "node id 1 appears twice",
            ),
            (
                r#"{"head":{"id":1.5}}"#,
                "node id 1.5: id 1.5 is not a whole number",
            ),
            (
                r#"{"head":{"id":1,"selfSize":-3}}"#,
                "node id 1: selfSize -3 is not a number of bytes",
            ),
            (
                r#"{"head":{"id":1},"samples":[{"nodeId":1}]}"#,
                "samples[0] has no size",
            ),
            (
                r#"{"head":{"id":1},"samples":[{"size":1e400,"nodeId":1}]}"#,
                "samples[0].size inf is not a number of bytes",
            ),
            // The own format's rule (heap::HeapProfile::from_json): whole bytes up to 2^53.
            (
                r#"{"head":{"id":1,"selfSize":1e308}}"#,
                "node id 1: selfSize 1e308 is not a number of bytes",
            ),
            (
                r#"{"head":{"id":1},"samples":[{"size":9007199254740994,"nodeId":1}]}"#,
                "samples[0].size 9007199254740994 is not a number of bytes",
            ),
            (
                r#"{"head":{"id":1},"samples":[{"size":1.5,"nodeId":1}]}"#,
                "samples[0].size 1.5 is not a number of bytes",
            ),
            (r#"{"head":{"id":1},"head":{"id":2}}"#, "`head` appears twice"),
        ];
        for (text, message) in cases {
            let e = err(text);
            assert_eq!(e.kind, ErrorKind::Type, "{text}: {}", e.message);
            assert!(
                e.message.starts_with("invalid V8 heap profile: "),
                "{}",
                e.message
            );
            assert!(e.message.contains(message), "{text}: {} vs {message}", e.message);
        }
        for text in [
            r#"{"head":{"id":1}} x"#,
            r#"{"head":{"id":1,}}"#,
            "{\"head\":{\"id\":1,\"x\":\"a\u{1}\"}}",
            r#"{"head":{"id":01x}}"#,
        ] {
            assert_eq!(err(text).kind, ErrorKind::Syntax, "{text}");
        }
    }

    #[test]
    fn tells_heap_files_by_their_top_level() {
        assert_eq!(heap_file_kind(SMALL), HeapFileKind::V8);
        assert_eq!(
            heap_file_kind(&format!(r#"{{"profile":{SMALL}}}"#)),
            HeapFileKind::V8
        );
        assert_eq!(
            heap_file_kind(r#"{"frames":[],"jsprof":{"pid":1,"heap":{}},"samples":[]}"#),
            HeapFileKind::Ours
        );
        assert_eq!(
            heap_file_kind(r#"{"frames":[],"jsprof":{"pid":1},"samples":[]}"#),
            HeapFileKind::Other
        );
        assert_eq!(heap_file_kind(r#"{"nodes":[],"head":1}"#), HeapFileKind::Other);
        assert_eq!(heap_file_kind(r#"{"profile":{"nodes":[]}}"#), HeapFileKind::Other);
        assert_eq!(heap_file_kind("{\"head\""), HeapFileKind::V8);
        assert_eq!(heap_file_kind("not json"), HeapFileKind::Other);
        assert_eq!(heap_file_kind("[]"), HeapFileKind::Other);
    }

    #[test]
    fn reads_escapes_and_lone_surrogates_as_visible_text() {
        let text = r#"{"head":{"id":1,"callFrame":{"functionName":"a\"b\\c\u00e9\ud83d\ude00\ud800x\n"}}}"#;
        let t = HeapTree::from_json(text).unwrap();
        assert_eq!(
            t.profile.string(t.profile.nodes[0].name),
            "a\"b\\c\u{e9}\u{1f600}\\u{d800}x\n"
        );
    }
}
