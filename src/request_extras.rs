//! What a request carries besides its messages: the system prompt, tool definitions and a
//! structured-output schema, as the wire readers read them and the estimator prices them. A
//! floor of the message model, below both (`wire/` fills it, `estimate` reads it).

use std::borrow::Cow;

use crate::message::Detail;

/// A tool definition as sent: its name and its whole definition serialized as compact JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolDef<'a> {
    pub name: Cow<'a, str>,
    pub json: Cow<'a, str>,
}

/// A structured-output schema the reply is constrained to (OpenAI `response_format`, the
/// Responses `text.format`, Anthropic `output_format`, Gemini `responseJsonSchema`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseFormat<'a> {
    /// The format's name (OpenAI's `json_schema.name`), empty when it has none.
    pub name: Cow<'a, str>,
    pub description: Option<Cow<'a, str>>,
    /// The JSON schema, as compact JSON.
    pub schema: Cow<'a, str>,
}

impl ResponseFormat<'_> {
    /// The same format owning its text (kept past the objects it was read from).
    pub fn into_owned(self) -> ResponseFormat<'static> {
        ResponseFormat {
            name: Cow::Owned(self.name.into_owned()),
            description: self.description.map(|d| Cow::Owned(d.into_owned())),
            schema: Cow::Owned(self.schema.into_owned()),
        }
    }
}

/// What a request carries besides its messages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestExtras<'a> {
    /// A top-level system prompt (Anthropic `system`, or one to be prepended).
    pub system: Option<Cow<'a, str>>,
    pub tools: Vec<ToolDef<'a>>,
    pub response_format: Option<ResponseFormat<'a>>,
    /// The media resolution of images that set none themselves (a Gemini generation config's
    /// `mediaResolution`); `Auto` for the model's default.
    pub media_resolution: Detail,
}

impl RequestExtras<'_> {
    /// The same extras owning their text (kept past the objects they were read from).
    pub fn into_owned(self) -> RequestExtras<'static> {
        RequestExtras {
            system: self.system.map(|s| Cow::Owned(s.into_owned())),
            tools: self
                .tools
                .into_iter()
                .map(|t| ToolDef {
                    name: Cow::Owned(t.name.into_owned()),
                    json: Cow::Owned(t.json.into_owned()),
                })
                .collect(),
            response_format: self.response_format.map(ResponseFormat::into_owned),
            media_resolution: self.media_resolution,
        }
    }
}
