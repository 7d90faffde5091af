package bedrock

import (
	"errors"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"

	"github.com/braidhq/braid/model"
)

// providerName is ProviderError.Provider.
const providerName = "bedrock"

// apiError turns an error of the SDK (an HTTP error answer after retries,
// or an exception of the event stream) into a *model.ProviderError with its
// status code, exception name, message and class. The SDK's error is kept
// as Err without the credentials its request held (withoutCredentials).
func (m *Model) apiError(err error) *model.ProviderError {
	pe := &model.ProviderError{Provider: providerName, Model: m.cfg.Model, Err: withoutCredentials(err)}
	var status interface{ HTTPStatusCode() int }
	if errors.As(err, &status) {
		pe.StatusCode = status.HTTPStatusCode()
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		pe.Code = apiErr.ErrorCode()
		pe.Message = apiErr.ErrorMessage()
	}
	pe.Kind = classify(pe.StatusCode, pe.Code, pe.Message, err)
	return pe
}

// classify returns the error class of an answer: its HTTP status (0 for an
// exception of the event stream), its exception name and its message.
func classify(status int, code, message string, err error) error {
	msg := strings.ToLower(message)
	switch code {
	case "AccessDeniedException":
		// "You don't have access to the model with the specified model ID.":
		// the credentials are good, the account may not use the model.
		if strings.Contains(msg, "access to the model") {
			return model.ErrUnknownModel
		}
		return model.ErrAuth
	case "UnrecognizedClientException", "InvalidSignatureException",
		"ExpiredTokenException", "IncompleteSignatureException", "MissingAuthenticationTokenException",
		"InvalidClientTokenId", "SignatureDoesNotMatch", "NotAuthorized":
		return model.ErrAuth
	case "ResourceNotFoundException":
		return model.ErrUnknownModel
	case "ThrottlingException", "ServiceQuotaExceededException":
		return model.ErrRateLimited
	case "ValidationException":
		switch {
		case contextWindowMessage(msg):
			return model.ErrContextWindow
		case unknownModelMessage(msg):
			return model.ErrUnknownModel
		}
		return model.ErrBadRequest
	case "InternalServerException", "ServiceUnavailableException", "ModelNotReadyException",
		"ModelTimeoutException", "ModelErrorException":
		return model.ErrServer
	case "ModelStreamErrorException":
		// The model failed mid-stream; its original status says how.
		var mse *types.ModelStreamErrorException
		if errors.As(err, &mse) && mse.OriginalStatusCode != nil {
			if kind := classifyStatus(int(*mse.OriginalStatusCode)); kind != nil && kind != model.ErrBadRequest {
				return kind
			}
		}
		return model.ErrServer
	}
	if status == http.StatusBadRequest && contextWindowMessage(msg) {
		return model.ErrContextWindow
	}
	return classifyStatus(status)
}

// classifyStatus classes an HTTP status without a known exception name.
func classifyStatus(status int) error {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return model.ErrAuth
	case status == http.StatusNotFound:
		return model.ErrUnknownModel
	case status == http.StatusTooManyRequests:
		return model.ErrRateLimited
	case status >= 500:
		return model.ErrServer
	case status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge:
		return model.ErrBadRequest
	}
	return nil
}

// contextWindowMessage says whether a ValidationException's message (lower
// case) says the input does not fit the model's context window. The first
// three are the messages Strands recognises.
func contextWindowMessage(msg string) bool {
	for _, s := range []string{
		"input is too long",
		"exceed context limit",
		"too many total text bytes",
		"context window",
		"context length",
		"prompt is too long",
		"too many input tokens",
	} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// unknownModelMessage says whether a ValidationException's message (lower
// case) is about the model id: "The provided model identifier is invalid.",
// a modelId that fails the id pattern, or a model that needs an inference
// profile id.
func unknownModelMessage(msg string) bool {
	return strings.Contains(msg, "model identifier") ||
		strings.Contains(msg, "'modelid'") ||
		strings.Contains(msg, "on-demand throughput")
}
