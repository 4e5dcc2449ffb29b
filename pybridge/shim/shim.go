// Package shim is the CPython shim ptgo._C (ptgo_C.c) as a Go package, so that Go test
// binaries that embed Python (pybridge/embed) link the same C code setup.py builds into the
// extension module. libptgo.so does not import it.
package shim

// #cgo pkg-config: python-3.11-embed
// #cgo CFLAGS: -I${SRCDIR}/../include -I${SRCDIR}/../fast -O2 -Wno-unused-function
// #cgo LDFLAGS: -lm
import "C"
