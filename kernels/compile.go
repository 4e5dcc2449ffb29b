package kernels

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"ptgo/kernels/dl"
)

// Source is one C translation unit.
type Source struct {
	// Name names the unit in messages and logs ("graph_3").
	Name string
	// Text is the C source; it starts with Header.
	Text string
	// ExtraFlags are added after the standard flags (-DNAME=1, -fno-…); they
	// are part of the cache key. Output and mode flags are refused.
	ExtraFlags []string
	// Parts, when there are two or more, are translation units that together
	// make the library Text describes (each starts with Header; Text stays the
	// whole unit, kept beside the library for reading): they compile to objects
	// concurrently, within the compiler's job limit, and link into one library.
	// A cold compile of a large graph then uses every core. They are the cache
	// key in Text's place.
	Parts []string
}

// Artifact is a compiled unit in the disk cache.
type Artifact struct {
	// Name is the name of the Source that produced it (in a process, the
	// first of several Sources with the same content).
	Name string
	// Key is the content address (hex sha256).
	Key string
	// Path is the shared library.
	Path string
	// SourcePath is the kept copy of the source, for debugging.
	SourcePath string
	// Cached is true when the entry was found in the disk cache and the
	// compiler did not run.
	Cached bool
}

// Compile returns src compiled and loaded. The same key compiled again in this
// process returns the same *Library without touching the disk; a verified disk
// cache entry is loaded without running the compiler; otherwise the compiler
// runs (at most Config.Jobs at once) and the result is published atomically.
// It refuses an ISA level this CPU cannot run.
func (c *Compiler) Compile(ctx context.Context, src Source) (*Library, error) {
	if err := c.isa.CheckRunnable(); err != nil {
		return nil, err
	}
	if err := dl.Check(); err != nil {
		return nil, err
	}
	key, err := c.key(src)
	if err != nil {
		return nil, err
	}
	for {
		c.mu.Lock()
		f, waiting := c.loaded[key]
		if !waiting {
			f = &flight{done: make(chan struct{})}
			c.loaded[key] = f
		}
		c.mu.Unlock()
		if !waiting {
			lib, err := c.load(ctx, src, key)
			c.mu.Lock()
			f.lib, f.err = lib, err
			if err != nil {
				delete(c.loaded, key)
			} else {
				lib.owner, lib.refs = c, 1
			}
			c.mu.Unlock()
			close(f.done)
			return lib, err
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, fmt.Errorf("kernels: waiting for %q to compile: %w", src.Name, ctx.Err())
		}
		// The loader's context ended, not ours: load it ourselves.
		if f.err != nil && ctx.Err() == nil && (errors.Is(f.err, context.Canceled) || errors.Is(f.err, context.DeadlineExceeded)) {
			continue
		}
		if f.err != nil {
			return nil, f.err
		}
		c.mu.Lock()
		if f.lib.closed { // released to nothing since: load it again
			c.mu.Unlock()
			continue
		}
		f.lib.refs++
		c.mu.Unlock()
		return f.lib, nil
	}
}

// CompileAll compiles and loads srcs in parallel: cache hits load at once,
// compiler runs are bounded by Config.Jobs. libs[i] is nil where srcs[i]
// failed; the error joins every failure.
func (c *Compiler) CompileAll(ctx context.Context, srcs []Source) ([]*Library, error) {
	libs := make([]*Library, len(srcs))
	errs := make([]error, len(srcs))
	var wg sync.WaitGroup
	for i, src := range srcs {
		wg.Go(func() { libs[i], errs[i] = c.Compile(ctx, src) })
	}
	wg.Wait()
	return libs, errors.Join(errs...)
}

// Build compiles src into the disk cache without loading it, for any ISA level
// (compile-only use: cross-level tests, warming a cache for another machine).
func (c *Compiler) Build(ctx context.Context, src Source) (*Artifact, error) {
	key, err := c.key(src)
	if err != nil {
		return nil, err
	}
	return c.build(ctx, src, key)
}

func (c *Compiler) key(src Source) (string, error) {
	if strings.TrimSpace(src.Text) == "" {
		return "", fmt.Errorf("kernels: source %q is empty; the code generator produced no code", src.Name)
	}
	if err := checkExtraFlags(src.Name, src.ExtraFlags); err != nil {
		return "", err
	}
	text := src.Text
	if len(src.Parts) > 1 {
		text = "parts:" + strconv.Itoa(len(src.Parts))
		for _, p := range src.Parts {
			text += "\x00" + p
		}
	}
	return cacheKey(c.tc.Version, c.isa.Name, c.keyFlags(src), text), nil
}

// compileFlags are the flags before the source file; libFlags follow it.
func (c *Compiler) compileFlags(src Source) []string {
	return append(append([]string(nil), c.flags...), src.ExtraFlags...)
}

func (c *Compiler) keyFlags(src Source) []string {
	return append(c.compileFlags(src), libFlags...)
}

func (c *Compiler) load(ctx context.Context, src Source, key string) (*Library, error) {
	start := time.Now()
	art, err := c.build(ctx, src, key)
	if err != nil {
		return nil, err
	}
	h, err := dl.Open(art.Path)
	if err != nil {
		return nil, err
	}
	if art.Cached {
		c.logf("kernels: loaded %s in %.2f ms (cache hit, %s)", src.Name, ms(time.Since(start)), art.Path)
	}
	return &Library{Artifact: *art, handle: h}, nil
}

// build returns the verified cache entry of src, compiling it on a miss or
// when the entry is damaged.
func (c *Compiler) build(ctx context.Context, src Source, key string) (*Artifact, error) {
	e := newEntry(c.dir, key)
	art := &Artifact{Name: src.Name, Key: key, Path: e.so(), SourcePath: e.src()}
	verr := e.verify()
	if verr == nil {
		art.Cached = true
		return art, nil
	}
	switch {
	case errors.Is(verr, errNoEntry):
	case errors.Is(verr, errUnpublished):
		c.logf("kernels: cache entry of %q is incomplete (%s: %v); rebuilding it", src.Name, e.so(), verr)
	default:
		c.warnf("kernels: cache entry of %q is damaged (%s: %v); rebuilding it", src.Name, e.so(), verr)
	}
	if err := c.compile(ctx, src, e); err != nil {
		return nil, err
	}
	return art, nil
}

// compile runs the compiler into a temporary file beside the entry, fsyncs
// it, renames it into place, then publishes the sidecar checksum. Readers
// verify against the sidecar, so they never load a partial or mismatched
// library; two processes compiling one key both publish whole files.
func (c *Compiler) compile(ctx context.Context, src Source, e entry) error {
	start := time.Now()
	if err := os.MkdirAll(e.shard, 0o700); err != nil {
		return fmt.Errorf("kernels: cannot create cache directory %s: %v; check the permissions of %s or set %s", e.shard, err, c.dir, EnvCacheDir)
	}
	if err := writeFileAtomic(e.src(), []byte(src.Text)); err != nil {
		return fmt.Errorf("kernels: cannot write source of %q (%s): %v; check free space and permissions in %s", src.Name, e.src(), err, c.dir)
	}
	tmp, err := os.CreateTemp(e.shard, ".tmp-"+e.key+"-*.so")
	if err != nil {
		return fmt.Errorf("kernels: cannot create a temporary file in %s: %v; check free space and permissions", e.shard, err)
	}
	tmpPath := tmp.Name()
	tmp.Close()
	defer os.Remove(tmpPath) // fails harmlessly once renamed

	var objects []string
	if len(src.Parts) > 1 {
		var err error
		if objects, err = c.compileParts(ctx, src, e); err != nil {
			return err
		}
		defer func() {
			for _, o := range objects {
				os.Remove(o)
			}
		}()
	}
	select {
	case c.jobs <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("kernels: waiting to compile %q: %w", src.Name, ctx.Err())
	}
	args := append(append([]string(nil), c.tc.Command[1:]...), c.compileFlags(src)...)
	if objects != nil {
		args = append(append(append(args, "-o", tmpPath), objects...), libFlags...)
	} else {
		args = append(append(args, "-o", tmpPath, e.src()), libFlags...)
	}
	cmd := exec.CommandContext(ctx, c.tc.Command[0], args...)
	cmd.Env = compilerEnv()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	<-c.jobs
	if runErr != nil && ctx.Err() != nil {
		return fmt.Errorf("kernels: compiling %q stopped (%s): %w", src.Name, e.src(), ctx.Err())
	}
	if runErr != nil {
		return &CompileError{Name: src.Name, SourcePath: e.src(), Command: append([]string{c.tc.Command[0]}, args...), Output: trimOutput(out.String()), Err: runErr}
	}
	compiled := time.Since(start)
	if err := syncFile(tmpPath); err != nil {
		return fmt.Errorf("kernels: cannot fsync %s: %v; check the file system of %s", tmpPath, err, c.dir)
	}
	size, sum, err := hashFile(tmpPath)
	if err != nil {
		return fmt.Errorf("kernels: cannot read back %s: %v", tmpPath, err)
	}
	if err := os.Rename(tmpPath, e.so()); err != nil {
		return fmt.Errorf("kernels: cannot publish %s: %v; check permissions in %s", e.so(), err, c.dir)
	}
	if err := writeFileAtomic(e.sum(), []byte(formatSum(size, sum))); err != nil {
		return fmt.Errorf("kernels: cannot write %s: %v; check free space and permissions in %s", e.sum(), err, c.dir)
	}
	c.logf("kernels: compiled %s in %.1f ms (cache miss; compiler %.1f ms, %d bytes, %s)",
		src.Name, ms(time.Since(start)), ms(compiled), size, e.so())
	if w := strings.TrimSpace(out.String()); w != "" {
		c.logf("kernels: compiler output for %s:\n%s", src.Name, trimOutput(w))
	}
	return nil
}

// compileParts compiles src's parts to object files beside the entry, concurrently within the
// job limit, and returns their paths (the caller links and removes them).
func (c *Compiler) compileParts(ctx context.Context, src Source, e entry) ([]string, error) {
	objects := make([]string, len(src.Parts))
	errs := make([]error, len(src.Parts))
	var wg sync.WaitGroup
	for i, part := range src.Parts {
		base := filepath.Join(e.shard, fmt.Sprintf(".tmp-%s-part%d-%d", e.key, i, os.Getpid()))
		objects[i] = base + ".o"
		wg.Go(func() {
			defer os.Remove(base + ".c")
			if err := os.WriteFile(base+".c", []byte(part), 0o600); err != nil {
				errs[i] = fmt.Errorf("kernels: cannot write part %d of %q (%s): %v; check free space and permissions in %s", i, src.Name, base+".c", err, c.dir)
				return
			}
			select {
			case c.jobs <- struct{}{}:
			case <-ctx.Done():
				errs[i] = fmt.Errorf("kernels: waiting to compile %q: %w", src.Name, ctx.Err())
				return
			}
			defer func() { <-c.jobs }()
			args := append(append([]string(nil), c.tc.Command[1:]...), c.compileFlags(src)...)
			args = append(args, "-c", "-o", objects[i], base+".c")
			cmd := exec.CommandContext(ctx, c.tc.Command[0], args...)
			cmd.Env = compilerEnv()
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				if ctx.Err() != nil {
					errs[i] = fmt.Errorf("kernels: compiling %q stopped (%s): %w", src.Name, base+".c", ctx.Err())
					return
				}
				errs[i] = &CompileError{Name: src.Name, SourcePath: e.src(), Command: append([]string{c.tc.Command[0]}, args...), Output: trimOutput(out.String()), Err: err}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, o := range objects {
			os.Remove(o)
		}
		return nil, err
	}
	return objects, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
