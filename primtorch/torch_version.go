package primtorch

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
)

// TorchVersion is a torch release, major and minor ("2.14.1+cpu" is {2, 14}).
//
// ptgo models one torch at a time: the one the process imported. Where torch's behaviour
// differs between the versions ptgo is tested against (Debian's 1.13, PyPI's 2.14), the
// difference is a row of a table keyed by version (VersionRows), never an `if` on the version
// in the code that uses it.
type TorchVersion struct{ Major, Minor int }

func (v TorchVersion) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// Before reports whether v is an earlier release than o.
func (v TorchVersion) Before(o TorchVersion) bool {
	return v.Major < o.Major || v.Major == o.Major && v.Minor < o.Minor
}

// ParseTorchVersion reads torch.__version__ ("1.13.0a0+git...", "2.14.1+cpu").
func ParseTorchVersion(s string) (TorchVersion, error) {
	s = strings.SplitN(s, "+", 2)[0]
	parts := strings.Split(s, ".")
	if len(parts) < 2 {
		return TorchVersion{}, fmt.Errorf("primtorch: cannot read torch version %q", s)
	}
	major, err := strconv.Atoi(parts[0])
	if err != nil {
		return TorchVersion{}, fmt.Errorf("primtorch: cannot read torch version %q", s)
	}
	minor := 0
	for _, c := range parts[1] { // "0a0" → 0
		if c < '0' || c > '9' {
			break
		}
		minor = minor*10 + int(c-'0')
	}
	return TorchVersion{major, minor}, nil
}

// Torch113 and Torch214 are the versions ptgo is built and tested against.
var (
	Torch113 = TorchVersion{1, 13}
	Torch214 = TorchVersion{2, 14}
)

// torch is the running torch; Debian's 1.13 until pybridge reads torch.__version__ at start
// (the Go tests run against /usr/bin/python3's torch 1.13).
var torch atomic.Pointer[TorchVersion]

// Torch is the torch version whose behaviour ptgo models.
func Torch() TorchVersion {
	if v := torch.Load(); v != nil {
		return *v
	}
	return Torch113
}

// SetTorch sets the running torch version (pybridge, at start; tests) and returns the previous.
func SetTorch(v TorchVersion) TorchVersion {
	prev := Torch()
	torch.Store(&v)
	return prev
}

// VersionRow is one row of a table keyed by torch version: what holds from Since on.
type VersionRow[T any] struct {
	Since TorchVersion
	Value T
}

// ForTorch returns the value of the last row at or below v (rows oldest first; the first row
// applies to anything older), like setup.py's TORCH_CXX table.
func ForTorch[T any](rows []VersionRow[T], v TorchVersion) T {
	if len(rows) == 0 {
		var zero T
		return zero
	}
	r := rows[0].Value
	for _, row := range rows[1:] {
		if v.Before(row.Since) {
			break
		}
		r = row.Value
	}
	return r
}

// TestedTorch reports whether rows has a row for exactly v: a table of facts measured per
// version (generated with that torch as the oracle) knows v itself rather than a neighbour.
func TestedTorch[T any](rows []VersionRow[T], v TorchVersion) bool {
	for _, row := range rows {
		if row.Since == v {
			return true
		}
	}
	return false
}
