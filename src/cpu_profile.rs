//! `fromCpuProfile`'s two entry points: V8 profile JSON as UTF-8 bytes or as a JS string, converted by
//! the core (one pass, or the road that words errors) straight into [`TraceParts`]' columns.

use jsprof_core as core;
use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::core_error;
use crate::own_code::own_code;
use crate::trace_parts::{PlainParts, SampleColumns, TraceParts};

/// `fromCpuProfile` on JSON text given as UTF-8 bytes (a Buffer or typed array, a file's contents),
/// with timestamps relative to `timeOriginUs` (default: the profile's `startTime`). Invalid UTF-8 is
/// read as `Buffer#toString` would read it (U+FFFD for each bad sequence).
///
/// `hideOwnCode`: leave jsprof-node's own code out of the stacks (see `setOwnCode`), for the
/// profiles jsprof-node records itself (`jsprof record`). `inlined`: give the samples of code V8
/// inlined into a function the inlined function's frame, as V8's per-line ticks say (the scripts read
/// from their files: `jsprof_core::SourceFiles`).
#[napi(catch_unwind)]
pub fn convert_cpu_profile(
    json: &[u8],
    time_origin_us: Option<f64>,
    hide_own_code: Option<bool>,
    inlined: Option<bool>,
) -> Result<TraceParts> {
    // `from_utf8` checks ASCII a word at a time; the lossy reading is only for text that needs it.
    let text = match std::str::from_utf8(json) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(json),
    };
    let own = hide_own_code.unwrap_or(false).then(own_code).flatten();
    let sources = inlined
        .unwrap_or(false)
        .then_some(&core::SourceFiles as &dyn core::ScriptSources);
    let (tables, samples) =
        core::trace_from_json_into::<SampleColumns>(&text, time_origin_us, own.as_deref(), sources)
            .map_err(core_error)?;
    let parts = PlainParts::of_tables(&tables, samples)?;
    Ok(parts.into_js())
}

/// Strings up to this many UTF-16 units are copied into [`TEXT`], kept for the next call.
const TEXT_REUSE_MAX_UNITS: usize = 4 << 20;

thread_local! {
    /// The UTF-8 copy of `fromCpuProfile`'s text, kept between calls: fresh memory for each call costs
    /// a page fault per 4 KB (docs/bench.md#hand-over). At most 3 × 4 Mi units + 1 (12 MiB), and
    /// only as much of it is ever touched as the largest text needed.
    static TEXT: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `fromCpuProfile` on JSON text given as a JS string: copied once as UTF-8 (a lone surrogate becomes
/// U+FFFD, as `Buffer.from(text)` makes it), with no JS Buffer in between: the facade would otherwise
/// scan the string for its UTF-8 length and copy it into fresh memory.
#[napi(catch_unwind)]
pub fn convert_cpu_profile_text(
    text: napi::JsString,
    time_origin_us: Option<f64>,
    hide_own_code: Option<bool>,
    inlined: Option<bool>,
) -> Result<TraceParts> {
    let units = text.utf16_len()?;
    if units > TEXT_REUSE_MAX_UNITS {
        return convert_cpu_profile(
            text.into_utf8()?.as_slice(),
            time_origin_us,
            hide_own_code,
            inlined,
        );
    }
    TEXT.with(|cell| {
        let mut buffer = cell.borrow_mut();
        // A UTF-16 unit is at most 3 bytes of UTF-8 (a surrogate pair, two units, is 4), plus the NUL
        // napi writes.
        let capacity = units * 3 + 1;
        buffer.clear();
        buffer.reserve(capacity);
        let value = napi::JsValue::value(&text);
        let mut written = 0usize;
        // SAFETY: the buffer has room for `capacity` bytes; napi writes at most that many, and says
        // how many (without the NUL) it wrote.
        let status = unsafe {
            napi::sys::napi_get_value_string_utf8(
                value.env,
                value.value,
                buffer.as_mut_ptr().cast(),
                capacity,
                &mut written,
            )
        };
        if status != napi::sys::Status::napi_ok || written >= capacity {
            return Err(Error::from_reason(
                "jsprof-node: could not read the profile's text",
            ));
        }
        unsafe { buffer.set_len(written) };
        convert_cpu_profile(&buffer, time_origin_us, hide_own_code, inlined)
    })
}
