//go:build unix

package main

import (
	"errors"
	"os"
	"syscall"
)

// lockReviewDir takes the site review's turn on the data directory dir:
// an exclusive flock on the directory itself, which needs no write
// permission, and which the process's end lets go. It returns false at
// once when another process holds it.
func lockReviewDir(dir string) (release func(), ok bool, err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, false, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return func() { f.Close() }, true, nil
}
