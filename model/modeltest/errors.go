package modeltest

import "fmt"

// ErrorTexts returns the Error() text of err and of every error in its
// chain, depth first (errors.Unwrap, and each of an Unwrap() []error), so
// that a test can check that no level of an error says what it must not.
func ErrorTexts(err error) []string {
	var texts []string
	for _, e := range ErrorChain(err) {
		texts = append(texts, e.Error())
	}
	return texts
}

// ErrorChain returns err and every error in its chain, depth first
// (errors.Unwrap, and each of an Unwrap() []error): the errors errors.As
// can reach from err.
func ErrorChain(err error) []error {
	if err == nil {
		return nil
	}
	chain := []error{err}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		chain = append(chain, ErrorChain(u.Unwrap())...)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			chain = append(chain, ErrorChain(e)...)
		}
	}
	return chain
}

// ErrorPrintouts returns what err and every error in its chain print when
// a caller logs or dumps them: Error(), the %v, %+v and %#v forms, and, for
// an error with the dump methods of the providers' SDK errors
// (DumpRequest(body bool) []byte, DumpResponse(body bool) []byte), both
// dumps with their bodies. A test checks that none of them holds a secret.
func ErrorPrintouts(err error) []string {
	var out []string
	for _, e := range ErrorChain(err) {
		out = append(out, e.Error(), fmt.Sprintf("%v", e), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e))
		if d, ok := e.(interface{ DumpRequest(bool) []byte }); ok {
			out = append(out, string(d.DumpRequest(true)))
		}
		if d, ok := e.(interface{ DumpResponse(bool) []byte }); ok {
			out = append(out, string(d.DumpResponse(true)))
		}
	}
	return out
}
