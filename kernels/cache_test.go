package kernels

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWarmStartNeverRunsCompiler: a second Compiler (a new process, as far as
// the cache can tell) loads from disk with a compiler that fails if run.
func TestWarmStartNeverRunsCompiler(t *testing.T) {
	needLoader(t)
	cc, compiles := countingCC(t, 1)
	t.Setenv(EnvCC, cc)
	dir := t.TempDir()
	src := testSource(t, "vecadd.c")

	first, rec1 := newTestCompiler(t, Config{CacheDir: dir})
	lib1, err := first.Compile(context.Background(), src)
	require.NoError(t, err)
	require.False(t, lib1.Cached)
	require.Equal(t, 1, compiles())
	require.Len(t, rec1.Logs(), 1)
	require.Contains(t, rec1.Logs()[0], "cache miss")

	second, rec2 := newTestCompiler(t, Config{CacheDir: dir})
	lib2, err := second.Compile(context.Background(), src)
	require.NoError(t, err)
	require.True(t, lib2.Cached)
	require.Equal(t, 1, compiles(), "a cache hit ran the compiler")
	require.Len(t, rec2.Logs(), 1)
	require.Contains(t, rec2.Logs()[0], "cache hit")
	require.Empty(t, rec2.Warnings())
	k, err := lib2.Kernel("vec_add")
	require.NoError(t, err)
	a, b, out := []float32{1, 2}, []float32{3, 4}, []float32{0, 0}
	require.NoError(t, k.Call(ptrs(a, b, out), []int64{2}, []float64{1}, 1))
	require.Equal(t, []float32{4, 6}, out)

	// The fake compiler really fails when run, so the check above can fail.
	_, err = second.Compile(context.Background(), Source{Name: "other", Text: src.Text + "\n"})
	require.ErrorContains(t, err, "the compiler must not run again")
}

func TestInProcessCacheReturnsSameLibrary(t *testing.T) {
	needLoader(t)
	c, _ := newTestCompiler(t, Config{})
	src := testSource(t, "vecadd.c")
	lib1, err := c.Compile(context.Background(), src)
	require.NoError(t, err)
	// With the disk entry gone, only the in-process cache can answer.
	require.NoError(t, os.RemoveAll(c.Dir()))
	lib2, err := c.Compile(context.Background(), Source{Name: "renamed", Text: src.Text})
	require.NoError(t, err)
	require.Same(t, lib1, lib2)
}

func TestConcurrentCompilesOfOneKeyCompileOnce(t *testing.T) {
	needLoader(t)
	cc, compiles := countingCC(t, 0)
	t.Setenv(EnvCC, cc)
	c, _ := newTestCompiler(t, Config{})
	src := testSource(t, "vecadd.c")

	const n = 8
	libs := make([]*Library, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { libs[i], errs[i] = c.Compile(context.Background(), src) })
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		require.Same(t, libs[0], libs[i])
	}
	require.Equal(t, 1, compiles())
}

func TestCompileAll(t *testing.T) {
	needLoader(t)
	c, _ := newTestCompiler(t, Config{})
	srcs := []Source{testSource(t, "vecadd.c"), testSource(t, "syntax_error.c"), testSource(t, "status.c")}
	libs, err := c.CompileAll(context.Background(), srcs)
	var cerr *CompileError
	require.ErrorAs(t, err, &cerr)
	require.Equal(t, "syntax_error", cerr.Name)
	require.NotNil(t, libs[0])
	require.Nil(t, libs[1])
	require.NotNil(t, libs[2])
	_, err = libs[2].Kernel("status_of")
	require.NoError(t, err)
}

// damageTests break a cache entry in the ways a crash, a full disk or a bad
// sector would; each must be detected and rebuilt, never loaded.
var damageTests = []struct {
	name   string
	damage func(t *testing.T, a *Artifact)
	reason string
	warned bool // false: an expected state, logged rather than warned
}{
	{"truncated", func(t *testing.T, a *Artifact) {
		require.NoError(t, os.Truncate(a.Path, 100))
	}, "truncated", true},
	{"empty", func(t *testing.T, a *Artifact) {
		require.NoError(t, os.Truncate(a.Path, 0))
	}, "truncated", true},
	{"flipped byte", func(t *testing.T, a *Artifact) {
		data, err := os.ReadFile(a.Path)
		require.NoError(t, err)
		data[len(data)/2] ^= 0x40
		require.NoError(t, os.WriteFile(a.Path, data, 0o600))
	}, "corrupted", true},
	{"checksum file missing", func(t *testing.T, a *Artifact) {
		require.NoError(t, os.Remove(sumPath(a)))
	}, "publication in progress or interrupted", false},
	{"checksum file malformed", func(t *testing.T, a *Artifact) {
		require.NoError(t, os.WriteFile(sumPath(a), []byte("ptgo-kernel-sum v1\nsize x\n"), 0o600))
	}, "malformed", true},
	{"library missing", func(t *testing.T, a *Artifact) {
		require.NoError(t, os.Remove(a.Path))
	}, "no such file", true},
}

func sumPath(a *Artifact) string { return strings.TrimSuffix(a.Path, ".so") + ".sum" }

func TestDamagedEntryIsRebuilt(t *testing.T) {
	needLoader(t)
	for _, tt := range damageTests {
		t.Run(tt.name, func(t *testing.T) {
			c, rec := newTestCompiler(t, Config{})
			src := testSource(t, "vecadd.c")
			// Build without loading: a library this process has mapped must
			// never be damaged in place.
			art, err := c.Build(context.Background(), src)
			require.NoError(t, err)
			require.NoError(t, newEntry(c.Dir(), art.Key).verify())
			tt.damage(t, art)
			require.Error(t, newEntry(c.Dir(), art.Key).verify())

			lib, err := c.Compile(context.Background(), src)
			require.NoError(t, err)
			require.False(t, lib.Cached, "a damaged entry was used")
			notes := rec.Warnings()
			if tt.warned {
				require.Len(t, notes, 1)
				require.Contains(t, notes[0], "damaged")
			} else {
				require.Empty(t, notes)
				notes = linesContaining(rec.Logs(), "incomplete")
				require.Len(t, notes, 1)
			}
			require.Contains(t, notes[0], tt.reason)
			require.NoError(t, newEntry(c.Dir(), art.Key).verify())
			k, err := lib.Kernel("vec_add")
			require.NoError(t, err)
			a, b, out := []float32{1}, []float32{1}, []float32{0}
			require.NoError(t, k.Call(ptrs(a, b, out), []int64{1}, []float64{2}, 1))
			require.Equal(t, float32(3), out[0])
		})
	}
}

func TestCacheLayout(t *testing.T) {
	c, _ := newTestCompiler(t, Config{})
	src := testSource(t, "vecadd.c")
	art, err := c.Build(context.Background(), src)
	require.NoError(t, err)
	shard := c.Dir() + "/" + art.Key[:2] + "/"
	require.Equal(t, shard+art.Key+".so", art.Path)
	require.Equal(t, shard+art.Key+".c", art.SourcePath)
	kept, err := os.ReadFile(art.SourcePath)
	require.NoError(t, err)
	require.Equal(t, src.Text, string(kept))
	entries, err := os.ReadDir(shard)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, []string{art.Key + ".so", art.Key + ".c", art.Key + ".sum"}, names, "temporary files left behind")
	fi, err := os.Stat(shard)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())

	again, err := c.Build(context.Background(), src)
	require.NoError(t, err)
	require.True(t, again.Cached)
}

func TestKeyDependsOnFlagsAndISA(t *testing.T) {
	c, _ := newTestCompiler(t, Config{})
	src := testSource(t, "vecadd.c")
	base, err := c.key(src)
	require.NoError(t, err)

	withDefine := src
	withDefine.ExtraFlags = []string{"-DUNUSED=1"}
	k, err := c.key(withDefine)
	require.NoError(t, err)
	require.NotEqual(t, base, k)

	keyAt := func(level string) string {
		isa, err := LookupISA(level)
		require.NoError(t, err)
		other, _ := newTestCompiler(t, Config{ISA: isa, CacheDir: c.Dir()})
		k, err := other.key(src)
		require.NoError(t, err)
		return k
	}
	require.NotEqual(t, keyAt("baseline"), keyAt("sse4.2"))

	renamed := src
	renamed.Name = "another_name"
	k, err = c.key(renamed)
	require.NoError(t, err)
	require.Equal(t, base, k, "the name is a label, not content")
}
