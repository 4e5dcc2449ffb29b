package kernels

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDefault is the only test that builds the process-wide Compiler; it
// points it at a temporary cache first and starts from a fresh one (-count=2).
func TestDefault(t *testing.T) {
	needLoader(t)
	defaultCompiler.once, defaultCompiler.c, defaultCompiler.err = sync.Once{}, nil, nil
	dir := t.TempDir()
	t.Setenv(EnvCacheDir, dir)
	t.Setenv(EnvISA, "")
	t.Setenv(EnvCC, "")
	libs, err := CompileAll(context.Background(), []Source{testSource(t, "status.c")})
	require.NoError(t, err)
	lib, err := Compile(context.Background(), testSource(t, "status.c"))
	require.NoError(t, err)
	require.Same(t, libs[0], lib)
	c, err := Default()
	require.NoError(t, err)
	require.Equal(t, dir, c.Dir())
	require.Equal(t, DetectISA().Name, c.ISA().Name)
	require.Subset(t, c.Flags(), []string{"-O3", "-fopenmp", "-fPIC", "-shared", "-lm"})
	require.Subset(t, c.Flags(), c.ISA().Flags)
	require.NotContains(t, c.Flags(), "-ffast-math")
}
