package kernels

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const nobody = 65534

var defaultDirTests = []struct {
	name                string
	cacheDir, xdg, home string
	want                string
}{
	{"PTGO_CACHE_DIR wins", "/c/k", "/x", "/h", "/c/k"},
	{"XDG_CACHE_HOME", "", "/x", "/h", "/x/ptgo/kernels"},
	{"relative XDG_CACHE_HOME is ignored", "", "rel", "/h", "/h/.cache/ptgo/kernels"},
	{"HOME", "", "", "/h", "/h/.cache/ptgo/kernels"},
	{"nothing", "", "", "", ""},
}

func TestDefaultCacheDir(t *testing.T) {
	for _, tt := range defaultDirTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvCacheDir, tt.cacheDir)
			t.Setenv(envXDGCache, tt.xdg)
			t.Setenv("HOME", tt.home)
			require.Equal(t, tt.want, defaultCacheDir())
		})
	}
}

// cacheDirTests prepare a directory tree under root and say whether the
// cache directory root/a/kernels is accepted.
var cacheDirTests = []struct {
	name    string
	prepare func(t *testing.T, root string)
	refused string // "" when accepted
}{
	{"created fresh", func(t *testing.T, root string) {}, ""},
	{"existing private", func(t *testing.T, root string) {
		require.NoError(t, os.MkdirAll(filepath.Join(root, "a", "kernels"), 0o700))
	}, ""},
	{"existing 0755 is not writable by others", func(t *testing.T, root string) {
		require.NoError(t, os.MkdirAll(filepath.Join(root, "a", "kernels"), 0o755))
	}, ""},
	{"owned by another user", func(t *testing.T, root string) {
		dir := filepath.Join(root, "a", "kernels")
		require.NoError(t, os.MkdirAll(dir, 0o700))
		require.NoError(t, os.Chown(dir, nobody, nobody))
	}, "owned by uid 65534, not by this user"},
	{"group writable", func(t *testing.T, root string) {
		dir := filepath.Join(root, "a", "kernels")
		require.NoError(t, os.MkdirAll(dir, 0o700))
		require.NoError(t, os.Chmod(dir, 0o770))
	}, "mode 0770 lets other users write to it"},
	{"world-writable parent without sticky bit", func(t *testing.T, root string) {
		require.NoError(t, os.MkdirAll(filepath.Join(root, "a", "kernels"), 0o700))
		require.NoError(t, os.Chmod(filepath.Join(root, "a"), 0o777))
	}, "lets other users replace it"},
	{"world-writable sticky parent, like /tmp", func(t *testing.T, root string) {
		require.NoError(t, os.MkdirAll(filepath.Join(root, "a", "kernels"), 0o700))
		require.NoError(t, os.Chmod(filepath.Join(root, "a"), 0o777|os.ModeSticky))
	}, ""},
	{"parent owned by another user", func(t *testing.T, root string) {
		require.NoError(t, os.MkdirAll(filepath.Join(root, "a", "kernels"), 0o700))
		require.NoError(t, os.Chown(filepath.Join(root, "a"), nobody, nobody))
	}, "its parent"},
}

func TestCacheDirPermissions(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to chown directories to another user; run the tests as root")
	}
	for _, tt := range cacheDirTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("TMPDIR", t.TempDir())
			root := t.TempDir()
			tt.prepare(t, root)
			want := filepath.Join(root, "a", "kernels")
			rec := &recorder{}
			got, err := openCacheDir(want, rec.logf, rec.warnf)
			require.NoError(t, err)
			if tt.refused == "" {
				require.Equal(t, want, got)
				require.Empty(t, rec.Warnings())
				return
			}
			require.NotEqual(t, want, got)
			require.True(t, strings.HasPrefix(filepath.Base(got), "ptgo-kernels-"), got)
			fi, err := os.Stat(got)
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
			warns := rec.Warnings()
			require.Len(t, warns, 1)
			require.Contains(t, warns[0], "refusing cache directory "+want)
			require.Contains(t, warns[0], tt.refused)
			require.Contains(t, warns[0], "using a private temporary directory "+got)
		})
	}
}

func TestCacheDirCreatedPrivate(t *testing.T) {
	root := t.TempDir()
	want := filepath.Join(root, "x", "y", "kernels")
	got, err := openCacheDir(want, (&recorder{}).logf, (&recorder{}).warnf)
	require.NoError(t, err)
	require.Equal(t, want, got)
	for _, d := range []string{want, filepath.Dir(want), filepath.Dir(filepath.Dir(want))} {
		fi, err := os.Stat(d)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), d)
	}
}

func TestCacheDirFallsBackWhenHomeUnusable(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv(EnvCacheDir, "")
	t.Setenv(envXDGCache, "")
	homeFile := filepath.Join(t.TempDir(), "not-a-directory")
	require.NoError(t, os.WriteFile(homeFile, nil, 0o600))
	t.Setenv("HOME", homeFile)

	rec := &recorder{}
	got, err := openCacheDir("", rec.logf, rec.warnf)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(tmp, "ptgo-"+strconv.Itoa(os.Getuid()), "kernels"), got)
	require.Empty(t, rec.Warnings(), "an unusable HOME is expected in daemons: logged, not warned")
	require.Len(t, rec.Logs(), 1)

	// A directory the user chose that cannot be created is worth a warning.
	rec = &recorder{}
	got2, err := openCacheDir(filepath.Join(homeFile, "kernels"), rec.logf, rec.warnf)
	require.NoError(t, err)
	require.Equal(t, got, got2)
	require.Len(t, rec.Warnings(), 1)
}
