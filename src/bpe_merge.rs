//! How many tokens byte-pair merging leaves of one long piece, in O(n log n).
//!
//! Byte-pair encoding by rank starts from single bytes and repeatedly merges the adjacent pair
//! whose concatenation has the lowest rank in the vocabulary (the leftmost such pair on a tie)
//! until no adjacent pair is a token. Rescanning every pair after each merge is quadratic in the
//! piece's length, fine for the few bytes of a word and slow for a 1 MB run of letters (one
//! piece). Here the segments are a linked list over byte offsets and every pair that is a token
//! waits in a heap keyed by (rank, start); a pair whose segments changed since it was queued is
//! recognised when it comes out (its left segment no longer pairs at that rank) and skipped. The heap pops pairs in the same order as the rescan picks them, so the count is the
//! same (pinned against the encoder on long random pieces).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;
use tiktoken_rs::Rank;

/// A segment of the piece, indexed by its first byte.
#[derive(Clone, Copy)]
struct Segment {
    /// Where it ends; 0 once merged into the segment before it.
    end: u32,
    /// Where the segment before it starts.
    before: u32,
    /// The rank of it joined with the next segment, `Rank::MAX` when that is no token.
    pair: Rank,
}

/// Tokens `piece` merges into under `ranks`.
pub fn merged_len(piece: &[u8], ranks: &FxHashMap<Vec<u8>, Rank>) -> usize {
    let n = piece.len();
    if n < 2 || u32::try_from(n).is_err() {
        // One byte is one token; a piece of 4 GiB takes the plain merge.
        return if n < 2 {
            n
        } else {
            tiktoken_rs::byte_pair_split(piece, ranks).len()
        };
    }
    let rank = |from: usize, to: usize| ranks.get(&piece[from..to]).copied().unwrap_or(Rank::MAX);
    // Every queued pair as one integer, rank then start: the heap's minimum is the lowest rank,
    // leftmost on a tie. A queued pair whose left segment's `pair` no longer holds its rank (it
    // was merged, or its right neighbour grew) is stale and skipped.
    let key = |r: Rank, s: usize| Reverse((u64::from(r) << 32) | s as u64);
    let mut seg: Vec<Segment> = (0..n)
        .map(|i| Segment {
            end: (i + 1) as u32,
            before: i.wrapping_sub(1) as u32,
            pair: if i + 2 <= n {
                rank(i, i + 2)
            } else {
                Rank::MAX
            },
        })
        .collect();
    let mut heap: BinaryHeap<Reverse<u64>> = seg
        .iter()
        .enumerate()
        .filter(|(_, g)| g.pair != Rank::MAX)
        .map(|(s, g)| key(g.pair, s))
        .collect();
    let mut merges = 0;
    while let Some(Reverse(k)) = heap.pop() {
        let (r, s) = ((k >> 32) as Rank, (k & 0xFFFF_FFFF) as usize);
        if seg[s].end == 0 || seg[s].pair != r {
            continue;
        }
        let mid = seg[s].end as usize;
        let e = seg[mid].end as usize;
        seg[mid].end = 0;
        seg[s].end = e as u32;
        merges += 1;
        if e < n {
            seg[e].before = s as u32;
            let f = seg[e].end as usize;
            seg[s].pair = rank(s, f);
            if seg[s].pair != Rank::MAX {
                heap.push(key(seg[s].pair, s));
            }
        } else {
            seg[s].pair = Rank::MAX;
        }
        if s > 0 {
            let p = seg[s].before as usize;
            seg[p].pair = rank(p, e);
            if seg[p].pair != Rank::MAX {
                heap.push(key(seg[p].pair, p));
            }
        }
    }
    n - merges
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranks() -> &'static FxHashMap<Vec<u8>, Rank> {
        crate::bpe_count::o200k().ranks()
    }

    #[test]
    fn long_pieces_merge_as_the_encoder_merges_them() {
        let o = tiktoken_rs::o200k_base_singleton();
        for piece in [
            "a".repeat(5000),
            "ab".repeat(3000),
            "abcdefghij".repeat(700),
            "Supercalifragilisticexpialidocious".repeat(100),
            "ö".repeat(1500),
            "上下文窗口管理".repeat(300),
        ] {
            let want = o.encode_ordinary(&piece).len();
            assert_eq!(
                merged_len(piece.as_bytes(), ranks()),
                want,
                "{}",
                &piece[..20]
            );
        }
    }

    #[test]
    fn short_pieces_merge_as_the_plain_merge_does() {
        for piece in ["ab", "hello", "xyzzyplugh", "Ωmega", "0123", "     "] {
            let want = tiktoken_rs::byte_pair_split(piece.as_bytes(), ranks()).len();
            assert_eq!(merged_len(piece.as_bytes(), ranks()), want, "{piece}");
        }
    }

    proptest::proptest! {
        #[test]
        fn random_pieces_merge_as_the_plain_merge_does(piece in "[a-e]{2,400}|[a-zA-Z]{2,300}|[\\p{L}]{1,100}") {
            if piece.len() >= 2 {
                let want = tiktoken_rs::byte_pair_split(piece.as_bytes(), ranks()).len();
                proptest::prop_assert_eq!(merged_len(piece.as_bytes(), ranks()), want);
            }
        }
    }
}
