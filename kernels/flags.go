package kernels

import (
	"fmt"
	"strings"
)

// baseFlags are the compiler flags of every kernel, before the ISA's flags.
// doc.go records why each math flag is (or is not) here.
var baseFlags = []string{
	"-O3", "-fopenmp", "-fPIC", "-shared", "-pipe",
	// Floating point: no errno (lets sqrtf and libmvec calls vectorise) and
	// no trap semantics; never -ffast-math (see doc.go).
	"-fno-math-errno", "-fno-trapping-math", "-ffp-contract=off",
	// Only PTGO_KERNEL functions are exported.
	"-fvisibility=hidden",
	// Mistakes in generated code fail the compile instead of running wrong:
	// an undeclared function would silently return int, and an undefined
	// symbol would otherwise surface only at dlopen.
	"-Werror=implicit-function-declaration", "-Wl,-z,defs",
	// Units built on Header define the libgomp entry points they use (see
	// Header): do not record a dependency on libgomp they do not have.
	"-Wl,--as-needed",
}

// libFlags come after the source: libm (its linker script pulls in libmvec).
var libFlags = []string{"-lm"}

// checkExtraFlags refuses Source.ExtraFlags that would change where the
// output goes or what the compiler does with it.
func checkExtraFlags(name string, flags []string) error {
	for _, f := range flags {
		bad := !strings.HasPrefix(f, "-") || strings.HasPrefix(f, "-o") ||
			f == "-c" || f == "-E" || f == "-S"
		if bad {
			return fmt.Errorf("kernels: extra compiler flag %q of %q is not allowed (only options such as -DNAME=1 or -fno-tree-vectorize; the output and mode are fixed); remove it", f, name)
		}
	}
	return nil
}
