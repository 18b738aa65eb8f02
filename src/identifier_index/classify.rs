//! What a token of a span is: a path, a URL, a UUID, a record id, a number with its unit, a
//! code symbol, an error line; and the context that rules one out (a JSON key, a markup tag).

/// The extensions a file path is known by (a `match`: a list's `contains` compared each).
pub(super) fn is_path_extension(ext: &str) -> bool {
    matches!(
        ext,
        "py" | "rs"
            | "js"
            | "ts"
            | "tsx"
            | "jsx"
            | "json"
            | "md"
            | "txt"
            | "toml"
            | "yaml"
            | "yml"
            | "cfg"
            | "ini"
            | "c"
            | "h"
            | "cc"
            | "cpp"
            | "hpp"
            | "go"
            | "java"
            | "sh"
            | "html"
            | "css"
            | "rst"
            | "lock"
            | "xml"
            | "sql"
            | "log"
            | "csv"
    )
}

const UNITS: [&str; 26] = [
    "ms", "s", "sec", "secs", "seconds", "second", "minutes", "minute", "min", "mins", "hours",
    "hour", "days", "day", "weeks", "kb", "mb", "gb", "tb", "bytes", "tokens", "passed", "failed",
    "errors", "%", "px",
];

/// Characters an identifier token may hold.
pub(super) fn is_token_char(c: char) -> bool {
    c.is_alphanumeric()
        || matches!(
            c,
            '_' | '.' | '/' | '-' | ':' | '#' | '$' | '%' | '@' | '+' | '~' | '=' | '?' | '&' | ','
        )
}

/// `t` without the punctuation around it (all ASCII, so trimmed by bytes). A leading `./` or
/// `../` is part of a path, not punctuation: trimmed to its `/`, `./django/conf` was indexed as
/// the root path `/django/conf`.
pub(super) fn trim_token(t: &str) -> &str {
    let b = t.as_bytes();
    let mut start = 0;
    while start < b.len()
        && matches!(
            b[start],
            b'.' | b',' | b':' | b'=' | b'?' | b'&' | b'-' | b'+'
        )
        && !(b[start..].starts_with(b"./") || b[start..].starts_with(b"../"))
    {
        start += 1;
    }
    let mut end = b.len();
    while end > start
        && matches!(
            b[end - 1],
            b'.' | b',' | b':' | b'=' | b'?' | b'&' | b';' | b'-' | b'+'
        )
    {
        end -= 1;
    }
    &t[start..end]
}

/// Five hex groups of 8, 4, 4, 4 and 12 digits joined by dashes.
pub(super) fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.bytes().enumerate().all(|(i, c)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                c == b'-'
            } else {
                c.is_ascii_hexdigit()
            }
        })
}

/// Whether `t` holds `://` (a URL's scheme separator).
pub(super) fn has_scheme(t: &str) -> bool {
    let b = t.as_bytes();
    b.iter()
        .enumerate()
        .any(|(i, &c)| c == b':' && b.get(i + 1) == Some(&b'/') && b.get(i + 2) == Some(&b'/'))
}

/// `l.split_once(": ")`, found from the colons alone.
pub(super) fn split_colon_space(l: &str) -> Option<(&str, &str)> {
    let b = l.as_bytes();
    let mut from = 0;
    while let Some(i) = b[from..].iter().position(|&c| c == b':') {
        let at = from + i;
        if b.get(at + 1) == Some(&b' ') {
            return Some((&l[..at], &l[at + 2..]));
        }
        from = at + 1;
    }
    None
}

/// `text.rfind(t)`, where `t` is short and stands near the end of `text` (a piece of the token
/// `text` ends with): compared back from the end at each place its last byte holds, without the
/// string searcher `rfind` builds for each call (every number and record code the scan reads
/// asked for one).
pub(super) fn rfind_near_end(text: &str, t: &str) -> Option<usize> {
    let (h, n) = (text.as_bytes(), t.as_bytes());
    let Some((&last, _)) = n.split_last() else {
        return Some(h.len());
    };
    let mut end = h.len();
    while let Some(i) = memchr::memrchr(last, &h[..end]) {
        if i + 1 >= n.len() && &h[i + 1 - n.len()..=i] == n {
            // (A match of a whole UTF-8 text starts at a character's start, as `rfind`'s does.)
            return Some(i + 1 - n.len());
        }
        end = i;
    }
    None
}

/// A unit a number is said in (`UNITS`, any case).
pub(super) fn is_unit(u: &str) -> bool {
    // (Most tokens asked are longer than any unit: they are told apart by their length alone.)
    u.len() <= LONGEST_UNIT && UNITS.iter().any(|x| x.eq_ignore_ascii_case(u))
}

/// Bytes of the longest of `UNITS`.
const LONGEST_UNIT: usize = {
    let (mut k, mut n) = (0, 0);
    while k < UNITS.len() {
        if UNITS[k].len() > n {
            n = UNITS[k].len();
        }
        k += 1;
    }
    n
};

/// `t.trim_start_matches("./")`, without the string searcher that builds for each path-like
/// token of the scan.
pub(super) fn without_dot_slashes(mut t: &str) -> &str {
    while let Some(rest) = t.strip_prefix("./") {
        t = rest;
    }
    t
}

/// Whether path `t` ends on a file name with a known extension (`a/b.py`; not `a/.py`).
pub(super) fn has_path_extension(t: &str) -> bool {
    t.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty() && !stem.ends_with('/') && is_path_extension(ext)
    })
}

pub(super) fn is_path(t: &str) -> bool {
    // (`has_scheme`, not `contains("://")`: a string searcher built for every token read here
    // showed in the scan's profile.)
    if t.len() < 3 || t.len() > 160 || t.starts_with("//") || has_scheme(t) {
        return false;
    }
    let rooted = t.starts_with(['/', '~', '.']) || t.ends_with('/');
    let t = without_dot_slashes(t);
    let valid = t
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'/' | b'-' | b'~'));
    if !valid {
        return false;
    }
    let has_ext = has_path_extension(t);
    // Without an extension a path is known by its directories: two or more named ones, none a
    // single character (`sed` addresses `/pass/d` and `s/print`, `N/A`), and, unless it opens
    // at a root (`/`, `~`, `./`) or ends with `/`, three or more (`True/False`, `try/except`).
    if has_ext || !t.contains('/') {
        return has_ext;
    }
    // (Counted in one pass, without collecting the segments: most tokens with a `/` are
    // read here.)
    let (mut named, mut count) = (0, 0);
    for s in t.split('/').filter(|s| !s.is_empty()) {
        if s.len() < 2 {
            return false;
        }
        count += 1;
        named += usize::from(s.bytes().any(|c| c.is_ascii_alphabetic()));
    }
    named >= 2 && (rooted || count >= 3)
}

/// A record id: letters and digits mixed, either upper-case codes (`OBUT9V`, `HAT229`) or
/// snake-case names ending in digits (`sofia_kim_7287`, `gift_card_6941833`).
pub(super) fn is_record_id(t: &str) -> bool {
    let n = t.len();
    if !(4..=40).contains(&n)
        || !t
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
    {
        return false;
    }
    let digits = t.bytes().filter(u8::is_ascii_digit).count();
    let letters = t.bytes().filter(u8::is_ascii_alphabetic).count();
    if digits == 0 || letters == 0 {
        return false;
    }
    let upper_code = n <= 12
        && t.bytes()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'-' || c == b'_');
    let snake_digits = t.contains('_')
        && t.rsplit('_')
            .next()
            .is_some_and(|last| last.len() >= 3 && last.bytes().all(|c| c.is_ascii_digit()));
    upper_code || snake_digits
}

/// A function, class or module name: snake_case with an underscore, CamelCase with two humps,
/// or a dotted name (`pkgutil.iter_modules`). `t` is (a piece of) a token, which never holds
/// `()`, and `classes` are its bytes' (`tokens::classes_of`): what each shape needs is read from
/// them, and only the shapes they allow are read from the bytes (a pass over the bytes per
/// test, and a searcher per `contains`, were a tenth of the scan).
pub(super) fn is_symbol(t: &str, classes: u32) -> bool {
    use super::tokens::{DIGIT, DOT, LETTER, LOWER, UNDERSCORE};
    let b = t.as_bytes();
    if b.len() < 4
        || b.len() > 80
        || classes & !(LETTER | DIGIT | UNDERSCORE | DOT) != 0
        || b[0] == b'.'
        || b[b.len() - 1] == b'.'
        || b[0].is_ascii_digit()
        // (A rule of underscores, as pytest draws around a failing test's name, names nothing.)
        || classes & LETTER == 0
    {
        return false;
    }
    // (Every part holds a letter, so none is empty; a `.` makes two parts or more.)
    let dotted = || {
        classes & DOT != 0
            && classes & LOWER != 0
            && b.split(|&c| c == b'.')
                .all(|p| p.iter().any(u8::is_ascii_alphabetic))
    };
    // An underscore between its first and last other character, or a leading one.
    let snake = || {
        classes & UNDERSCORE != 0 && {
            let leading = b.iter().take_while(|&&c| c == b'_').count();
            let trailing = b.iter().rev().take_while(|&&c| c == b'_').count();
            b[leading..b.len() - trailing].contains(&b'_') || (leading > 0 && b.len() > 4)
        }
    };
    let camel = || {
        b[0].is_ascii_uppercase()
            && classes & LOWER != 0
            && b.windows(2)
                .any(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase())
    };
    dotted() || snake() || camel()
}

/// Whether the token that ends at byte `end` of `text` is a key of a JSON object (`"key":`).
/// A record's field names (`first_name`, `payment_history`) repeat in every result of a tool
/// and rank high by frequency, yet name no thing the agent acted on. Over the 20 held-out
/// airline summaries at the naive budget, the index's symbol lines took 475 of its 2,037 tokens
/// (300 without the keys). Their values (`basic_economy`) stay.
pub(super) fn is_json_key(text: &str, end: usize) -> bool {
    let rest = &text.as_bytes()[end..];
    rest.first() == Some(&b'"')
        && rest[1..]
            .iter()
            .find(|c| !c.is_ascii_whitespace())
            .is_some_and(|&c| c == b':')
}

/// Whether `t`, ending at byte `end` of `text`, is the name of a markup tag (`<name>`,
/// `</name>`): an agent's prompt sections (`<response_example>`, repeated by every format
/// error of a text agent) name no thing of the task.
pub(super) fn is_tag_name(text: &str, end: usize, t: &str) -> bool {
    let b = text.as_bytes();
    let Some(start) = end
        .checked_sub(t.len())
        .filter(|&s| text[..end].ends_with(t) && s > 0)
    else {
        return false;
    };
    b.get(end) == Some(&b'>')
        && (b[start - 1] == b'<' || (b[start - 1] == b'/' && start >= 2 && b[start - 2] == b'<'))
}

pub(super) fn is_config_key(t: &str) -> bool {
    t.len() >= 5
        && t.contains('_')
        && t.bytes()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_')
        && t.bytes().next().is_some_and(|c| c.is_ascii_uppercase())
        && t.bytes().filter(u8::is_ascii_uppercase).count() >= 3
}

pub(super) fn is_number(t: &str) -> bool {
    let t = t.strip_prefix('$').unwrap_or(t);
    !t.is_empty()
        && t.bytes().next().is_some_and(|c| c.is_ascii_digit())
        && t.bytes()
            .all(|c| c.is_ascii_digit() || c == b'.' || c == b',')
}

/// Characters kept of an error's first line.
const ERROR_LINE_CHARS: usize = 160;

/// An error line (`l`, split at its first `: ` into `head` and `rest`) as the index shows it:
/// from the error's qualified name on, so that a sentence quoting the error ("The error is
/// `django.db.utils.OperationalError: Cannot add a UNIQUE column`.") and the error's own line
/// are one entry, not two (a SWE run's index listed one error four times). A quote or backtick
/// opened just before the name ends the message where it closes.
pub(super) fn error_entry(l: &str, head: &str, rest: &str) -> String {
    let cut = head
        .char_indices()
        .rev()
        .find(|&(_, c)| c.is_whitespace() || matches!(c, '`' | '\'' | '"' | '(' | '['))
        .map(|(i, c)| (i + c.len_utf8(), c));
    let Some((start, opener)) = cut else {
        return one_line(l, ERROR_LINE_CHARS);
    };
    let message = match opener {
        '`' | '\'' | '"' => rest.split(opener).next().unwrap_or(rest),
        _ => rest,
    };
    one_line(&format!("{}: {message}", &head[start..]), ERROR_LINE_CHARS)
}

/// Whitespace collapsed to single spaces, at most `max` characters (an ellipsis marks a cut):
/// an index line never carries a newline.
fn one_line(s: &str, max: usize) -> String {
    let mut out = String::new();
    let mut n = 0;
    for w in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
            n += 1;
        }
        for ch in w.chars() {
            if n >= max {
                out.push('…');
                return out;
            }
            out.push(ch);
            n += 1;
        }
    }
    out
}
