package kernels

import (
	"context"
	"slices"
	"testing"

	"github.com/klauspost/cpuid/v2"
	"github.com/stretchr/testify/require"
)

func features(fs ...cpuid.FeatureID) func(cpuid.FeatureID) bool {
	return func(f cpuid.FeatureID) bool { return slices.Contains(fs, f) }
}

var avx2Features = []cpuid.FeatureID{cpuid.SSE4, cpuid.SSE42, cpuid.POPCNT, cpuid.AVX, cpuid.AVX2, cpuid.FMA3, cpuid.F16C}

var detectTests = []struct {
	name string
	has  func(cpuid.FeatureID) bool
	want string
}{
	{"avx512", features(append(avx2Features, cpuid.AVX512F, cpuid.AVX512DQ, cpuid.AVX512VL, cpuid.AVX512BW, cpuid.AVX512CD)...), "avx512"},
	{"avx512 without BW", features(append(avx2Features, cpuid.AVX512F, cpuid.AVX512DQ, cpuid.AVX512VL, cpuid.AVX512CD)...), "avx2"},
	{"avx2 (this machine's EPYC)", features(avx2Features...), "avx2"},
	{"avx2 without FMA", features(cpuid.SSE4, cpuid.SSE42, cpuid.POPCNT, cpuid.AVX, cpuid.AVX2, cpuid.F16C), "sse4.2"},
	{"sse4.2", features(cpuid.SSE4, cpuid.SSE42, cpuid.POPCNT), "sse4.2"},
	{"sse2 only", features(), "baseline"},
}

func TestDetectISA(t *testing.T) {
	for _, tt := range detectTests {
		t.Run(tt.name, func(t *testing.T) {
			got := detectISA(tt.has)
			require.Equal(t, tt.want, got.Name)
			require.Empty(t, got.missing(tt.has))
		})
	}
}

func TestISALevelsTable(t *testing.T) {
	require.Equal(t, []string{"avx512", "avx2", "sse4.2", "baseline"}, ISALevels())
	widths := map[string]int{"avx512": 16, "avx2": 8, "sse4.2": 4, "baseline": 4}
	for _, l := range isaLevels {
		require.Equal(t, widths[l.Name], l.VectorWidth, l.Name)
		require.NotContains(t, l.Flags, "-march=native", "cache keys must name a portable target")
	}
}

func TestThisCPU(t *testing.T) {
	isa := DetectISA()
	require.NoError(t, isa.CheckRunnable(), "the detected level must be runnable")
	avx512, err := LookupISA("avx512")
	require.NoError(t, err)
	if isa.Name == "avx512" {
		require.NoError(t, avx512.CheckRunnable())
	} else {
		err := avx512.CheckRunnable()
		require.ErrorContains(t, err, "AVX512")
		require.ErrorContains(t, err, "can be built (Build) but not loaded")
		require.ErrorContains(t, err, isa.Name)
	}
}

var isaEnvTests = []struct {
	env, want, err string
}{
	{"", DetectISA().Name, ""},
	{"avx2", "avx2", ""},
	{"baseline", "baseline", ""},
	{"avx512", "avx512", ""}, // compile-only use is allowed; Compile checks
	{"AVX2", "", `unknown ISA level "AVX2" (PTGO_CPU_ISA); use one of avx512, avx2, sse4.2, baseline`},
	{"native", "", "use one of avx512, avx2, sse4.2, baseline"},
}

func TestISAFromEnv(t *testing.T) {
	for _, tt := range isaEnvTests {
		t.Run(tt.env, func(t *testing.T) {
			t.Setenv(EnvISA, tt.env)
			isa, err := ISAFromEnv()
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				_, err = New(context.Background(), Config{CacheDir: t.TempDir()})
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, isa.Name)
		})
	}
}

// TestAVX512CompileOnly builds for AVX-512 whatever this CPU is, checks that
// the exp loop calls the 16-lane libmvec variant, and (on a CPU without
// AVX-512) that Compile refuses to load it.
func TestAVX512CompileOnly(t *testing.T) {
	needLoader(t)
	isa, err := LookupISA("avx512")
	require.NoError(t, err)
	c, _ := newTestCompiler(t, Config{ISA: isa})
	src := testSource(t, "gelu.c")
	art, err := c.Build(context.Background(), src)
	require.NoError(t, err)
	imports := importedSymbols(t, art.Path)
	require.Contains(t, imports, "_ZGVeN16v_expf")
	require.Contains(t, imports, "_ZGVeN16v_erff")

	_, err = c.Compile(context.Background(), src)
	if DetectISA().Name == "avx512" {
		require.NoError(t, err)
	} else {
		require.ErrorContains(t, err, "lacks AVX512")
	}
}
