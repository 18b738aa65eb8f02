//! How OpenAI renders tool definitions and structured-output schemas into the prompt.
//!
//! OpenAI does not publish the text its chat models see for `tools` and `response_format`; the
//! rendering below was derived from the recorded `usage.prompt_tokens` of the shared cassettes
//! (`tools/derive_openai_rendering.py` is the reference and prints the error table). Tools
//! become a TypeScript-like namespace, the shape OpenAI documents for its open-weight models
//! (openai/harmony, `template_tools_section`) and that its hosted models were shown to use:
//!
//! ```text
//! # Tools
//!
//! ## functions
//!
//! namespace functions {
//!
//! // Get the weather
//! type get_weather = (_: {
//! // City name
//! city: string,
//! unit?: "c" | "f",
//! }) => any;
//!
//! } // namespace functions
//! ```
//!
//! A `response_format` JSON schema is rendered as `# Response Formats\n\n## NAME\n\n`, its
//! description as `// ` lines, then the schema as compact ASCII-escaped JSON without the keywords
//! the model is not shown (`shown_in_prompt`: `required`, `additionalProperties: false`,
//! `default`, numeric and length bounds, the root `title`, which is billed apart).

use crate::json_string::push_json_string;

/// A JSON value with object keys in their original order (the rendering follows it).
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    /// A number as its JSON text (`1`, `0.5`, `1e+20`).
    Number(String),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    /// The value of `key` when `self` is an object.
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(kv) => kv.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    fn as_array(&self) -> Option<&[Json]> {
        match self {
            Json::Array(a) => Some(a),
            _ => None,
        }
    }

    pub(crate) fn props(&self) -> &[(String, Json)] {
        match self.get("properties") {
            Some(Json::Object(kv)) => kv,
            _ => &[],
        }
    }

    /// Compact JSON of a JSON schema with only the keywords `shown(keyword, value, root)`
    /// accepts (`root`: the keyword belongs to the top-level schema): only schema keywords are
    /// filtered, never a property named like one (`properties.title`) nor anything inside data
    /// values (`enum`, `const`, `default`, `examples`).
    pub fn write_schema_compact(
        &self,
        out: &mut String,
        shown: &impl Fn(&str, &Json, bool) -> bool,
    ) {
        self.write_schema(out, shown, true);
    }

    fn write_schema(
        &self,
        out: &mut String,
        shown: &impl Fn(&str, &Json, bool) -> bool,
        root: bool,
    ) {
        let Json::Object(kv) = self else {
            return self.write_compact(out);
        };
        let kept = kv.iter().filter(|(k, v)| shown(k, v, root));
        write_object(out, kept, |out, k, v| match (k, v) {
            ("properties" | "$defs" | "definitions" | "patternProperties", Json::Object(m)) => {
                write_object(out, m.iter(), |out, _, sub| {
                    sub.write_schema(out, shown, false)
                })
            }
            ("anyOf" | "oneOf" | "allOf" | "prefixItems", Json::Array(a)) => {
                write_array(out, a, |out, sub| sub.write_schema(out, shown, false))
            }
            ("items" | "additionalProperties" | "not" | "if" | "then" | "else" | "contains", _) => {
                v.write_schema(out, shown, false)
            }
            _ => v.write_compact(out),
        });
    }

    /// Compact JSON (`json.dumps(v, separators=(",", ":"), ensure_ascii=False)`).
    pub fn write_compact(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Number(n) => out.push_str(n),
            Json::String(s) => push_json_string(out, s),
            Json::Array(a) => write_array(out, a, |out, v| v.write_compact(out)),
            Json::Object(kv) => write_object(out, kv.iter(), |out, _, v| v.write_compact(out)),
        }
    }
}

// `$ref` chains and nesting deeper than this render as `any` (also stops recursive schemas).
const MAX_DEPTH: usize = 32;

/// Bytes of rendered text one tool's parameters may expand to; past it, every further nested
/// type renders as `any`. `$ref` reuses a definition at each use, so a definition that refers
/// to itself twice (`Node{a: Node, b: Node}`) doubles at each of the 32 levels: 2^32 copies,
/// which killed the process (6 GB allocation) before this cut. OpenAI documents no rendering of
/// recursive schemas; 1 MiB (~250k tokens, more than a whole context window of most models)
/// is far above any real tool (the recorded cassettes' largest renders in under 8 KiB), so the
/// cut changes no real count and bounds time and memory at ~1 MiB plus the schema's own text.
pub const RENDER_BUDGET_BYTES: usize = 1 << 20;

/// What a type node costs against [`RENDER_BUDGET_BYTES`] besides the text of its names and
/// comments (its punctuation, `string`, `{`, `}`...).
const NODE_BYTES: usize = 8;

/// `[v,v,...]`, each value written by `value`.
fn write_array(out: &mut String, items: &[Json], mut value: impl FnMut(&mut String, &Json)) {
    out.push('[');
    for (i, v) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        value(out, v);
    }
    out.push(']');
}

/// `{"k":v,...}`, each value written by `value` (given its key).
fn write_object<'j>(
    out: &mut String,
    entries: impl Iterator<Item = &'j (String, Json)>,
    mut value: impl FnMut(&mut String, &str, &'j Json),
) {
    out.push('{');
    for (i, (k, v)) in entries.enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_json_string(out, k);
        out.push(':');
        value(out, k, v);
    }
    out.push('}');
}

struct Ctx<'a> {
    defs: Vec<&'a [(String, Json)]>,
    /// Bytes of text rendered so far (an estimate from above, see [`RENDER_BUDGET_BYTES`]).
    spent: std::cell::Cell<usize>,
}

impl<'a> Ctx<'a> {
    fn new(params: &'a Json) -> Self {
        let mut defs = Vec::new();
        for key in ["$defs", "definitions"] {
            if let Some(Json::Object(kv)) = params.get(key) {
                defs.push(kv.as_slice());
            }
        }
        Ctx {
            defs,
            spent: std::cell::Cell::new(0),
        }
    }

    /// Count `bytes` against the budget; true when the budget is exhausted.
    fn charge(&self, bytes: usize) -> bool {
        let spent = self.spent.get().saturating_add(bytes);
        self.spent.set(spent);
        spent > RENDER_BUDGET_BYTES
    }

    /// Follow `{"$ref": "#/$defs/Name"}` to its definition.
    fn resolve(&self, mut s: &'a Json) -> &'a Json {
        for _ in 0..MAX_DEPTH {
            let Some(r) = s.get("$ref").and_then(Json::as_str) else {
                return s;
            };
            let name = r.rsplit('/').next().unwrap_or(r);
            match self
                .defs
                .iter()
                .find_map(|d| d.iter().find(|(k, _)| k == name))
            {
                Some((_, v)) => s = v,
                None => return s,
            }
        }
        s
    }

    fn ts_type(&self, s: &'a Json, indent: &str, depth: usize, out: &mut String) {
        let s = self.resolve(s);
        if self.charge(NODE_BYTES) || depth > MAX_DEPTH || !matches!(s, Json::Object(_)) {
            out.push_str("any");
            return;
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(vs) = s.get(key).and_then(Json::as_array) {
                self.union(vs.iter(), indent, depth, out);
                return;
            }
        }
        let ty = s.get("type");
        if let Some(types) = ty.and_then(Json::as_array) {
            for (i, t) in types.iter().enumerate() {
                if i > 0 {
                    out.push_str(" | ");
                }
                self.typed(s, t.as_str().unwrap_or(""), indent, depth, out);
            }
            return;
        }
        if let Some(vals) = s.get("enum").and_then(Json::as_array) {
            if !vals.is_empty() {
                let before = out.len();
                for (i, v) in vals.iter().enumerate() {
                    if i > 0 {
                        out.push_str(" | ");
                    }
                    v.write_compact(out);
                }
                self.charge(out.len() - before);
                return;
            }
        }
        if let Some(c) = s.get("const") {
            let before = out.len();
            c.write_compact(out);
            self.charge(out.len() - before);
            return;
        }
        let t = ty.and_then(Json::as_str).unwrap_or("");
        self.typed(s, t, indent, depth, out);
    }

    fn union<I: Iterator<Item = &'a Json>>(
        &self,
        vs: I,
        indent: &str,
        depth: usize,
        out: &mut String,
    ) {
        for (i, v) in vs.enumerate() {
            if i > 0 {
                out.push_str(" | ");
            }
            self.ts_type(v, indent, depth + 1, out);
        }
    }

    /// The type of schema `s` read as JSON type `t`.
    fn typed(&self, s: &'a Json, t: &str, indent: &str, depth: usize, out: &mut String) {
        match t {
            "string" => out.push_str("string"),
            "number" | "integer" => out.push_str("number"),
            "boolean" => out.push_str("boolean"),
            "null" => out.push_str("null"),
            "array" => match s.get("items") {
                Some(items) => {
                    let mut inner = String::new();
                    self.ts_type(items, indent, depth + 1, &mut inner);
                    if inner.contains(" | ") {
                        out.push('(');
                        out.push_str(&inner);
                        out.push(')');
                    } else {
                        out.push_str(&inner);
                    }
                    out.push_str("[]");
                }
                None => out.push_str("any[]"),
            },
            _ if t == "object" || s.get("properties").is_some() => {
                if s.props().is_empty() {
                    out.push_str("object");
                } else {
                    let inner = format!("{indent}  ");
                    out.push_str("{\n");
                    self.props(s, &inner, depth + 1, out);
                    out.push('\n');
                    out.push_str(indent);
                    out.push('}');
                }
            }
            _ => out.push_str("any"),
        }
    }

    /// One `// description` + `name?: type,` block per property, lines joined by `\n`.
    fn props(&self, s: &'a Json, indent: &str, depth: usize, out: &mut String) {
        let required: Vec<&str> = s
            .get("required")
            .and_then(Json::as_array)
            .map(|a| a.iter().filter_map(Json::as_str).collect())
            .unwrap_or_default();
        let mut first = true;
        for (key, val) in s.props() {
            if !first {
                out.push('\n');
            }
            first = false;
            // The text this property adds besides its type (ts_type charges the type), from
            // above: its line and the closing line of an object type at this indent.
            let text = key.len()
                + 2 * indent.len()
                + 16
                + val.get("title").and_then(Json::as_str).map_or(0, str::len)
                + val
                    .get("description")
                    .and_then(Json::as_str)
                    .map_or(0, str::len);
            if self.charge(text) {
                out.push_str(indent);
                out.push_str("// ...");
                break;
            }
            // A property title renders as its own `// Title` line before the description
            // (fitted on the cassettes: an extra empty `//` line after it, as in
            // openai/harmony's `json_schema_to_typescript`, over-counts 1-2 tokens a property).
            if let Some(t) = val.get("title").and_then(Json::as_str) {
                if !t.is_empty() {
                    out.push_str(indent);
                    out.push_str("// ");
                    out.push_str(t);
                    out.push('\n');
                }
            }
            if let Some(d) = val.get("description").and_then(Json::as_str) {
                if comment_lines(d, indent, out) {
                    out.push('\n');
                }
            }
            out.push_str(indent);
            out.push_str(key);
            if !required.contains(&key.as_str()) {
                out.push('?');
            }
            out.push_str(": ");
            self.ts_type(val, indent, depth, out);
            out.push(',');
            // A default trails the property as ` // default: VALUE` (compact JSON; a string
            // default of an enum is written bare).
            if let Some(dv) = val.get("default") {
                let before = out.len();
                out.push_str(" // default: ");
                match dv {
                    Json::String(sv) if val.get("enum").is_some() => out.push_str(sv),
                    _ => dv.write_compact(out),
                }
                self.charge(out.len() - before);
            }
        }
    }
}

/// `// line` for every non-blank line of `text`, each line trimmed; `false` when nothing was
/// written (a description of only white space renders nothing).
///
/// Fitted on the cassettes: docstring-style descriptions (indented `Args:` blocks, blank lines
/// between sections) are billed as if each line were stripped and blank lines dropped; keeping
/// them verbatim over-counted 13-41 tokens on the requests that carry such tools.
fn comment_lines(text: &str, indent: &str, out: &mut String) -> bool {
    let mut wrote = false;
    for line in text.split('\n').map(str::trim).filter(|l| !l.is_empty()) {
        if wrote {
            out.push('\n');
        }
        out.push_str(indent);
        out.push_str("// ");
        out.push_str(line);
        wrote = true;
    }
    wrote
}

/// A tool definition's function and its parameters' schema, in every shape a request sends one
/// in: chat.completions' `{"function": {name, description, parameters}}`, the Responses API's
/// flat form, Anthropic's `input_schema`, Bedrock's `toolSpec.inputSchema.json`, Gemini's
/// `parametersJsonSchema`. An OpenAI model served behind another API (gpt-oss on Bedrock)
/// renders its tools as its own: read as chat's alone, such a schema was dropped (a tool of 20
/// properties priced 23 tokens where its chat form costs 388).
fn function_of(tool: &Json) -> (&Json, &Json) {
    if let Some(spec @ Json::Object(_)) = tool.get("toolSpec") {
        let params = spec
            .get("inputSchema")
            .and_then(|s| s.get("json"))
            .unwrap_or(&Json::Null);
        return (spec, params);
    }
    let f = match tool.get("function") {
        Some(f @ Json::Object(_)) => f,
        _ => tool,
    };
    let params = [
        "parameters",
        "input_schema",
        "parametersJsonSchema",
        "parameters_json_schema",
    ]
    .iter()
    .find_map(|k| f.get(k).filter(|p| !matches!(p, Json::Null)))
    .unwrap_or(&Json::Null);
    (f, params)
}

/// One tool definition (`function_of`'s shapes), as OpenAI renders it.
fn render_tool(tool: &Json, out: &mut String) {
    let (f, params) = function_of(tool);
    let name = f.get("name").and_then(Json::as_str).unwrap_or("");
    if let Some(d) = f.get("description").and_then(Json::as_str) {
        if comment_lines(d, "", out) {
            out.push('\n');
        }
    }
    let ctx = Ctx::new(params);
    if params.props().is_empty() {
        out.push_str("type ");
        out.push_str(name);
        out.push_str(" = () => any;\n");
    } else {
        out.push_str("type ");
        out.push_str(name);
        out.push_str(" = (_: {\n");
        ctx.props(params, "", 0, out);
        out.push_str("\n}) => any;\n");
    }
}

/// How many of these tool definitions have parameters with properties of which none renders a
/// comment (no `description`, `title` nor `default`): such a tool is billed 1 token less than its
/// rendered text on the gpt-4o / gpt-4.1 generation (`exact::Counter::tool_block`).
///
/// Fitted on ../shared/data/{crewai,pydantic-ai}: the 14 recorded non-parallel requests with
/// such tools (1 to 6 of them, gpt-4o, gpt-4o-mini, gpt-4.1-mini) were exactly 1 token over per
/// tool, whether strict or not; every request whose tools all carry comments (crewai's titled
/// parameters, 100+ requests) is exact without it. Counting a tool whose only comment is a
/// `// default:` as uncommented leaves 8 requests off. gpt-5 models are exact without it (7
/// requests break with it). Which text the API renders instead is not known.
pub fn tools_without_property_comments(tools: &[Json]) -> usize {
    tools
        .iter()
        .filter(|tool| {
            let props = function_of(tool).1.props();
            !props.is_empty()
                && props.iter().all(|(_, v)| {
                    let text = |k| {
                        v.get(k)
                            .and_then(Json::as_str)
                            .is_some_and(|t| !t.is_empty())
                    };
                    !text("description") && !text("title") && v.get("default").is_none()
                })
        })
        .count()
}

/// The text OpenAI adds to the prompt for a list of tool definitions.
pub fn render_tools(tools: &[Json]) -> String {
    let mut out = String::from("# Tools\n\n## functions\n\nnamespace functions {\n\n");
    for t in tools {
        render_tool(t, &mut out);
        out.push('\n');
    }
    out.push_str("} // namespace functions");
    out
}

/// Whether a keyword of a `response_format` schema is shown to the model (`root`: it belongs to
/// the top-level schema).
///
/// Derived on the 79 recorded chat.completions requests with a json_schema format (19 schemas,
/// ../shared/data/{crewai,pydantic-ai}; `tools/derive_response_format.py` prints the table and
/// what each rule buys). All 79 are exact with these rules; dropping any one of them breaks
/// requests of at least one schema:
/// - `required` and `additionalProperties: false` are not shown: a strict schema implies them
///   (as a prompt leak of gpt-4.1 showed, https://ghost.ai.moda/openai-structured-outputs-to-system-prompt),
///   and the non-strict ones recorded (2 schemas, pydantic-ai) are billed the same way. Keeping
///   `required` leaves all 79 requests 5-51 tokens over, `additionalProperties: false` 77 of
///   them 5-15 over;
/// - `default`, `minimum`, `maximum`, `maxItems` are not shown (enforced by the sampler, not
///   read by the model): 3 schemas with defaults (41 requests, 6-14 over with them), 1 with
///   minimum / maximum (26), 1 with maxItems (4); `minItems` is dropped alongside `maxItems` by
///   symmetry (no recording);
/// - a property's `title` is shown (without them 76 requests of 17 schemas are 4-61 under); the
///   root schema's title is not, it is billed apart (`response_format_title`).
fn shown_in_prompt(keyword: &str, value: &Json, root: bool) -> bool {
    match keyword {
        "title" => !root,
        "required" | "default" | "minimum" | "maximum" | "minItems" | "maxItems" => false,
        "additionalProperties" => !matches!(value, Json::Bool(false)),
        _ => true,
    }
}

/// The text OpenAI adds for a `response_format`; `None` when it adds none (`text`,
/// `json_object`, or no schema). Its root `title` is billed apart: `response_format_title`.
pub fn render_response_format(rf: &Json) -> Option<String> {
    let js = json_schema_format(rf)?;
    let name = js.get("name").and_then(Json::as_str).unwrap_or("");
    let description = js.get("description").and_then(Json::as_str);
    Some(match js.get("schema") {
        Some(s) => render_structured_output(name, description, s),
        None => render_structured_output(name, description, &Json::Object(Vec::new())),
    })
}

/// The text OpenAI adds for a json_schema format named `name`: `# Response Formats`, the name
/// as a heading, the description as `// ` lines, the schema as compact JSON with the keywords
/// the prompt does not show left out (`shown_in_prompt`). Its root `title` is billed apart
/// (`response_format_title`).
pub fn render_structured_output(name: &str, description: Option<&str>, schema: &Json) -> String {
    let mut out = format!("# Response Formats\n\n## {name}\n\n");
    // The format's own description leads the schema as `// ` lines (fitted: the three recorded
    // requests with one were 5-10 tokens under without it).
    if let Some(d) = description {
        if comment_lines(d, "", &mut out) {
            out.push('\n');
        }
    }
    let mut json = String::new();
    schema.write_schema_compact(&mut json, &shown_in_prompt);
    // Written with non-ASCII characters escaped (`\u2014`), as Python's `json.dumps` does by
    // default: the two recorded schemas with em dashes in their descriptions (15 requests) are
    // exact so, 6 and 12 tokens under with the characters as sent.
    push_ascii_escaped(&mut out, &json);
    out
}

/// The root `title` of a json_schema `response_format`, which the prompt does not show inside
/// the schema but bills apart (`title_tokens`).
pub fn response_format_title(rf: &Json) -> Option<&str> {
    schema_title(json_schema_format(rf)?.get("schema")?)
}

/// The `{"name", "description", "schema"}` object of a json_schema format, in either API's
/// shape: chat's `{"type": "json_schema", "json_schema": {...}}`, or the Responses API's flat
/// `text.format` (`{"type": "json_schema", "name", "schema"}`), alone or in its `text`
/// parameter (`{"format": {...}}`). Both bill the same rendering (`count_request` on the
/// recorded Responses requests with one). `None` for other formats.
fn json_schema_format(rf: &Json) -> Option<&Json> {
    let rf = match (rf.get("type"), rf.get("format")) {
        (None, Some(f)) => f,
        _ => rf,
    };
    if rf.get("type").and_then(Json::as_str) != Some("json_schema") {
        return None;
    }
    match rf.get("json_schema") {
        Some(js) => Some(js),
        None => rf.get("schema").is_some().then_some(rf),
    }
}

/// A schema's non-empty root `title`.
fn schema_title(schema: &Json) -> Option<&str> {
    schema.get("title")?.as_str().filter(|t| !t.is_empty())
}

/// Tokens a schema's root title bills, given its own token count: twice it, plus one
/// (`exact::Counter::structured_output` says how it was derived).
pub fn title_tokens(tokens: usize) -> usize {
    2 * tokens + 1
}

/// `json` (JSON text) with every non-ASCII character written as `\uXXXX` (UTF-16 units, lower-case
/// hex: Python's `ensure_ascii`). In JSON text such characters only occur inside strings, where
/// the escape means the same character.
fn push_ascii_escaped(out: &mut String, json: &str) {
    use std::fmt::Write;
    for c in json.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{u:04x}");
            }
        }
    }
}

/// A JSON text parsed with object keys in order; `None` when it is not valid JSON.
pub fn parse_json(text: &str) -> Option<Json> {
    let mut p = Parser {
        b: text.as_bytes(),
        i: 0,
    };
    let v = p.value(0)?;
    p.ws();
    (p.i == p.b.len()).then_some(v)
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\n' | b'\t' | b'\r') {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.b.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Option<Json> {
        // Tool schemas are shallow; a bound keeps a hostile one from exhausting the stack.
        if depth > 256 {
            return None;
        }
        self.ws();
        match *self.b.get(self.i)? {
            b'{' => {
                self.i += 1;
                let mut kv = Vec::new();
                if self.eat(b'}') {
                    return Some(Json::Object(kv));
                }
                loop {
                    self.ws();
                    let k = self.string()?;
                    if !self.eat(b':') {
                        return None;
                    }
                    kv.push((k, self.value(depth + 1)?));
                    if self.eat(b'}') {
                        return Some(Json::Object(kv));
                    }
                    if !self.eat(b',') {
                        return None;
                    }
                }
            }
            b'[' => {
                self.i += 1;
                let mut a = Vec::new();
                if self.eat(b']') {
                    return Some(Json::Array(a));
                }
                loop {
                    a.push(self.value(depth + 1)?);
                    if self.eat(b']') {
                        return Some(Json::Array(a));
                    }
                    if !self.eat(b',') {
                        return None;
                    }
                }
            }
            b'"' => self.string().map(Json::String),
            b't' => self.word("true", Json::Bool(true)),
            b'f' => self.word("false", Json::Bool(false)),
            b'n' => self.word("null", Json::Null),
            _ => {
                let start = self.i;
                while self.i < self.b.len()
                    && matches!(
                        self.b[self.i],
                        b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'
                    )
                {
                    self.i += 1;
                }
                let n = std::str::from_utf8(&self.b[start..self.i]).ok()?;
                (!n.is_empty()).then(|| Json::Number(n.to_string()))
            }
        }
    }

    fn word(&mut self, w: &str, v: Json) -> Option<Json> {
        if self.b[self.i..].starts_with(w.as_bytes()) {
            self.i += w.len();
            Some(v)
        } else {
            None
        }
    }

    fn string(&mut self) -> Option<String> {
        if self.b.get(self.i) != Some(&b'"') {
            return None;
        }
        self.i += 1;
        let mut out = String::new();
        loop {
            let start = self.i;
            while self.i < self.b.len() && !matches!(self.b[self.i], b'"' | b'\\') {
                self.i += 1;
            }
            out.push_str(std::str::from_utf8(&self.b[start..self.i]).ok()?);
            match *self.b.get(self.i)? {
                b'"' => {
                    self.i += 1;
                    return Some(out);
                }
                _ => {
                    let e = *self.b.get(self.i + 1)?;
                    self.i += 2;
                    match e {
                        b'n' => out.push('\n'),
                        b't' => out.push('\t'),
                        b'r' => out.push('\r'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'u' => {
                            let mut cp = self.hex4()?;
                            if (0xD800..0xDC00).contains(&cp)
                                && self.b[self.i..].starts_with(b"\\u")
                            {
                                self.i += 2;
                                let lo = self.hex4()?;
                                cp = 0x10000
                                    + ((cp - 0xD800) << 10)
                                    + (lo.wrapping_sub(0xDC00) & 0x3FF);
                            }
                            out.push(char::from_u32(cp).unwrap_or('\u{FFFD}'));
                        }
                        c => out.push(c as char),
                    }
                }
            }
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let h = std::str::from_utf8(self.b.get(self.i..self.i + 4)?).ok()?;
        self.i += 4;
        u32::from_str_radix(h, 16).ok()
    }
}

/// Tokens of the tool block OpenAI renders for these tool definitions (each one's JSON text),
/// in `encoding`; `None` when one is not valid JSON. The block is static over a conversation, so
/// counts are cached by content: a history re-estimated every turn tokenizes it once.
pub fn openai_tool_block_tokens<'a>(
    tools: impl Iterator<Item = &'a str> + Clone,
    encoding: crate::encoding::Encoding,
) -> Option<u32> {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    encoding.name().hash(&mut h);
    for t in tools.clone() {
        t.hash(&mut h);
    }
    cached_count(h.finish(), || {
        let parsed = tools.map(parse_json).collect::<Option<Vec<_>>>()?;
        Some(encoding.count(&render_tools(&parsed)) as u32)
    })
}

/// Tokens of the structured-output text OpenAI renders for a json_schema response format
/// (`render_structured_output`) in `encoding`, plus its root title's (billed apart,
/// `title_tokens`); `None` when `schema` is not valid JSON.
/// Cached by content, as the tool block is.
pub fn openai_response_format_tokens(
    name: &str,
    description: Option<&str>,
    schema: &str,
    encoding: crate::encoding::Encoding,
) -> Option<u32> {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (
        encoding.name(),
        "response_format",
        name,
        description,
        schema,
    )
        .hash(&mut h);
    cached_count(h.finish(), || {
        let schema = parse_json(schema)?;
        let text = render_structured_output(name, description, &schema);
        let title = schema_title(&schema).map_or(0, |t| title_tokens(encoding.count(t)));
        Some((encoding.count(&text) + title) as u32)
    })
}

/// Tokens of a system prompt in `encoding`, cached by content as the tool block is: a system
/// prompt is as static over a conversation as the tools, and English prose is where the sampled
/// estimate (fitted mostly on code and tool output) misses most (a 6,155-character markdown
/// policy: 1,674 sampled against 1,260 counted for gpt-4o).
pub fn openai_system_tokens(text: &str, encoding: crate::encoding::Encoding) -> u32 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (encoding.name(), "system", text).hash(&mut h);
    cached_count(h.finish(), || Some(encoding.count(text) as u32)).unwrap_or(0)
}

/// `count()`, remembered by `key` (a hash of what it counts) for the whole process. Bounded: a
/// server pricing many distinct tool sets starts over rather than grow.
fn cached_count(key: u64, count: impl FnOnce() -> Option<u32>) -> Option<u32> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static CACHE: OnceLock<Mutex<HashMap<u64, u32>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(&n) = cache.lock().ok()?.get(&key) {
        return Some(n);
    }
    let n = count()?;
    let mut c = cache.lock().ok()?;
    if c.len() >= 4096 {
        c.clear();
    }
    c.insert(key, n);
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Json {
        Json::String(v.into())
    }
    fn obj(kv: Vec<(&str, Json)>) -> Json {
        Json::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    }

    fn weather() -> Json {
        obj(vec![
            ("type", s("function")),
            (
                "function",
                obj(vec![
                    ("name", s("get_weather")),
                    ("description", s("Get the weather\nfor a city")),
                    (
                        "parameters",
                        obj(vec![
                            ("type", s("object")),
                            (
                                "properties",
                                obj(vec![
                                    (
                                        "city",
                                        obj(vec![
                                            ("type", s("string")),
                                            ("description", s("City name")),
                                        ]),
                                    ),
                                    (
                                        "unit",
                                        obj(vec![
                                            ("type", s("string")),
                                            ("enum", Json::Array(vec![s("c"), s("f")])),
                                        ]),
                                    ),
                                    (
                                        "days",
                                        obj(vec![
                                            ("type", s("array")),
                                            (
                                                "items",
                                                obj(vec![(
                                                    "type",
                                                    Json::Array(vec![s("integer"), s("null")]),
                                                )]),
                                            ),
                                        ]),
                                    ),
                                    ("where", obj(vec![("$ref", s("#/$defs/Place"))])),
                                ]),
                            ),
                            ("required", Json::Array(vec![s("city")])),
                            (
                                "$defs",
                                obj(vec![(
                                    "Place",
                                    obj(vec![
                                        ("type", s("object")),
                                        (
                                            "properties",
                                            obj(vec![("lat", obj(vec![("type", s("number"))]))]),
                                        ),
                                        ("required", Json::Array(vec![s("lat")])),
                                    ]),
                                )]),
                            ),
                        ]),
                    ),
                ]),
            ),
        ])
    }

    #[test]
    fn renders_the_typescript_namespace() {
        let text = render_tools(&[weather()]);
        assert_eq!(
            text,
            "# Tools\n\n## functions\n\nnamespace functions {\n\n\
             // Get the weather\n// for a city\n\
             type get_weather = (_: {\n\
             // City name\ncity: string,\n\
             unit?: \"c\" | \"f\",\n\
             days?: (number | null)[],\n\
             where?: {\n  lat: number,\n},\n\
             }) => any;\n\n} // namespace functions"
        );
    }

    #[test]
    fn tools_without_parameters_and_recursive_refs_terminate() {
        let t = obj(vec![("name", s("ping")), ("parameters", obj(vec![]))]);
        assert!(render_tools(&[t]).contains("type ping = () => any;\n"));
        let looped = obj(vec![(
            "parameters",
            obj(vec![
                (
                    "properties",
                    obj(vec![("x", obj(vec![("$ref", s("#/$defs/A"))]))]),
                ),
                (
                    "$defs",
                    obj(vec![("A", obj(vec![("$ref", s("#/$defs/A"))]))]),
                ),
            ]),
        )]);
        assert!(render_tools(&[looped]).contains("x?: any,"));
    }

    #[test]
    fn titles_and_defaults_are_comments() {
        let t = obj(vec![
            ("name", s("f")),
            (
                "parameters",
                obj(vec![(
                    "properties",
                    obj(vec![(
                        "n",
                        obj(vec![
                            ("title", s("N")),
                            ("type", s("integer")),
                            ("default", Json::Number("3".into())),
                        ]),
                    )]),
                )]),
            ),
        ]);
        assert!(render_tools(&[t]).contains("// N\nn?: number, // default: 3\n"));
    }

    #[test]
    fn docstring_descriptions_are_stripped_lines_without_blanks() {
        let t = obj(vec![
            ("name", s("f")),
            (
                "description",
                s("Convert.\n\n    Args:\n        x: a value\n    "),
            ),
            ("parameters", obj(vec![])),
        ]);
        assert!(render_tools(&[t])
            .contains("\n// Convert.\n// Args:\n// x: a value\ntype f = () => any;\n"));
        let blank = obj(vec![("name", s("g")), ("description", s(" \n "))]);
        assert!(render_tools(&[blank]).contains("namespace functions {\n\ntype g = () => any;"));
    }

    /// A `response_format` of type json_schema named `Out` with these `json_schema` fields.
    fn schema_format(fields: Vec<(&str, Json)>) -> Json {
        let mut js = vec![("name", s("Out"))];
        js.extend(fields);
        obj(vec![("type", s("json_schema")), ("json_schema", obj(js))])
    }

    #[test]
    fn response_format_shows_what_the_model_reads() {
        let rf = schema_format(vec![(
            "schema",
            obj(vec![("title", s("Out")), ("type", s("object"))]),
        )]);
        // The root title is not in the text: it is billed apart.
        assert_eq!(
            render_response_format(&rf).unwrap(),
            "# Response Formats\n\n## Out\n\n{\"type\":\"object\"}"
        );
        assert_eq!(response_format_title(&rf), Some("Out"));
        assert_eq!(
            render_response_format(&obj(vec![("type", s("json_object"))])),
            None
        );
        assert_eq!(
            response_format_title(&obj(vec![("type", s("json_object"))])),
            None
        );
        // Hidden: `required`, `additionalProperties: false`, defaults and bounds. Shown: a
        // property's title, an `additionalProperties` schema, a property named `required` or
        // `title`, and data values (a default's own `title`), non-ASCII escaped.
        let schema = obj(vec![
            ("title", s("Out")),
            (
                "properties",
                obj(vec![
                    (
                        "title",
                        obj(vec![("type", s("string")), ("title", s("T\u{2014}"))]),
                    ),
                    (
                        "required",
                        obj(vec![
                            ("minimum", Json::Number("0".into())),
                            ("maxItems", Json::Number("1".into())),
                            ("enum", Json::Array(vec![obj(vec![("title", s("kept"))])])),
                            ("default", obj(vec![("title", s("gone"))])),
                        ]),
                    ),
                    (
                        "map",
                        obj(vec![(
                            "additionalProperties",
                            obj(vec![("type", s("integer"))]),
                        )]),
                    ),
                ]),
            ),
            ("required", Json::Array(vec![s("title")])),
            ("additionalProperties", Json::Bool(false)),
        ]);
        let rf = schema_format(vec![("schema", schema)]);
        assert_eq!(
            render_response_format(&rf).unwrap(),
            "# Response Formats\n\n## Out\n\n\
             {\"properties\":{\"title\":{\"type\":\"string\",\"title\":\"T\\u2014\"},\
             \"required\":{\"enum\":[{\"title\":\"kept\"}]},\
             \"map\":{\"additionalProperties\":{\"type\":\"integer\"}}}}"
        );
        let described = schema_format(vec![
            ("description", s("Schema for Out\n")),
            ("schema", obj(vec![])),
        ]);
        assert_eq!(
            render_response_format(&described).unwrap(),
            "# Response Formats\n\n## Out\n\n// Schema for Out\n{}"
        );
        assert_eq!(response_format_title(&described), None);
    }

    #[test]
    fn ascii_escaping_writes_utf16_units() {
        let mut out = String::new();
        push_ascii_escaped(&mut out, "{\"a\":\"\u{e9}\u{1f600}x\"}");
        assert_eq!(out, "{\"a\":\"\\u00e9\\ud83d\\ude00x\"}");
    }

    fn self_referencing_tool(fanout: usize, description: &str) -> Json {
        let node_props: Vec<(&str, Json)> = (0..fanout)
            .map(|i| {
                let name: &'static str = Box::leak(format!("c{i}").into_boxed_str());
                (
                    name,
                    obj(vec![
                        ("$ref", s("#/$defs/Node")),
                        ("description", s(description)),
                    ]),
                )
            })
            .collect();
        obj(vec![(
            "function",
            obj(vec![
                ("name", s("tree")),
                (
                    "parameters",
                    obj(vec![
                        ("type", s("object")),
                        (
                            "properties",
                            obj(vec![("root", obj(vec![("$ref", s("#/$defs/Node"))]))]),
                        ),
                        (
                            "$defs",
                            obj(vec![(
                                "Node",
                                obj(vec![("type", s("object")), ("properties", obj(node_props))]),
                            )]),
                        ),
                    ]),
                ),
            ]),
        )])
    }

    #[test]
    fn a_definition_referring_to_itself_twice_renders_within_the_budget() {
        // Node{a: Node, b: Node}: 2^32 copies without the budget (the process was killed).
        let started = std::time::Instant::now();
        let text = render_tools(&[self_referencing_tool(2, "")]);
        assert!(text.len() <= RENDER_BUDGET_BYTES + 4096, "{}", text.len());
        assert!(text.contains("c0?: {") && text.contains("any"));
        assert!(text.ends_with("} // namespace functions"));
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn wide_recursive_graphs_with_long_comments_stay_bounded() {
        // 50 self-references a level, each carrying a 10 KB description: the budget also
        // counts the comments, so this stays near the cut rather than 50^32 x 10 KB.
        let long = "x".repeat(10_000);
        let text = render_tools(&[self_referencing_tool(50, &long)]);
        assert!(
            text.len() <= RENDER_BUDGET_BYTES + 2 * 10_100,
            "{}",
            text.len()
        );
        assert!(text.contains("// ..."));
    }

    #[test]
    fn the_budget_leaves_ordinary_tools_unchanged() {
        let text = render_tools(&[weather()]);
        assert!(!text.contains("// ..."));
        assert!(text.contains("where?: {"));
    }
}
