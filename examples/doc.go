// Package examples holds one runnable program per example of the Strands
// "Interrupts" page, each in its own folder with a test that runs it:
//
//	approval       BeforeToolCallEvent approval of delete_files
//	batchapproval  BeforeToolsEvent approval of a whole batch
//	toolinterrupt  an interrupt raised from inside the tool
//
// Each runs on the scripted model, so it needs no network or API key. Give
// the answer with -answer y (or BRAID_ANSWER=y) to run without a terminal;
// without one it asks at the terminal.
package examples
