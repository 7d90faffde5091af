package modeltest

import (
	"bytes"
	"io"
	"net/http"
)

// BufferedTransport reads each response body whole before it returns the
// response, so that a provider's whole answer is in memory before its
// first event is read: for tests of what a provider does with events that
// have arrived already (after a cancel, say). Next is the transport that
// sends the requests.
type BufferedTransport struct{ Next http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (b BufferedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := b.Next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	return res, nil
}
