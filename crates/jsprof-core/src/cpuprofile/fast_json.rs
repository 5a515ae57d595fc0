//! The fast road for `.cpuprofile` text: a scanner for the shape V8, Node and DevTools write, which
//! fills the same [`RawProfile`] as the serde road at several times its speed (a generic deserializer
//! spends most of a multi-MB profile on per-number dispatch for `samples` and `timeDeltas`).
//!
//! It is an accelerator, not a second parser with its own opinions: it only ever answers for text it
//! fully understands and gives up (`None`) on anything else — malformed JSON, `null`s, duplicate
//! members, escaped keys, numbers beyond its exact range, deep nesting. Then the serde road parses the
//! text from the start and reports the precise error. So whatever it accepts, serde accepts with the same
//! result; `tests::agrees_with_serde` checks that on generated profiles and on damaged ones.

use std::borrow::Cow;

use super::{RawCallFrame, RawNode, RawProfile};

/// serde_json stops at 128 levels; giving up earlier keeps this scanner's recursion shallow.
const MAX_DEPTH: u32 = 64;
/// Integers of up to 18 digits fit an `i64` and convert to `f64` as serde_json converts them.
const MAX_INT_DIGITS: usize = 18;

/// Below this size a second thread costs more than it saves.
const READ_AHEAD_MIN_BYTES: usize = 256 * 1024;

/// The profile in `text`, or `None` when the serde road must decide.
///
/// In a large profile the two number arrays are about 40% of the text, and V8 writes them after the
/// nodes. So a helper thread reads them from where they seem to start while this thread reads the
/// nodes; the scanner takes the helper's result only when it meets the array at exactly that offset,
/// and the helper runs the very same reader, so the answer is the one a single pass would give.
pub(super) fn parse(text: &str) -> Option<RawProfile<'_>> {
    if text.len() < READ_AHEAD_MIN_BYTES {
        return Scanner::at(text, 0).document(None);
    }
    std::thread::scope(|scope| {
        let (send, receive) = std::sync::mpsc::sync_channel(1);
        let helper = std::thread::Builder::new()
            .name("jsprof-json".into())
            .spawn_scoped(scope, move || {
                // The scanner may have given up and gone: then nobody needs what was read.
                let _ = send.send(read_arrays(text));
            });
        // No thread to be had: one pass does it all.
        let ahead = helper.ok().map(|_| ReadAhead {
            receive,
            arrays: None,
        });
        Scanner::at(text, 0).document(ahead)
    })
}

/// The helper's work: find where the arrays seem to start and read them there. The first
/// `"samples":[` is the profile's unless a member before it holds an object with such a member (the
/// text cannot occur inside a string, where quotes are escaped); V8 writes `timeDeltas` right after
/// it. (A forward search, which memchr vectorizes.)
fn read_arrays(text: &str) -> ReadArrays {
    let bytes = text.as_bytes();
    let array_after = |from: usize, member: &[u8]| {
        memchr::memmem::find(&bytes[from..], member).map(|at| from + at + member.len() - 1)
    };
    let samples = array_after(0, b"\"samples\":[").and_then(|at| {
        let mut s = Scanner::at(text, at);
        Some((at, s.i64_array(0)?, s.pos))
    });
    let (hint, from) = samples.as_ref().map_or((0, 0), |(_, v, end)| (v.len(), *end));
    let deltas = array_after(from, b"\"timeDeltas\":[").and_then(|at| {
        let mut s = Scanner::at(text, at);
        Some((at, s.f64_array(hint)?, s.pos))
    });
    ReadArrays { samples, deltas }
}

/// What the helper read: each array with the offsets where it starts and just past it.
struct ReadArrays {
    samples: Option<(usize, Vec<i64>, usize)>,
    deltas: Option<(usize, Vec<f64>, usize)>,
}

/// The scanner's side of the helper thread.
struct ReadAhead {
    receive: std::sync::mpsc::Receiver<ReadArrays>,
    arrays: Option<ReadArrays>,
}

impl ReadAhead {
    fn arrays(&mut self) -> Option<&mut ReadArrays> {
        if self.arrays.is_none() {
            self.arrays = self.receive.recv().ok();
        }
        self.arrays.as_mut()
    }

    /// The helper's `samples` and the offset past them, if that array starts at `at`.
    fn samples(&mut self, at: usize) -> Option<(Vec<i64>, usize)> {
        taken_if_at(&mut self.arrays()?.samples, at)
    }

    /// The helper's `timeDeltas` and the offset past them, if that array starts at `at`.
    fn deltas(&mut self, at: usize) -> Option<(Vec<f64>, usize)> {
        taken_if_at(&mut self.arrays()?.deltas, at)
    }
}

fn taken_if_at<T>(slot: &mut Option<(usize, T, usize)>, at: usize) -> Option<(T, usize)> {
    match slot.take()? {
        (start, array, end) if start == at => {
            #[cfg(test)]
            tests::READ_AHEAD_TAKEN.with(|n| n.set(n.get() + 1));
            Some((array, end))
        }
        _ => None,
    }
}

/// The value and length of the run of ASCII digits that starts an 8-byte little-endian word (8 when
/// the whole word is digits). The word is converted without a branch per digit (the SWAR method of
/// simdjson's number parser): a loop over bytes mispredicts at the end of every short number.
fn digits_in_word(word: u64) -> (u64, usize) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    // A byte is a digit when its high nibble is 3 and adding 6 keeps it 3 (0x30..=0x39). A carry out of
    // a byte only reaches bytes after a non-digit, which are not looked at.
    let high = |w: u64| (w & (0xF0 * ONES)) ^ (0x30 * ONES);
    let not_digit = high(word) | high(word.wrapping_add(6 * ONES));
    let count = (not_digit.trailing_zeros() / 8) as usize;
    if count == 0 {
        return (0, 0);
    }
    // Digit values, the first (least significant byte) moved up so that the run is right-aligned as
    // an 8-digit number with leading zeros; then pairs, quads and the whole are combined.
    let mut v = (word & (0x0F * ONES)) << (8 * (8 - count));
    v = v.wrapping_mul(10).wrapping_add(v >> 8) & 0x00FF_00FF_00FF_00FF;
    v = v.wrapping_mul(100).wrapping_add(v >> 16) & 0x0000_FFFF_0000_FFFF;
    v = v.wrapping_mul(10_000).wrapping_add(v >> 32) & 0xFFFF_FFFF;
    (v, count)
}

/// The value and end of the run of (at most 8) ASCII digits at `at`.
fn leading_digits(bytes: &[u8], at: usize) -> (u64, usize) {
    if let Some(word) = bytes.get(at..at + 8) {
        let (value, count) = digits_in_word(u64::from_le_bytes(word.try_into().expect("8 bytes")));
        return (value, at + count);
    }
    // Fewer than 8 bytes left: byte by byte.
    let (mut value, mut end) = (0u64, at);
    while let Some(digit) = bytes.get(end).map(|b| b.wrapping_sub(b'0')).filter(|&d| d <= 9) {
        value = value * 10 + u64::from(digit);
        end += 1;
        if end - at == 8 {
            break;
        }
    }
    (value, end)
}

struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    ahead: Option<ReadAhead>,
}

/// Fills a member slot once: a second occurrence is a serde error ("duplicate field"), so give up.
fn set_once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(value);
    Some(())
}

impl<'a> Scanner<'a> {
    fn at(text: &'a str, pos: usize) -> Self {
        Scanner {
            text,
            bytes: text.as_bytes(),
            pos,
            ahead: None,
        }
    }

    /// The whole text: one profile object and nothing but whitespace after it.
    fn document(mut self, ahead: Option<ReadAhead>) -> Option<RawProfile<'a>> {
        self.ahead = ahead;
        let profile = self.profile(0)?;
        self.ws();
        (self.pos == self.bytes.len()).then_some(profile)
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.peek() {
            self.pos += 1;
        }
    }

    /// Skips whitespace and consumes `byte`.
    fn expect(&mut self, byte: u8) -> Option<()> {
        self.ws();
        (self.peek()? == byte).then(|| self.pos += 1)
    }

    /// Skips whitespace and consumes `byte` if it comes next.
    fn eat(&mut self, byte: u8) -> bool {
        self.ws();
        let next = self.peek() == Some(byte);
        if next {
            self.pos += 1;
        }
        next
    }

    /// `{ member (, member)* }`, calling `member(self, key)` with the scanner on the value.
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.expect(b'{')?;
        if self.eat(b'}') {
            return Some(());
        }
        loop {
            self.ws();
            let key = self.key()?;
            self.expect(b':')?;
            self.ws();
            member(self, key)?;
            if self.eat(b'}') {
                return Some(());
            }
            self.expect(b',')?;
        }
    }

    /// `[ item (, item)* ]`.
    fn array(&mut self, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.expect(b'[')?;
        if self.eat(b']') {
            return Some(());
        }
        loop {
            self.ws();
            item(self)?;
            if self.eat(b']') {
                return Some(());
            }
            self.expect(b',')?;
        }
    }

    fn profile(&mut self, depth: u32) -> Option<RawProfile<'a>> {
        let mut nodes = None;
        let (mut start_time, mut end_time, mut samples, mut time_deltas, mut profile) =
            (None, None, None, None::<Vec<f64>>, None);
        self.object(|s, key| match key {
            "nodes" => set_once(&mut nodes, s.nodes(depth + 1)?),
            "startTime" => set_once(&mut start_time, s.f64()?),
            "endTime" => set_once(&mut end_time, s.f64()?),
            "samples" => {
                let (at, hint) = (s.pos, time_deltas.as_ref().map_or(0, Vec::len));
                let taken = s.ahead.as_mut().and_then(|ahead| ahead.samples(at));
                set_once(&mut samples, s.taken_or_read(taken, |s| s.i64_array(hint))?)
            }
            "timeDeltas" => {
                let (at, hint) = (s.pos, samples.as_ref().map_or(0, Vec::len));
                let taken = s.ahead.as_mut().and_then(|ahead| ahead.deltas(at));
                set_once(&mut time_deltas, s.taken_or_read(taken, |s| s.f64_array(hint))?)
            }
            "profile" if depth < MAX_DEPTH => set_once(&mut profile, Box::new(s.profile(depth + 1)?)),
            _ => s.skip(depth + 1),
        })?;
        Some(RawProfile {
            nodes,
            start_time,
            end_time,
            samples,
            time_deltas,
            profile,
        })
    }

    /// The helper's array when it read the one that starts here (the scanner moves past it), else
    /// the array as `read` reads it.
    fn taken_or_read<T>(
        &mut self,
        taken: Option<(Vec<T>, usize)>,
        read: impl FnOnce(&mut Self) -> Option<Vec<T>>,
    ) -> Option<Vec<T>> {
        match taken {
            Some((array, end)) => {
                self.pos = end;
                Some(array)
            }
            None => read(self),
        }
    }

    fn nodes(&mut self, depth: u32) -> Option<Vec<RawNode<'a>>> {
        let mut nodes = Vec::new();
        self.array(|s| {
            nodes.push(s.node(depth + 1)?);
            Some(())
        })?;
        Some(nodes)
    }

    fn node(&mut self, depth: u32) -> Option<RawNode<'a>> {
        let (mut id, mut call_frame, mut children, mut parent) = (None, None, None, None);
        self.object(|s, key| match key {
            "id" => set_once(&mut id, s.i64()?),
            "callFrame" => set_once(&mut call_frame, s.call_frame(depth + 1)?),
            "children" => set_once(&mut children, s.i64_array(0)?),
            "parent" => set_once(&mut parent, s.i64()?),
            _ => s.skip(depth + 1),
        })?;
        Some(RawNode {
            id: id?,
            call_frame: call_frame?,
            children,
            parent,
        })
    }

    fn call_frame(&mut self, depth: u32) -> Option<RawCallFrame<'a>> {
        let (mut function_name, mut url, mut line_number, mut column_number) = (None, None, None, None);
        self.object(|s, key| match key {
            "functionName" => set_once(&mut function_name, s.string()?),
            "url" => set_once(&mut url, s.string()?),
            "lineNumber" => set_once(&mut line_number, s.i64()?),
            "columnNumber" => set_once(&mut column_number, s.i64()?),
            _ => s.skip(depth + 1),
        })?;
        Some(RawCallFrame {
            function_name: function_name.unwrap_or_default(),
            url: url.unwrap_or_default(),
            line_number: line_number.unwrap_or(-1),
            column_number: column_number.unwrap_or(-1),
        })
    }

    /// A member name without escapes (an escaped name could spell a known member: serde decides).
    fn key(&mut self) -> Option<&'a str> {
        match self.string()? {
            Cow::Borrowed(key) => Some(key),
            Cow::Owned(_) => None,
        }
    }

    /// A string, borrowed from the text unless it has escapes.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.pos + 1;
        let mut i = start + memchr::memchr2(b'"', b'\\', &self.bytes[start..])?;
        // JSON strings hold no raw control characters (a branch-free pass, which vectorizes).
        if self.bytes[start..i]
            .iter()
            .fold(false, |bad, &b| bad | (b < 0x20))
        {
            return None;
        }
        if self.bytes[i] == b'"' {
            self.pos = i + 1;
            // Both ends are ASCII, so the slice falls on character boundaries.
            return Some(Cow::Borrowed(&self.text[start..i]));
        }
        let mut out = String::from(&self.text[start..i]);
        loop {
            match *self.bytes.get(i)? {
                b'"' => {
                    self.pos = i + 1;
                    return Some(Cow::Owned(out));
                }
                b'\\' => {
                    let escaped = *self.bytes.get(i + 1)?;
                    i += 2;
                    out.push(match escaped {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        // Surrogates (pairs or lone) are left to serde.
                        b'u' => {
                            let hex = self.text.get(i..i + 4)?;
                            if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                                return None;
                            }
                            i += 4;
                            char::from_u32(u32::from_str_radix(hex, 16).ok()?)?
                        }
                        _ => return None,
                    });
                }
                0..=0x1f => return None,
                _ => {
                    // Copy the run up to the next quote or backslash in one go.
                    let run = self.bytes[i..]
                        .iter()
                        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
                    out.push_str(&self.text[i..i + run]);
                    i += run;
                }
            }
        }
    }

    /// An integer token `0`, `[1-9][0-9]{0,17}` or its negation (not `-0`, which serde reads as a
    /// float): its value, exactly.
    fn i64(&mut self) -> Option<i64> {
        let bytes = self.bytes;
        let negative = self.peek()? == b'-';
        let start = self.pos + usize::from(negative);
        let (mut value, mut end) = leading_digits(bytes, start);
        if end - start == 8 {
            // Longer than one word: go on digit by digit (rare: V8's ids and deltas are short).
            while let Some(&b) = bytes.get(end) {
                let digit = b.wrapping_sub(b'0');
                if digit > 9 || end - start > MAX_INT_DIGITS {
                    break;
                }
                value = value * 10 + u64::from(digit);
                end += 1;
            }
        }
        let digits = end - start;
        if digits == 0 || digits > MAX_INT_DIGITS || (bytes[start] == b'0' && (digits > 1 || negative)) {
            return None;
        }
        if let Some(b'.' | b'e' | b'E') = bytes.get(end) {
            return None;
        }
        self.pos = end;
        let value = value as i64;
        Some(if negative { -value } else { value })
    }

    /// Any JSON number as an `f64`, with serde_json's own conversion for the ones that are not plain
    /// integers (so both roads round alike).
    fn f64(&mut self) -> Option<f64> {
        let start = self.pos;
        if let Some(v) = self.i64() {
            return Some(v as f64);
        }
        self.number_token()?;
        serde_json::from_str(&self.text[start..self.pos]).ok()
    }

    fn i64_array(&mut self, capacity: usize) -> Option<Vec<i64>> {
        self.number_array(capacity, |v| v, Self::i64)
    }

    fn f64_array(&mut self, capacity: usize) -> Option<Vec<f64>> {
        self.number_array(capacity, |v| v as f64, Self::f64)
    }

    /// A number array: runs of plain integers on the short road ([`Self::plain_ints`], converted by
    /// `from_int`), any other element read by `item`.
    fn number_array<T>(
        &mut self,
        capacity: usize,
        from_int: impl Fn(i64) -> T,
        item: impl Fn(&mut Self) -> Option<T>,
    ) -> Option<Vec<T>> {
        let mut out = Vec::with_capacity(capacity);
        self.numbers(|s| {
            s.plain_ints(|v| out.push(from_int(v)));
            out.push(item(s)?);
            Some(())
        })?;
        Some(out)
    }

    /// The short road through a number array: integers of 1–7 digits each followed by a bare comma (how
    /// V8 writes `samples` and `timeDeltas`), a word at a time. Stops at the first element that is
    /// anything else, which the careful road then reads.
    fn plain_ints(&mut self, mut push: impl FnMut(i64)) {
        let bytes = self.bytes;
        let mut i = self.pos;
        // A sign, 8 bytes of word, and the comma within them.
        while i + 9 <= bytes.len() {
            let negative = bytes[i] == b'-';
            let start = i + usize::from(negative);
            let word = u64::from_le_bytes(bytes[start..start + 8].try_into().expect("8 bytes"));
            let (value, digits) = digits_in_word(word);
            let plain = (1..8).contains(&digits)
                && (bytes[start] != b'0' || (digits == 1 && !negative))
                && bytes[start + digits] == b',';
            if !plain {
                break;
            }
            push(if negative { -(value as i64) } else { value as i64 });
            i = start + digits + 1;
        }
        if i != self.pos {
            // After a comma: the next element may follow whitespace.
            self.pos = i;
            self.ws();
        }
    }

    /// [`Self::array`] for the long number arrays, with a short road for the `,` that V8 writes
    /// between two numbers (no whitespace).
    fn numbers(&mut self, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.expect(b'[')?;
        if self.eat(b']') {
            return Some(());
        }
        self.ws();
        loop {
            item(self)?;
            match self.peek()? {
                b',' => {
                    self.pos += 1;
                    if !matches!(self.peek()?, b'0'..=b'9' | b'-') {
                        self.ws();
                    }
                }
                b']' => {
                    self.pos += 1;
                    return Some(());
                }
                _ => {
                    if self.eat(b']') {
                        return Some(());
                    }
                    self.expect(b',')?;
                    self.ws();
                }
            }
        }
    }

    /// Consumes a number token by JSON's grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    fn number_token(&mut self) -> Option<()> {
        let digits = |s: &mut Self| {
            let n = s.bytes[s.pos..].iter().take_while(|b| b.is_ascii_digit()).count();
            s.pos += n;
            n
        };
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek()? {
            b'0' => self.pos += 1,
            b'1'..=b'9' => {
                digits(self);
            }
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if digits(self) == 0 {
                return None;
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if digits(self) == 0 {
                return None;
            }
        }
        Some(())
    }

    /// Skips one well-formed JSON value (a member the profile does not use).
    fn skip(&mut self, depth: u32) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'{' => self.object(|s, _| s.skip(depth + 1)),
            b'[' => self.array(|s| s.skip(depth + 1)),
            b'"' => self.string().map(drop),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            _ => self.number_token(),
        }
    }

    fn literal(&mut self, word: &str) -> Option<()> {
        self.bytes[self.pos..]
            .starts_with(word.as_bytes())
            .then(|| self.pos += word.len())
    }
}

#[cfg(test)]
mod tests {
    use super::super::Profile;
    use super::*;
    use proptest::prelude::*;
    use std::cell::Cell;

    thread_local! {
        /// How many arrays the scanner on this thread took from its helper.
        pub(super) static READ_AHEAD_TAKEN: Cell<usize> = const { Cell::new(0) };
    }

    /// A profile past the read-ahead threshold: `first_name` names the first code node, `members`
    /// lists the top-level members in the order to write them.
    fn large_profile(first_name: &str, members: &[&str]) -> String {
        let mut nodes =
            vec![r#"{"id":1,"callFrame":{"functionName":"(root)","url":""},"children":[2]}"#.to_string()];
        for id in 2..=3000 {
            let name = if id == 2 {
                first_name.to_string()
            } else {
                format!("f{id}")
            };
            let child = if id < 3000 {
                format!(r#","children":[{}]"#, id + 1)
            } else {
                String::new()
            };
            nodes.push(format!(
                r#"{{"id":{id},"callFrame":{{"functionName":{},"scriptId":"9","url":"file:///srv/app/node_modules/some-package/lib/module-{}.js","lineNumber":{},"columnNumber":4}},"hitCount":1{child}}}"#,
                serde_json::to_string(&name).unwrap(),
                id % 97,
                id * 3
            ));
        }
        let samples: Vec<String> = (0..40_000).map(|i| (1 + (i * 7919) % 3000).to_string()).collect();
        let deltas: Vec<String> = (0..40_000)
            .map(|i| {
                if i % 97 == 0 {
                    "-13".into()
                } else {
                    (100 + i % 41).to_string()
                }
            })
            .collect();
        let member = |name: &str| match name {
            "nodes" => format!(r#""nodes":[{}]"#, nodes.join(",")),
            "samples" => format!(r#""samples":[{}]"#, samples.join(",")),
            "timeDeltas" => format!(r#""timeDeltas":[{}]"#, deltas.join(",")),
            "meta" => r#""meta":{"samples":[1,2,3],"timeDeltas":[5,5,5]}"#.to_string(),
            other => format!(r#""{other}":1000"#),
        };
        let text = format!(
            "{{{}}}",
            members.iter().map(|m| member(m)).collect::<Vec<_>>().join(",")
        );
        assert!(text.len() > READ_AHEAD_MIN_BYTES);
        text
    }

    /// Parses `text` on the fast road and checks it against serde; returns how many arrays came
    /// from the helper thread.
    fn fast_and_serde_agree(text: &str) -> usize {
        let before = READ_AHEAD_TAKEN.with(Cell::get);
        let fast = fast_road(text).expect("takes the fast road").unwrap();
        assert_eq!(fast, serde_road(text).unwrap());
        assert_eq!(fast.samples.len(), 40_000);
        READ_AHEAD_TAKEN.with(Cell::get) - before
    }

    #[test]
    fn large_profiles_have_their_arrays_read_ahead() {
        let v8_order = ["nodes", "startTime", "endTime", "samples", "timeDeltas"];
        assert_eq!(fast_and_serde_agree(&large_profile("main", &v8_order)), 2);
        let wrapped = format!("{{\"profile\":{}}}", large_profile("main", &v8_order));
        assert_eq!(fast_and_serde_agree(&wrapped), 2);
    }

    #[test]
    fn a_wrong_guess_costs_time_not_correctness() {
        // The first `"samples":[` and `"timeDeltas":[` in the text belong to another object: the
        // helper reads those, the scanner reads the real ones itself.
        let order = ["meta", "nodes", "startTime", "endTime", "samples", "timeDeltas"];
        assert_eq!(fast_and_serde_agree(&large_profile("main", &order)), 0);
        // Inside a string the text cannot be taken for a member (its quotes are escaped).
        let v8_order = ["nodes", "startTime", "endTime", "samples", "timeDeltas"];
        let name = r#"x"samples":[1,2,3]"#;
        assert_eq!(fast_and_serde_agree(&large_profile(name, &v8_order)), 2);
        // Other member orders: whatever the helper finds, the result is a single pass's.
        for order in [
            ["samples", "timeDeltas", "nodes", "startTime", "endTime"],
            ["timeDeltas", "samples", "startTime", "nodes", "endTime"],
            ["startTime", "timeDeltas", "nodes", "samples", "endTime"],
        ] {
            fast_and_serde_agree(&large_profile("main", &order));
        }
    }

    fn serde_road(text: &str) -> crate::error::Result<Profile> {
        serde_json::from_str::<RawProfile>(text)
            .map_err(|e| crate::error::Error::invalid(e.to_string()))
            .and_then(RawProfile::into_profile_unwrapped)
    }

    fn fast_road(text: &str) -> Option<crate::error::Result<Profile>> {
        parse(text).map(RawProfile::into_profile_unwrapped)
    }

    /// Whatever the fast road answers, the serde road answers the same.
    fn assert_agrees(text: &str) {
        if let Some(fast) = fast_road(text) {
            match (fast, serde_road(text)) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{text}"),
                (Err(a), Err(b)) => assert_eq!(a.message, b.message, "{text}"),
                (a, b) => panic!("the roads disagree on {text}: fast {a:?}, serde {b:?}"),
            }
        }
    }

    const SMALL: &str = r#"{"nodes":[
        {"id":1,"callFrame":{"functionName":"(root)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1},"hitCount":0,"children":[2,3]},
        {"id":2,"callFrame":{"functionName":"(program)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1},"hitCount":1,"positionTicks":[{"line":1,"ticks":2}]},
        {"id":3,"callFrame":{"functionName":"RegExp: ^\\s+\"$ \u00e9\u20ac","scriptId":"7","url":"file:///app/caf\u00e9 ü.js","lineNumber":4,"columnNumber":13},"hitCount":1,"deoptReason":null,"x":[true,false,{"y":-1.5e3}]}
      ],"startTime":1000,"endTime":2000.5,"samples":[2,3,3],"timeDeltas":[10,20,-5]}"#;

    #[test]
    fn reads_what_v8_writes_as_serde_does() {
        let raw = parse(SMALL).expect("the common shape takes the fast road");
        let fast = raw.into_profile_unwrapped().unwrap();
        assert_eq!(fast, serde_road(SMALL).unwrap());
        assert_eq!(fast.string(fast.nodes[2].name), "RegExp: ^\\s+\"$ é€");
        assert_eq!(fast.string(fast.nodes[2].url), "file:///app/café ü.js");
        assert_eq!(fast.end_time, 2000.5);
        let wrapped = format!(" {{\"id\":4, \"profile\" : {SMALL} }}\n");
        assert_eq!(fast_road(&wrapped).unwrap().unwrap(), fast);
    }

    #[test]
    fn leaves_everything_unusual_to_serde() {
        let variants = [
            SMALL.replace("[2,3,3]", "[2,3,-0]"),
            SMALL.replace("[2,3,3]", "[2,3,3.0]"),
            SMALL.replace("[2,3,3]", "[2,3,1234567890123456789]"),
            SMALL.replace("\"children\":[2,3]", "\"children\":null"),
            SMALL.replace("\"startTime\":1000", "\"startTime\":1000,\"startTime\":1"),
            SMALL.replace("\"samples\"", "\"s\\u0061mples\""),
            SMALL.replace("(program)", "\\ud83d\\ude00"),
            SMALL.replace("(program)", "tab\there"),
            format!("{SMALL} x"),
            format!("{}{}", "[".repeat(70), "]".repeat(70)),
            SMALL.replace(
                "\"hitCount\":0",
                &format!("\"hitCount\":{}0{}", "[".repeat(70), "]".repeat(70)),
            ),
            SMALL[..SMALL.len() - 3].to_string(),
        ];
        for text in &variants {
            assert!(parse(text).is_none(), "should give up on {text}");
            assert_agrees(text);
        }
    }

    #[test]
    fn reads_digit_runs_a_word_at_a_time() {
        let naive = |text: &str, at: usize| {
            let run: String = text[at..]
                .chars()
                .take_while(char::is_ascii_digit)
                .take(8)
                .collect();
            (run.parse::<u64>().unwrap_or(0), at + run.len())
        };
        for text in [
            "0",
            "7,",
            "12345678",
            "123456789",
            "90]",
            "1:2",
            "09999999x",
            "/9:",
            "éé12",
            "5é",
        ] {
            for padded in [text.to_string(), format!("{text}          ")] {
                for at in (0..padded.len()).filter(|&i| padded.is_char_boundary(i)) {
                    assert_eq!(
                        leading_digits(padded.as_bytes(), at),
                        naive(&padded, at),
                        "{padded:?} at {at}"
                    );
                }
            }
        }
    }

    #[test]
    fn semantic_errors_come_from_the_shared_validator() {
        let text = SMALL.replace("[2,3,3]", "[2,3,9]");
        let e = fast_road(&text).unwrap().unwrap_err();
        assert!(
            e.message.contains("samples[2] names unknown node id 9"),
            "{}",
            e.message
        );
        assert_agrees(&text);
        let missing = r#"{"nodes":[],"startTime":0,"samples":[]}"#;
        assert!(fast_road(missing)
            .unwrap()
            .unwrap_err()
            .message
            .contains("`timeDeltas` is missing"));
    }

    /// Number tokens, mostly the plain integers V8 writes, sometimes any other kind.
    fn number() -> impl Strategy<Value = String> {
        prop_oneof![
            60 => (-2000i64..2000).prop_map(|v| v.to_string()),
            1 => any::<i64>().prop_map(|v| v.to_string()),
            1 => any::<u64>().prop_map(|v| v.to_string()),
            1 => any::<f64>().prop_filter("finite", |v| v.is_finite()).prop_map(|v| format!("{v:e}")),
            1 => (-1000.0f64..1000.0).prop_map(|v| format!("{v}")),
            1 => prop::sample::select(vec!["-0", "1e400", "0.5E-2", "12.0"]).prop_map(String::from),
        ]
    }

    fn string() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => "[a-z/.:() ]{0,12}".prop_map(|s| format!("\"{s}\"")),
            1 => any::<String>().prop_map(|s| serde_json::to_string(&s).unwrap()),
            1 => Just(r#""a\u00e9\n\\\/b""#.to_string()),
        ]
    }

    /// A profile-shaped text: nodes with call frames, mostly numbered 1..n and linked to an earlier
    /// node (a tree) and sometimes not, samples and deltas, extra members, random whitespace.
    fn profile_text() -> impl Strategy<Value = String> {
        let call_frame =
            (string(), string(), number(), number(), prop::bool::ANY).prop_map(|(n, u, l, c, extra)| {
                let extra = if extra {
                    r#","scriptId":"12","codeType":"JS""#
                } else {
                    ""
                };
                format!(r#"{{"functionName":{n},"url":{u},"lineNumber":{l},"columnNumber":{c}{extra}}}"#)
            });
        let node = (
            call_frame,
            any::<prop::sample::Index>(),
            prop::option::weighted(0.1, 1i64..12),
            prop::option::weighted(0.1, number()),
        );
        let nodes = prop::collection::vec(node, 1..8).prop_map(|nodes| {
            let texts: Vec<String> = nodes
                .into_iter()
                .enumerate()
                .map(|(i, (cf, parent, child, odd_id))| {
                    let id = odd_id.unwrap_or_else(|| (i + 1).to_string());
                    let parent = if i > 0 {
                        format!(",\"parent\":{}", parent.index(i) + 1)
                    } else {
                        String::new()
                    };
                    let children = child.map(|c| format!(",\"children\":[{c}]")).unwrap_or_default();
                    format!(r#"{{"id":{id},"callFrame":{cf},"hitCount":3{parent}{children}}}"#)
                })
                .collect();
            (texts.len(), texts)
        });
        (
            nodes,
            prop::collection::vec(any::<prop::sample::Index>(), 0..8),
            prop::collection::vec(number(), 0..8),
        )
            .prop_flat_map(|((count, nodes), samples, deltas)| {
                let samples: Vec<String> = samples.iter().map(|s| (s.index(count) + 1).to_string()).collect();
                let n = samples.len().min(deltas.len());
                (
                    Just(nodes),
                    prop_oneof![4 => Just(samples[..n].to_vec()), 1 => prop::collection::vec(number(), 0..8)],
                    Just(deltas[..n].to_vec()),
                    number(),
                    prop::sample::select(vec!["", " ", "\n\t ", "\r\n"]),
                    prop::bool::ANY,
                )
            })
            .prop_map(|(nodes, samples, deltas, start, ws, wrap)| {
                let members = [
                    format!("\"nodes\":[{}]", nodes.join(&format!(",{ws}"))),
                    format!("\"startTime\"{ws}:{ws}{start}"),
                    format!("\"samples\":[{}]", samples.join(",")),
                    format!("\"timeDeltas\":[{}]", deltas.join(&format!("{ws},"))),
                    "\"title\":{\"a\":[null,true,false,1.5,\"x\"]}".to_string(),
                ];
                let text = format!("{ws}{{{}}}{ws}", members.join(","));
                if wrap {
                    format!("{{\"profile\":{text}}}")
                } else {
                    text
                }
            })
    }

    proptest! {
        #[test]
        fn agrees_with_serde(text in profile_text()) {
            assert_agrees(&text);
        }

        #[test]
        fn agrees_with_serde_on_damaged_text(text in profile_text(), at in any::<prop::sample::Index>(), byte in any::<u8>()) {
            let mut bytes = text.into_bytes();
            let i = at.index(bytes.len());
            bytes[i] = byte;
            assert_agrees(&String::from_utf8_lossy(&bytes));
        }

        #[test]
        fn agrees_with_serde_on_long_number_arrays(
            tokens in prop::collection::vec((number(), prop::sample::select(vec![",", ",", ",", ", ", " ,", ",\n"])), 0..300),
        ) {
            let array = |tokens: &[(String, &str)]| {
                let mut out = String::from("[");
                for (i, (token, sep)) in tokens.iter().enumerate() {
                    if i > 0 {
                        out.push_str(sep);
                    }
                    out.push_str(token);
                }
                out + "]"
            };
            let samples = array(&tokens.iter().map(|(_, sep)| ("1".to_string(), *sep)).collect::<Vec<_>>());
            let text = format!(r#"{{"nodes":[{{"id":1,"callFrame":{{}}}}],"startTime":0,"samples":{samples},"timeDeltas":{}}}"#, array(&tokens));
            assert_agrees(&text);
            let text = format!(r#"{{"nodes":[{{"id":1,"callFrame":{{}}}}],"startTime":0,"samples":{},"timeDeltas":[]}}"#, array(&tokens));
            assert_agrees(&text);
        }

        #[test]
        fn takes_the_fast_road_on_plain_profiles(ids in prop::collection::vec(1i64..5, 0..50), deltas in prop::collection::vec(-100i64..1000, 0..50)) {
            let n = ids.len().min(deltas.len());
            let text = format!(
                r#"{{"nodes":[{{"id":1,"callFrame":{{"functionName":"(root)","url":""}},"children":[2,3,4]}},{{"id":2,"callFrame":{{"functionName":"a","url":"file:///a.js","lineNumber":1,"columnNumber":2}}}},{{"id":3,"callFrame":{{"functionName":"b","url":""}}}},{{"id":4,"callFrame":{{"functionName":"(idle)","url":""}}}}],"startTime":5,"endTime":9,"samples":{:?},"timeDeltas":{:?}}}"#,
                &ids[..n], &deltas[..n]
            );
            let fast = fast_road(&text).expect("plain profiles take the fast road");
            prop_assert_eq!(fast.unwrap(), serde_road(&text).unwrap());
        }
    }
}
