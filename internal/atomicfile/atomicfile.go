// Package atomicfile writes a file so that a crash at any moment leaves
// either its old content or its new, never a part.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write writes b to path through a temporary file in path's directory,
// flushed to the disk and renamed into place, then flushes the directory
// so that the rename itself survives a crash (where the system allows).
func Write(path string, b []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, no file is there
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: some file systems refuse a directory's sync
		d.Close()
	}
	return nil
}
