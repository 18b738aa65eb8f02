//! Wire size: the bytes a history occupies in the serialized request body.
//!
//! The other notion of size: base64 images count in full here, while context
//! pressure prices them by pixels. Requests are measured as compact JSON in UTF-8
//! (`json.dumps(obj, separators=(",", ":"), ensure_ascii=False)`), which is how httpx-based
//! SDKs send them.

pub use crate::json_string::{json_string_len, push_json_string};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_match_their_length() {
        for s in [
            "",
            "plain",
            "q\"uote\\",
            "line\nbreak\t",
            "ctl\u{1}\u{1f}",
            "é中😀",
        ] {
            let mut out = String::new();
            push_json_string(&mut out, s);
            assert_eq!(out.len(), json_string_len(s), "{s:?} -> {out}");
        }
        let mut out = String::new();
        push_json_string(&mut out, "a\u{1}b");
        assert_eq!(out, "\"a\\u0001b\"");
    }
}
