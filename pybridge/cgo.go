package main

// #cgo CFLAGS: -I${SRCDIR}/include -O2
import "C"
