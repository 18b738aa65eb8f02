//! The accessor trait the wire readers are written against: "a JSON-like value".
//!
//! Implemented once for `serde_json::Value` (below; what `cargo test` feeds the readers) and
//! once for Python objects in the bindings (dicts, lists, SDK objects read by attribute). The
//! readers are generic over it and monomorphized, so each implementation runs at full speed.
//! Strings are handed out as `Cow<'a, str>` borrowed for the lifetime of whatever keeps the
//! underlying values alive, so views never copy a large tool output.

use std::borrow::Cow;
use std::convert::Infallible;

/// What kind of value an [`Input`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Null,
    Bool,
    Number,
    Str,
    /// A list (or tuple): a JSON array.
    List,
    /// A mapping: a JSON object.
    Map,
    /// Raw bytes (Python `bytes` / `bytearray`); sent base64-encoded.
    Bytes,
    /// Anything else with readable fields (an SDK object read by attribute).
    Object,
}

/// A field name the readers look up. The index lets an implementation keep one prepared
/// (interned) key per name instead of building it on every lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key(u8);

macro_rules! keys {
    ($($id:ident = $name:literal),* $(,)?) => {
        #[allow(non_upper_case_globals)]
        impl Key {
            keys!(@consts 0u8, $($id,)*);
        }
        /// Every field name a reader looks up, indexed by [`Key::index`].
        pub const KEY_NAMES: &[&str] = &[$($name),*];
    };
    (@consts $n:expr, $id:ident, $($rest:ident,)*) => {
        pub const $id: Key = Key($n);
        keys!(@consts $n + 1u8, $($rest,)*);
    };
    (@consts $n:expr,) => {};
}

keys! {
    role = "role",
    content = "content",
    tool_calls = "tool_calls",
    tool_call_id = "tool_call_id",
    name = "name",
    parts = "parts",
    reasoning_content = "reasoning_content",
    reasoning = "reasoning",
    reasoning_details = "reasoning_details",
    kind = "type",
    text = "text",
    summary = "summary",
    id = "id",
    function = "function",
    arguments = "arguments",
    call_id = "call_id",
    output = "output",
    input = "input",
    encrypted_content = "encrypted_content",
    image_url = "image_url",
    url = "url",
    detail = "detail",
    source = "source",
    data = "data",
    tool_use_id = "tool_use_id",
    thinking = "thinking",
    signature = "signature",
    refusal = "refusal",
    image = "image",
    bytes = "bytes",
    toolUse = "toolUse",
    toolUseId = "toolUseId",
    toolResult = "toolResult",
    json = "json",
    document = "document",
    video = "video",
    inlineData = "inlineData",
    inline_data = "inline_data",
    mimeType = "mimeType",
    mime_type = "mime_type",
    functionCall = "functionCall",
    function_call = "function_call",
    functionResponse = "functionResponse",
    function_response = "function_response",
    args = "args",
    response = "response",
    file_id = "file_id",
    image_file = "image_file",
    fileData = "fileData",
    file_data = "file_data",
    fileUri = "fileUri",
    file_uri = "file_uri",
    s3Location = "s3Location",
    uri = "uri",
    thoughtSignature = "thoughtSignature",
    thought_signature = "thought_signature",
    json_schema = "json_schema",
    schema = "schema",
    format = "format",
    description = "description",
    responseJsonSchema = "responseJsonSchema",
    response_json_schema = "response_json_schema",
    responseSchema = "responseSchema",
    response_schema = "response_schema",
    messages = "messages",
    contents = "contents",
    system = "system",
    systemInstruction = "systemInstruction",
    system_instruction = "system_instruction",
    instructions = "instructions",
    tools = "tools",
    model = "model",
    modelId = "modelId",
    response_format = "response_format",
    max_completion_tokens = "max_completion_tokens",
    parallel_tool_calls = "parallel_tool_calls",
    stream_options = "stream_options",
    output_format = "output_format",
    output_config = "output_config",
    generationConfig = "generationConfig",
    generation_config = "generation_config",
    config = "config",
    thinkingConfig = "thinkingConfig",
    thinking_config = "thinking_config",
    thinkingBudget = "thinkingBudget",
    thinking_budget = "thinking_budget",
    thinkingLevel = "thinkingLevel",
    thinking_level = "thinking_level",
    budget_tokens = "budget_tokens",
    effort = "effort",
    reasoning_effort = "reasoning_effort",
    tool_choice = "tool_choice",
    toolConfig = "toolConfig",
    tool_config = "tool_config",
    toolChoice = "toolChoice",
    functionCallingConfig = "functionCallingConfig",
    function_calling_config = "function_calling_config",
    mode = "mode",
    mcp_servers = "mcp_servers",
    cache_control = "cache_control",
    functionDeclarations = "functionDeclarations",
    function_declarations = "function_declarations",
    toolSpec = "toolSpec",
    cachePoint = "cachePoint",
    input_schema = "input_schema",
    custom = "custom",
    googleSearch = "googleSearch",
    google_search = "google_search",
    googleSearchRetrieval = "googleSearchRetrieval",
    google_search_retrieval = "google_search_retrieval",
    codeExecution = "codeExecution",
    code_execution = "code_execution",
    urlContext = "urlContext",
    url_context = "url_context",
    anthropic_version = "anthropic_version",
    additionalModelRequestFields = "additionalModelRequestFields",
    inferenceConfig = "inferenceConfig",
    any = "any",
    auto = "auto",
    tool = "tool",
    enabled = "enabled",
    additional_kwargs = "additional_kwargs",
    openai_role = "__openai_role__",
    gemini_call_signatures = "__gemini_function_call_thought_signatures__",
    base64 = "base64",
    source_type = "source_type",
    value = "value",
    is_error = "is_error",
    status = "status",
    action = "action",
    actions = "actions",
    operation = "operation",
    code = "code",
    result = "result",
    approve = "approve",
    approval_request_id = "approval_request_id",
    reason = "reason",
    stdout = "stdout",
    stderr = "stderr",
    outcome = "outcome",
    exit_code = "exit_code",
    return_code = "return_code",
    error_code = "error_code",
    tool_name = "tool_name",
    images = "images",
    reasoningContent = "reasoningContent",
    reasoningText = "reasoningText",
    redactedContent = "redactedContent",
    guardContent = "guardContent",
    outputs = "outputs",
    queries = "queries",
    executableCode = "executableCode",
    executable_code = "executable_code",
    codeExecutionResult = "codeExecutionResult",
    code_execution_result = "code_execution_result",
    results = "results",
    error = "error",
    logs = "logs",
    citationsContent = "citationsContent",
    searchResult = "searchResult",
    toolAddition = "toolAddition",
    toolRemoval = "toolRemoval",
    title = "title",
    toolCall = "toolCall",
    tool_call = "tool_call",
    toolResponse = "toolResponse",
    tool_response = "tool_response",
    toolType = "toolType",
    tool_type = "tool_type",
    mediaResolution = "mediaResolution",
    media_resolution = "media_resolution",
    level = "level",
}

impl Key {
    /// Position of this key in [`KEY_NAMES`].
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The field name as sent on the wire.
    pub fn as_str(self) -> &'static str {
        KEY_NAMES[self.index()]
    }
}

/// Why a value could not be read: the value is not a valid message (`Invalid`, with the field
/// path inside the message), or the accessor itself failed (`Source`: a Python exception
/// raised by a property or `model_dump`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError<E> {
    Invalid { field: String, reason: String },
    Source(E),
}

impl<E> ReadError<E> {
    /// An invalid-value error at `field`.
    #[cold]
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        ReadError::Invalid {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

/// `Result<T, ReadError<E>>`: what every reader returns.
pub type ReadResult<T, E> = Result<T, ReadError<E>>;

/// Wraps an accessor's own error as [`ReadError::Source`].
pub(crate) trait Src<T, E> {
    fn src(self) -> ReadResult<T, E>;
}

impl<T, E> Src<T, E> for Result<T, E> {
    #[inline]
    fn src(self) -> ReadResult<T, E> {
        self.map_err(ReadError::Source)
    }
}

/// A JSON-like value whose strings live at least as long as `'a`.
pub trait Input<'a>: Sized {
    /// What the accessor itself can fail with (`Infallible` for `serde_json`).
    type Error;

    fn shape(&self) -> Shape;

    /// The value's type for error messages (`int`, `list`, ...).
    fn type_name(&self) -> String;

    /// The value of a field; `None` when absent or null.
    fn get(&self, key: Key) -> Result<Option<Self>, Self::Error>;

    /// Several fields at once (a message's top-level fields: one pass over a dict's items is
    /// cheaper than one lookup per field it lacks).
    fn get_many<const N: usize>(&self, keys: &[Key; N]) -> Result<[Option<Self>; N], Self::Error> {
        let mut out = [const { None }; N];
        for (slot, &k) in out.iter_mut().zip(keys) {
            *slot = self.get(k)?;
        }
        Ok(out)
    }

    /// The text of a string value (`None` for other values). A string with no UTF-8 form
    /// (a lone surrogate) comes back as an owned lossy copy.
    fn str(&self) -> Result<Option<Cow<'a, str>>, Self::Error>;

    /// The bytes of a raw-bytes value (`None` for other values).
    fn bytes(&self) -> Result<Option<&'a [u8]>, Self::Error>;

    /// The items of a list, as a snapshot: later changes to the list do not affect it.
    /// `None` when the value is not a list.
    fn items(&self) -> Result<Option<Vec<Self>>, Self::Error>;

    /// The entries of a mapping with string keys, as a snapshot (`None` when not a mapping).
    fn entries(&self) -> Result<Option<Vec<(String, Self)>>, Self::Error>;

    /// Compact JSON text of the value (`json.dumps(v, separators=(",", ":"),
    /// ensure_ascii=False)`; SDK objects as their JSON-mode dump).
    fn json_text(&self) -> Result<String, Self::Error>;

    /// Says that reading this value, at `path` inside its message, raised the error on its way
    /// out (a cycle or depth inside arguments given as a dict): the Python reader names that
    /// field in its error. Nothing for inputs whose reads cannot fail.
    fn failed_at(&self, _path: &dyn std::fmt::Display) {}

    /// Bytes of [`Input::json_text`], without building it when possible.
    fn json_len(&self) -> Result<usize, Self::Error> {
        Ok(self.json_text()?.len())
    }
}

impl<'a> Input<'a> for &'a serde_json::Value {
    type Error = Infallible;

    fn shape(&self) -> Shape {
        use serde_json::Value;
        match self {
            Value::Null => Shape::Null,
            Value::Bool(_) => Shape::Bool,
            Value::Number(_) => Shape::Number,
            Value::String(_) => Shape::Str,
            Value::Array(_) => Shape::List,
            Value::Object(_) => Shape::Map,
        }
    }

    fn type_name(&self) -> String {
        match self.shape() {
            Shape::Null => "NoneType",
            Shape::Bool => "bool",
            Shape::Number => "number",
            Shape::Str => "str",
            Shape::List => "list",
            _ => "dict",
        }
        .to_string()
    }

    fn get(&self, key: Key) -> Result<Option<Self>, Infallible> {
        Ok(serde_json::Value::get(self, key.as_str()).filter(|v| !v.is_null()))
    }

    fn str(&self) -> Result<Option<Cow<'a, str>>, Infallible> {
        Ok(self.as_str().map(Cow::Borrowed))
    }

    fn bytes(&self) -> Result<Option<&'a [u8]>, Infallible> {
        Ok(None)
    }

    fn items(&self) -> Result<Option<Vec<Self>>, Infallible> {
        Ok(self.as_array().map(|a| a.iter().collect()))
    }

    fn entries(&self) -> Result<Option<Vec<(String, Self)>>, Infallible> {
        Ok(self
            .as_object()
            .map(|o| o.iter().map(|(k, v)| (k.clone(), v)).collect()))
    }

    fn json_text(&self) -> Result<String, Infallible> {
        Ok(serde_json::to_string(self).unwrap_or_default())
    }
}
