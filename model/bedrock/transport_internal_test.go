package bedrock

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type captureClient struct{ req *http.Request }

func (c *captureClient) Do(req *http.Request) (*http.Response, error) {
	c.req = req
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
}

// writerToBody is a request body with WriteTo, as the SDK's is.
type writerToBody struct{ *bytes.Reader }

func (writerToBody) Close() error { return nil }

func TestBodyGuard_HidesTheRequestBodysWriteTo(t *testing.T) {
	var next captureClient
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/", writerToBody{bytes.NewReader([]byte(`{"a":1}`))})
	require.NoError(t, err)
	_, err = bodyGuard{next: &next}.Do(req)
	require.NoError(t, err)
	_, isWriterTo := next.req.Body.(io.WriterTo)
	assert.False(t, isWriterTo)
	got, err := io.ReadAll(next.req.Body)
	require.NoError(t, err)
	assert.Equal(t, `{"a":1}`, string(got))
}
