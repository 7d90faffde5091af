// Package redact keeps the secrets a configuration value may hold out of
// the errors that quote it.
package redact

import (
	"net/url"
	"strings"
)

// URL returns raw with the password of its user info, if it has one,
// replaced by "xxxxx", as url.URL.Redacted writes it; a value that does not
// parse as a URL is redacted the same way, by its text.
func URL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	start := len(raw) - len(rest)
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	at := strings.LastIndex(authority, "@")
	if at < 0 {
		return raw
	}
	user, _, hasPassword := strings.Cut(authority[:at], ":")
	if !hasPassword {
		return raw
	}
	return raw[:start] + user + ":xxxxx" + raw[start+at:]
}
