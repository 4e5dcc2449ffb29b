package kernels

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cacheFormat names the on-disk layout and the kernel ABI; changing either
// changes every key, so old entries are simply never looked up again.
var cacheFormat = "ptgo-kernels-cache v1 abi " + strconv.Itoa(ABIVersion)

// sumHeader starts every sidecar file.
const sumHeader = "ptgo-kernel-sum v1"

// cacheKey is the content address of a compiled kernel: sha256 over the cache
// format, the compiler identity, the ISA level, the full flag list and the
// source text, each length-prefixed so no two inputs hash the same bytes.
func cacheKey(compiler, isa string, flags []string, text string) string {
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		io.WriteString(h, s)
	}
	field(cacheFormat)
	field(compiler)
	field(isa)
	field(strconv.Itoa(len(flags)))
	for _, f := range flags {
		field(f)
	}
	field(text)
	return hex.EncodeToString(h.Sum(nil))
}

// entry names the files of one cache entry: <dir>/<key[:2]>/<key>.{so,c,sum}.
type entry struct {
	key   string
	shard string // directory holding the entry
}

func newEntry(dir, key string) entry {
	return entry{key: key, shard: filepath.Join(dir, key[:2])}
}

func (e entry) so() string  { return filepath.Join(e.shard, e.key+".so") }
func (e entry) src() string { return filepath.Join(e.shard, e.key+".c") }
func (e entry) sum() string { return filepath.Join(e.shard, e.key+".sum") }

// errNoEntry is returned by verify when nothing is cached (a plain miss).
var errNoEntry = errors.New("not cached")

// errUnpublished is returned by verify for a library without its sidecar:
// another process is between its two renames, or crashed there. It is rebuilt
// like a miss, without a warning.
var errUnpublished = errors.New("the checksum file is missing (publication in progress or interrupted)")

// verify checks the cached .so against its sidecar (size and sha256). It
// returns errNoEntry for a plain miss, errUnpublished for a library whose
// sidecar is not written yet, and a description of the damage for a
// truncated or corrupted entry; the caller rebuilds in every case.
func (e entry) verify() error {
	want, err := os.ReadFile(e.sum())
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(e.so()); errors.Is(serr, fs.ErrNotExist) {
			return errNoEntry
		}
		return errUnpublished
	}
	if err != nil {
		return err
	}
	wantSize, wantSum, ok := parseSum(string(want))
	if !ok {
		return fmt.Errorf("the checksum file %s is malformed", e.sum())
	}
	size, sum, err := hashFile(e.so())
	if err != nil {
		return err
	}
	if size != wantSize {
		return fmt.Errorf("size %d, want %d (truncated?)", size, wantSize)
	}
	if sum != wantSum {
		return fmt.Errorf("sha256 %s, want %s (corrupted)", sum[:12], wantSum[:12])
	}
	return nil
}

func formatSum(size int64, sum string) string {
	return fmt.Sprintf("%s\nsize %d\nsha256 %s\n", sumHeader, size, sum)
}

func parseSum(s string) (size int64, sum string, ok bool) {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) != 3 || lines[0] != sumHeader {
		return 0, "", false
	}
	sizeText, found := strings.CutPrefix(lines[1], "size ")
	if !found {
		return 0, "", false
	}
	size, err := strconv.ParseInt(sizeText, 10, 64)
	if err != nil || size < 0 {
		return 0, "", false
	}
	sum, found = strings.CutPrefix(lines[2], "sha256 ")
	if !found || len(sum) != 2*sha256.Size {
		return 0, "", false
	}
	if _, err := hex.DecodeString(sum); err != nil {
		return 0, "", false
	}
	return size, sum, true
}

// hashFile returns the size and sha256 of a file.
func hashFile(path string) (int64, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	var h hash.Hash = sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, "", err
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// writeFileAtomic publishes data at path: it writes a temporary file in the
// same directory, fsyncs it and renames it over path, so a reader sees either
// the old file or the whole new one, never part of it.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-")
	if err != nil {
		return err
	}
	name := tmp.Name()
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(name)
		return err
	}
	if err := os.Rename(name, path); err != nil {
		os.Remove(name)
		return err
	}
	return nil
}

// syncFile fsyncs a file another process (the linker) wrote.
func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	serr := f.Sync()
	return errors.Join(serr, f.Close())
}
