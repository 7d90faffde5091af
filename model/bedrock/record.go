package bedrock

import (
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/braidhq/braid/model/internal/redact"
)

// withoutCredentials returns an error of the AWS SDK that an error of Braid
// may keep. The SDK's response errors keep the HTTP response, and through
// it the request as sent: its Authorization header (the Bedrock API key, or
// the access key id and SigV4 signature) and X-Amz-Security-Token (the
// session token of temporary credentials). Each level of err's chain from
// the top down to every response error is copied; in the copies the
// response's request is a record without those headers (redact.Request)
// and without its body (which the SDK's errors never print, and which a
// credential provider's request may fill with a token). The levels keep
// their types and texts, so errors.As still finds *smithy.OperationError,
// *retry.MaxAttemptsError, *awshttp.ResponseError (status code, request
// id), smithy.APIError and the exception types. A level of another type
// above a response error is replaced by one with the same text and the
// copied chain. err is not changed; an error that keeps no response is
// returned as it is.
func withoutCredentials(err error) error {
	c, _ := copyWithoutCredentials(err)
	return c
}

// copyWithoutCredentials is withoutCredentials, and whether anything was
// copied.
func copyWithoutCredentials(err error) (error, bool) {
	switch e := err.(type) {
	case nil:
		return nil, false
	case *awshttp.ResponseError:
		if e.ResponseError == nil {
			return err, false
		}
		c := *e
		c.ResponseError = responseErrorWithoutCredentials(e.ResponseError)
		return &c, true
	case *smithyhttp.ResponseError:
		return responseErrorWithoutCredentials(e), true
	case *smithy.OperationError:
		inner, copied := copyWithoutCredentials(e.Err)
		if !copied {
			return err, false
		}
		c := *e
		c.Err = inner
		return &c, true
	case *retry.MaxAttemptsError:
		inner, copied := copyWithoutCredentials(e.Err)
		if !copied {
			return err, false
		}
		c := *e
		c.Err = inner
		return &c, true
	case interface{ Unwrap() error }:
		inner, copied := copyWithoutCredentials(e.Unwrap())
		if !copied {
			return err, false
		}
		return &recordedError{text: err.Error(), errs: []error{inner}}, true
	case interface{ Unwrap() []error }:
		errs := e.Unwrap()
		c := make([]error, len(errs))
		some := false
		for i, inner := range errs {
			var copied bool
			c[i], copied = copyWithoutCredentials(inner)
			some = some || copied
		}
		if !some {
			return err, false
		}
		return &recordedError{text: err.Error(), errs: c}, true
	}
	return err, false
}

// responseErrorWithoutCredentials copies e with a copy of its response
// whose request is a record without credentials, and its chain copied by
// withoutCredentials.
func responseErrorWithoutCredentials(e *smithyhttp.ResponseError) *smithyhttp.ResponseError {
	c := *e
	c.Err = withoutCredentials(e.Err)
	if e.Response != nil && e.Response.Response != nil {
		res := *e.Response.Response
		res.Request = recordedRequest(res.Request)
		c.Response = &smithyhttp.Response{Response: &res}
	}
	return &c
}

// recordedRequest is redact.Request without the body.
func recordedRequest(r *http.Request) *http.Request {
	c := redact.Request(r)
	if c != nil {
		c.Body, c.GetBody, c.ContentLength = http.NoBody, nil, 0
	}
	return c
}

// recordedError stands for an error of a type withoutCredentials does not
// know (a fmt.Errorf wrapping, say) above a response error: the same text,
// the errors it wrapped copied.
type recordedError struct {
	text string
	errs []error
}

func (e *recordedError) Error() string   { return e.text }
func (e *recordedError) Unwrap() []error { return e.errs }
