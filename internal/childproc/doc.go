// Package childproc runs a test's helper process (the test binary run
// again in a mode of its own) that says "ready" on its output once it
// holds what the test needs, waits for a line on its input, and ends
// with an exit code the test reads: the rig of the process tests in which
// two processes race one resume. For tests only.
package childproc
