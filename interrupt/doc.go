// Package interrupt is Braid's interrupt core: the Interrupt record, answers
// (JSON values, where JSON null is a valid answer), the deterministic ids of
// SPEC I2, the per-owner State with atomic resume validation (SPEC I7), the
// Scope through which hooks and tools raise interrupts (SPEC I3–I5), and the
// resume input in Strands' JSON form (SPEC I6).
//
// The package imports nothing else of Braid. Agents and orchestrators each
// own one State; the hook runtime and the tool executor create one Scope per
// event dispatch or tool call.
//
// The life of an interrupt:
//
//  1. A hook or tool calls Scope.Interrupt(name, reason). The interrupt is
//     recorded in the owner's State under a deterministic id. If it already
//     has an answer, the answer is returned; otherwise the call returns an
//     error matching ErrInterrupted, which the callback returns. When the
//     callbacks or the tool have returned, the runtime ends the Scope
//     (Scope.End): a later call fails with ErrScopeEnded. Names and ids
//     must be valid UTF-8 (ErrNotUTF8): a session stores JSON, which
//     could not keep them as given.
//  2. The owner stops, calls State.Activate and reports State.Unanswered.
//  3. The caller answers with []Response (see ParseResponses). State.Resume
//     validates all of them before changing anything and stores the answers.
//  4. The owner runs the same hook or tool again; Scope.Interrupt now returns
//     the stored answer. When the interrupted work is done the owner calls
//     State.Clear.
package interrupt
