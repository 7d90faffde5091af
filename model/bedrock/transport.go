package bedrock

import (
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
)

// bodyGuard is the HTTP client of the SDK with the request body's WriteTo
// hidden. The SDK closes the request body as soon as a response arrives,
// and its body's WriteTo then fails with io.EOF; when net/http is still
// checking the body for extra bytes at that moment, it takes that for a
// failed write and closes the connection, cutting the event stream that is
// arriving on it. Through Read, a closed body is a plain end of body.
type bodyGuard struct{ next bedrockruntime.HTTPClient }

func (g bodyGuard) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = readCloser{req.Body}
	}
	return g.next.Do(req)
}

// readCloser has only Read and Close.
type readCloser struct{ io.ReadCloser }
