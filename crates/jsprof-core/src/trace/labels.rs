//! Labels on samples: the context a sample was taken in (an endpoint's route, a tenant, a trace and
//! span id), as the trace's extension member carries it — a table of distinct label sets
//! (`jsprof.labelSets`, each a `{ key: value }` object) and one index into it per sample
//! (`jsprof.sampleLabels`, `null` for a sample taken under no labels), plus how many samples lost
//! their labels because the recorder could not keep their set (`jsprof.labelsDropped`: past its cap
//! of distinct sets; those samples show no labels).
//!
//! The one rule of what a label is ([`check_label`], [`check_label_set`], [`check_label_table`]): keys
//! and values come from the app, so they are bounded — at most [`MAX_LABELS`] labels a set, keys of 1 to
//! [`MAX_KEY_CHARS`] characters of `[A-Za-z0-9_]` not starting with a digit nor with `__` (a
//! Prometheus/Pyroscope label name that is not reserved, so every export can carry a key as it is),
//! values of at most [`MAX_VALUE_CHARS`] characters of any text, at most [`MAX_LABEL_SETS`] sets a
//! trace. Whatever it refuses is one kind of error, a `Type` error ([`refused`]), from `withLabels` as
//! from a trace read back.
//!
//! Keys starting with `__` are reserved: Prometheus keeps them for its own use, Pyroscope files a profile
//! by `__name__`, and `__proto__` is no own key of a JS object (`labels.__proto__ = v` sets a prototype):
//! `withLabels` lost it silently while a trace carrying it reached pprof. Refused, they mean the same in
//! every place.
//! Values stay as they are in the trace; the views that print them escape what a terminal must not
//! see ([`crate::visible_text`]), and a lone surrogate from JS arrives as visible text already
//! (`\u{d800}`), so every export writes well-formed UTF-8.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::{Error, Result};

/// At most this many labels in one set.
pub const MAX_LABELS: usize = 32;
/// A key is at most this many characters.
pub const MAX_KEY_CHARS: usize = 100;
/// A value is at most this many characters.
pub const MAX_VALUE_CHARS: usize = 1024;
/// A trace holds at most this many distinct label sets (and a recorder interns at most this many).
pub const MAX_LABEL_SETS: usize = 65_536;

/// One set of labels, keys in ascending order (as JSON writes the object).
pub type LabelSet = BTreeMap<String, String>;

/// What the label rule refuses, whatever it is: a `Type` error (the one kind, see above).
fn refused(message: String) -> Error {
    Error::invalid(message)
}

/// Checks one label against the rule above; `at` names it in the message.
pub(crate) fn check_label(key: &str, value: &str, at: &str) -> Result<()> {
    let key_ok = !key.is_empty()
        && key.len() <= MAX_KEY_CHARS
        && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !key.as_bytes()[0].is_ascii_digit()
        && !key.starts_with("__");
    if !key_ok {
        return Err(refused(format!(
            "{at}: a label key is 1 to {MAX_KEY_CHARS} characters of A-Z, a-z, 0-9 and _, not starting \
             with a digit or __, got {:?}",
            crate::visible_text(&key.chars().take(MAX_KEY_CHARS + 1).collect::<String>())
        )));
    }
    let chars = value.chars().count();
    if chars > MAX_VALUE_CHARS {
        return Err(refused(format!(
            "{at}: the value of label {key:?} is {chars} characters long; at most {MAX_VALUE_CHARS} are allowed"
        )));
    }
    Ok(())
}

/// The count of labels in one set: at most [`MAX_LABELS`].
fn check_label_count(count: usize, at: &str) -> Result<()> {
    if count > MAX_LABELS {
        return Err(refused(format!(
            "{at}: a label set holds at most {MAX_LABELS} labels, got {count}"
        )));
    }
    Ok(())
}

/// Checks a whole set: at most [`MAX_LABELS`] labels, each by [`check_label`].
pub(crate) fn check_label_set(set: &LabelSet, at: &str) -> Result<()> {
    check_label_count(set.len(), at)?;
    for (k, v) in set {
        check_label(k, v, at)?;
    }
    Ok(())
}

/// Checks a trace's (or a side-file line's) table of sets: at most [`MAX_LABEL_SETS`] sets, each by
/// [`check_label_set`]; `at(i)` names set `i`.
pub(crate) fn check_label_table(sets: &[LabelSet], what: &str, at: impl Fn(usize) -> String) -> Result<()> {
    if sets.len() > MAX_LABEL_SETS {
        return Err(refused(format!(
            "{what} holds {} label sets; a trace holds at most {MAX_LABEL_SETS}",
            sets.len()
        )));
    }
    for (i, set) in sets.iter().enumerate() {
        check_label_set(set, &at(i))?;
    }
    Ok(())
}

/// A label set from `keys` and `values` (same length), checked; a key given twice keeps its last value.
pub fn label_set(keys: &[String], values: &[String]) -> Result<LabelSet> {
    if keys.len() != values.len() {
        return Err(Error::invalid("labels need as many values as keys"));
    }
    check_label_count(keys.len(), "labels")?;
    let mut set = LabelSet::new();
    for (k, v) in keys.iter().zip(values) {
        check_label(k, v, "labels")?;
        set.insert(k.clone(), v.clone());
    }
    Ok(set)
}

/// `base` with the labels `keys[i]: values[i]` added (a key of `base` given again takes the new value),
/// the added labels checked as [`label_set`] checks them and the whole at most [`MAX_LABELS`] labels:
/// a request's registered set plus its span context, without checking the registered part again.
pub fn extend_label_set(base: &LabelSet, keys: &[&str], values: &[&str]) -> Result<LabelSet> {
    if keys.len() != values.len() {
        return Err(Error::invalid("labels need as many values as keys"));
    }
    let mut set = base.clone();
    for (k, v) in keys.iter().zip(values) {
        check_label(k, v, "labels")?;
        set.insert((*k).to_owned(), (*v).to_owned());
    }
    check_label_count(set.len(), "labels")?;
    Ok(set)
}

/// Builds a trace's label table: interns sets (by content) in first-use order and gives each sample
/// its index. Costs nothing per sample until the first sample with labels.
#[derive(Debug, Default)]
pub(crate) struct LabelTable {
    sets: Vec<Arc<LabelSet>>,
    index: std::collections::HashMap<Arc<LabelSet>, u32>,
    per_sample: Vec<Option<u32>>,
    /// Samples pushed before the first with labels (not in `per_sample` yet).
    unlabelled: usize,
    /// Samples whose label set the recorder dropped (given as an empty set).
    dropped: u64,
}

impl LabelTable {
    /// Appends the label index of the next sample. An empty set stands for one the recorder dropped
    /// (past its cap): the sample shows none, and is counted.
    pub(crate) fn push(&mut self, set: Option<&Arc<LabelSet>>) {
        if set.is_some_and(|s| s.is_empty()) {
            self.dropped += 1;
        }
        let Some(set) = set.filter(|s| !s.is_empty()) else {
            if self.sets.is_empty() {
                self.unlabelled += 1;
            } else {
                self.per_sample.push(None);
            }
            return;
        };
        if self.sets.is_empty() {
            self.per_sample = vec![None; self.unlabelled];
        }
        let id = match self.index.get(set) {
            Some(&id) => id,
            None => {
                let id = self.sets.len() as u32;
                self.sets.push(Arc::clone(set));
                self.index.insert(Arc::clone(set), id);
                id
            }
        };
        self.per_sample.push(Some(id));
    }

    /// How many samples' label sets were dropped.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The table and the per-sample indices, or `None` when no sample has labels.
    pub(crate) fn finish(self) -> Option<(Vec<LabelSet>, Vec<Option<u32>>)> {
        if self.sets.is_empty() {
            return None;
        }
        drop(self.index);
        let sets = self
            .sets
            .into_iter()
            .map(|s| Arc::try_unwrap(s).unwrap_or_else(|s| (*s).clone()))
            .collect();
        Some((sets, self.per_sample))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_label_names_and_values_bounded() {
        assert!(check_label("route", "GET /users/:id", "x").is_ok());
        assert!(check_label("_a9", "", "x").is_ok());
        assert!(check_label("_", "", "x").is_ok());
        assert!(check_label("a__b", "", "x").is_ok());
        for bad in [
            "",
            "9a",
            "a-b",
            "a.b",
            "é",
            "a b",
            "a\u{0}",
            "__proto__",
            "__name__",
            "__",
        ] {
            assert_eq!(
                check_label(bad, "v", "x").unwrap_err().kind,
                crate::ErrorKind::Type,
                "{bad:?}"
            );
        }
        assert!(check_label(&"k".repeat(MAX_KEY_CHARS), "v", "x").is_ok());
        assert!(check_label(&"k".repeat(MAX_KEY_CHARS + 1), "v", "x").is_err());
        assert!(check_label("k", &"é".repeat(MAX_VALUE_CHARS), "x").is_ok());
        let e = check_label("k", &"v".repeat(MAX_VALUE_CHARS + 1), "x").unwrap_err();
        assert_eq!(e.kind, crate::ErrorKind::Type);
        // A hostile key is shown escaped in the message.
        let e = check_label("a\u{1b}[31m", "v", "x").unwrap_err();
        assert!(e.message.contains("\\x1b"), "{}", e.message);
    }

    #[test]
    fn extending_a_set_checks_the_added_labels_and_the_count() {
        let base = label_set(
            &["method".into(), "route".into()],
            &["GET".into(), "GET /a".into()],
        )
        .unwrap();
        let set = extend_label_set(
            &base,
            &["span_id", "trace_id"],
            &["00f067aa0ba902b7", "4bf92f3577b34da6a3ce929d0e0e4736"],
        )
        .unwrap();
        assert_eq!(set.len(), 4);
        assert_eq!(set["route"], "GET /a");
        let long = "v".repeat(MAX_VALUE_CHARS + 1);
        assert_eq!(
            extend_label_set(&base, &["span_name"], &[&long])
                .unwrap_err()
                .kind,
            crate::ErrorKind::Type
        );
        assert!(extend_label_set(&base, &["a b"], &["v"]).is_err());
        let full: Vec<String> = (0..MAX_LABELS).map(|i| format!("k{i}")).collect();
        let full = label_set(&full, &vec![String::new(); MAX_LABELS]).unwrap();
        assert!(extend_label_set(&full, &["k0"], &["x"]).is_ok());
        assert!(extend_label_set(&full, &["span_id"], &["x"]).is_err());
    }

    #[test]
    fn a_set_is_bounded_and_the_last_value_wins() {
        let keys: Vec<String> = (0..=MAX_LABELS).map(|i| format!("k{i}")).collect();
        let values = vec![String::new(); keys.len()];
        assert_eq!(
            label_set(&keys, &values).unwrap_err().kind,
            crate::ErrorKind::Type
        );
        let set = label_set(
            &["b".into(), "a".into(), "b".into()],
            &["1".into(), "2".into(), "3".into()],
        )
        .unwrap();
        assert_eq!(
            set.into_iter().collect::<Vec<_>>(),
            [("a".into(), "2".into()), ("b".into(), "3".into())]
        );
        assert!(label_set(&["a".into()], &[]).is_err());
    }

    #[test]
    fn the_table_interns_by_content_in_first_use_order() {
        let a = Arc::new(LabelSet::from([("route".into(), "a".into())]));
        let a2 = Arc::new((*a).clone());
        let b = Arc::new(LabelSet::from([("route".into(), "b".into())]));
        let mut t = LabelTable::default();
        t.push(None);
        t.push(Some(&b));
        t.push(Some(&a));
        t.push(Some(&a2));
        t.push(Some(&Arc::new(LabelSet::new())));
        assert_eq!(t.dropped(), 1);
        let (sets, per) = t.finish().unwrap();
        assert_eq!(sets, vec![(*b).clone(), (*a).clone()]);
        assert_eq!(per, vec![None, Some(0), Some(1), Some(1), None]);
        let mut none = LabelTable::default();
        none.push(None);
        assert!(none.finish().is_none());
    }
}
