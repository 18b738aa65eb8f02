//! A structured-output schema as each API takes it, read into one shape for the overhead
//! function: the schema the model is constrained to, its name and description.
//!
//! Accepted (the value a caller passes as `response_format=`):
//! - OpenAI chat `response_format`: `{"type": "json_schema", "json_schema": {"name",
//!   "description", "schema", "strict"}}`;
//! - OpenAI Responses `text.format` (`{"type": "json_schema", "name", "schema", ...}`) or the
//!   whole `text` parameter (`{"format": {...}}`); Anthropic `output_format`
//!   (`{"type": "json_schema", "schema"}`);
//! - Gemini `generationConfig` (its `responseJsonSchema` / `responseSchema`, or snake case), or
//!   the schema itself (an object with a JSON-schema keyword at its top: `type`, `properties`,
//!   `anyOf`, `$defs`, ...; any other object sets no schema);
//! - `{"type": "json_object"}` and `{"type": "text"}` add no schema: `None`.

use std::borrow::Cow;

use super::fields::{invalid, opt_str};
use super::input::{Input, Key, ReadResult, Src};
use crate::request_extras::ResponseFormat;

/// The structured-output schema of `v` (see the module docs); `None` when it sets none. Errors
/// name `response_format...`.
pub fn read_response_format<'a, V: Input<'a>>(
    v: &V,
) -> ReadResult<Option<ResponseFormat<'a>>, V::Error> {
    read_at(v, "response_format", 0)
}

fn read_at<'a, V: Input<'a>>(
    v: &V,
    path: &str,
    depth: u8,
) -> ReadResult<Option<ResponseFormat<'a>>, V::Error> {
    if !matches!(v.shape(), super::Shape::Map | super::Shape::Object) {
        return Err(invalid(
            path,
            format!(
                "response_format must be a dict (a response format or a JSON schema), got {}",
                v.type_name()
            ),
        ));
    }
    // The Responses API's `text` parameter wraps its format.
    if depth == 0 && v.get(Key::kind).src()?.is_none() {
        if let Some(f) = v.get(Key::format).src()? {
            return read_at(&f, &format!("{path}.format"), depth + 1);
        }
    }
    match opt_str(v, Key::kind, format_args!("{path}.type"))?.as_deref() {
        Some("json_object" | "text") => return Ok(None),
        Some("json_schema") => {
            return match v.get(Key::json_schema).src()? {
                Some(js) => named_schema(&js, &format!("{path}.json_schema")),
                None => named_schema(v, path),
            };
        }
        _ => {}
    }
    // Gemini's generation config names the schema it constrains the reply to.
    for key in [
        Key::responseJsonSchema,
        Key::response_json_schema,
        Key::responseSchema,
        Key::response_schema,
    ] {
        if let Some(s) = v.get(key).src()? {
            if s.shape() == super::Shape::Null {
                return Ok(None);
            }
            return Ok(Some(ResponseFormat {
                name: Cow::Borrowed(""),
                description: None,
                schema: Cow::Owned(s.json_text().src()?),
            }));
        }
    }
    // A bare JSON schema; any other object (a generation config without a schema) sets none.
    let entries = v.entries().src()?.unwrap_or_default();
    if !entries
        .iter()
        .any(|(k, _)| SCHEMA_KEYWORDS.contains(&k.as_str()))
    {
        return Ok(None);
    }
    Ok(Some(ResponseFormat {
        name: Cow::Borrowed(""),
        description: None,
        schema: Cow::Owned(v.json_text().src()?),
    }))
}

/// Top-level keywords that make an object a JSON schema (JSON Schema's and the OpenAPI subset
/// Gemini's `responseSchema` uses).
const SCHEMA_KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "items",
    "anyOf",
    "oneOf",
    "allOf",
    "enum",
    "const",
    "$ref",
    "$defs",
    "definitions",
];

/// `{"name", "description", "schema"}` (OpenAI's `json_schema` object, the Responses format).
fn named_schema<'a, V: Input<'a>>(
    v: &V,
    path: &str,
) -> ReadResult<Option<ResponseFormat<'a>>, V::Error> {
    let Some(schema) = v.get(Key::schema).src()? else {
        return Ok(None);
    };
    Ok(Some(ResponseFormat {
        name: opt_str(v, Key::name, format_args!("{path}.name"))?.unwrap_or(Cow::Borrowed("")),
        description: opt_str(v, Key::description, format_args!("{path}.description"))?,
        schema: Cow::Owned(schema.json_text().src()?),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(v: serde_json::Value) -> Option<(String, Option<String>, String)> {
        read_response_format(&&v).unwrap().map(|r| {
            (
                r.name.into_owned(),
                r.description.map(Cow::into_owned),
                r.schema.into_owned(),
            )
        })
    }

    #[test]
    fn every_api_shape_yields_the_same_schema() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        let compact = serde_json::to_string(&schema).unwrap();
        let named = Some(("Out".to_string(), Some("d".to_string()), compact.clone()));
        let chat = json!({"type": "json_schema", "json_schema": {"name": "Out", "description": "d", "schema": schema}});
        let flat =
            json!({"type": "json_schema", "name": "Out", "description": "d", "schema": schema});
        assert_eq!(read(chat), named);
        assert_eq!(read(flat.clone()), named);
        assert_eq!(read(json!({"format": flat})), named);
        let bare = Some((String::new(), None, compact));
        assert_eq!(read(json!({"type": "json_schema", "schema": schema})), bare);
        assert_eq!(
            read(json!({"responseMimeType": "application/json", "responseJsonSchema": schema})),
            bare
        );
        assert_eq!(read(json!({"response_schema": schema})), bare);
        assert_eq!(read(schema), bare);
    }

    #[test]
    fn formats_without_a_schema_read_as_none() {
        for v in [
            json!({"type": "json_object"}),
            json!({"type": "text"}),
            json!({"format": {"type": "text"}}),
            json!({"temperature": 0.3}),
            json!({"responseSchema": null}),
            json!({"type": "json_schema", "json_schema": {"name": "x"}}),
        ] {
            assert_eq!(read(v.clone()), None, "{v}");
        }
    }

    #[test]
    fn a_value_that_is_not_an_object_is_an_error_naming_the_field() {
        let v = json!("json");
        let e = read_response_format(&&v).unwrap_err();
        assert!(
            matches!(e, crate::wire::ReadError::Invalid { ref field, .. } if field == "response_format")
        );
        let v = json!({"type": "json_schema", "json_schema": {"name": 3, "schema": {}}});
        let e = read_response_format(&&v).unwrap_err();
        assert!(
            matches!(e, crate::wire::ReadError::Invalid { ref field, .. } if field == "response_format.json_schema.name")
        );
    }
}
