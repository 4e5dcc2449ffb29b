package kernels

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
)

// Config configures a Compiler. The zero Config is what Default uses.
type Config struct {
	// CacheDir overrides $PTGO_CACHE_DIR and the default directory chain.
	CacheDir string
	// ISA overrides $PTGO_CPU_ISA and detection when its Name is set.
	ISA ISA
	// Jobs bounds concurrent compiler processes; 0 means GOMAXPROCS.
	Jobs int
	// Logf receives one line per compile ("compiled X in N ms (cache miss)")
	// and per disk-cache load; nil prints nothing.
	Logf func(format string, args ...any)
	// Warnf receives warnings: no compiler (once per process), a refused
	// cache directory, a damaged cache entry being rebuilt. nil writes them to
	// stderr; pybridge routes them to Python's logging.
	Warnf func(format string, args ...any)
}

// Compiler compiles C translation units into shared libraries through a disk
// cache and loads them; a library stays loaded until every Compile that
// returned it has released it (Library.Release). It is safe for concurrent use.
type Compiler struct {
	tc    *Toolchain
	isa   ISA
	dir   string
	flags []string // baseFlags then the ISA's flags
	logf  func(string, ...any)
	warnf func(string, ...any)
	jobs  chan struct{} // one token per running compiler process

	mu     sync.Mutex
	loaded map[string]*flight // key -> library loaded (or loading) in this process
}

// flight is one key's load; waiters block on done.
type flight struct {
	done chan struct{}
	lib  *Library
	err  error
}

// noCompilerWarning makes the missing-compiler warning appear once per process.
var noCompilerWarning sync.Once

// New makes a Compiler: it finds the C compiler (probing its version once per
// process), picks the ISA level, and opens the cache directory. Without a C
// compiler it warns once per process and returns an error matching
// ErrNoCompiler; the caller then runs graphs eagerly.
func New(ctx context.Context, cfg Config) (*Compiler, error) {
	c := &Compiler{logf: cfg.Logf, warnf: cfg.Warnf, loaded: map[string]*flight{}}
	if c.logf == nil {
		c.logf = func(string, ...any) {}
	}
	if c.warnf == nil {
		c.warnf = func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "ptgo: warning: "+format+"\n", args...)
		}
	}
	tc, err := FindToolchain(ctx)
	if err != nil {
		noCompilerWarning.Do(func() { c.warnf("%v", err) })
		return nil, err
	}
	c.tc = tc
	if cfg.ISA.Name != "" {
		c.isa = cfg.ISA.clone()
	} else if c.isa, err = ISAFromEnv(); err != nil {
		return nil, err
	}
	if c.dir, err = openCacheDir(cfg.CacheDir, c.logf, c.warnf); err != nil {
		return nil, err
	}
	c.flags = append(append([]string(nil), baseFlags...), c.isa.Flags...)
	jobs := cfg.Jobs
	if jobs <= 0 {
		jobs = runtime.GOMAXPROCS(0)
	}
	c.jobs = make(chan struct{}, jobs)
	return c, nil
}

var defaultCompiler struct {
	once sync.Once
	c    *Compiler
	err  error
}

// Default returns the process-wide Compiler built from the environment, made
// on first use; a failure (no compiler) is remembered.
func Default() (*Compiler, error) {
	defaultCompiler.once.Do(func() {
		defaultCompiler.c, defaultCompiler.err = New(context.Background(), Config{})
	})
	return defaultCompiler.c, defaultCompiler.err
}

// Compile compiles and loads src with the Default compiler.
func Compile(ctx context.Context, src Source) (*Library, error) {
	c, err := Default()
	if err != nil {
		return nil, err
	}
	return c.Compile(ctx, src)
}

// CompileAll compiles and loads srcs in parallel with the Default compiler.
func CompileAll(ctx context.Context, srcs []Source) ([]*Library, error) {
	c, err := Default()
	if err != nil {
		return nil, err
	}
	return c.CompileAll(ctx, srcs)
}

// Toolchain returns the compiler in use.
func (c *Compiler) Toolchain() Toolchain { return *c.tc }

// ISA returns the level kernels are compiled for.
func (c *Compiler) ISA() ISA { return c.isa.clone() }

// Dir returns the cache directory.
func (c *Compiler) Dir() string { return c.dir }

// Flags returns the full flag list of a Source without ExtraFlags, libraries
// included, as it enters the cache key.
func (c *Compiler) Flags() []string {
	return append(append([]string(nil), c.flags...), libFlags...)
}
