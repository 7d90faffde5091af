package persistence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

var (
	errNilRecord     = errors.New("nil record")
	errBadOptions    = errors.New("invalid save options: Base and Unchanged must be >= 0 and Unchanged <= len(Messages)")
	errDataNotObject = fmt.Errorf("%w: record data is not a JSON object", ErrDamaged)
)

func errMessageNotObject(i int) error {
	return fmt.Errorf("%w: message %d is not a JSON object", ErrDamaged, i)
}

func errSchema(v int) error {
	return fmt.Errorf("%w: schema version %d, this build reads %d", ErrSchemaVersion, v, SchemaVersion)
}

func validObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 1 && b[0] == '{' && json.Valid(b)
}
