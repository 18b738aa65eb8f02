//! Where a run of ASCII letters and digits ends, read eight bytes at a time: the digest's
//! clips and the identifier index's search for shown identifiers walk megabytes of words, and a
//! byte at a time their loops took most of those passes.

const ONES: u64 = 0x0101_0101_0101_0101;
const TOP: u64 = 0x80 * ONES;

/// Of 8 bytes (the first the lowest), the top bit of each that is no ASCII letter or digit.
fn not_alphanumeric(chunk: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(chunk);
    let x = u64::from_le_bytes(bytes);
    let v = x & !TOP;
    // Per 7-bit byte, its top bit set when it is at least `n` (no carry leaves a byte).
    let at_least = |v: u64, n: u64| v.wrapping_add((128 - n) * ONES) & TOP;
    let digit = at_least(v, 0x30) & !at_least(v, 0x3a);
    let lower = v | (0x20 * ONES);
    let letter = at_least(lower, 0x61) & !at_least(lower, 0x7b);
    !((digit | letter) & !x) & TOP
}

/// Where the ASCII letters and digits from `b[i]` on end, up to the last 8 bytes' start: the
/// bytes after it are read one at a time by the caller (it stops before the first byte that
/// is none, or within the last 8 bytes).
pub(crate) fn skip_forward(b: &[u8], mut i: usize) -> usize {
    while let Some(chunk) = b.get(i..i + 8) {
        let k = (not_alphanumeric(chunk).trailing_zeros() / 8) as usize;
        i += k;
        if k < 8 {
            break;
        }
    }
    i
}

/// `skip_forward` read backwards: where the ASCII letters and digits before `b[i]` start, down
/// to the first 8 bytes' end.
pub(crate) fn skip_back(b: &[u8], mut i: usize) -> usize {
    while let Some(chunk) = i.checked_sub(8).map(|a| &b[a..i]) {
        let k = (not_alphanumeric(chunk).leading_zeros() / 8) as usize;
        i -= k;
        if k < 8 {
            break;
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_is_told_as_is_ascii_alphanumeric_tells_it() {
        for c in 0..=255u8 {
            for at in 0..8 {
                let mut chunk = *b"aZ09bY18";
                chunk[at] = c;
                let expect = if c.is_ascii_alphanumeric() {
                    0
                } else {
                    0x80u64 << (8 * at)
                };
                assert_eq!(not_alphanumeric(&chunk), expect, "byte {c:#x} at {at}");
            }
        }
    }

    #[test]
    fn a_run_ends_at_the_first_other_byte_or_within_the_last_eight() {
        let b = b"abcdefghij0123456789-xyz";
        assert_eq!(skip_forward(b, 0), 20);
        assert_eq!(skip_forward(b, 21), 21);
        assert_eq!(skip_back(b, 20), 4);
        assert_eq!(skip_back(b, 24), 21);
        assert_eq!(skip_back(b"ab", 2), 2);
    }
}
