//! A request's fixed parts, read and priced once: the estimator of its provider and model, its
//! tools, system prompt and structured-output schema (owned, so they outlive the objects they
//! were read from), and the overhead they cost. Whoever prices many histories of one request (a
//! compactor, a session) builds it once, as a tokenizer is built once, and passes only the
//! messages on each call.

use crate::encoding::Encoding;
use crate::estimate::Estimator;
use crate::message::Message;
use crate::provider::Provider;
use crate::request_extras::RequestExtras;

#[derive(Debug, Clone)]
pub struct PricedRequest {
    pub provider: Provider,
    /// The model name as given (None: the provider's generic constants).
    pub model: Option<String>,
    /// Text tokenized by this encoding instead of the sampled estimate (`Estimator::with_encoding`).
    pub encoding: Option<Encoding>,
    pub estimator: Estimator,
    pub extras: RequestExtras<'static>,
    /// `estimator.overhead(&extras)`: reply priming, system prompt, tools, response format.
    pub overhead: u32,
}

impl PricedRequest {
    pub fn new(
        provider: Provider,
        model: Option<String>,
        encoding: Option<Encoding>,
        extras: RequestExtras<'_>,
    ) -> Self {
        let estimator = Estimator::new(provider, model.as_deref().unwrap_or(""))
            .with_encoding(encoding)
            .with_media_resolution(extras.media_resolution);
        let extras = extras.into_owned();
        let overhead = estimator.overhead(&extras);
        PricedRequest {
            provider,
            model,
            encoding,
            estimator,
            extras,
            overhead,
        }
    }

    /// The overhead of this request beside `ms`: priced again only when their thought
    /// signatures settle the serving platform (`Estimator::settle_platform`), which changes
    /// what the tools cost; else the price computed once.
    pub fn overhead_beside(&self, ms: &[Message<'_>]) -> u32 {
        let mut est = self.estimator;
        match est.settle_platform(ms) {
            true => est.overhead(&self.extras),
            false => self.overhead,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request_extras::ToolDef;
    use std::borrow::Cow;

    #[test]
    fn overhead_is_the_estimators_price_of_the_extras() {
        let tool =
            r#"{"type":"function","function":{"name":"read","parameters":{"type":"object"}}}"#;
        let extras = RequestExtras {
            system: Some(Cow::Borrowed("You are terse.")),
            tools: vec![ToolDef {
                name: Cow::Borrowed("read"),
                json: Cow::Borrowed(tool),
            }],
            response_format: None,
            ..Default::default()
        };
        let est = Estimator::new(Provider::OpenAI, "gpt-4o");
        let want = est.overhead(&extras);
        let r = PricedRequest::new(Provider::OpenAI, Some("gpt-4o".into()), None, extras);
        assert_eq!(r.overhead, want);
        assert!(r.overhead > est.overhead(&RequestExtras::default()));
        assert_eq!(r.overhead_beside(&[]), r.overhead);
    }
}
