//go:build !cgo

package embed

import (
	"errors"

	"ptgo/bytecode/py"
)

// Available reports whether this build can embed Python (it needs cgo).
const Available = false

var errNoCgo = errors.New("embed: running Python inside Go tests needs cgo (CGO_ENABLED=1)")

// Do reports that Python cannot be embedded without cgo.
func Do(fn func(api py.API) error) error { return errNoCgo }

// Exec reports that Python cannot be embedded without cgo.
func Exec(api py.API, name, src string) (py.Obj, error) { return 0, errNoCgo }
