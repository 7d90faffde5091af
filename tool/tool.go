package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/braidhq/braid/model"
)

// Tool is something the model can call.
//
// Run gets the raw JSON input of one call and returns the result content. A
// returned error becomes an error result whose text is the error message
// (the loop goes on), except an interrupt raised through tc, which stops the
// call until it is answered; on resume Run is called again from the start.
// Run may be called concurrently for different calls.
type Tool interface {
	Spec() model.ToolSpec
	Run(ctx context.Context, tc *Context, input json.RawMessage) ([]model.ToolResultContent, error)
}

// Validator is implemented by tools that can fail to build (a schema that
// could not be derived, say); the agent checks it when it is created.
type Validator interface {
	Validate() error
}

var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Errors.
var (
	// ErrBadName: a tool name must be 1–64 letters, digits, '_' or '-'.
	ErrBadName = errors.New("tool name must be 1-64 characters of [a-zA-Z0-9_-]")
	// ErrBadInput: the model sent input that does not decode into the
	// tool's input type, or, for a tool made by New, that its input schema
	// refuses.
	ErrBadInput = errors.New("invalid tool input")
	// ErrInputNotObject: the input type of a tool made by New is not a
	// struct or a map, so its schema describes no JSON object, which is
	// what a model's tool takes.
	ErrInputNotObject = errors.New("tool input type must be a struct or a map (a JSON object)")
)

// ValidateSpec checks a tool spec: its name, and that the schema is a JSON
// object that describes an object (its "type", if it has one, is
// "object"; its "properties", if it has them, an object; its "required",
// if it has one, a list of names), as every provider requires of a tool's
// input schema.
func ValidateSpec(s model.ToolSpec) error {
	if !namePattern.MatchString(s.Name) {
		return fmt.Errorf("tool %q: %w", s.Name, ErrBadName)
	}
	var obj map[string]any
	if err := json.Unmarshal(s.InputSchema, &obj); err != nil {
		return fmt.Errorf("tool %q: input schema is not a JSON object (give one such as {\"type\":\"object\"}): %w", s.Name, err)
	}
	if obj == nil { // JSON null decodes into a map without an error
		return fmt.Errorf("tool %q: input schema is null, not a JSON object: give one such as {\"type\":\"object\"}", s.Name)
	}
	if typ, ok := obj["type"]; ok && typ != "object" {
		typJSON, _ := json.Marshal(typ)
		return fmt.Errorf("tool %q: input schema has \"type\": %s, but a tool takes an object: give \"type\":\"object\" and describe the input in its \"properties\"", s.Name, typJSON)
	}
	if props, ok := obj["properties"]; ok {
		if _, isObj := props.(map[string]any); !isObj {
			propsJSON, _ := json.Marshal(props)
			return fmt.Errorf("tool %q: input schema has \"properties\": %s, not an object: give one that maps each parameter's name to its schema, such as {\"a\":{\"type\":\"string\"}}", s.Name, propsJSON)
		}
	}
	if req, ok := obj["required"]; ok {
		names, isList := req.([]any)
		for _, n := range names {
			if _, isName := n.(string); !isName {
				isList = false
			}
		}
		if !isList {
			reqJSON, _ := json.Marshal(req)
			return fmt.Errorf("tool %q: input schema has \"required\": %s, not a list of names: give the required parameters' names, such as [\"a\"]", s.Name, reqJSON)
		}
	}
	return nil
}

// Option declares how a tool made by New is run.
type Option func(*options)

type options struct {
	atMostOnce bool
	exclusive  string
}

// AtMostOnce declares that the tool must not run twice for one tool use
// (SPEC S6): the agent saves its start durably before it runs it, and if a
// crash cuts the run off, the agent does not run it again silently on
// recovery but stops with a "braid.recovery" interrupt (source tool; the
// reason gives the tool name, input and start time) and runs it again only
// if the answer is "rerun". Any other answer gives the model an error result
// saying the run was cut off. Tools without it are run again after a crash
// (at least once): use Context.IdempotencyKey to deduplicate.
func AtMostOnce() Option { return func(o *options) { o.atMostOnce = true } }

// OnceRunner is implemented by tools that declare how often they may run;
// FuncTool implements it.
type OnceRunner interface {
	RunsAtMostOnce() bool
}

// RunsAtMostOnce reports whether t was declared AtMostOnce.
func RunsAtMostOnce(t Tool) bool {
	o, ok := t.(OnceRunner)
	return ok && o.RunsAtMostOnce()
}

// Exclusive declares that the tool's calls must not run at the same time
// as any other call of a tool with the same key: an executor runs the calls
// of one key one after another, in tool-use order, and once one of them
// stops for an interrupt, the later ones of that key do not start in that
// pass (they run on resume, after it). Calls of other tools still run
// concurrently. Use it for tools that share state a second call must not
// see half-done (agent.AsTool sets it, keyed by its sub agent). An empty
// key declares nothing.
func Exclusive(key string) Option { return func(o *options) { o.exclusive = key } }

// ExclusiveRunner is implemented by tools that declare an exclusive key;
// FuncTool implements it.
type ExclusiveRunner interface {
	ExclusiveKey() string
}

// ExclusiveKey returns the key t was declared Exclusive with, or "" (none,
// or t is nil).
func ExclusiveKey(t Tool) string {
	if e, ok := t.(ExclusiveRunner); ok {
		return e.ExclusiveKey()
	}
	return ""
}

// Func is the function behind a typed tool.
type Func[In, Out any] func(ctx context.Context, tc *Context, in In) (Out, error)

// FuncTool is a tool made by New from a typed Go function.
type FuncTool[In, Out any] struct {
	spec   model.ToolSpec
	schema *jsonschema.Resolved
	quick  *quick // schema's quick form (nil: none)
	fn     Func[In, Out]
	err    error
	opts   options
}

// New makes a tool from fn.
//
// The input schema is derived from In, which must be a struct, a map or a
// pointer to one: a model's tool takes a JSON object (another type is
// reported by Validate, ErrInputNotObject); the schema in Spec has "type":
// "object" at the top, as the providers require, even for a pointer (whose
// input may also be null). A struct's exported fields are
// the parameters: those without omitempty (or omitzero) are required, no
// other parameter is allowed, and a json.RawMessage parameter takes any
// JSON value. Run refuses input the schema refuses; a type with its own
// UnmarshalJSON gets the schema of its Go structure, so use Raw for input
// the schema cannot describe.
//
// Out is returned to the model as text when it is a string, as a JSON
// block when it encodes to a JSON object, and as JSON text otherwise. A
// schema that cannot be derived, or a bad name, is reported by Validate
// (and so by agent.New).
func New[In, Out any](name, description string, fn Func[In, Out], opts ...Option) *FuncTool[In, Out] {
	t := &FuncTool[In, Out]{fn: fn, spec: model.ToolSpec{Name: name, Description: description}}
	for _, o := range opts {
		o(&t.opts)
	}
	schema, err := jsonschema.For[In](schemaOptions())
	if err == nil && schema.Type != "object" && !slices.Contains(schema.Types, "object") {
		err = fmt.Errorf("%w, not %s", ErrInputNotObject, reflect.TypeFor[In]())
	}
	if err == nil {
		t.spec.InputSchema, err = json.Marshal(modelSchema(schema))
	}
	if err == nil {
		t.schema, err = schema.Resolve(nil)
		t.quick = compileQuick(t.spec.InputSchema)
	}
	if err != nil {
		t.err = fmt.Errorf("tool %q: input schema: %w", name, err)
		t.spec.InputSchema = json.RawMessage(`{"type":"object"}`)
		return t
	}
	if fn == nil {
		t.err = fmt.Errorf("tool %q: nil function", name)
	}
	if t.err == nil {
		t.err = ValidateSpec(t.spec)
	}
	return t
}

// modelSchema returns the schema the model is given for an input whose
// schema describes an object: one whose top-level type is "object" alone,
// which every provider requires of a tool's input schema. A pointer input
// type's schema also allows null ("type": ["null", "object"]); the tool
// itself still takes null (Run validates against schema).
func modelSchema(schema *jsonschema.Schema) *jsonschema.Schema {
	if schema.Type == "object" {
		return schema
	}
	s := *schema
	s.Type, s.Types = "object", nil
	return &s
}

// schemaOptions returns the options New derives input schemas with: a
// json.RawMessage parameter takes any JSON value, as it decodes, not the
// array of bytes its Go type would give.
func schemaOptions() *jsonschema.ForOptions {
	return &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage](): {},
	}}
}

// Spec returns the tool's spec.
func (t *FuncTool[In, Out]) Spec() model.ToolSpec { return t.spec }

// RunsAtMostOnce reports whether the tool was declared AtMostOnce.
func (t *FuncTool[In, Out]) RunsAtMostOnce() bool { return t.opts.atMostOnce }

// ExclusiveKey returns the key the tool was declared Exclusive with, or "".
func (t *FuncTool[In, Out]) ExclusiveKey() string { return t.opts.exclusive }

// Validate reports a problem found when the tool was built.
func (t *FuncTool[In, Out]) Validate() error { return t.err }

// Run checks the input against the tool's input schema, decodes it into In
// and calls the function. Input the schema refuses (a required parameter
// missing, one the schema does not name, a value of the wrong type, null
// for a struct) is an error wrapping ErrBadInput, and the function is not
// called: the model gets an error result saying what was wrong, rather
// than the tool running with zero values. Empty input (no bytes at all)
// is the zero In.
func (t *FuncTool[In, Out]) Run(ctx context.Context, tc *Context, input json.RawMessage) ([]model.ToolResultContent, error) {
	if t.err != nil {
		return nil, t.err
	}
	var in In
	if len(input) > 0 {
		var doc any
		if err := json.Unmarshal(input, &doc); err != nil {
			return nil, fmt.Errorf("%w for %s: %v", ErrBadInput, t.spec.Name, err)
		}
		if t.quick == nil || !t.quick.accepts(doc) {
			if err := t.schema.Validate(doc); err != nil {
				return nil, fmt.Errorf("%w for %s: %v", ErrBadInput, t.spec.Name, err)
			}
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, fmt.Errorf("%w for %s: %v", ErrBadInput, t.spec.Name, err)
		}
	}
	out, err := t.fn(ctx, tc, in)
	if err != nil {
		return nil, err
	}
	return Content(out)
}

// Content turns a Go value into tool-result content (see New).
func Content(v any) ([]model.ToolResultContent, error) {
	switch x := v.(type) {
	case string:
		return []model.ToolResultContent{{Text: &x}}, nil
	case []model.ToolResultContent:
		return x, nil
	case model.ToolResultContent:
		return []model.ToolResultContent{x}, nil
	case nil:
		s := "null"
		return []model.ToolResultContent{{Text: &s}}, nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer && rv.IsNil() {
		s := "null"
		return []model.ToolResultContent{{Text: &s}}, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("tool result is not JSON-encodable: %w", err)
	}
	if len(raw) > 0 && raw[0] == '{' {
		return []model.ToolResultContent{{JSON: raw}}, nil
	}
	s := string(raw)
	return []model.ToolResultContent{{Text: &s}}, nil
}

// Raw is a tool defined by its spec and a function of the raw JSON input.
type Raw struct {
	ToolSpec model.ToolSpec
	Fn       func(ctx context.Context, tc *Context, input json.RawMessage) ([]model.ToolResultContent, error)
}

// Spec returns the spec.
func (r *Raw) Spec() model.ToolSpec { return r.ToolSpec }

// Validate checks the spec and the function.
func (r *Raw) Validate() error {
	if r.Fn == nil {
		return fmt.Errorf("tool %q: nil function", r.ToolSpec.Name)
	}
	return ValidateSpec(r.ToolSpec)
}

// Run calls Fn.
func (r *Raw) Run(ctx context.Context, tc *Context, input json.RawMessage) ([]model.ToolResultContent, error) {
	return r.Fn(ctx, tc, input)
}

// PanicError is the error of a tool that panicked.
type PanicError struct {
	Tool  string
	Value any
}

func (e *PanicError) Error() string { return fmt.Sprintf("tool %s panicked: %v", e.Tool, e.Value) }

// Invoke runs t and turns a panic into a *PanicError, so a faulty tool
// cannot take the agent down.
func Invoke(ctx context.Context, t Tool, tc *Context, input json.RawMessage) (content []model.ToolResultContent, err error) {
	defer func() {
		if r := recover(); r != nil {
			content, err = nil, &PanicError{Tool: t.Spec().Name, Value: r}
		}
	}()
	return t.Run(ctx, tc, input)
}
