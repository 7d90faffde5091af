package actors

import (
	"fmt"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/braidhq/braid/internal/strictjson"
)

// checkWireJSON returns an error naming the first bytes field of m, at any
// depth, that is neither empty nor valid JSON. Every bytes field of Braid's
// protobuf forms carries JSON, empty meaning absent (proto/braidv1), and
// the forms are stored whole in an orchestrator's record: checking them
// when the record loads reports damage to them there, as a DamageError,
// rather than when a node's result or input is used later.
func checkWireJSON(m protoreflect.Message) error {
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		err = checkWireValue(fd, v)
		return err == nil
	})
	return err
}

func checkWireValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) error {
	switch {
	case fd.IsList():
		l := v.List()
		for i := range l.Len() {
			if err := checkWireItem(fd, l.Get(i)); err != nil {
				return fmt.Errorf("%s[%d]: %w", fd.Name(), i, err)
			}
		}
		return nil
	case fd.IsMap():
		var err error
		v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
			if e := checkWireItem(fd.MapValue(), mv); e != nil {
				err = fmt.Errorf("%s[%v]: %w", fd.Name(), k.Interface(), e)
			}
			return err == nil
		})
		return err
	}
	if err := checkWireItem(fd, v); err != nil {
		return fmt.Errorf("%s: %w", fd.Name(), err)
	}
	return nil
}

func checkWireItem(fd protoreflect.FieldDescriptor, v protoreflect.Value) error {
	switch fd.Kind() {
	case protoreflect.BytesKind:
		if b := v.Bytes(); len(b) > 0 && !strictjson.Valid(b) {
			return fmt.Errorf("not valid JSON")
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return checkWireJSON(v.Message())
	}
	return nil
}
