package kernels

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var compileErrorTests = []struct {
	file string
	want []string // substrings of the compiler output
}{
	{"syntax_error.c", []string{"In function 'broken'", "error:", "undeclared_variable"}},
	{"implicit_decl.c", []string{"implicit declaration of function", "not_declared_anywhere", "-Werror=implicit-function-declaration"}},
	{"undefined_symbol.c", []string{"undefined reference", "ptgo_no_such_function"}},
}

func TestCompileError(t *testing.T) {
	needLoader(t)
	c, _ := newTestCompiler(t, Config{})
	for _, tt := range compileErrorTests {
		t.Run(tt.file, func(t *testing.T) {
			src := testSource(t, tt.file)
			_, err := c.Compile(context.Background(), src)
			var cerr *CompileError
			require.ErrorAs(t, err, &cerr)
			require.Equal(t, src.Name, cerr.Name)
			for _, w := range tt.want {
				require.Contains(t, cerr.Output, w)
			}
			kept, rerr := os.ReadFile(cerr.SourcePath)
			require.NoError(t, rerr, "the failing source must be kept")
			require.Equal(t, src.Text, string(kept))
			require.Contains(t, cerr.Command, "-O3")
			require.Contains(t, cerr.Command, cerr.SourcePath)
			msg := err.Error()
			require.True(t, strings.HasPrefix(msg, "kernels: compiling \""+src.Name+"\" failed ("+cerr.SourcePath+")"), msg)
			require.Contains(t, msg, "report a ptgo bug")
			// Nothing half-built is left to be loaded.
			_, serr := os.Stat(strings.TrimSuffix(cerr.SourcePath, ".c") + ".so")
			require.True(t, errors.Is(serr, os.ErrNotExist))
		})
	}
}

func TestCompileCancelled(t *testing.T) {
	needLoader(t)
	c, _ := newTestCompiler(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Compile(ctx, testSource(t, "vecadd.c"))
	require.ErrorIs(t, err, context.Canceled)
}

var badSourceTests = []struct {
	name string
	src  Source
	want string
}{
	{"empty", Source{Name: "e", Text: "  \n"}, "is empty"},
	{"output flag", Source{Name: "o", Text: "int x;", ExtraFlags: []string{"-o/tmp/x"}}, `"-o/tmp/x" of "o" is not allowed`},
	{"compile only", Source{Name: "c", Text: "int x;", ExtraFlags: []string{"-c"}}, "is not allowed"},
	{"not a flag", Source{Name: "f", Text: "int x;", ExtraFlags: []string{"extra.c"}}, "is not allowed"},
}

func TestBadSource(t *testing.T) {
	c, _ := newTestCompiler(t, Config{})
	for _, tt := range badSourceTests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Build(context.Background(), tt.src)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestTrimOutput(t *testing.T) {
	many := make([]string, 100)
	for i := range many {
		many[i] = fmt.Sprintf("line %d", i)
	}
	tests := []struct {
		name, in, want string
	}{
		{"empty", " \n", "(the compiler printed nothing)"},
		{"short", "a.c:1: error: x\n", "a.c:1: error: x"},
		{"many lines", strings.Join(many, "\n"), strings.Join(many[:maxOutputLines], "\n") + "\n… (60 more lines)"},
		{"one huge line", strings.Repeat("x", maxOutputBytes+10), strings.Repeat("x", maxOutputBytes) + fmt.Sprintf("\n… (output cut at %d bytes)", maxOutputBytes)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, trimOutput(tt.in))
		})
	}
}
