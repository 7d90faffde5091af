package interrupt_test

import (
	"errors"
	"fmt"

	"github.com/braidhq/braid/interrupt"
)

// A tool asks for approval, the owner stops, the caller answers in Strands'
// JSON form, and the tool runs again with the answer.
func Example() {
	st := interrupt.NewState()
	idFor := func(name string) string { return interrupt.ToolCallID("tooluse_1", name) }
	tool := func() (string, error) {
		sc := interrupt.NewScope(st, interrupt.SourceTool, idFor)
		answer, err := sc.Interrupt("approve", map[string]string{"cmd": "rm -rf /tmp/x"})
		if err != nil {
			return "", err
		}
		ok, _ := answer.String()
		return "approved=" + ok, nil
	}

	_, err := tool()
	fmt.Println(errors.Is(err, interrupt.ErrInterrupted))
	st.Activate()
	for _, in := range st.Unanswered() {
		fmt.Println(in.ID, in.Name)
	}

	responses, err := interrupt.ParseResponses([]byte(
		`[{"interruptResponse":{"interruptId":"v1:tool_call:tooluse_1:5cf56bed-067e-5438-a1ef-dbfa3405e45d","response":"yes"}}]`))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := st.Resume(responses); err != nil {
		fmt.Println(err)
		return
	}
	out, err := tool()
	fmt.Println(out, err)
	st.Clear()
	// Output:
	// true
	// v1:tool_call:tooluse_1:5cf56bed-067e-5438-a1ef-dbfa3405e45d approve
	// approved=yes <nil>
}

func ExampleState_Resume_unknownID() {
	st := interrupt.NewState()
	st.Register(interrupt.Interrupt{ID: "v1:before_tools:aa15d401-a27c-53f3-9e1b-8c0d4545f840", Name: "approval_a", Source: interrupt.SourceHook})
	st.Activate()

	err := st.Resume([]interrupt.Response{interrupt.Respond("v1:before_tools:nope", true)})
	var idErr *interrupt.IDError
	fmt.Println(errors.Is(err, interrupt.ErrUnknownID), errors.As(err, &idErr) && idErr.ID == "v1:before_tools:nope")
	fmt.Println(err)
	// Output:
	// true true
	// interrupt_id=<v1:before_tools:nope> | no interrupt found
}
