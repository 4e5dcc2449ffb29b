package kernels

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Toolchain is the C compiler kernels are built with.
type Toolchain struct {
	// Command is the compiler command: an absolute path, then any arguments
	// that came with $CC ("ccache gcc" keeps both words).
	Command []string
	// Version identifies the compiler in cache keys: the version and
	// target lines of `cc -v` ("gcc version 12.2.0 (Debian 12.2.0-14);
	// Target: x86_64-linux-gnu").
	Version string
}

// ErrNoCompiler is matched (errors.Is) by the error FindToolchain returns when
// no usable C compiler exists; callers fall back to eager execution.
var ErrNoCompiler = errors.New("kernels: no C compiler")

// NoCompilerError says which compiler was looked for and how to install one.
type NoCompilerError struct {
	// Tried lists what was looked for: $CC's value, or "cc", "gcc".
	Tried []string
	// PATH is the search path that was used.
	PATH string
	// Err is the failure of the last candidate.
	Err error
}

func (e *NoCompilerError) Error() string {
	return fmt.Sprintf("kernels: no usable C compiler (tried %s; PATH=%q): %v; install one with `apt-get install gcc` or set CC to a C compiler — until then ptgo runs graphs eagerly",
		strings.Join(e.Tried, ", "), e.PATH, e.Err)
}

// Is makes errors.Is(err, ErrNoCompiler) true.
func (e *NoCompilerError) Is(target error) bool { return target == ErrNoCompiler }

func (e *NoCompilerError) Unwrap() error { return e.Err }

// versionCache memoises compiler identities for the process, keyed by the
// resolved command: probing runs the compiler driver once (≈1.5 ms).
var versionCache struct {
	sync.Mutex
	m map[string]string
}

// FindToolchain finds the C compiler: $CC (split on white space) when set,
// else cc, then gcc on PATH. Its version is probed once per process.
func FindToolchain(ctx context.Context) (*Toolchain, error) {
	var candidates [][]string
	if cc := strings.Fields(getenv(EnvCC)); len(cc) > 0 {
		candidates = [][]string{cc}
	} else {
		candidates = [][]string{{"cc"}, {"gcc"}}
	}
	notFound := &NoCompilerError{PATH: os.Getenv("PATH")}
	for _, cand := range candidates {
		notFound.Tried = append(notFound.Tried, strings.Join(cand, " "))
		path, err := exec.LookPath(cand[0])
		if err != nil {
			notFound.Err = err
			continue
		}
		cmd := append([]string{path}, cand[1:]...)
		version, err := compilerVersion(ctx, cmd)
		if err != nil {
			notFound.Err = err
			continue
		}
		return &Toolchain{Command: cmd, Version: version}, nil
	}
	return nil, notFound
}

func compilerVersion(ctx context.Context, cmd []string) (string, error) {
	key := strings.Join(cmd, "\x00")
	versionCache.Lock()
	v, ok := versionCache.m[key]
	versionCache.Unlock()
	if ok {
		return v, nil
	}
	out, err := runProbe(ctx, cmd, "-v")
	if err != nil {
		return "", err
	}
	v = parseVersion(out)
	versionCache.Lock()
	if versionCache.m == nil {
		versionCache.m = map[string]string{}
	}
	versionCache.m[key] = v
	versionCache.Unlock()
	return v, nil
}

// parseVersion picks the identity out of `cc -v` (gcc and clang print it on
// stderr): the first line naming a version, and the target line. Output it
// does not recognise is used whole.
func parseVersion(out string) string {
	var version, target string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case target == "" && strings.HasPrefix(line, "Target:"):
			target = line
		case version == "" && strings.Contains(line, " version "):
			version = line
		}
	}
	if version == "" || target == "" {
		return strings.TrimSpace(out)
	}
	return version + "; " + target
}

func runProbe(ctx context.Context, cmd []string, arg string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	args := append(append([]string(nil), cmd[1:]...), arg)
	c := exec.CommandContext(ctx, cmd[0], args...)
	c.Env = compilerEnv()
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Run(); err != nil {
		if msg := strings.TrimSpace(out.String()); msg != "" {
			err = fmt.Errorf("%v: %s", err, trimOutput(msg))
		}
		return "", fmt.Errorf("`%s %s` failed: %v", strings.Join(cmd, " "), arg, err)
	}
	if strings.TrimSpace(out.String()) == "" {
		return "", fmt.Errorf("`%s %s` printed nothing; is it a C compiler?", strings.Join(cmd, " "), arg)
	}
	return out.String(), nil
}

// compilerEnv is the compiler's environment: ours, with messages in plain
// ASCII English so that errors read the same everywhere.
func compilerEnv() []string {
	return append(os.Environ(), "LC_ALL=C")
}
