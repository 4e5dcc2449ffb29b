//go:build !cgo

package cuda

// NVRTC is a loaded libnvrtc; without cgo none can be loaded.
type NVRTC struct {
	Path         string
	Major, Minor int
}

// LoadNVRTC always fails without cgo.
func LoadNVRTC(dirs []string) (*NVRTC, error) { return nil, ErrUnavailable }

func (n *NVRTC) Version() string { return "" }

func (n *NVRTC) Compile(name, src string, kind Kind, arch Arch, opts []string) (*Binary, error) {
	return nil, ErrUnavailable
}

// LoadDriver always fails without cgo.
func LoadDriver() (Driver, error) { return nil, ErrUnavailable }
