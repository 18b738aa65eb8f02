//! What a media payload's own bytes say of its billed size: a WAV's duration (its byte rate and
//! data chunk), a PDF's page count (its page objects, else its page tree's `/Count`).
//!
//! Providers bill audio by the second and documents by the page (`media_tokens`). The payload's
//! size alone assumed a bitrate and a page size: 16,000 bytes a second priced a 10 s WAV at
//! 44.1 kHz stereo (1.76 MB) as 110 s, and 50 KB a page priced a 30-page, 90 KB PDF as two pages.
//! Where the header says, it is read; where it does not (compressed audio, a PDF whose objects
//! sit in compressed object streams), the size-based assumption stays.

use crate::image::{decode_prefix, strip_data_url};
use crate::message::MediaKind;

/// Largest PDF (decoded bytes) read for its pages: larger ones keep the size-based guess.
const PDF_MAX_BYTES: usize = 64 * 1024 * 1024;

/// Whether an inline payload (base64 text, maybe a data URL) opens as a PDF's: `%PDF` in base64.
pub fn is_pdf_base64(base64: &str) -> bool {
    strip_data_url(base64).starts_with("JVBER")
}

/// Whether raw bytes open as a PDF's.
pub fn is_pdf_bytes(bytes: &[u8]) -> bool {
    bytes.starts_with(b"%PDF")
}

/// The billed units of an inline payload (base64 text, maybe a data URL) of kind `media`:
/// seconds of a WAV audio clip, pages of a PDF document; None where its bytes do not say.
pub fn units_of(media: MediaKind, base64: &str) -> Option<f64> {
    let body = strip_data_url(base64).as_bytes();
    match media {
        MediaKind::Audio => {
            let head = decode_prefix(body, 4096);
            let total = body.len() / 4 * 3;
            wav_seconds(&head, total)
        }
        MediaKind::Document if is_pdf_base64(base64) => {
            let bytes = decode_prefix(body, PDF_MAX_BYTES);
            (bytes.len() < PDF_MAX_BYTES)
                .then(|| pdf_pages(&bytes))
                .flatten()
                .map(f64::from)
        }
        _ => None,
    }
}

/// `units_of`, for a payload held as raw bytes (an SDK object's `bytes`).
pub fn units_of_bytes(media: MediaKind, bytes: &[u8]) -> Option<f64> {
    match media {
        MediaKind::Audio => wav_seconds(bytes, bytes.len()),
        MediaKind::Document if is_pdf_bytes(bytes) && bytes.len() < PDF_MAX_BYTES => {
            pdf_pages(bytes).map(f64::from)
        }
        _ => None,
    }
}

fn u32_le(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Seconds of a RIFF/WAVE clip whose first bytes are `head` and whole size `total` bytes: its
/// data chunk's size (or what follows the header) over the byte rate of its `fmt ` chunk.
pub fn wav_seconds(head: &[u8], total: usize) -> Option<f64> {
    if head.get(0..4)? != b"RIFF" || head.get(8..12)? != b"WAVE" {
        return None;
    }
    let (mut at, mut byte_rate, mut data) = (12usize, None, None);
    while at + 8 <= head.len() {
        let id = &head[at..at + 4];
        let size = u32_le(head, at + 4)? as usize;
        if id == b"fmt " {
            byte_rate = u32_le(head, at + 16).filter(|&r| r > 0);
        } else if id == b"data" {
            // (A streamed WAV writes 0 or 0xFFFFFFFF here: the rest of the file is its data.)
            data = Some(if size == 0 || size == u32::MAX as usize {
                total.saturating_sub(at + 8)
            } else {
                size
            });
            break;
        }
        at += 8 + size + (size & 1);
    }
    let data = data.unwrap_or_else(|| total.saturating_sub(44));
    Some(data as f64 / f64::from(byte_rate?))
}

/// Pages of a PDF: its page objects (`/Type /Page`), else the largest `/Count` of its page
/// tree; None where neither shows (objects in compressed streams).
pub fn pdf_pages(bytes: &[u8]) -> Option<u32> {
    let mut pages = 0u32;
    for key in [&b"/Type /Page"[..], &b"/Type/Page"[..]] {
        for at in memchr::memmem::find_iter(bytes, key) {
            // (Not `/Pages`, the tree's inner nodes.)
            if !bytes
                .get(at + key.len())
                .is_some_and(|c| c.is_ascii_alphanumeric())
            {
                pages += 1;
            }
        }
    }
    if pages > 0 {
        return Some(pages);
    }
    memchr::memmem::find_iter(bytes, b"/Count")
        .filter_map(|at| {
            let rest = &bytes[at + 6..];
            let digits: &[u8] = {
                let start = rest.iter().position(|c| !c.is_ascii_whitespace())?;
                let rest = &rest[start..];
                let n = rest.iter().take_while(|c| c.is_ascii_digit()).count();
                &rest[..n]
            };
            std::str::from_utf8(digits).ok()?.parse::<u32>().ok()
        })
        .max()
        .filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wav(rate: u32, channels: u16, seconds: u32) -> Vec<u8> {
        let byte_rate = rate * u32::from(channels) * 2;
        let data = byte_rate * seconds;
        let mut b = Vec::new();
        b.extend_from_slice(b"RIFF");
        b.extend_from_slice(&(36 + data).to_le_bytes());
        b.extend_from_slice(b"WAVEfmt ");
        b.extend_from_slice(&16u32.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&channels.to_le_bytes());
        b.extend_from_slice(&rate.to_le_bytes());
        b.extend_from_slice(&byte_rate.to_le_bytes());
        b.extend_from_slice(&(channels * 2).to_le_bytes());
        b.extend_from_slice(&16u16.to_le_bytes());
        b.extend_from_slice(b"data");
        b.extend_from_slice(&data.to_le_bytes());
        b.resize(b.len() + data as usize, 0);
        b
    }

    #[test]
    fn a_wav_lasts_what_its_header_says_whatever_its_sample_rate() {
        for (rate, ch) in [(8_000, 1), (16_000, 1), (44_100, 2), (48_000, 2)] {
            let b = wav(rate, ch, 10);
            assert_eq!(wav_seconds(&b[..64], b.len()), Some(10.0), "{rate} {ch}");
        }
        assert_eq!(wav_seconds(b"ID3\x03 not a wav at all....", 1000), None);
    }

    #[test]
    fn a_pdf_has_the_pages_its_objects_or_its_page_tree_say() {
        let mut pdf =
            b"%PDF-1.4\n1 0 obj << /Type /Pages /Kids [3 0 R 4 0 R 5 0 R] /Count 3 >> endobj\n"
                .to_vec();
        for k in 3..6 {
            pdf.extend_from_slice(
                format!("{k} 0 obj << /Type /Page /Parent 1 0 R >> endobj\n").as_bytes(),
            );
        }
        assert_eq!(pdf_pages(&pdf), Some(3));
        // Page objects hidden in object streams: the tree's count.
        assert_eq!(
            pdf_pages(b"%PDF-1.7 << /Type/Pages /Count 30 >> << /Count 2 >>"),
            Some(30)
        );
        assert_eq!(pdf_pages(b"%PDF-1.7 stream x\x9c... endstream"), None);
    }
}
