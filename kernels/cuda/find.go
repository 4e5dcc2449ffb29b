package cuda

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// EnvNVRTC names a libnvrtc file, or a directory holding one, to use before any other.
const EnvNVRTC = "PTGO_NVRTC"

// nvrtcSonames are tried on the loader's path, newest first.
var nvrtcSonames = []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}

// FindNVRTC lists the libraries LoadNVRTC tries, in order: $PTGO_NVRTC (a file, or every
// libnvrtc.so* in a directory), the sonames (the dynamic loader searches its path), then the lib
// directories of PyPI's nvidia-cuda-nvrtc under each of dirs (site-packages directories:
// nvidia/cu<N>/lib for CUDA 13 wheels, nvidia/cuda_nvrtc/lib for CUDA 12 and 11), newest first.
// Entries are absolute paths except the sonames.
func FindNVRTC(env string, dirs []string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	if env != "" {
		if fi, err := os.Stat(env); err == nil && fi.IsDir() {
			for _, p := range libsIn(env) {
				add(p)
			}
		} else {
			add(env)
		}
	}
	for _, s := range nvrtcSonames {
		add(s)
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		var libdirs []string
		cu, _ := filepath.Glob(filepath.Join(d, "nvidia", "cu[0-9]*", "lib"))
		sort.Sort(sort.Reverse(sort.StringSlice(cu)))
		libdirs = append(libdirs, cu...)
		libdirs = append(libdirs, filepath.Join(d, "nvidia", "cuda_nvrtc", "lib"))
		for _, ld := range libdirs {
			for _, p := range libsIn(ld) {
				add(p)
			}
		}
	}
	return out
}

// libsIn lists the loadable libnvrtc files of a directory, newest soname first (the "alt" and
// "builtins" companions are not entry points).
func libsIn(dir string) []string {
	ms, _ := filepath.Glob(filepath.Join(dir, "libnvrtc.so*"))
	var out []string
	for _, m := range ms {
		base := filepath.Base(m)
		if strings.Contains(base, "builtins") || strings.Contains(base, "alt") {
			continue
		}
		if abs, err := filepath.Abs(m); err == nil {
			out = append(out, abs)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(out)))
	return out
}
