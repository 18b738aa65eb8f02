//! Where a text is cut by characters: the byte offsets of the first `n` characters and of the
//! last `n`, found without walking the rest of the text (a 50 MB tool output costs O(n)); and
//! its edges within `n` bytes, on character boundaries (where tools print what matters, read
//! at a bounded cost).

/// The byte offset just past the first `n` characters of `text` (its length when shorter).
pub fn head_end(text: &str, n: usize) -> usize {
    text.char_indices().nth(n).map_or(text.len(), |(b, _)| b)
}

/// The byte offset where the last `n` characters of `text` start (0 when it is shorter;
/// its length when `n` is 0).
pub fn tail_start(text: &str, n: usize) -> usize {
    if n == 0 {
        return text.len();
    }
    text.char_indices().rev().nth(n - 1).map_or(0, |(b, _)| b)
}

/// The longest head of `text` within `n` bytes that ends on a character boundary.
pub fn head_bytes(text: &str, n: usize) -> &str {
    if text.len() <= n {
        return text;
    }
    let mut end = n;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The longest end of `text` within `n` bytes that starts on a character boundary.
pub fn tail_bytes(text: &str, n: usize) -> &str {
    if text.len() <= n {
        return text;
    }
    let mut start = text.len() - n;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_bounded_edges_stop_short_of_a_split_character() {
        let text = "aé日🙂b";
        assert_eq!(head_bytes(text, 4), "aé");
        assert_eq!(tail_bytes(text, 4), "b");
        assert_eq!(tail_bytes(text, 5), "🙂b");
        assert_eq!(head_bytes(text, 99), text);
    }

    #[test]
    fn cuts_fall_on_character_boundaries() {
        let text = "aé日🙂b";
        assert_eq!(&text[..head_end(text, 2)], "aé");
        assert_eq!(&text[tail_start(text, 2)..], "🙂b");
        assert_eq!(head_end(text, 99), text.len());
        assert_eq!(tail_start(text, 99), 0);
        assert_eq!(tail_start(text, 0), text.len());
    }
}
