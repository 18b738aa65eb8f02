//! Image sizes from file headers, and each provider's image-token formula.
//!
//! An image costs what the provider's vision encoder bills for its pixel size, never anything
//! proportional to its base64 length (priced by length, a 3 MB PNG would cost ~1,500x too much). The
//! size is read from the header alone: base64 is decoded only in small windows at the offsets
//! the header walk needs, so a 20 MB data URL costs the same as a 2 KB one.

/// Pixel size of an image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    pub width: u32,
    pub height: u32,
}

/// Random access to the bytes behind a base64 string (or plain bytes), decoding only what is
/// asked for.
pub enum ByteSource<'a> {
    Raw(&'a [u8]),
    /// Base64 text without whitespace; decoded 4 characters per 3 bytes at any offset.
    Base64(&'a [u8]),
    /// Base64 text that contains line breaks: a decoded prefix of it.
    Decoded(Vec<u8>),
}

fn b64_value(c: u8) -> Option<u8> {
    match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' | b'-' => Some(62),
        b'/' | b'_' => Some(63),
        _ => None,
    }
}

/// Standard base64 (RFC 4648, with padding) of `bytes`: the text an image given as raw bytes is
/// kept as when it is folded, so the recall tool gives it back as it gives a base64 image.
pub(crate) fn encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &b)| acc | (b as u32) << (16 - 8 * i));
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decode base64 `text` into bytes, stopping at padding, at the first invalid character or at
/// `max_out` bytes; whitespace is skipped.
pub(crate) fn decode_prefix(text: &[u8], max_out: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(max_out.min(text.len()));
    let mut acc = 0u32;
    let mut bits = 0;
    for &c in text {
        if c.is_ascii_whitespace() {
            continue;
        }
        let Some(v) = b64_value(c) else { break };
        acc = (acc << 6) | v as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            if out.len() >= max_out {
                break;
            }
        }
    }
    out
}

// Base64 with MIME line breaks cannot be addressed by offset; headers we need sit within the
// first 64 KiB in practice (JPEG EXIF/ICC segments are the long ones).
const LINE_BROKEN_PREFIX: usize = 256 * 1024;

impl<'a> ByteSource<'a> {
    /// Bytes behind a base64 string, which may carry a `data:...;base64,` prefix.
    pub fn from_base64(text: &'a str) -> ByteSource<'a> {
        let body = strip_data_url(text).as_bytes();
        let head = &body[..body.len().min(4096)];
        if head.iter().any(|c| c.is_ascii_whitespace()) {
            ByteSource::Decoded(decode_prefix(body, LINE_BROKEN_PREFIX))
        } else {
            ByteSource::Base64(body)
        }
    }

    /// `len` bytes at byte `offset`, or fewer when the data ends first.
    pub fn read(&self, offset: usize, len: usize) -> Vec<u8> {
        match self {
            ByteSource::Raw(b) => b
                .get(offset..)
                .map_or(Vec::new(), |s| s[..s.len().min(len)].to_vec()),
            ByteSource::Decoded(b) => b
                .get(offset..)
                .map_or(Vec::new(), |s| s[..s.len().min(len)].to_vec()),
            ByteSource::Base64(t) => {
                let group = offset / 3;
                let skip = offset % 3;
                let start = group * 4;
                if start >= t.len() {
                    return Vec::new();
                }
                let end = (start + (len + skip).div_ceil(3) * 4 + 4).min(t.len());
                let mut d = decode_prefix(&t[start..end], len + skip);
                if d.len() <= skip {
                    return Vec::new();
                }
                d.drain(..skip);
                d.truncate(len);
                d
            }
        }
    }
}

/// The media type a `data:<type>;base64,` URL declares (`image/png`), or None for any other
/// text (bare base64 included).
pub fn data_url_type(text: &str) -> Option<&str> {
    if strip_data_url(text).len() == text.len() {
        return None;
    }
    text["data:".len()..].split([';', ',']).next()
}

/// The base64 payload of a `data:` URL, or the text itself.
pub fn strip_data_url(text: &str) -> &str {
    if let Some(rest) = text.strip_prefix("data:") {
        if let Some(pos) = rest.find(',') {
            if rest[..pos].ends_with(";base64") {
                return &rest[pos + 1..];
            }
        }
    }
    text
}

fn be16(b: &[u8]) -> u32 {
    u32::from(b[0]) << 8 | u32::from(b[1])
}
fn le16(b: &[u8]) -> u32 {
    u32::from(b[0]) | u32::from(b[1]) << 8
}
fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}
fn le24(b: &[u8]) -> u32 {
    u32::from(b[0]) | u32::from(b[1]) << 8 | u32::from(b[2]) << 16
}

// A walk over JPEG segments must end even on hostile input.
const MAX_JPEG_SEGMENTS: usize = 512;

fn jpeg_dims(src: &ByteSource<'_>) -> Option<Dims> {
    let mut pos = 2usize;
    for _ in 0..MAX_JPEG_SEGMENTS {
        let hdr = src.read(pos, 2);
        if hdr.len() < 2 || hdr[0] != 0xFF {
            return None;
        }
        let marker = hdr[1];
        match marker {
            // Fill byte: the marker starts one byte later.
            0xFF => {
                pos += 1;
                continue;
            }
            // Stand-alone markers carry no length.
            0x01 | 0xD0..=0xD8 => {
                pos += 2;
                continue;
            }
            0xD9 | 0xDA => return None,
            _ => {}
        }
        let seg = src.read(pos + 2, 7);
        if seg.len() < 2 {
            return None;
        }
        let len = be16(&seg) as usize;
        let is_sof = matches!(marker, 0xC0..=0xC3 | 0xC5..=0xC7 | 0xC9..=0xCB | 0xCD..=0xCF);
        if is_sof {
            if seg.len() < 7 {
                return None;
            }
            return Some(Dims {
                height: be16(&seg[3..]),
                width: be16(&seg[5..]),
            });
        }
        if len < 2 {
            return None;
        }
        pos += 2 + len;
    }
    None
}

/// Pixel size read from a PNG, JPEG, GIF or WebP header; `None` when unrecognized or cut short.
pub fn dims(src: &ByteSource<'_>) -> Option<Dims> {
    let head = src.read(0, 32);
    let d =
        if head.len() >= 24 && head.starts_with(b"\x89PNG\r\n\x1a\n") && &head[12..16] == b"IHDR" {
            Dims {
                width: be32(&head[16..]),
                height: be32(&head[20..]),
            }
        } else if head.len() >= 10 && (head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a")) {
            Dims {
                width: le16(&head[6..]),
                height: le16(&head[8..]),
            }
        } else if head.len() >= 3 && head[0] == 0xFF && head[1] == 0xD8 && head[2] == 0xFF {
            jpeg_dims(src)?
        } else if head.len() >= 30 && &head[0..4] == b"RIFF" && &head[8..12] == b"WEBP" {
            match &head[12..16] {
                b"VP8X" => Dims {
                    width: le24(&head[24..]) + 1,
                    height: le24(&head[27..]) + 1,
                },
                b"VP8L" if head[20] == 0x2F => {
                    let bits = u32::from_le_bytes([head[21], head[22], head[23], head[24]]);
                    Dims {
                        width: (bits & 0x3FFF) + 1,
                        height: ((bits >> 14) & 0x3FFF) + 1,
                    }
                }
                b"VP8 " if head[23..26] == [0x9D, 0x01, 0x2A] => Dims {
                    width: le16(&head[26..]) & 0x3FFF,
                    height: le16(&head[28..]) & 0x3FFF,
                },
                _ => return None,
            }
        } else {
            return None;
        };
    (d.width > 0 && d.height > 0).then_some(d)
}

/// Pixel size of base64 image data (with or without a `data:` prefix).
pub fn dims_of_base64(text: &str) -> Option<Dims> {
    dims(&ByteSource::from_base64(text))
}

/// Pixel size of raw image bytes.
pub fn dims_of_bytes(bytes: &[u8]) -> Option<Dims> {
    dims(&ByteSource::Raw(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_is_rfc_4648_base64_and_decodes_back() {
        // RFC 4648 section 10 test vectors.
        let vectors = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, b64) in vectors {
            assert_eq!(encode(plain.as_bytes()), b64);
        }
        let bytes: Vec<u8> = (0..=255).collect();
        assert_eq!(decode_prefix(encode(&bytes).as_bytes(), 1 << 20), bytes);
    }

    fn png(w: u32, h: u32) -> Vec<u8> {
        let mut v = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        v.extend(w.to_be_bytes());
        v.extend(h.to_be_bytes());
        v.extend([8, 6, 0, 0, 0, 0, 0, 0, 0]);
        v.extend(std::iter::repeat_n(0xAB, 10_000));
        v
    }

    fn jpeg(w: u16, h: u16, app_len: usize) -> Vec<u8> {
        let mut v = vec![0xFF, 0xD8, 0xFF, 0xE1];
        v.extend(((app_len + 2) as u16).to_be_bytes());
        v.extend(std::iter::repeat_n(0x11, app_len));
        v.extend([0xFF, 0xC0, 0x00, 0x11, 0x08]);
        v.extend(h.to_be_bytes());
        v.extend(w.to_be_bytes());
        v.extend([3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
        v
    }

    #[test]
    fn png_header_read_through_base64_and_data_url() {
        let data = png(1920, 1080);
        let url = format!("data:image/png;base64,{}", encode(&data));
        assert_eq!(
            dims_of_base64(&url),
            Some(Dims {
                width: 1920,
                height: 1080
            })
        );
        assert_eq!(
            dims_of_bytes(&data),
            Some(Dims {
                width: 1920,
                height: 1080
            })
        );
    }

    #[test]
    fn jpeg_after_long_exif_segment_at_every_alignment() {
        for app in [0usize, 1, 2, 3, 1000, 40_001] {
            let data = jpeg(800, 600, app);
            assert_eq!(
                dims_of_base64(&encode(&data)),
                Some(Dims {
                    width: 800,
                    height: 600
                }),
                "app={app}"
            );
        }
    }

    #[test]
    fn gif_and_webp_headers() {
        let mut gif = b"GIF89a".to_vec();
        gif.extend([0x40, 0x01, 0xF0, 0x00]);
        gif.extend([0u8; 30]);
        assert_eq!(
            dims_of_bytes(&gif),
            Some(Dims {
                width: 320,
                height: 240
            })
        );

        let mut vp8x = b"RIFF\0\0\0\0WEBPVP8X".to_vec();
        vp8x.extend([10, 0, 0, 0, 0, 0, 0, 0]);
        vp8x.extend([0xFF, 0x03, 0x00, 0xFF, 0x01, 0x00]); // 1024 x 512
        assert_eq!(
            dims_of_bytes(&vp8x),
            Some(Dims {
                width: 1024,
                height: 512
            })
        );

        let mut vp8l = b"RIFF\0\0\0\0WEBPVP8L\0\0\0\0\x2f".to_vec();
        let bits: u32 = (99) | (49 << 14); // 100 x 50
        vp8l.extend(bits.to_le_bytes());
        vp8l.extend([0u8; 8]);
        assert_eq!(
            dims_of_bytes(&vp8l),
            Some(Dims {
                width: 100,
                height: 50
            })
        );

        let mut vp8 = b"RIFF\0\0\0\0WEBPVP8 \0\0\0\0\0\0\0\x9d\x01\x2a".to_vec();
        vp8.extend(640u16.to_le_bytes());
        vp8.extend(480u16.to_le_bytes());
        assert_eq!(
            dims_of_bytes(&vp8),
            Some(Dims {
                width: 640,
                height: 480
            })
        );
    }

    #[test]
    fn line_broken_base64_still_reads() {
        let s = encode(&png(64, 32));
        let broken: String = s
            .as_bytes()
            .chunks(76)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(
            dims_of_base64(&broken),
            Some(Dims {
                width: 64,
                height: 32
            })
        );
    }

    #[test]
    fn garbage_and_truncated_headers_are_unknown() {
        assert_eq!(dims_of_base64("not an image at all"), None);
        assert_eq!(dims_of_base64(""), None);
        assert_eq!(dims_of_bytes(&png(10, 10)[..20]), None);
        assert_eq!(dims_of_bytes(&[0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x00]), None);
        // A JPEG whose segments loop forever must terminate.
        let mut v = vec![0xFF, 0xD8];
        v.extend(std::iter::repeat_n([0xFF, 0xE0, 0x00, 0x02], 1000).flatten());
        assert_eq!(dims_of_bytes(&v), None);
    }
}
