//! The request body each API takes: chat (`messages`) and completions (`prompt`) streamed with
//! usage on every chunk, the Responses API's ([`super::responses::body`]), embeddings' and
//! rerank's ([`super::pooling`]) — then `[request.extra]` (and `--param`) merged on top, so a
//! scenario may override any field.

use crate::model::scenario::{Api, RequestParams};
use crate::model::wire::{Request, StreamOptions};
use crate::plan::prompts::RequestSpec;
use serde_json::{json, Value};

/// The JSON body for one request of `api`, `[request.extra]` merged on top.
pub fn request_body(api: Api, model: &str, params: &RequestParams, spec: &RequestSpec) -> Value {
    let body = match api {
        Api::Chat | Api::Completions => streamed_body(api == Api::Chat, model, params, spec),
        Api::Responses => super::responses::body(model, params, spec),
        Api::Embeddings => super::pooling::body(model, spec),
        Api::Rerank => super::pooling::rerank_body(model, spec),
    };
    merged(body, params)
}

/// A chat (`messages`) or completions (`prompt`) request, streamed.
fn streamed_body(chat: bool, model: &str, params: &RequestParams, spec: &RequestSpec) -> Value {
    let request = Request {
        model: Some(model.to_string()),
        messages: chat.then(|| spec.prompt.messages()),
        prompt: (!chat).then(|| spec.prompt.text()),
        max_tokens: Some(json!(spec.max_tokens)),
        temperature: params.temperature,
        ignore_eos: params.ignore_eos.then_some(true),
        stream: Some(true),
        // Usage on every chunk where the server offers it (vLLM, SGLang): it says how many
        // tokens each chunk carried. Servers without the option ignore it; a strict one can
        // be sent `[request.extra] stream_options = { include_usage = true }` instead.
        stream_options: Some(StreamOptions {
            include_usage: true,
            continuous_usage_stats: true,
        }),
        ..Default::default()
    };
    serde_json::to_value(request).unwrap_or_else(|_| json!({}))
}

/// `body` with `[request.extra]` (and `--param`) merged on top.
fn merged(mut body: Value, params: &RequestParams) -> Value {
    if let Some(b) = body.as_object_mut() {
        for (k, v) in &params.extra {
            b.insert(k.clone(), v.clone());
        }
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::prompts::Prompt;

    #[test]
    fn body_asks_for_usage_and_honours_extra() {
        let spec = RequestSpec {
            index: 0,
            warmup: false,
            prompt: Prompt::Text("hello".into()),
            input_tokens_target: Some(1),
            max_tokens: 9,
            class: String::new(),
            session: None,
            keep_reply: false,
        };
        let mut params = RequestParams {
            max_tokens: None,
            temperature: Some(0.0),
            ignore_eos: true,
            timeout_s: 1.0,
            first_token_timeout_s: 1.0,
            extra: serde_json::Map::new(),
            body_vars: Vec::new(),
        };
        params.extra.insert("top_p".into(), json!(0.5));
        let b = request_body(Api::Chat, "m", &params, &spec);
        assert_eq!(b["stream_options"]["include_usage"], json!(true));
        assert_eq!(b["ignore_eos"], json!(true));
        assert_eq!(b["max_tokens"], json!(9));
        assert_eq!(b["top_p"], json!(0.5));
        assert_eq!(b["messages"][0]["content"], json!("hello"));
        let c = request_body(Api::Completions, "m", &params, &spec);
        assert_eq!(c["prompt"], json!("hello"));
    }
}
