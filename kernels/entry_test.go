package kernels

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCacheKeyInputs(t *testing.T) {
	base := cacheKey("gcc 12", "avx2", []string{"-O3", "-lm"}, "int x;")
	require.Len(t, base, 64)
	changed := []struct {
		name string
		key  string
	}{
		{"compiler", cacheKey("gcc 13", "avx2", []string{"-O3", "-lm"}, "int x;")},
		{"isa", cacheKey("gcc 12", "avx512", []string{"-O3", "-lm"}, "int x;")},
		{"flag", cacheKey("gcc 12", "avx2", []string{"-O2", "-lm"}, "int x;")},
		{"flag order", cacheKey("gcc 12", "avx2", []string{"-lm", "-O3"}, "int x;")},
		{"flag split", cacheKey("gcc 12", "avx2", []string{"-O3-lm"}, "int x;")},
		{"flag moved into text", cacheKey("gcc 12", "avx2", []string{"-O3"}, "-lmint x;")},
		{"text", cacheKey("gcc 12", "avx2", []string{"-O3", "-lm"}, "int y;")},
	}
	seen := map[string]string{base: "base"}
	for _, c := range changed {
		prev, dup := seen[c.key]
		require.False(t, dup, "%s hashes like %s", c.name, prev)
		seen[c.key] = c.name
	}
	require.Equal(t, base, cacheKey("gcc 12", "avx2", []string{"-O3", "-lm"}, "int x;"), "keys are deterministic")
}

var testSum = strings.Repeat("ab", 32)

var parseSumTests = []struct {
	name string
	in   string
	size int64
	ok   bool
}{
	{"valid", formatSum(16120, testSum), 16120, true},
	{"empty", "", 0, false},
	{"wrong header", strings.Replace(formatSum(1, testSum), "v1", "v2", 1), 0, false},
	{"truncated", formatSum(1, testSum)[:30], 0, false},
	{"negative size", formatSum(-1, testSum), 0, false},
	{"short hash", formatSum(1, testSum[:10]), 0, false},
	{"non-hex hash", formatSum(1, strings.Repeat("zz", 32)), 0, false},
	{"extra line", formatSum(1, testSum) + "x\n", 0, false},
}

func TestParseSum(t *testing.T) {
	for _, tt := range parseSumTests {
		t.Run(tt.name, func(t *testing.T) {
			size, got, ok := parseSum(tt.in)
			require.Equal(t, tt.ok, ok)
			if ok {
				require.Equal(t, tt.size, size)
				require.Equal(t, testSum, got)
			}
		})
	}
}
