package kernels

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPartsLinkIntoOneLibrary: a Source split into parts builds one library holding every part's
// kernels (the pool's runtime in the first part serves the parallel regions of all), keyed apart
// from the same kernels as one unit, and leaves no object files behind.
func TestPartsLinkIntoOneLibrary(t *testing.T) {
	needLoader(t)
	c, _ := newTestCompiler(t, Config{})
	add := `
PTGO_KERNEL int k_add(void *const *ptrs, const int64_t *ints, const double *floats, int nthreads) {
	float *x = ptrs[0];
	#pragma omp parallel for num_threads(nthreads)
	for (int64_t i = 0; i < ints[0]; i++) x[i] += 1.0f;
	return 0;
}
`
	mul := `
PTGO_KERNEL int k_mul(void *const *ptrs, const int64_t *ints, const double *floats, int nthreads) {
	float *x = ptrs[0];
	#pragma omp parallel for num_threads(nthreads)
	for (int64_t i = 0; i < ints[0]; i++) x[i] *= 3.0f;
	return 0;
}
`
	src := Source{Name: "parts", Text: Header + PoolRuntime + add + mul,
		Parts: []string{Header + PoolRuntime + add, Header + mul}}
	lib, err := c.Compile(context.Background(), src)
	require.NoError(t, err)
	x := []float32{1, 2, 3, 4}
	for _, name := range []string{"k_add", "k_mul"} {
		k, err := lib.Kernel(name)
		require.NoError(t, err)
		require.NoError(t, k.Call(ptrs(x), []int64{4}, nil, 2))
	}
	require.Equal(t, []float32{6, 9, 12, 15}, x)

	one, err := c.key(Source{Name: "one", Text: src.Text})
	require.NoError(t, err)
	split, err := c.key(src)
	require.NoError(t, err)
	require.NotEqual(t, one, split)
	leftovers, _ := filepath.Glob(filepath.Join(c.Dir(), "*", ".tmp-*"))
	require.Empty(t, leftovers)
}

// TestPartsCompileErrorNamesTheUnit: a part that does not compile is a *CompileError naming the
// source, and nothing is published.
func TestPartsCompileErrorNamesTheUnit(t *testing.T) {
	needLoader(t)
	c, _ := newTestCompiler(t, Config{})
	good := "\nPTGO_KERNEL int ok(void *const *p, const int64_t *i, const double *f, int n) { return 0; }\n"
	src := Source{Name: "broken", Text: Header + good + "syntax error;",
		Parts: []string{Header + good, Header + "syntax error;"}}
	_, err := c.Compile(context.Background(), src)
	var ce *CompileError
	require.True(t, errors.As(err, &ce), "%v", err)
	require.Equal(t, "broken", ce.Name)
	key, _ := c.key(src)
	_, statErr := os.Stat(newEntry(c.Dir(), key).so())
	require.True(t, os.IsNotExist(statErr))
}
