//! Audio, video and documents: bounded token prices from the payload size.
//!
//! Unlike images, these formats carry no cheap header that gives their billed size (duration,
//! page count), so the price is a rate per decoded byte under a stated bitrate assumption, with
//! a per-kind default when only a URL or file id is sent. Rates per provider doc:
//! Gemini audio 32 tokens/s, video ~300 tokens/s (258 per frame at 1 fps + 32 audio), documents
//! 258 tokens per page ("Gemini API: token counting"); OpenAI audio input 10 tokens/s (1 token per
//! 100 ms); OpenAI PDFs ~100 tokens per page and Anthropic PDFs ~1,600 tokens for a one-page PDF, measured on the cassettes in
//! shared/data (1,626-1,658 tokens for the 1-page test PDF, text plus page image).

pub use crate::message::MediaKind;
use crate::provider::Provider;

// Assumed bitrates turning bytes into seconds: 128 kbit/s audio (also 8 kHz 16-bit PCM), and a
// 1 Mbit/s video stream. Only the order of magnitude matters for a context gate.
const AUDIO_BYTES_PER_SECOND: f64 = 16_000.0;
const VIDEO_BYTES_PER_SECOND: f64 = 125_000.0;
// A text-heavy PDF page averages tens of kilobytes.
const DOCUMENT_BYTES_PER_PAGE: f64 = 50_000.0;
// Defaults when only a reference is sent: a 10 s clip, a 60 s video, a 3-page document.
const DEFAULT_AUDIO_SECONDS: f64 = 10.0;
const DEFAULT_VIDEO_SECONDS: f64 = 60.0;
const DEFAULT_DOCUMENT_PAGES: f64 = 3.0;

fn audio_tokens_per_second(p: Provider) -> f64 {
    match p {
        Provider::Gemini => 32.0,
        _ => 10.0,
    }
}

fn video_tokens_per_second(p: Provider) -> f64 {
    match p {
        Provider::Gemini => 300.0,
        // Others sample frames as images: about one 1024-px image (765 tokens) per 3 seconds.
        _ => 255.0,
    }
}

fn document_tokens_per_page(p: Provider) -> f64 {
    match p {
        Provider::Gemini => 258.0,
        Provider::Anthropic => 1_600.0,
        // OpenAI: 53-197 tokens for the one-page test PDFs of the cassettes (text extraction).
        _ => 100.0,
    }
}

/// Tokens of a media part. `payload_bytes` is the decoded size (None when only a URL or file id
/// was sent). `Text` and `Unknown` parts return None: the caller prices them as text.
/// `units`: what the payload's own header says (`media_header`): seconds of audio, pages of a
/// document, read before any size-based guess.
pub fn media_tokens(
    provider: Provider,
    kind: MediaKind,
    payload_bytes: Option<usize>,
    units: Option<u32>,
) -> Option<f64> {
    let bytes = payload_bytes.map(|b| b as f64);
    let units = units.map(f64::from);
    Some(match kind {
        MediaKind::Audio => {
            let secs = units.unwrap_or_else(|| {
                bytes.map_or(DEFAULT_AUDIO_SECONDS, |b| b / AUDIO_BYTES_PER_SECOND)
            });
            (secs * audio_tokens_per_second(provider)).max(1.0)
        }
        MediaKind::Video => {
            let secs = bytes.map_or(DEFAULT_VIDEO_SECONDS, |b| b / VIDEO_BYTES_PER_SECOND);
            (secs * video_tokens_per_second(provider)).max(1.0)
        }
        MediaKind::Document => {
            let pages = units.unwrap_or_else(|| {
                bytes.map_or(DEFAULT_DOCUMENT_PAGES, |b| {
                    (b / DOCUMENT_BYTES_PER_PAGE).ceil().max(1.0)
                })
            });
            pages * document_tokens_per_page(provider)
        }
        MediaKind::Image | MediaKind::Text | MediaKind::Unknown => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mime_kinds() {
        assert_eq!(MediaKind::from_mime("audio/wav"), MediaKind::Audio);
        assert_eq!(MediaKind::from_mime("mp3"), MediaKind::Audio);
        assert_eq!(MediaKind::from_mime("video/mp4"), MediaKind::Video);
        assert_eq!(MediaKind::from_mime("application/pdf"), MediaKind::Document);
        assert_eq!(MediaKind::from_mime("text/plain"), MediaKind::Text);
        // Bedrock's bare `format` values.
        assert_eq!(MediaKind::from_mime("pdf"), MediaKind::Document);
        assert_eq!(MediaKind::from_mime("mp4"), MediaKind::Video);
        assert_eq!(MediaKind::from_mime("md"), MediaKind::Text);
        assert_eq!(
            MediaKind::from_mime("application/octet-stream"),
            MediaKind::Unknown
        );
    }

    #[test]
    fn prices_do_not_follow_base64_length_of_text() {
        // A 1 MB audio file on Gemini: ~62 s -> ~2,000 tokens, not 250k "chars/4" tokens.
        let t = media_tokens(Provider::Gemini, MediaKind::Audio, Some(1_000_000), None).unwrap();
        assert!((1_900.0..2_100.0).contains(&t), "{t}");
        assert_eq!(
            media_tokens(Provider::Anthropic, MediaKind::Document, Some(10), None).unwrap(),
            1_600.0
        );
        assert!(media_tokens(Provider::OpenAI, MediaKind::Text, Some(10), None).is_none());
    }
}
