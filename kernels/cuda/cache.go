package cuda

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// EnvCacheDir is the kernels package's cache root; CUDA binaries go to its cuda/ sibling
// directory ($PTGO_CACHE_DIR/cuda).
const EnvCacheDir = "PTGO_CACHE_DIR"

// CacheDir is where a Compiler keeps binaries unless told otherwise.
func CacheDir() string {
	if d := os.Getenv(EnvCacheDir); d != "" {
		return filepath.Join(d, "cuda")
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "ptgo", "cuda")
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		return filepath.Join(home, ".cache", "ptgo", "cuda")
	}
	return filepath.Join(os.TempDir(), "ptgo-"+strconv.Itoa(os.Getuid()), "cuda")
}

// Compiler compiles through a Toolchain into a content-addressed disk cache.
type Compiler struct {
	TC   Toolchain
	Dir  string
	Kind Kind
	Arch Arch
	// Opts are NVRTC options added to every compile (part of the key).
	Opts []string

	mu    sync.Mutex
	cache map[string]*Artifact
	// Logf, when set, receives cache hits and compile times.
	Logf func(format string, args ...any)
}

// Artifact is a compiled unit: where its binary lives and its bytes.
type Artifact struct {
	Name   string
	Key    string
	Path   string
	Binary *Binary
	Cached bool
	Time   time.Duration
}

// DefaultOpts are the NVRTC options of every ptgo kernel: IEEE division and square root, no
// flush to zero, no contraction into fused multiply-adds (the C backend's -ffp-contract=off:
// each op rounds as the reference interpreter's does), device code only.
var DefaultOpts = []string{"--fmad=false", "--ftz=false", "--prec-div=true", "--prec-sqrt=true", "-default-device", "--std=c++17"}

// NewCompiler returns a compiler for arch into dir ("" for CacheDir()).
func NewCompiler(tc Toolchain, dir string, kind Kind, arch Arch) (*Compiler, error) {
	if dir == "" {
		dir = CacheDir()
	}
	if err := privateDir(dir); err != nil {
		return nil, err
	}
	return &Compiler{TC: tc, Dir: dir, Kind: kind, Arch: arch, Opts: DefaultOpts, cache: map[string]*Artifact{}}, nil
}

// privateDir creates dir (0700) and refuses one another user owns or may write: a cubin loaded
// from there runs on the GPU with this process's rights.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cuda: cannot create the cache directory %s: %v; set %s", dir, err, EnvCacheDir)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("cuda: cache directory %s: %v", dir, err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != uint32(os.Getuid()) {
		return fmt.Errorf("cuda: refusing cache directory %s: owned by uid %d, not this user; set %s", dir, st.Uid, EnvCacheDir)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("cuda: refusing cache directory %s: mode %04o lets others write; chmod 700 it or set %s", dir, fi.Mode().Perm(), EnvCacheDir)
	}
	return nil
}

// Key is the content address of src for this compiler: sha256 over the target, the NVRTC
// version, the options and the text.
func (c *Compiler) Key(src string) string {
	h := sha256.New()
	fmt.Fprintf(h, "ptgo-cuda-v1\x00%s\x00%d\x00nvrtc %s\x00%s\x00", c.Kind, c.Arch, c.TC.Version(), strings.Join(c.Opts, "\x01"))
	h.Write([]byte(src))
	return hex.EncodeToString(h.Sum(nil))
}

// Compile returns the binary of src: from this process's memory, from a verified cache entry,
// or compiled now and published.
func (c *Compiler) Compile(name, src string) (*Artifact, error) {
	key := c.Key(src)
	c.mu.Lock()
	if a, ok := c.cache[key]; ok {
		c.mu.Unlock()
		return a, nil
	}
	c.mu.Unlock()
	start := time.Now()
	path := filepath.Join(c.Dir, key[:2], key+"."+c.Kind.String())
	if data, err := readVerified(path); err == nil {
		a := &Artifact{Name: name, Key: key, Path: path, Binary: &Binary{Kind: c.Kind, Arch: c.Arch, Data: data}, Cached: true, Time: time.Since(start)}
		c.remember(a)
		return a, nil
	}
	bin, err := c.TC.Compile(name, src, c.Kind, c.Arch, c.Opts)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("cuda: cache: %v", err)
	}
	_ = writeAtomic(path+".cu", []byte(src))
	if err := writeAtomic(path, bin.Data); err != nil {
		return nil, err
	}
	if err := writeAtomic(path+".sum", []byte(checksum(bin.Data))); err != nil {
		return nil, err
	}
	a := &Artifact{Name: name, Key: key, Path: path, Binary: bin, Time: time.Since(start)}
	if c.Logf != nil {
		c.Logf("cuda: compiled %s for %s (%s) in %.1f ms, %d bytes, %s", name, c.Arch, c.Kind, float64(a.Time.Microseconds())/1000, len(bin.Data), path)
	}
	c.remember(a)
	return a, nil
}

func (c *Compiler) remember(a *Artifact) {
	c.mu.Lock()
	c.cache[a.Key] = a
	c.mu.Unlock()
}

func checksum(data []byte) string {
	s := sha256.Sum256(data)
	return strconv.Itoa(len(data)) + " " + hex.EncodeToString(s[:]) + "\n"
}

// readVerified returns a cache entry's bytes when its sidecar checksum matches.
func readVerified(path string) ([]byte, error) {
	sum, err := os.ReadFile(path + ".sum")
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if checksum(data) != string(sum) {
		return nil, fmt.Errorf("cuda: cache entry %s does not match its checksum", path)
	}
	return data, nil
}

func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("cuda: cache: %v", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("cuda: cache: writing %s: %v", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cuda: cache: %v", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("cuda: cache: %v", err)
	}
	return nil
}
