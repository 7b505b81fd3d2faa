package clicks

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"unicode/utf8"

	"github.com/goccy/go-json"
	bolt "go.etcd.io/bbolt"
)

// indexBucket holds the account index of the click log: for each click,
// an entry for its api_key and one for its advertiser, each the
// account's prefix (accountPrefix) followed by the click's record key
// (time, then sequence), with an empty value. A listing of one account
// reads its entries in order, not every click of the range. Entries are
// written and deleted in the transactions that write and delete their
// clicks.
var indexBucket = []byte("click-accounts")

// The index bucket's own keys, before every entry's (which begin with a
// kind): indexBuilt is there once the index holds every click of the
// log; indexProgress holds the record key of the last click the build of
// an index for an older file reached.
//
// The index bucket's sequence is the click log's, as of the last click
// that indexed itself or the build: a release from before the index
// records clicks without entries, and leaves the log's sequence ahead
// (createLogBuckets).
var (
	indexBuilt    = []byte{0}
	indexProgress = []byte{1}
)

// The kinds of account an entry is for.
const (
	kindAPIKey     = 'k'
	kindAdvertiser = 'a'
)

// accountPrefix appends the prefix of the entries of the account id of
// kind to dst: the kind, the id's length and the id. The length keeps
// an id apart from every id it is the start of ("shop" from
// "shop.example").
func accountPrefix(dst []byte, kind byte, id string) []byte {
	dst = append(dst, kind)
	dst = binary.AppendUvarint(dst, uint64(len(id)))
	return append(dst, id...)
}

// accounts are what the index needs of a click: the accounts that may
// list it.
type accounts struct {
	APIKey     string `json:"api_key"`
	Advertiser string `json:"advertiser"`
}

// accountsOf are c's accounts as its record holds them: JSON writes
// U+FFFD for each byte of an id that is not valid UTF-8, and the build
// and retention read the ids back from the record.
func accountsOf(c *Click) accounts {
	return accounts{recordedID(c.APIKey), recordedID(c.Advertiser)}
}

// recordedID is id as the JSON of its record decodes.
func recordedID(id string) string {
	if utf8.ValidString(id) {
		return id
	}
	b := make([]byte, 0, len(id)+8)
	for len(id) > 0 {
		r, n := utf8.DecodeRuneInString(id)
		b = utf8.AppendRune(b, r) // utf8.RuneError for a bad byte, n 1
		id = id[n:]
	}
	return string(b)
}

// entries calls fn with the index key of each of a's accounts for the
// record key rec.
func (a accounts) entries(rec []byte, fn func(k []byte) error) error {
	for _, e := range [...]struct {
		kind byte
		id   string
	}{{kindAPIKey, a.APIKey}, {kindAdvertiser, a.Advertiser}} {
		if e.id == "" {
			continue // no account lists by an empty id: it would be everyone's
		}
		if err := fn(append(accountPrefix(nil, e.kind, e.id), rec...)); err != nil {
			return err
		}
	}
	return nil
}

// index adds the entries of a's click, stored under rec, to ix.
func (a accounts) index(ix *bolt.Bucket, rec []byte) error {
	return a.entries(rec, func(k []byte) error { return ix.Put(k, []byte{}) })
}

// indexMissing adds those entries of a's click, stored under rec, that
// ix lacks: a click indexed already leaves the file unwritten.
func (a accounts) indexMissing(ix *bolt.Bucket, rec []byte) error {
	return a.entries(rec, func(k []byte) error {
		if ix.Get(k) != nil {
			return nil
		}
		return ix.Put(k, []byte{})
	})
}

// unindex removes the entries of the click record v, stored under rec,
// from ix.
func unindex(ix *bolt.Bucket, rec, v []byte) error {
	var a accounts
	if err := json.Unmarshal(v, &a); err != nil {
		return fmt.Errorf("clicks: record %x: %w", rec, err)
	}
	return a.entries(rec, ix.Delete)
}

// createLogBuckets makes the click log's bucket and its index in db
// unless they are there. An index made for a log with no clicks is
// built; one made for an older file's clicks waits for BuildIndex. An
// index whose sequence is behind the log's missed the clicks a release
// from before the index recorded in the file (a downgrade, then an
// upgrade again): it is no longer built, and BuildIndex goes over the
// log again from its first click, adding only the entries it lacks.
func createLogBuckets(db *bolt.DB) error {
	return db.Update(func(tx *bolt.Tx) error {
		log, err := tx.CreateBucketIfNotExists(bucket)
		if err != nil {
			return err
		}
		if ix := tx.Bucket(indexBucket); ix != nil {
			if ix.Sequence() == log.Sequence() {
				return nil
			}
			if err := ix.Delete(indexBuilt); err != nil {
				return err
			}
			if err := ix.Delete(indexProgress); err != nil {
				return err
			}
			return ix.SetSequence(log.Sequence())
		}
		ix, err := tx.CreateBucket(indexBucket)
		if err != nil {
			return err
		}
		if err := ix.SetSequence(log.Sequence()); err != nil {
			return err
		}
		if k, _ := log.Cursor().First(); k == nil {
			return ix.Put(indexBuilt, []byte{})
		}
		return nil
	})
}

// indexBatch is the most clicks one transaction of BuildIndex indexes,
// so that the clicks recorded meanwhile wait for a small one.
const indexBatch = 5000

// BuildIndex adds the clicks of a file written before the click log had
// an account index to it, in transactions of a bounded number of
// clicks, each noting how far it came, and marks the index built; until
// then List reads the log as it did without one. A crash or a ctx done
// midway leaves the clicks indexed so far and where they end; calling it
// again goes on from there (an entry added twice is the same key, so
// none is doubled). It logs its progress to log, which may be nil, and
// does nothing on a log whose index is built. The clicks recorded
// meanwhile index themselves.
func (l *Log) BuildIndex(ctx context.Context, log *slog.Logger) error {
	return l.buildIndex(ctx, log, indexBatch, -1)
}

// buildIndex is BuildIndex in transactions of batch clicks, stopping
// after stop of them when stop >= 0 (a build a crash cut short).
func (l *Log) buildIndex(ctx context.Context, log *slog.Logger, batch, stop int) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// The count walks the whole log: in a read, not holding up the clicks
	// recorded meanwhile.
	var total, done int
	built := false
	err := l.db.View(func(tx *bolt.Tx) error {
		if built = tx.Bucket(indexBucket).Get(indexBuilt) != nil; !built {
			total = tx.Bucket(bucket).Stats().KeyN
		}
		return nil
	})
	if err != nil || built {
		return err
	}
	log.Info("building the click log's account index", "clicks", total)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if stop >= 0 && done >= stop {
			return nil
		}
		n := 0
		err := l.db.Update(func(tx *bolt.Tx) error {
			ix, recs := tx.Bucket(indexBucket), tx.Bucket(bucket)
			if ix.Get(indexBuilt) != nil {
				built = true
				return nil
			}
			c := recs.Cursor()
			var k, v []byte
			if from := ix.Get(indexProgress); from == nil {
				k, v = c.First()
			} else if k, v = c.Seek(from); bytes.Equal(k, from) {
				k, v = c.Next()
			}
			var last []byte
			for ; k != nil && n < batch && (stop < 0 || done+n < stop); k, v = c.Next() {
				var a accounts
				if err := json.Unmarshal(v, &a); err != nil {
					return fmt.Errorf("clicks: record %x: %w", k, err)
				}
				if err := a.indexMissing(ix, k); err != nil {
					return err
				}
				last = k
				n++
			}
			if k == nil {
				built = true
				if err := ix.Delete(indexProgress); err != nil {
					return err
				}
				if err := ix.SetSequence(recs.Sequence()); err != nil {
					return err
				}
				return ix.Put(indexBuilt, []byte{})
			}
			if last == nil {
				return nil
			}
			return ix.Put(indexProgress, bytes.Clone(last))
		})
		if err != nil {
			return fmt.Errorf("clicks: build the account index: %w", err)
		}
		done += n
		if built {
			log.Info("built the click log's account index", "indexed", done)
			return nil
		}
		if done/(20*batch) != (done-n)/(20*batch) {
			log.Info("building the click log's account index", "indexed", done, "clicks", total)
		}
	}
}
