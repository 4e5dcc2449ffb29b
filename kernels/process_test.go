package kernels

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// envChildDir makes the test binary act as a second process compiling into a
// shared cache directory (see TestMain).
const envChildDir = "PTGO_KERNELS_TEST_CHILD_DIR"

// childReport is what a child process prints as one JSON line.
type childReport struct {
	Cached    []bool
	NewMs     float64 // kernels.New: compiler probe, ISA, cache directory
	CompileMs float64 // CompileAll of processSources
}

var processSources = []string{"vecadd.c", "status.c", "gelu.c", "omp_threads.c"}

func TestMain(m *testing.M) {
	if dir := os.Getenv(envChildDir); dir != "" {
		if err := runChild(dir); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runChild(dir string) error {
	var srcs []Source
	for _, f := range processSources {
		text, err := os.ReadFile("testdata/" + f)
		if err != nil {
			return err
		}
		srcs = append(srcs, Source{Name: f, Text: Header + string(text)})
	}
	start := time.Now()
	c, err := New(context.Background(), Config{CacheDir: dir})
	if err != nil {
		return err
	}
	made := time.Now()
	libs, err := c.CompileAll(context.Background(), srcs)
	if err != nil {
		return err
	}
	done := time.Now()
	k, err := libs[0].Kernel("vec_add")
	if err != nil {
		return err
	}
	a, b, out := []float32{1, 2, 3}, []float32{1, 1, 1}, make([]float32, 3)
	if err := k.Call(ptrs(a, b, out), []int64{3}, []float64{10}, 1); err != nil {
		return err
	}
	if out[2] != 13 {
		return fmt.Errorf("vec_add gave %v", out)
	}
	r := childReport{NewMs: ms(made.Sub(start)), CompileMs: ms(done.Sub(made))}
	for _, l := range libs {
		r.Cached = append(r.Cached, l.Cached)
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

// runChildren starts n copies of the test binary at once on dir.
func runChildren(t testing.TB, dir string, n int) []childReport {
	t.Helper()
	cmds := make([]*exec.Cmd, n)
	outs := make([]*[]byte, n)
	errs := make(chan error, n)
	for i := range cmds {
		cmds[i] = exec.Command(os.Args[0], "-test.run=^$")
		cmds[i].Env = append(os.Environ(), envChildDir+"="+dir)
		out := new([]byte)
		outs[i] = out
		cmd := cmds[i]
		go func() {
			var err error
			*out, err = cmd.CombinedOutput()
			if err != nil {
				err = fmt.Errorf("%v: %s", err, *out)
			}
			errs <- err
		}()
	}
	for range cmds {
		require.NoError(t, <-errs)
	}
	reports := make([]childReport, n)
	for i, out := range outs {
		require.NoError(t, json.Unmarshal(*out, &reports[i]), string(*out))
	}
	return reports
}

// TestTwoProcessesShareTheCache: two processes compile the same kernels into
// one directory at the same time; both load whole libraries, and a third
// process then loads everything without compiling.
func TestTwoProcessesShareTheCache(t *testing.T) {
	needLoader(t)
	dir := t.TempDir()
	runChildren(t, dir, 2)

	warm := runChildren(t, dir, 1)[0]
	require.Equal(t, []bool{true, true, true, true}, warm.Cached)
	t.Logf("warm start of %d kernels in a fresh process: New %.2f ms, CompileAll (verify + dlopen) %.2f ms",
		len(processSources), warm.NewMs, warm.CompileMs)

	c, _ := newTestCompiler(t, Config{CacheDir: dir})
	for _, f := range processSources {
		key, err := c.key(testSource(t, f))
		require.NoError(t, err)
		require.NoError(t, newEntry(dir, key).verify(), f)
	}
}
