package cuda

import "path/filepath"

// RepoSearchDirs are the NVRTC search directories a ptgo checkout provides: build/nvrtc (where
// `make setup` unpacks PyPI's nvidia-cuda-nvrtc) and the site-packages of the torch 2 venv
// (.venv-torch2, whose torch depends on it). Tests and tools use them; the Python package
// passes sys.path instead.
func RepoSearchDirs(root string) []string {
	dirs := []string{filepath.Join(root, "build", "nvrtc")}
	sp, _ := filepath.Glob(filepath.Join(root, ".venv-torch2", "lib", "python3*", "site-packages"))
	return append(dirs, sp...)
}
