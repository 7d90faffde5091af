package modeltest

// ErrorTexts returns the Error() text of err and of every error in its
// chain, depth first (errors.Unwrap, and each of an Unwrap() []error), so
// that a test can check that no level of an error says what it must not.
func ErrorTexts(err error) []string {
	if err == nil {
		return nil
	}
	texts := []string{err.Error()}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		texts = append(texts, ErrorTexts(u.Unwrap())...)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			texts = append(texts, ErrorTexts(e)...)
		}
	}
	return texts
}
