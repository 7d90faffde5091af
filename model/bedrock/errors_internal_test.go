package bedrock

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/stretchr/testify/assert"

	"github.com/braidhq/braid/model"
)

func TestClassify_MapsExceptionsStatusesAndMessages(t *testing.T) {
	streamErr := func(status int32) error {
		return &types.ModelStreamErrorException{Message: aws.String("failed"), OriginalStatusCode: aws.Int32(status)}
	}
	for _, tc := range []struct {
		name    string
		status  int
		code    string
		message string
		err     error
		want    error
	}{
		{"unrecognized client", 403, "UnrecognizedClientException", "The security token included in the request is invalid.", nil, model.ErrAuth},
		{"no access to the model", 403, "AccessDeniedException", "You don't have access to the model with the specified model ID.", nil, model.ErrUnknownModel},
		{"access denied", 403, "AccessDeniedException", "User: arn:aws:iam::123456789012:user/x is not authorized to perform: bedrock:InvokeModelWithResponseStream", nil, model.ErrAuth},
		{"expired token", 403, "ExpiredTokenException", "The security token included in the request is expired", nil, model.ErrAuth},
		{"bad signature", 403, "InvalidSignatureException", "The request signature we calculated does not match", nil, model.ErrAuth},
		{"unmodeled 401", 401, "", "", nil, model.ErrAuth},
		{"resource not found", 404, "ResourceNotFoundException", "Model not found.", nil, model.ErrUnknownModel},
		{"invalid model identifier", 400, "ValidationException", "The provided model identifier is invalid.", nil, model.ErrUnknownModel},
		{"model id pattern", 400, "ValidationException", "1 validation error detected: Value 'x:y:z' at 'modelId' failed to satisfy constraint", nil, model.ErrUnknownModel},
		{"needs an inference profile", 400, "ValidationException", "Invocation of model ID anthropic.claude-sonnet-4-20250514-v1:0 with on-demand throughput isn't supported.", nil, model.ErrUnknownModel},
		{"throttling", 429, "ThrottlingException", "Too many tokens, please wait before trying again.", nil, model.ErrRateLimited},
		{"quota", 400, "ServiceQuotaExceededException", "Your request exceeds the service quota for your account.", nil, model.ErrRateLimited},
		{"unmodeled 429", 429, "", "", nil, model.ErrRateLimited},
		{"input too long", 400, "ValidationException", "Input is too long for requested model.", nil, model.ErrContextWindow},
		{"max_tokens exceed", 400, "ValidationException", "input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000", nil, model.ErrContextWindow},
		{"prompt too long", 400, "ValidationException", "prompt is too long: 220000 tokens > 200000 maximum", nil, model.ErrContextWindow},
		{"text bytes", 400, "ValidationException", "too many total text bytes: 9000000 > 8000000", nil, model.ErrContextWindow},
		{"other validation", 400, "ValidationException", "A conversation must start with a user message.", nil, model.ErrBadRequest},
		{"unmodeled 400", 400, "SerializationException", "", nil, model.ErrBadRequest},
		{"internal", 500, "InternalServerException", "", nil, model.ErrServer},
		{"unavailable", 503, "ServiceUnavailableException", "", nil, model.ErrServer},
		{"not ready", 429, "ModelNotReadyException", "", nil, model.ErrServer},
		{"model timeout", 408, "ModelTimeoutException", "", nil, model.ErrServer},
		{"unmodeled 502", 502, "", "", nil, model.ErrServer},
		{"stream error", 0, "ModelStreamErrorException", "", streamErr(500), model.ErrServer},
		{"stream error throttled upstream", 0, "ModelStreamErrorException", "", streamErr(429), model.ErrRateLimited},
		{"stream error bad request upstream", 0, "ModelStreamErrorException", "", streamErr(400), model.ErrServer},
		{"in-stream throttling", 0, "ThrottlingException", "", nil, model.ErrRateLimited},
		{"nothing known", 0, "", "connection refused", nil, nil},
		{"teapot", 418, "", "", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, classify(tc.status, tc.code, tc.message, tc.err))
		})
	}
}
