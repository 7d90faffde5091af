// Package redact keeps the secrets a configuration value may hold out of
// the errors that quote it.
package redact

import (
	"context"
	"net/http"
	"net/url"
	"strings"
)

// Password is what URL and Request write in place of a password.
const Password = "xxxxx"

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
	return raw[:start] + user + ":" + Password + raw[start+at:]
}

// Request returns a copy of r that an error may keep and print: its URL's
// password replaced by Password, and the headers that carry credentials
// removed: Authorization (an API key, a bearer token or a SigV4 signature),
// Proxy-Authorization, X-Api-Key, Api-Key, Cookie, and the AWS SDK's token
// headers (X-Amz-Security-Token, the session token of temporary
// credentials; X-Amz-Sso_bearer_token; X-Aws-Ec2-Metadata-Token).
// The copy is a record, never sent: its context is context.Background(),
// not r's, which is cancelled once the call is over (and would make the
// SDKs' DumpRequest print nothing) and whose values an error must not
// keep alive. r is not changed; a nil r gives nil.
func Request(r *http.Request) *http.Request {
	if r == nil {
		return nil
	}
	c := r.Clone(context.Background())
	if c.URL != nil && c.URL.User != nil {
		if _, ok := c.URL.User.Password(); ok {
			c.URL.User = url.UserPassword(c.URL.User.Username(), Password)
		}
	}
	for _, h := range []string{
		"Authorization", "Proxy-Authorization", "X-Api-Key", "Api-Key", "Cookie",
		"X-Amz-Security-Token", "X-Amz-Sso_bearer_token", "X-Aws-Ec2-Metadata-Token",
	} {
		c.Header.Del(h)
	}
	return c
}
