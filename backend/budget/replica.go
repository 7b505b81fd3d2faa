package budget

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ReplicaFile is the file in a replica's data directory that holds its
// replica id (Options.Replica), made on its first start and kept after.
// Two replicas must not share one: a data directory copied to start
// another replica must leave this file out, or each would take the
// other's flags for its own.
const ReplicaFile = "replica-id"

// replicaLen is the length of a replica id, and of the random part of a
// raise's nonce that follows it: a uint64 in base 36, padded with zeros.
// A nonce of an older replica, one uint64 unpadded, is shorter than the
// two together.
const replicaLen = 13

// LoadOrCreateReplica returns the replica id kept in dir/ReplicaFile,
// drawing and storing a random one (fsync'd, then linked into place, so
// that two processes starting at once agree on the first) when there is
// none. A file that holds no replica id is an error, not replaced: the
// flags raised with the id it held would no longer be this replica's.
func LoadOrCreateReplica(dir string) (string, error) {
	path := filepath.Join(dir, ReplicaFile)
	if id, err := readReplica(path); err == nil || !errors.Is(err, os.ErrNotExist) {
		return id, err
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("budget: a replica id: %w", err)
	}
	id := pad(binary.LittleEndian.Uint64(b[:]))
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("budget: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ReplicaFile+".*")
	if err != nil {
		return "", fmt.Errorf("budget: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(id + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("budget: writing %s: %w", path, err)
	}
	// A hard link fails when the file exists: the first one made wins.
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return readReplica(path)
		}
		return "", fmt.Errorf("budget: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return id, nil
}

func readReplica(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(b))
	if !ValidReplica(id) {
		return "", fmt.Errorf("budget: %s holds %.40q, not a replica id (%d digits or lower-case letters)", path, id, replicaLen)
	}
	return id, nil
}

// ValidReplica reports whether id is a replica id: replicaLen digits or
// lower-case letters, as a raise's nonce holds it.
func ValidReplica(id string) bool {
	return len(id) == replicaLen && isNonce(id)
}

// pad is u in base 36, replicaLen characters long.
func pad(u uint64) string {
	s := strconv.FormatUint(u, 36)
	return strings.Repeat("0", replicaLen-len(s)) + s
}
