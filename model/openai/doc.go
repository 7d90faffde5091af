// Package openai is a model.Model for OpenAI-compatible Chat Completions
// APIs: the OpenAI API, and the servers that speak its wire format (Ollama,
// vLLM, llama.cpp's server, LM Studio...), built on the official SDK
// github.com/openai/openai-go/v3.
//
// # Usage
//
//	cfg := openai.DefaultConfig()
//	cfg.Model = "gpt-4o-mini" // the API key comes from OPENAI_API_KEY
//	m, err := openai.New(cfg)
//	if err != nil {
//		return err
//	}
//	a, err := agent.New(ctx, agent.Config{Model: m, Tools: tools})
//
// A local server needs only its base URL (and no key):
//
//	cfg := openai.DefaultConfig()
//	cfg.Model = "llama3.2"
//	cfg.BaseURL = "http://127.0.0.1:11434/v1" // Ollama
//
// # Requests
//
// Each Stream call is one POST to BaseURL/chat/completions with
// "stream": true and "stream_options": {"include_usage": true}. The system
// prompt is a leading "system" message. An assistant message is sent with its
// text as content and its tool uses as tool_calls; each tool result becomes a
// "tool" message (tool_call_id, and content that is the result's text, JSON
// blocks written as JSON text, joined by newlines, with "Error: " in front
// when its status is error); the text of a user message follows its tool
// results. Tool specs become function tools whose parameters are their JSON
// schemas ("type": "object" added at the top when a schema has no type, as
// the API requires). Temperature and max_tokens are sent when configured. Of the
// blocks Braid keeps as raw JSON, a user message's images (inline png, jpeg,
// gif, webp) and pdf documents are sent as image_url and file parts with
// data URLs; reasoning and cache points are left out; anything else fails
// the request with model.ErrBadRequest before it is sent.
//
// # Streams
//
// Text deltas become *model.TextDelta; each tool call (several per turn,
// their arguments streamed in fragments and told apart by index) becomes
// *model.ToolUseStart, *model.ToolInputDelta fragments and *model.BlockStop;
// the turn ends with *model.MessageStop, whose stop reason maps the
// finish_reason (stop → end_turn, tool_calls → tool_use, length →
// max_tokens, content_filter → content_filtered) and whose usage is the
// final usage chunk's (prompt, completion and total tokens). A refusal is
// passed on as text; the reasoning deltas some servers add
// (reasoning_content) are not kept. The events
// always form a sequence model.Accumulator accepts, whatever order the server
// interleaves text and tool calls in. A stream that breaks off, or ends
// without a finish_reason, is an error of class model.ErrServer wrapping
// model.ErrIncompleteStream, never a silent partial turn.
//
// # Errors and retries
//
// Failures are *model.ProviderError values (Provider "openai") whose Kind
// is tested with errors.Is. For an HTTP error answer, Err is the SDK's
// *openai.Error (errors.As finds it), with the status, the API's code, type
// and message, and the response with its headers (x-request-id) and body.
// No error, at any level of its chain, holds the password of the BaseURL's
// user info or the API key, nor dumps them (DumpRequest): that *openai.Error
// is a copy whose request has the password replaced and the credential
// headers (Authorization, basic auth included) removed. The classes:
//
//   - code model_not_found (whatever the status, 403 included), or HTTP
//     404: model.ErrUnknownModel;
//   - HTTP 401 or 403, or code invalid_api_key: model.ErrAuth;
//   - code context_length_exceeded, or a 400 whose message speaks of the
//     context length / window / size: model.ErrContextWindow;
//   - HTTP 429: model.ErrRateLimited (insufficient_quota included);
//   - HTTP 5xx: model.ErrServer;
//   - any other 4xx: model.ErrBadRequest.
//
// An error event inside the stream is classified the same way by its code
// and type. HTTP 429 (except insufficient_quota), 5xx, a server error event
// and a failed connection are retried, with exponential backoff or the wait
// the Retry-After / retry-after-ms header asks for, as long as nothing has
// been yielded yet; after the first event a failure ends the stream. A
// cancelled context ends the stream with ctx.Err() at any point, including
// during a backoff.
package openai
