package tool

import (
	"encoding/json"
	"math"
)

// quick is a tool's input schema compiled for the check Run makes on
// every call. The schema library's validator costs about 1.6 µs and 30
// allocations a call even for valid input; quick walks the decoded input
// without allocating. It knows only the keywords New's schemas use (type,
// properties, required, additionalProperties, items, and the annotations
// description and title); a schema with any other keyword gets no quick
// form. It must never accept what the library refuses: Run asks the
// library whenever quick refuses (for the error's text, and for what quick
// is stricter about), and trusts quick only when it accepts.
type quick struct {
	types    map[string]bool // nil: any type
	props    map[string]*quick
	required []string
	closed   bool   // additionalProperties false
	extra    *quick // additionalProperties' schema (nil: any value)
	items    *quick // items' schema (nil: any value)
	never    bool   // the schema false: no value fits
}

// compileQuickValue compiles a schema given as a JSON value: an object,
// or true (any value) or false (none); nil if it is neither or uses a
// keyword quick does not know.
func compileQuickValue(v any) *quick {
	switch x := v.(type) {
	case bool:
		return &quick{never: !x}
	case map[string]any:
		return compileQuickMap(x)
	}
	return nil
}

// compileQuick returns the quick form of a JSON schema, or nil if it uses
// a keyword quick does not know.
func compileQuick(raw json.RawMessage) *quick {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil
	}
	return compileQuickMap(m)
}

func compileQuickMap(m map[string]any) *quick {
	q := &quick{}
	for k, v := range m {
		switch k {
		case "description", "title":
		case "type":
			q.types = map[string]bool{}
			switch t := v.(type) {
			case string:
				q.types[t] = true
			case []any:
				for _, x := range t {
					s, ok := x.(string)
					if !ok {
						return nil
					}
					q.types[s] = true
				}
			default:
				return nil
			}
			for t := range q.types {
				switch t {
				case "null", "boolean", "object", "array", "number", "integer", "string":
				default:
					return nil
				}
			}
		case "properties":
			ps, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			q.props = make(map[string]*quick, len(ps))
			for name, p := range ps {
				if q.props[name] = compileQuickValue(p); q.props[name] == nil {
					return nil
				}
			}
		case "required":
			rs, ok := v.([]any)
			if !ok {
				return nil
			}
			for _, r := range rs {
				s, ok := r.(string)
				if !ok {
					return nil
				}
				q.required = append(q.required, s)
			}
		case "additionalProperties":
			if a, ok := v.(bool); ok {
				q.closed = !a
			} else if q.extra = compileQuickValue(v); q.extra == nil {
				return nil
			}
		case "items":
			if q.items = compileQuickValue(v); q.items == nil {
				return nil
			}
		default:
			return nil
		}
	}
	return q
}

// accepts reports whether v, a value as encoding/json decodes into any,
// fits the schema.
func (q *quick) accepts(v any) bool {
	if q.never {
		return false
	}
	if q.types != nil && !q.typeFits(v) {
		return false
	}
	switch x := v.(type) {
	case map[string]any:
		for _, r := range q.required {
			if _, ok := x[r]; !ok {
				return false
			}
		}
		for k, e := range x {
			switch p := q.props[k]; {
			case p != nil:
				if !p.accepts(e) {
					return false
				}
			case q.closed:
				return false
			case q.extra != nil:
				if !q.extra.accepts(e) {
					return false
				}
			}
		}
	case []any:
		if q.items != nil {
			for _, e := range x {
				if !q.items.accepts(e) {
					return false
				}
			}
		}
	}
	return true
}

func (q *quick) typeFits(v any) bool {
	switch x := v.(type) {
	case nil:
		return q.types["null"]
	case bool:
		return q.types["boolean"]
	case string:
		return q.types["string"]
	case float64:
		return q.types["number"] || (q.types["integer"] && x == math.Trunc(x) && !math.IsInf(x, 0))
	case []any:
		return q.types["array"]
	case map[string]any:
		return q.types["object"]
	}
	return false
}
