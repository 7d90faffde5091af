// Package anthropic is a model.Model over the Anthropic Messages API, built
// on the official SDK (github.com/anthropics/anthropic-sdk-go/v2). It lives
// in its own package so that Braid's core does not depend on the SDK.
//
// # Usage
//
//	cfg := anthropic.DefaultConfig()
//	cfg.Model = "claude-sonnet-4-5" // required
//	// cfg.APIKey defaults to $ANTHROPIC_API_KEY, cfg.BaseURL to
//	// $ANTHROPIC_BASE_URL or the SDK's https://api.anthropic.com.
//	m, err := anthropic.New(cfg)
//	if err != nil {
//		return err
//	}
//	a, err := agent.New(ctx, agent.Config{Model: m, SystemPrompt: "...", Tools: tools})
//
// or, without an agent, model.Complete(ctx, m, req) for one turn.
//
// # Requests
//
// Stream sends the request with stream: true. The system prompt becomes
// system; Braid's messages become Messages API messages of the same role:
// text → text blocks, toolUse → tool_use {id, name, input}, toolResult →
// tool_result {tool_use_id, content, is_error}, where each text item of the
// result is a text block, each JSON item a text block holding its compact
// JSON, and is_error is true for status "error" (an error result without
// content, which the API refuses, gets the text "The tool failed without a
// message."). Tools become tools with
// their JSON schema as input_schema (with empty properties when it has
// none: the API requires input_schema). max_tokens (required by the API) and
// temperature come from the Config. Of the blocks Braid keeps as raw JSON,
// a user message's images (inline png, jpeg, gif, webp) and documents (pdf,
// txt, md, csv, html) are sent as image and document blocks; reasoning is
// left out; a cache point ({"cachePoint": {"type": "default"}}, with an
// optional "ttl" of "5m" or "1h") is not sent as a block but as
// cache_control {"type": "ephemeral"} (and its ttl) on the block sent
// before it, as Strands maps it: the block before it in its message, else
// the last block of the messages before, else the system prompt, else the
// last tool (the API reads tools, then system, then messages); one with
// nothing before it is dropped. The API takes at most four blocks with
// cache_control in a request (MaxCachedBlocks) and answers 400 to more, so
// a request whose cache points mark more blocks fails with
// model.ErrBadRequest before it is sent, the message giving the count.
// Cache points count by the blocks they mark: several on one block count
// once. None is dropped to fit: which prefixes are worth caching is the
// caller's choice, and a silently moved cache point changes cost and
// latency unnoticed. Strands maps every cache point and leaves the limit
// to the API's 400. A conversation that adds a cache point per turn
// should keep only the latest few (moving it, rather than adding one).
// Anything else fails the request with model.ErrBadRequest before anything
// is sent.
//
// # Streams
//
// text_delta → *model.TextDelta; a tool_use block → *model.ToolUseStart, one
// *model.ToolInputDelta per input_json_delta fragment, *model.BlockStop;
// message_stop → *model.MessageStop. Stop reasons keep their names (end_turn,
// tool_use, max_tokens, stop_sequence), except refusal → content_filtered
// and model_context_window_exceeded → max_tokens. Usage: input tokens from
// message_start (or message_delta when it carries them), output tokens from
// message_delta (cache reads and writes are not counted), total their sum.
// Thinking and server-tool blocks are dropped. A stream that ends before
// message_stop is an error of class model.ErrServer wrapping
// model.ErrIncompleteStream, never a partial turn.
//
// # Errors and retries
//
// Failures are *model.ProviderError with Provider "anthropic", the model
// id, the HTTP status, the API's error type as Code and its message, the
// SDK's error as Err, and a Kind to test with errors.Is. No error, at any
// level of its chain, holds the password of the BaseURL's user info or the
// API key: the *sdk.Error kept as Err is a copy whose request has the
// password replaced and the credential headers removed. The classes:
//
//	401, 403 (authentication_error, permission_error)  model.ErrAuth
//	404 (not_found_error)                              model.ErrUnknownModel
//	429 (rate_limit_error)                             model.ErrRateLimited
//	400 whose message says the prompt is too long      model.ErrContextWindow
//	other 4xx (invalid_request_error, ...)             model.ErrBadRequest
//	5xx, 529 (api_error, overloaded_error)             model.ErrServer
//
// An error event inside the stream is classed by its type, with StatusCode
// 0. Requests that fail with 429, 529 or 5xx (or whose stream reports such
// an error before any event reached the caller), and requests whose
// connection fails before the stream begins (refused, reset, cut before
// its first event; a *model.ProviderError without a Kind once the retries
// are spent) are retried up to Config.MaxRetries times with exponential
// backoff from
// Config.RetryBaseDelay, or after the retry-after-ms / retry-after the
// response gives (a wait over a minute is not taken: the error is returned
// with its RetryAfter). A 429 for a spend limit (error_code
// enforced_spend_limit_reached, contract_spend_limit_reached) is not
// retried. Nothing is retried once the caller has seen an event. A
// cancelled context ends the sequence with ctx.Err() at any point,
// including during a backoff wait.
package anthropic
