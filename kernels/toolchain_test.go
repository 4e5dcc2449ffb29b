package kernels

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFindToolchain(t *testing.T) {
	t.Setenv(EnvCC, "")
	tc, err := FindToolchain(context.Background())
	require.NoError(t, err, "the tests need a C compiler (apt-get install gcc)")
	require.True(t, filepath.IsAbs(tc.Command[0]), tc.Command[0])
	require.Contains(t, tc.Version, "; Target: ")

	// CC may carry arguments, like make's.
	gcc, err := FindToolchain(context.Background())
	require.NoError(t, err)
	t.Setenv(EnvCC, "  "+gcc.Command[0]+"  -std=gnu11 ")
	tc, err = FindToolchain(context.Background())
	require.NoError(t, err)
	require.Equal(t, []string{gcc.Command[0], "-std=gnu11"}, tc.Command)
}

var noCompilerTests = []struct {
	name, cc string
	want     []string
}{
	{"nothing on PATH", "", []string{"tried cc, gcc", "apt-get install gcc", "set CC"}},
	{"CC not found", "/nonexistent/bin/gcc-99", []string{"tried /nonexistent/bin/gcc-99", "apt-get install gcc"}},
	{"CC not a compiler", "false", []string{"tried false", "false -v` failed: exit status 1;"}},
}

func TestNoCompiler(t *testing.T) {
	// `false` must still be found once PATH is emptied.
	falseBin, err := exec.LookPath("false")
	require.NoError(t, err)
	binDir := t.TempDir()
	require.NoError(t, os.Symlink(falseBin, filepath.Join(binDir, "false")))

	for _, tt := range noCompilerTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PATH", binDir)
			t.Setenv(EnvCC, tt.cc)
			_, err := FindToolchain(context.Background())
			require.ErrorIs(t, err, ErrNoCompiler)
			var nc *NoCompilerError
			require.ErrorAs(t, err, &nc)
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}

	// New warns once per process, however often it is asked.
	noCompilerWarning = sync.Once{}
	t.Setenv("PATH", binDir)
	t.Setenv(EnvCC, "")
	rec := &recorder{}
	for range 3 {
		c, err := New(context.Background(), Config{CacheDir: t.TempDir(), Warnf: rec.warnf})
		require.Nil(t, c)
		require.ErrorIs(t, err, ErrNoCompiler)
	}
	warns := rec.Warnings()
	require.Len(t, warns, 1)
	require.True(t, strings.HasPrefix(warns[0], "kernels: no usable C compiler"), warns[0])
}

var parseVersionTests = []struct {
	name, out, want string
}{
	{"gcc", "Using built-in specs.\nCOLLECT_GCC=gcc\nTarget: x86_64-linux-gnu\nConfigured with: ../src/configure -v --with-pkgversion='Debian 12.2.0-14'\nThread model: posix\ngcc version 12.2.0 (Debian 12.2.0-14+deb12u1) \n",
		"gcc version 12.2.0 (Debian 12.2.0-14+deb12u1); Target: x86_64-linux-gnu"},
	{"clang", "Debian clang version 14.0.6\nTarget: x86_64-pc-linux-gnu\nThread model: posix\n",
		"Debian clang version 14.0.6; Target: x86_64-pc-linux-gnu"},
	{"unknown", " tcc 0.9.27 \n", "tcc 0.9.27"},
}

func TestParseVersion(t *testing.T) {
	for _, tt := range parseVersionTests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, parseVersion(tt.out))
		})
	}
}
