// Package bedrock is the Amazon Bedrock provider: a model.Model over the
// Bedrock Converse streaming API (ConverseStream), through the AWS SDK for
// Go v2, with the request shapes Strands sends by default.
//
// Braid's messages already have the Converse JSON shapes, so a request maps
// one to one: the system prompt is one system text block, each message its
// text, toolUse and toolResult blocks (tool inputs and JSON results as
// documents), each tool a toolSpec with a JSON input schema ("type":
// "object" added at the top when the schema has no type), and
// Config.Temperature and Config.MaxTokens the inferenceConfig. Text blocks
// that are empty or whitespace alone, which Converse refuses as blank, are
// left out (a message left with nothing is skipped). Converse
// refuses tool uses or results in the messages of a request without a
// toolConfig: a request without tools whose history holds them (a summary
// of the conversation, say) gets, as in Strands, one "noop" tool that the
// model is told to ignore (an agent answers a call to it as to any
// unknown tool). The answer
// streams as model.StreamEvents, ending with one model.MessageStop that
// carries the stop reason and the token usage.
//
// Failures are *model.ProviderError values with Provider "bedrock", the
// exception name as Code and a Kind to test with errors.Is. Err keeps the
// AWS SDK's error, whose types errors.As still finds (*smithy.OperationError,
// *awshttp.ResponseError with the status code and request id,
// smithy.APIError, the bedrockruntime exception types), but no level of
// its chain holds a credential: the response errors are copies whose
// request has no Authorization header (the Bedrock API key, or the access
// key id and SigV4 signature), no X-Amz-Security-Token (the session token)
// and no body. The same holds when a credential provider's own request
// failed. The classes:
//
//   - model.ErrAuth: UnrecognizedClientException, AccessDeniedException,
//     other signature or token exceptions, HTTP 401 or 403, no credentials.
//   - model.ErrUnknownModel: ResourceNotFoundException, a
//     ValidationException about the model identifier, or an
//     AccessDeniedException saying the account has no access to the model.
//   - model.ErrRateLimited: ThrottlingException (after the retries),
//     ServiceQuotaExceededException.
//   - model.ErrContextWindow: a ValidationException saying the input is too
//     long for the model.
//   - model.ErrServer: InternalServerException, ServiceUnavailableException,
//     ModelNotReadyException, ModelStreamErrorException, other 5xx (after
//     the retries), and a stream that ends before messageStop.
//   - model.ErrBadRequest: any other ValidationException or HTTP 400, and
//     a request that cannot be sent as Converse (an unknown role or block
//     kind, a tool input or schema that is not JSON), refused before
//     anything is sent.
//
// A caller's cancellation is not a ProviderError: the sequence ends with an
// error matching ctx.Err(). Config.Timeout running out ends it with a
// ProviderError (no Kind) wrapping context.DeadlineExceeded.
//
// Usage:
//
//	cfg := bedrock.DefaultConfig()
//	cfg.Model = "us.anthropic.claude-sonnet-4-20250514-v1:0"
//	cfg.Region = "us-east-1" // else AWS_REGION, the profile's region, or us-west-2
//	m, err := bedrock.New(ctx, cfg) // credentials: the standard AWS chain, or AWS_BEARER_TOKEN_BEDROCK
//	if err != nil {
//		return err
//	}
//	a, err := agent.New(ctx, agent.Config{Model: m, SystemPrompt: "Be brief.", Tools: tools})
package bedrock
