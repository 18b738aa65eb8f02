//! Interim JSON-safe shrinking (replaced by the structure-preserving version): a text that
//! fits comes back unchanged; one that does not becomes a valid JSON object with a preview.

use crate::wire::push_json_string;

/// Shrink `text` to at most `max_chars` characters of valid JSON.
pub fn shrink_json(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_string();
    }
    let total = text.chars().count();
    let mut keep = max_chars.saturating_sub(60);
    loop {
        let head: String = text.chars().take(keep).collect();
        let mut out = String::from("{\"preview\":");
        push_json_string(&mut out, &head);
        out.push_str(&format!(",\"original_chars\":{total}}}"));
        if out.chars().count() <= max_chars || keep == 0 {
            return out;
        }
        keep = keep.saturating_sub((out.chars().count() - max_chars).max(1));
    }
}
