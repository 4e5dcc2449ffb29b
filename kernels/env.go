package kernels

import "os"

// Environment variables read by package kernels. They are read here and
// nowhere else in the package.
const (
	// EnvCacheDir overrides the kernel cache directory.
	EnvCacheDir = "PTGO_CACHE_DIR"
	// EnvISA overrides the detected instruction-set level (see ISALevels).
	EnvISA = "PTGO_CPU_ISA"
	// EnvCC names the C compiler, optionally with leading arguments
	// ("ccache gcc"); split on white space like make does.
	EnvCC = "CC"
	// envXDGCache is the XDG base directory for user caches.
	envXDGCache = "XDG_CACHE_HOME"
)

func getenv(name string) string { return os.Getenv(name) }
