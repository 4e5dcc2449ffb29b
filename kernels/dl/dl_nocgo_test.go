//go:build !cgo

package dl

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNoCgo(t *testing.T) {
	require.False(t, Available)
	_, err := Open("libm.so.6")
	require.ErrorContains(t, err, "CGO_ENABLED=1")
}
