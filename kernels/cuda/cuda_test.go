package cuda

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeTC counts compiles and returns the source's bytes as the binary.
type fakeTC struct{ n atomic.Int32 }

func (f *fakeTC) Version() string { return "9.9" }
func (f *fakeTC) Compile(name, src string, kind Kind, arch Arch, opts []string) (*Binary, error) {
	f.n.Add(1)
	if strings.Contains(src, "reject") {
		return nil, &CompileError{Name: name, Log: "error: rejected", Err: errors.New("NVRTC_ERROR_COMPILATION")}
	}
	return &Binary{Kind: kind, Arch: arch, Data: []byte("bin:" + src)}, nil
}

func TestParseArch(t *testing.T) {
	for in, want := range map[string]Arch{"sm_90": 90, "compute_90": 90, "9.0": 90, "90": 90, "sm_90a": 90, "8.6": 86} {
		a, err := ParseArch(in)
		require.NoError(t, err, in)
		require.Equal(t, want, a, in)
	}
	for _, bad := range []string{"", "sm_x", "9", "1000"} {
		_, err := ParseArch(bad)
		require.Error(t, err, bad)
	}
	require.Equal(t, "sm_90", Arch(90).String())
}

func TestCompilerCache(t *testing.T) {
	dir := t.TempDir()
	tc := &fakeTC{}
	c, err := NewCompiler(tc, filepath.Join(dir, "c"), Cubin, 90)
	require.NoError(t, err)
	a, err := c.Compile("k", "src one")
	require.NoError(t, err)
	require.False(t, a.Cached)
	require.Equal(t, "bin:src one", string(a.Binary.Data))
	b, err := c.Compile("k", "src one")
	require.NoError(t, err)
	require.Same(t, a, b, "the second compile of the same text comes from memory")
	require.EqualValues(t, 1, tc.n.Load())

	// a fresh compiler (another process) reads the verified disk entry
	c2, err := NewCompiler(tc, filepath.Join(dir, "c"), Cubin, 90)
	require.NoError(t, err)
	d, err := c2.Compile("k", "src one")
	require.NoError(t, err)
	require.True(t, d.Cached)
	require.EqualValues(t, 1, tc.n.Load())

	// the key covers the arch, the kind and the NVRTC version
	c3, err := NewCompiler(tc, filepath.Join(dir, "c"), PTX, 90)
	require.NoError(t, err)
	require.NotEqual(t, c.Key("src one"), c3.Key("src one"))
	c4, err := NewCompiler(tc, filepath.Join(dir, "c"), Cubin, 80)
	require.NoError(t, err)
	require.NotEqual(t, c.Key("src one"), c4.Key("src one"))

	// a corrupted entry fails its checksum and is compiled again
	require.NoError(t, os.WriteFile(d.Path, []byte("garbage"), 0o600))
	c5, err := NewCompiler(tc, filepath.Join(dir, "c"), Cubin, 90)
	require.NoError(t, err)
	e, err := c5.Compile("k", "src one")
	require.NoError(t, err)
	require.False(t, e.Cached)
	require.Equal(t, "bin:src one", string(e.Binary.Data))
	require.EqualValues(t, 2, tc.n.Load())

	_, err = c.Compile("k", "reject me")
	var ce *CompileError
	require.ErrorAs(t, err, &ce)
}

func TestCacheDirIsPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "open")
	require.NoError(t, os.MkdirAll(dir, 0o777))
	require.NoError(t, os.Chmod(dir, 0o777))
	_, err := NewCompiler(&fakeTC{}, dir, Cubin, 90)
	require.ErrorContains(t, err, "lets others write")
}

func TestFindNVRTCOrder(t *testing.T) {
	root := t.TempDir()
	mk := func(p string) string {
		full := filepath.Join(root, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, nil, 0o644))
		return full
	}
	env := mk("env/libnvrtc.so.12")
	mk("env/libnvrtc-builtins.so.12.0")
	cu13 := mk("sp/nvidia/cu13/lib/libnvrtc.so.13")
	mk("sp/nvidia/cu13/lib/libnvrtc.alt.so.13")
	old := mk("sp/nvidia/cuda_nvrtc/lib/libnvrtc.so.11.2")
	got := FindNVRTC(filepath.Join(root, "env"), []string{filepath.Join(root, "sp")})
	want := append([]string{env}, nvrtcSonames...)
	want = append(want, cu13, old)
	require.Equal(t, want, got)
	// a file named directly comes first, as it is
	require.Equal(t, "/x/libnvrtc.so", FindNVRTC("/x/libnvrtc.so", nil)[0])
}

// TestLoadDriver: on a machine without a GPU, LoadDriver reports ErrNoDevice and the process
// goes on (DESIGN D4). On a GPU machine it reports the device.
func TestLoadDriver(t *testing.T) {
	d, err := LoadDriver()
	if err != nil {
		require.True(t, errors.Is(err, ErrNoDevice) || errors.Is(err, ErrUnavailable), "LoadDriver failed with %v, which callers cannot tell from a real failure", err)
		t.Logf("no GPU here, as expected without one: %v", err)
		return
	}
	n, err := d.DeviceCount()
	require.NoError(t, err)
	require.Positive(t, n)
	arch, err := DeviceArch(d, 0)
	require.NoError(t, err)
	t.Logf("driver %d, %d devices, device 0 is %s", d.Version(), n, arch)
}

// TestNVRTCCompiles compiles a small kernel to PTX and to a cubin. Without an NVRTC it skips,
// unless PTGO_REQUIRE_NVRTC is set (make test sets it where make setup installed one).
func TestNVRTCCompiles(t *testing.T) {
	n, err := LoadNVRTC(RepoSearchDirs("../.."))
	if err != nil {
		if os.Getenv("PTGO_REQUIRE_NVRTC") != "" {
			t.Fatalf("PTGO_REQUIRE_NVRTC is set and no NVRTC loads: %v", err)
		}
		t.Skipf("no NVRTC (make setup installs PyPI's nvidia-cuda-nvrtc into build/nvrtc): %v", err)
	}
	src := `extern "C" __global__ void k(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }`
	ptx, err := n.Compile("k", src, PTX, 90, DefaultOpts)
	require.NoError(t, err)
	require.Contains(t, string(ptx.Data), ".entry k(")
	require.Contains(t, string(ptx.Data), ".target sm_90")
	cubin, err := n.Compile("k", src, Cubin, 90, DefaultOpts)
	require.NoError(t, err)
	require.Equal(t, "\x7fELF", string(cubin.Data[:4]))
	_, err = n.Compile("bad", "this is not CUDA", PTX, 90, DefaultOpts)
	var ce *CompileError
	require.ErrorAs(t, err, &ce)
	require.NotEmpty(t, ce.Log)
	t.Logf("NVRTC %s from %s", n.Version(), n.Path)
}
