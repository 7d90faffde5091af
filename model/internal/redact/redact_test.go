package redact_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/braidhq/braid/model/internal/redact"
)

func TestURL_HidesThePasswordWhetherOrNotTheURLParses(t *testing.T) {
	for raw, want := range map[string]string{
		"http://127.0.0.1:11434/v1":         "http://127.0.0.1:11434/v1",
		"https://user:s3cret@proxy/v1":      "https://user:xxxxx@proxy/v1",
		"https://user@proxy/v1":             "https://user@proxy/v1",
		"ftp://user:s3cret@proxy/v1":        "ftp://user:xxxxx@proxy/v1",
		"http://user:s3cret@pro xy/v1":      "http://user:xxxxx@pro xy/v1",
		"http://user:s3c@ret@[::1/v1?a=b@c": "http://user:xxxxx@[::1/v1?a=b@c",
		"api.example.com":                   "api.example.com",
		"http://[::1":                       "http://[::1",
	} {
		assert.Equal(t, want, redact.URL(raw), raw)
	}
}
