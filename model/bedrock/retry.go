package bedrock

import (
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"

	modelretry "github.com/braidhq/braid/model/internal/retry"
)

// retryableCode says whether an exception is retried, besides the SDK's
// defaults (5xx status codes, ThrottlingException and the other throttling
// codes, connection errors).
func retryableCode(code string) bool {
	switch code {
	case "ThrottlingException", "ServiceUnavailableException", "InternalServerException", "ModelNotReadyException":
		return true
	}
	return false
}

// retryableStreamCode says whether an exception of the event stream is
// retried when it comes before anything was yielded.
func retryableStreamCode(code string) bool {
	switch code {
	case "ThrottlingException", "ServiceUnavailableException", "InternalServerException", "ModelStreamErrorException":
		return true
	}
	return false
}

// backoff is exponential with jitter: attempt n (the n-th failure, from 1)
// waits base·2^(n-1) less up to a quarter, capped at MaxRetryDelay.
type backoff struct{ base time.Duration }

// BackoffDelay implements retry.BackoffDelayer.
func (b backoff) BackoffDelay(attempt int, _ error) (time.Duration, error) {
	return b.delay(attempt), nil
}

func (b backoff) delay(attempt int) time.Duration {
	return modelretry.Backoff{Base: b.base, Max: MaxRetryDelay}.Delay(attempt - 1)
}

// newRetryer is the SDK's standard retryer with maxAttempts attempts, the
// backoff above and no client-side retry quota, so that every Stream call
// gets its MaxRetries whatever the calls before it met.
func newRetryer(maxAttempts int, b backoff) aws.RetryerV2 {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = maxAttempts
		o.Backoff = b
		o.RateLimiter = ratelimit.None
		o.Retryables = append(o.Retryables, retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
			var apiErr smithy.APIError
			if errors.As(err, &apiErr) && retryableCode(apiErr.ErrorCode()) {
				return aws.TrueTernary
			}
			return aws.UnknownTernary
		}))
	})
}
