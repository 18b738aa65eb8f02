//! Each provider's image-token formula, from the pixel size.
//!
//! Sources: OpenAI https://platform.openai.com/docs/guides/images-vision#calculating-costs
//! (tile and patch models), Anthropic https://docs.anthropic.com/en/docs/build-with-claude/vision
//! (28-px patches and resize limits), Gemini https://ai.google.dev/gemini-api/docs/image-understanding
//! (258 tokens per 768-px tile, images fit to 3072 px).

use crate::image::Dims;
use crate::message::{Content, Detail, Image, ImageSource, Message, Part};
use crate::provider::Provider;

/// How a model family bills images.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ImageRule {
    /// OpenAI tile models: `base + per_tile * tiles` after fitting 2048 px and shortest side 768.
    Tiles { base: u32, per_tile: u32 },
    /// OpenAI patch models: 32-px patches under a patch budget, times a multiplier.
    Patches {
        budget: u32,
        budget_high: u32,
        budget_original: u32,
        multiplier: f64,
    },
    /// Anthropic: ceil(w/28) * ceil(h/28) after fitting `max_edge` px and `max_tokens`.
    Anthropic { max_edge: u32, max_tokens: u32 },
    /// Gemini: 258 when both sides <= 384 px, else 258 per 768x768 tile.
    Gemini,
    /// The same tokens for every image whatever its size (Gemini 3's media resolution budget).
    Fixed(u32),
}

fn starts_any(model: &str, prefixes: &[&str]) -> bool {
    prefixes.iter().any(|p| model.starts_with(p))
}

/// The image rule of a model; `model` may be empty (the provider's default family).
pub fn rule_for(provider: Provider, model: &str) -> ImageRule {
    let m = model.strip_prefix("ft:").unwrap_or(model);
    let m = m.rsplit('/').next().unwrap_or(m);
    match provider {
        Provider::OpenAI => openai_rule(m),
        Provider::Anthropic => {
            // The newest Opus accepts larger images (Anthropic vision docs: 2576 px / 4784 tokens).
            if starts_any(m, &["claude-opus-4-7", "claude-opus-5"]) {
                ImageRule::Anthropic {
                    max_edge: 2576,
                    max_tokens: 4784,
                }
            } else {
                ImageRule::Anthropic {
                    max_edge: 1568,
                    max_tokens: 1568,
                }
            }
        }
        // Gemini 3 bills an image by its media resolution, not by tiles: `high` (the default for
        // images) caps it at 1,120 tokens (https://ai.google.dev/gemini-api/docs/media-resolution,
        // "Token counts"). Recorded: 1,088 for every JPEG and 1,102 for every PNG (11 single
        // images of gemini-3-flash in ../shared/data/pydantic-ai, Gemini API and Vertex AI,
        // 180 px to 1 MP): the median, 1,088.
        Provider::Gemini if is_gemini_3_or_later(m) => ImageRule::Fixed(1088),
        Provider::Gemini => ImageRule::Gemini,
        // Unknown vision encoders: 28-px patches under a ~1.2 MP cap, the shape of current ViT
        // front ends (Qwen-VL, Claude). On the cassettes' Llama 4 (Groq) and Nova (Bedrock)
        // requests with a 3 MB screenshot it lands within 0.6-0.9x of the billed count, where a
        // fixed price per image was off by 3x.
        Provider::Ollama | Provider::OpenAICompatible => ImageRule::Anthropic {
            max_edge: 1568,
            max_tokens: 1568,
        },
    }
}

/// A Gemini model of generation 3 or later (`gemini-3-pro-preview`, `gemini-3.1-flash-lite`).
fn is_gemini_3_or_later(m: &str) -> bool {
    let Some(v) = m.strip_prefix("gemini-") else {
        return false;
    };
    let major: String = v.chars().take_while(|c| c.is_ascii_digit()).collect();
    major.parse::<u32>().is_ok_and(|n| n >= 3)
}

fn openai_rule(m: &str) -> ImageRule {
    let patches = |budget, multiplier| ImageRule::Patches {
        budget,
        budget_high: budget,
        budget_original: budget,
        multiplier,
    };
    // Patch models first: their names share prefixes with tile models.
    if m.starts_with("gpt-4.1-mini") {
        return patches(1536, 1.62);
    }
    if m.starts_with("gpt-4.1-nano") {
        return patches(1536, 2.46);
    }
    if m.starts_with("o4-mini") {
        return patches(1536, 1.72);
    }
    // Billing reports 1.2 (mini) and 1.5 (nano) on the gpt-5 small models (recorded usage).
    if m.starts_with("gpt-5-mini") {
        return patches(1536, 1.2);
    }
    if m.starts_with("gpt-5-nano") {
        return patches(1536, 1.5);
    }
    if starts_any(m, &["gpt-5.4", "gpt-5.5", "gpt-5.6", "gpt-6"]) {
        return ImageRule::Patches {
            budget: 1536,
            budget_high: 2500,
            budget_original: 10_000,
            multiplier: 1.0,
        };
    }
    if starts_any(m, &["gpt-5.2", "gpt-5.3"]) {
        return patches(1536, 1.0);
    }
    if m.starts_with("gpt-5") {
        return ImageRule::Tiles {
            base: 70,
            per_tile: 140,
        };
    }
    // gpt-4o-mini bills images at 33x the gpt-4o rate (OpenAI pricing docs, image cost table:
    // base 2833, tile 5667); the cassettes confirm it (640x480 PNG: 14,167 of 14,181 tokens).
    if m.starts_with("gpt-4o-mini") {
        return ImageRule::Tiles {
            base: 2833,
            per_tile: 5667,
        };
    }
    if starts_any(m, &["o1", "o3"]) {
        return ImageRule::Tiles {
            base: 75,
            per_tile: 150,
        };
    }
    // gpt-4o, gpt-4.1, gpt-4.5, gpt-4-turbo and unknown OpenAI models.
    ImageRule::Tiles {
        base: 85,
        per_tile: 170,
    }
}

fn scale(d: Dims, f: f64) -> (f64, f64) {
    (d.width as f64 * f, d.height as f64 * f)
}

fn tile_count(d: Dims) -> u32 {
    // Fit inside 2048x2048, then bring the shortest side down to 768 (never up).
    let (mut w, mut h) = (d.width as f64, d.height as f64);
    let fit = (2048.0 / w.max(h)).min(1.0);
    w *= fit;
    h *= fit;
    let short = w.min(h);
    if short > 768.0 {
        let f = 768.0 / short;
        w *= f;
        h *= f;
    }
    ((w / 512.0).ceil() as u32).max(1) * ((h / 512.0).ceil() as u32).max(1)
}

fn patch_count(d: Dims, budget: u32) -> u32 {
    let (w, h) = (d.width as f64, d.height as f64);
    let raw = (w / 32.0).ceil() * (h / 32.0).ceil();
    if raw <= budget as f64 {
        return raw as u32;
    }
    // Shrink to fit the budget, then make whole patches fit (docs' two-step rule).
    let mut r = (32.0 * 32.0 * budget as f64 / (w * h)).sqrt();
    let (sw, sh) = scale(d, r);
    r *= ((sw / 32.0).floor() / (sw / 32.0)).min((sh / 32.0).floor() / (sh / 32.0));
    let (sw, sh) = scale(d, r);
    (((sw / 32.0).ceil() * (sh / 32.0).ceil()) as u32).min(budget)
}

fn anthropic_tokens(d: Dims, max_edge: u32, max_tokens: u32) -> u32 {
    let (w0, h0) = (d.width as f64, d.height as f64);
    let patches = |w: f64, h: f64| ((w / 28.0).ceil() * (h / 28.0).ceil()) as u32;
    let f = (max_edge as f64 / w0.max(h0)).min(1.0);
    let (mut w, mut h) = (w0 * f, h0 * f);
    if patches(w, h) <= max_tokens {
        return patches(w, h);
    }
    // Shrink along the long side one patch column at a time until the token cap holds.
    let long_is_w = w >= h;
    let mut cols = ((if long_is_w { w } else { h }) / 28.0).ceil() as u32;
    while cols > 1 {
        cols -= 1;
        let long = cols as f64 * 28.0;
        if long_is_w {
            w = long;
            h = (long * h0 / w0).floor();
        } else {
            h = long;
            w = (long * w0 / h0).floor();
        }
        if patches(w, h) <= max_tokens {
            break;
        }
    }
    patches(w.max(1.0), h.max(1.0))
}

fn gemini_tokens(d: Dims) -> u32 {
    if d.width <= 384 && d.height <= 384 {
        return 258;
    }
    // Gemini scales images down to fit 3072x3072 before tiling (Gemini docs, "image
    // understanding"), so one image costs at most 16 tiles.
    let f = (3072.0 / f64::from(d.width.max(d.height))).min(1.0);
    let w = (f64::from(d.width) * f).ceil() as u32;
    let h = (f64::from(d.height) * f).ceil() as u32;
    w.div_ceil(768).max(1) * h.div_ceil(768).max(1) * 258
}

/// The size assumed for an image whose header cannot be read (a URL, a file id, a broken
/// header): a 1024x1024 image, a typical screenshot. Every rule caps what one image can cost,
/// so the error of this default is bounded by that cap.
pub const DEFAULT_DIMS: Dims = Dims {
    width: 1024,
    height: 1024,
};

/// Tokens billed for an image of size `dims` under `rule`; `None` dims (a URL, an unreadable
/// header) are priced as `DEFAULT_DIMS`.
pub fn image_tokens(rule: ImageRule, dims: Option<Dims>, detail: Detail) -> u32 {
    match rule {
        ImageRule::Tiles { base, per_tile } => match (detail, dims) {
            (Detail::Low, _) => base,
            (_, d) => base + per_tile * tile_count(d.unwrap_or(DEFAULT_DIMS)),
        },
        ImageRule::Patches {
            budget,
            budget_high,
            budget_original,
            multiplier,
        } => {
            let b = match detail {
                Detail::High => budget_high,
                Detail::Original => budget_original,
                Detail::Auto | Detail::Low | Detail::Medium | Detail::UltraHigh => budget,
            };
            let n = patch_count(dims.unwrap_or(DEFAULT_DIMS), b);
            (n as f64 * multiplier).ceil() as u32
        }
        ImageRule::Anthropic {
            max_edge,
            max_tokens,
        } => anthropic_tokens(dims.unwrap_or(DEFAULT_DIMS), max_edge, max_tokens),
        // Before Gemini 3 a resolution is set for the whole request; `low` is 64 tokens an
        // image (`MediaResolution`, https://ai.google.dev/api/generate-content: "Media
        // resolution set to low (64 tokens)"); the other levels keep the tiles.
        ImageRule::Gemini if detail == Detail::Low => 64,
        ImageRule::Gemini => gemini_tokens(dims.unwrap_or(DEFAULT_DIMS)),
        ImageRule::Fixed(tokens) => media_resolution_share(tokens, detail),
    }
}

/// A Gemini 3 image at its media resolution: the documented caps are 280 / 560 / 1,120 /
/// 2,240 tokens for low / medium / high / ultra high, high the default for images
/// (https://ai.google.dev/gemini-api/docs/media-resolution, "Token counts"). `tokens` is what
/// an image is billed at the default (recorded, a little under its cap); another level is
/// billed in the same proportion to its cap.
fn media_resolution_share(tokens: u32, detail: Detail) -> u32 {
    let cap = match detail {
        Detail::Low => 280,
        Detail::Medium => 560,
        Detail::UltraHigh => 2240,
        Detail::Auto | Detail::High | Detail::Original => return tokens,
    };
    (u64::from(tokens) * cap).div_ceil(1120) as u32
}

fn visit_images<'m, 'a>(parts: &'m [Part<'a>], f: &mut impl FnMut(&'m Image<'a>)) {
    for p in parts {
        match p {
            Part::Image(img) => f(img),
            Part::ToolResult { content, .. } => visit_images(content, f),
            _ => {}
        }
    }
}

/// The key an image without pixels in the request is sized by: its URL or its uploaded file's
/// id / URI; `None` for inline data or an empty reference (nothing to look up).
pub fn reference<'a>(src: &ImageSource<'a>) -> Option<&'a str> {
    match *src {
        ImageSource::Url(u) | ImageSource::File(u) if !u.is_empty() => Some(u),
        _ => None,
    }
}

/// The images of a message whose pixels are not in the request (remote URLs, file ids), in
/// order, each with its reference.
fn remote_images<'m, 'a>(m: &'m Message<'a>) -> Vec<(&'a str, &'m Image<'a>)> {
    let mut out = Vec::new();
    if let Content::Parts(parts) = &m.content {
        visit_images(parts, &mut |img| {
            if let Some(r) = reference(&img.source) {
                out.push((r, img));
            }
        });
    }
    out
}

/// Every distinct image reference (remote URL or uploaded file id) of a history that cannot be
/// sized offline: what a caller's `image_sizes` mapping or callable is asked about, and
/// nothing else.
pub fn unsized_refs<'a>(ms: &[Message<'a>]) -> Vec<&'a str> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for m in ms {
        for (r, _) in remote_images(m) {
            if seen.insert(r) {
                out.push(r);
            }
        }
    }
    out
}

/// Tokens an image of known size `dims` costs beyond the `DEFAULT_DIMS` price charged for it.
pub fn sized_delta(rule: ImageRule, dims: Dims, detail: Detail) -> i64 {
    i64::from(image_tokens(rule, Some(dims), detail)) - i64::from(image_tokens(rule, None, detail))
}

/// Tokens to add to a message's price (priced with `DEFAULT_DIMS` for its remote images) once
/// `size_of` knows some of those images' pixel sizes.
pub fn size_correction(
    rule: ImageRule,
    m: &Message<'_>,
    size_of: &dyn Fn(&str) -> Option<Dims>,
) -> i64 {
    remote_images(m)
        .into_iter()
        .filter_map(|(r, img)| size_of(r).map(|d| sized_delta(rule, d, img.detail)))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(width: u32, height: u32) -> Option<Dims> {
        Some(Dims { width, height })
    }

    #[test]
    fn openai_tile_examples_from_the_docs() {
        let r = rule_for(Provider::OpenAI, "gpt-4o");
        assert_eq!(image_tokens(r, d(1024, 1024), Detail::High), 765);
        assert_eq!(image_tokens(r, d(2048, 4096), Detail::High), 1105);
        assert_eq!(image_tokens(r, d(4096, 8192), Detail::Low), 85);
        assert_eq!(image_tokens(r, None, Detail::Auto), 765);
    }

    #[test]
    fn openai_patch_examples_from_the_docs() {
        // Docs: 1024x1024 -> 1024 patches; 1800x2400 -> 1452 patches.
        let r = ImageRule::Patches {
            budget: 1536,
            budget_high: 1536,
            budget_original: 1536,
            multiplier: 1.0,
        };
        assert_eq!(image_tokens(r, d(1024, 1024), Detail::Auto), 1024);
        assert_eq!(image_tokens(r, d(1800, 2400), Detail::Auto), 1452);
        let mini = rule_for(Provider::OpenAI, "gpt-4.1-mini-2025-04-14");
        assert_eq!(image_tokens(mini, d(1024, 1024), Detail::Auto), 1659);
    }

    #[test]
    fn anthropic_examples_from_the_docs() {
        let r = rule_for(Provider::Anthropic, "claude-sonnet-4-6");
        assert_eq!(image_tokens(r, d(1000, 1000), Detail::Auto), 1296);
        assert_eq!(image_tokens(r, d(1920, 1080), Detail::Auto), 1560);
        assert!(image_tokens(r, d(10_000, 10_000), Detail::Auto) <= 1568);
        assert!(image_tokens(r, d(1, 50_000), Detail::Auto) <= 1568);
    }

    #[test]
    fn a_gemini_media_resolution_level_scales_the_image_to_its_cap() {
        let r = rule_for(Provider::Gemini, "gemini-3-flash");
        // 1,088 at the default (high, cap 1,120); the other caps in proportion.
        let at = |detail| image_tokens(r, d(1024, 768), detail);
        assert_eq!(at(Detail::Low), 272);
        assert_eq!(at(Detail::Medium), 544);
        assert_eq!(at(Detail::High), 1088);
        assert_eq!(at(Detail::UltraHigh), 2176);
        // Before Gemini 3: low is 64 an image; the other levels keep the tiles.
        let old = rule_for(Provider::Gemini, "gemini-2.5-flash");
        assert_eq!(image_tokens(old, d(1024, 1024), Detail::Low), 64);
        assert_eq!(image_tokens(old, d(1024, 1024), Detail::Medium), 4 * 258);
        for (text, level) in [
            ("MEDIA_RESOLUTION_LOW", Some(Detail::Low)),
            ("media_resolution_ultra_high", Some(Detail::UltraHigh)),
            ("medium", Some(Detail::Medium)),
            ("MEDIA_RESOLUTION_UNSPECIFIED", Some(Detail::Auto)),
            ("MEDIA_RESOLUTION_", None),
            ("HUGE", None),
        ] {
            assert_eq!(Detail::parse_media_resolution(text), level, "{text}");
        }
        for code in 0..=255u8 {
            if let Some(level) = Detail::from_code(code) {
                assert_eq!(level.code(), code);
            }
        }
    }

    #[test]
    fn gemini_3_bills_every_image_its_media_resolution_budget() {
        for m in [
            "gemini-3-flash",
            "gemini-3-pro",
            "gemini-3.1-flash-lite",
            "gemini-4",
        ] {
            let r = rule_for(Provider::Gemini, m);
            assert_eq!(r, ImageRule::Fixed(1088), "{m}");
            assert_eq!(image_tokens(r, d(180, 180), Detail::Auto), 1088);
            assert_eq!(image_tokens(r, None, Detail::Auto), 1088);
        }
        for m in [
            "gemini-2.5-flash",
            "gemini-1.5-pro",
            "gemini-exp",
            "",
            "gemma-3-27b",
        ] {
            assert_eq!(rule_for(Provider::Gemini, m), ImageRule::Gemini, "{m}");
        }
    }

    #[test]
    fn gemini_tiles() {
        assert_eq!(
            image_tokens(ImageRule::Gemini, d(384, 384), Detail::Auto),
            258
        );
        assert_eq!(
            image_tokens(ImageRule::Gemini, d(1024, 1024), Detail::Auto),
            4 * 258
        );
    }

    #[test]
    fn huge_images_stay_bounded_for_every_rule() {
        for p in [Provider::OpenAI, Provider::Anthropic, Provider::Ollama] {
            for m in ["gpt-4o", "gpt-5-mini", "claude-opus-4-7", ""] {
                let r = rule_for(p, m);
                let t = image_tokens(r, d(60_000, 60_000), Detail::High);
                assert!(t <= 10_000, "{p:?} {m}: {t}");
            }
        }
    }

    #[test]
    fn known_sizes_correct_the_default_price_of_remote_images() {
        let mut m = Message::empty("user");
        m.content = Content::Parts(vec![
            Part::Image(Image {
                source: ImageSource::Url("https://x/a.png"),
                detail: Detail::High,
            }),
            Part::Image(Image {
                source: ImageSource::Url("https://x/b.png"),
                detail: Detail::High,
            }),
        ]);
        let rule = rule_for(Provider::OpenAI, "gpt-4o");
        let sizes = |u: &str| {
            (u == "https://x/a.png").then_some(Dims {
                width: 512,
                height: 512,
            })
        };
        // 512x512: 85 + 170; the default 1024x1024: 765.
        assert_eq!(size_correction(rule, &m, &sizes), 255 - 765);
        assert_eq!(
            unsized_refs(std::slice::from_ref(&m)),
            ["https://x/a.png", "https://x/b.png"]
        );
    }
}
