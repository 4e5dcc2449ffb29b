package kernels

import (
	"context"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/kernels/dl"
)

// recorder collects Logf and Warnf lines.
type recorder struct {
	mu    sync.Mutex
	logs  []string
	warns []string
}

func (r *recorder) logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

func (r *recorder) warnf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warns = append(r.warns, fmt.Sprintf(format, args...))
}

func (r *recorder) Warnings() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.warns...)
}

func (r *recorder) Logs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.logs...)
}

// newTestCompiler returns a Compiler with a fresh cache directory (unless cfg
// names one) whose log and warning lines go to the returned recorder.
func newTestCompiler(t testing.TB, cfg Config) (*Compiler, *recorder) {
	t.Helper()
	rec := &recorder{}
	if cfg.CacheDir == "" {
		cfg.CacheDir = t.TempDir()
	}
	cfg.Logf, cfg.Warnf = rec.logf, rec.warnf
	c, err := New(context.Background(), cfg)
	require.NoError(t, err)
	return c, rec
}

// testSource returns testdata/<file> after Header, named after the file.
func testSource(t testing.TB, file string) Source {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("testdata", file))
	require.NoError(t, err)
	return Source{Name: strings.TrimSuffix(file, ".c"), Text: Header + string(text)}
}

// poolSource is testSource with PoolRuntime: parallel regions on ptgo's pool.
func poolSource(t testing.TB, file string) Source {
	t.Helper()
	src := testSource(t, file)
	src.Name += "_pool"
	src.Text = Header + PoolRuntime + src.Text[len(Header):]
	return src
}

// countingCC writes a compiler script that records every compile (not the -v
// probe) in a log and passes through to gcc; with
// failAfter > 0 it fails every compile after the first failAfter.
func countingCC(t *testing.T, failAfter int) (cc string, count func() int) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "compiles.log")
	script := fmt.Sprintf(`#!/bin/sh
[ "$1" = -v ] && exec gcc "$@"
echo compile >> %q
n=$(wc -l < %q)
if [ %d -gt 0 ] && [ "$n" -gt %d ]; then echo "fake cc: the compiler must not run again" >&2; exit 1; fi
exec gcc "$@"
`, log, log, failAfter, failAfter)
	cc = filepath.Join(dir, "fake-cc")
	require.NoError(t, os.WriteFile(cc, []byte(script), 0o755))
	return cc, func() int {
		data, err := os.ReadFile(log)
		if os.IsNotExist(err) {
			return 0
		}
		require.NoError(t, err)
		return strings.Count(string(data), "compile\n")
	}
}

// importedSymbols returns the undefined dynamic symbols of a shared library
// (what `nm -D` shows as U).
func importedSymbols(t *testing.T, path string) []string {
	t.Helper()
	f, err := elf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	syms, err := f.ImportedSymbols()
	require.NoError(t, err)
	names := make([]string, len(syms))
	for i, s := range syms {
		names[i] = s.Name
	}
	return names
}

// exportedSymbols returns the defined dynamic function symbols of a library.
func exportedSymbols(t *testing.T, path string) []string {
	t.Helper()
	f, err := elf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	syms, err := f.DynamicSymbols()
	require.NoError(t, err)
	var names []string
	for _, s := range syms {
		if s.Section != elf.SHN_UNDEF && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			names = append(names, s.Name)
		}
	}
	return names
}

// needLoader skips a test that loads kernels when this build has no loader
// (CGO_ENABLED=0); the build-only tests still run there.
func needLoader(t testing.TB) {
	t.Helper()
	if err := dl.Check(); err != nil {
		t.Skipf("this test loads kernels: %v", err)
	}
}

func linesContaining(lines []string, sub string) []string {
	var out []string
	for _, l := range lines {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return out
}
