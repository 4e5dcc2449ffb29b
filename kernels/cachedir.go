package kernels

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// defaultCacheDir is where the cache lives unless Config.CacheDir says
// otherwise: $PTGO_CACHE_DIR, else $XDG_CACHE_HOME/ptgo/kernels, else
// ~/.cache/ptgo/kernels. It returns "" when none can be named (no HOME).
func defaultCacheDir() string {
	if d := getenv(EnvCacheDir); d != "" {
		return d
	}
	if d := getenv(envXDGCache); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "ptgo", "kernels")
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		return filepath.Join(home, ".cache", "ptgo", "kernels")
	}
	return ""
}

// tmpCacheDir is the fallback when HOME is unusable: /tmp/ptgo-<uid>/kernels.
func tmpCacheDir() string {
	return filepath.Join(os.TempDir(), "ptgo-"+strconv.Itoa(os.Getuid()), "kernels")
}

// openCacheDir creates (0700) and checks the cache directory. want is the
// configured directory ("" for the default chain). A directory that cannot be
// created falls back to /tmp/ptgo-<uid>/kernels; one that is not private to
// this user is refused with a warning and replaced by a fresh private
// temporary directory, so a compile never writes into or loads from a place
// another user controls.
func openCacheDir(want string, logf, warnf func(string, ...any)) (string, error) {
	dir := want
	if dir == "" {
		dir = defaultCacheDir()
	}
	if dir == "" || os.MkdirAll(dir, 0o700) != nil {
		fallback := tmpCacheDir()
		note := logf // HOME unusable (a container, a daemon): expected
		if want != "" || getenv(EnvCacheDir) != "" {
			note = warnf // a directory someone chose
		}
		note("kernels: cache directory %q cannot be created; using %s", dir, fallback)
		dir = fallback
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return freshTempCacheDir(warnf, fmt.Errorf("kernels: cannot create cache directory %s: %v", dir, err))
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return freshTempCacheDir(warnf, fmt.Errorf("kernels: cache directory %s: %v", dir, err))
	}
	if err := checkPrivateDir(abs); err != nil {
		return freshTempCacheDir(warnf, err)
	}
	return abs, nil
}

func freshTempCacheDir(warnf func(string, ...any), why error) (string, error) {
	tmp, err := os.MkdirTemp("", "ptgo-kernels-")
	if err != nil {
		return "", fmt.Errorf("%v; and no private temporary directory could be made either: %v; set %s to a directory you own", why, err, EnvCacheDir)
	}
	warnf("%v; using a private temporary directory %s for this process (kernels compiled now are not reused by later processes)", why, tmp)
	return tmp, nil
}

// checkPrivateDir refuses a cache directory another user could write into: the
// directory must be owned by us and not group- or world-writable, and every
// directory above it must be owned by us or root and, when writable by
// others, sticky (like /tmp), so nobody else can rename it away and put their
// own in its place.
func checkPrivateDir(dir string) error {
	uid := uint32(os.Getuid())
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("kernels: cache directory %s: %v", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("kernels: cache directory %s is not a directory; remove it or set %s", dir, EnvCacheDir)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("kernels: cannot read the owner of cache directory %s; set %s to a directory you own", dir, EnvCacheDir)
	}
	if st.Uid != uid {
		return fmt.Errorf("kernels: refusing cache directory %s: owned by uid %d, not by this user (uid %d); remove it, `chown` it to yourself, or set %s", dir, st.Uid, uid, EnvCacheDir)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("kernels: refusing cache directory %s: mode %04o lets other users write to it; run `chmod 700 %s` or set %s", dir, fi.Mode().Perm(), dir, EnvCacheDir)
	}
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("kernels: cache directory %s: parent %s: %v", dir, p, err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("kernels: cannot read the owner of %s above the cache directory; set %s", p, EnvCacheDir)
		}
		if st.Uid != uid && st.Uid != 0 {
			return fmt.Errorf("kernels: refusing cache directory %s: its parent %s is owned by uid %d; set %s to a directory in a tree you own", dir, p, st.Uid, EnvCacheDir)
		}
		if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&os.ModeSticky == 0 {
			return fmt.Errorf("kernels: refusing cache directory %s: its parent %s (mode %04o) lets other users replace it; run `chmod go-w %s` or set %s", dir, p, fi.Mode().Perm(), p, EnvCacheDir)
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}
