//go:build cgo

package dl

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOpenAndSym(t *testing.T) {
	require.True(t, Available)
	h, err := Open("libm.so.6")
	require.NoError(t, err)
	addr, err := h.Sym("cos")
	require.NoError(t, err)
	require.NotZero(t, addr)

	_, err = h.Sym("ptgo_no_such_symbol")
	require.ErrorContains(t, err, `symbol "ptgo_no_such_symbol" not found`)
	require.ErrorContains(t, err, "undefined symbol")
	require.NoError(t, h.Close())
}

func TestOpenErrors(t *testing.T) {
	_, err := Open("/nonexistent/libptgo-kernel.so")
	require.ErrorContains(t, err, "kernels/dl: dlopen failed (/nonexistent/libptgo-kernel.so)")
	require.ErrorContains(t, err, "No such file")

	_, err = Handle{}.Sym("cos")
	require.ErrorContains(t, err, "not open")
	require.NoError(t, Handle{}.Close())
	require.Panics(t, func() { Call(0, nil, nil, nil, 1) })
}
