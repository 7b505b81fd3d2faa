// Package retention keeps the state file from growing with traffic: the
// raw click and impression rows of each whole UTC day older than the
// retention period are exported, one zstd-compressed JSON-lines file per
// day and log (clicks-2026-08-01.jsonl.zst), and then removed from the
// store. The rollups that reports read stay, so reports over any range
// still answer.
//
// A day's export is written to a temporary file, fsync'd, read back,
// renamed into place and its directory fsync'd; only then are its rows
// deleted, in bounded transactions. A crash at any point loses no row and
// exports none twice: a day whose file is in place is complete, and a
// later pass only deletes what is left of it.
//
// Servers sharing one store (Postgres) record each day's export in it
// (Options.Exports) and take turns (Options.Turn): a pass runs on one
// server at a time, and a day with a record is only deleted, whichever
// server runs the pass: the rows its export holds, read up to the
// store's Mark. Rows the day got after it (spooled clicks shipped late)
// go to a file of their own beside the day's (LateFileName), recorded
// and deleted the same way: a day's export is its file and its late
// files (DayFiles). A server that dies between a file's rename and its
// record leaves a complete file, and the next pass, here or on another
// server, exports those rows again: two complete copies, no row lost.
package retention

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/metrics"
)

// Options configure a Job.
type Options struct {
	// Retention is how long raw rows are kept: a UTC day is exported and
	// removed once its end is Retention in the past. 0 keeps everything.
	Retention time.Duration
	// Dir is where the exports go; it is made when missing.
	Dir string
	// Every is how often the job runs after its first run; 0 is an hour.
	Every time.Duration
	// SpendDays is how many UTC days of advertisers' spend are kept, today
	// included, and one more for the zones behind UTC, whose budget day
	// may still be UTC's yesterday; 0 is DefaultSpendDays.
	SpendDays int
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Logger gets a line per day exported, and the job's errors; nil
	// discards them.
	Logger *slog.Logger
	// Metrics count what the job exports and deletes; nil counts nothing.
	Metrics *metrics.Metrics
	// Passed, when not nil, is called after each background pass with
	// its error (nil when the pass finished or was skipped), so a caller
	// can wait for one.
	Passed func(error)
	// Exports, when not nil, record in the store which days were
	// exported, for servers that share the store: a day is exported only
	// when it has no record, and deleted once it has one. Without them a
	// day's file in Dir is its record.
	Exports clicks.Exports
	// Host names this server in the records of Exports.
	Host string
	// Turn, when not nil, is taken before each pass and released after
	// it; a pass that does not get it (ok false: another server's pass is
	// running) does nothing, and one that finds it no longer held stops
	// before its next day's export or deletion.
	Turn func(ctx context.Context) (turn clicks.Turn, ok bool, err error)
}

// DefaultSpendDays is how many days of spend are kept by default: budgets
// need today's, GET /v2/budget reads the 31 days before it
// (api.BudgetDays) in the advertiser's zone, which may be a day behind
// UTC's, and one more covers a clock that steps back.
const DefaultSpendDays = 33

// Job exports and removes old raw rows; Start runs it in the background.
type Job struct {
	r    clicks.Retainer
	o    Options
	stop context.CancelFunc
	done chan struct{}
	mu   sync.Mutex // one pass at a time
	// marks are the pass's Marks of Options.Exports, by log.
	marks map[clicks.RawLog]int64
	turn  clicks.Turn // the pass's, with Options.Turn
}

// New returns the job over r.
func New(r clicks.Retainer, o Options) *Job {
	if o.Every <= 0 {
		o.Every = time.Hour
	}
	if o.SpendDays <= 0 {
		o.SpendDays = DefaultSpendDays
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Job{r: r, o: o}
}

// FileName is the name of log's export of the UTC day that starts at day.
func FileName(log clicks.RawLog, day time.Time) string {
	return dayStem(log, day) + fileExt
}

// fileExt ends the name of every export, so that tools that know the
// format by the name read late files too.
const fileExt = ".jsonl.zst"

// lateInfix separates a late file's day from the seq its rows are above.
const lateInfix = ".late-"

func dayStem(log clicks.RawLog, day time.Time) string {
	return string(log) + "-" + day.UTC().Format(time.DateOnly)
}

// LateFileName is the name of the export of log's rows of the UTC day at
// day that came after the day's export read up to seq from: its rows are
// above from (clicks-2026-08-01.late-81723.jsonl.zst).
func LateFileName(log clicks.RawLog, day time.Time, from int64) string {
	return dayStem(log, day) + lateInfix + strconv.FormatInt(from, 10) + fileExt
}

// lateFrom returns the seq that name, a LateFileName of log's day, says
// its rows are above, and false for any other name.
func lateFrom(name string, log clicks.RawLog, day time.Time) (int64, bool) {
	digits, ok := strings.CutPrefix(name, dayStem(log, day)+lateInfix)
	if !ok {
		return 0, false
	}
	if digits, ok = strings.CutSuffix(digits, fileExt); !ok {
		return 0, false
	}
	from, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || from <= 0 || strconv.FormatInt(from, 10) != digits {
		return 0, false
	}
	return from, true
}

// DayFiles returns the paths of log's export of the UTC day at day in
// dir, in the order their rows were exported: the day's file, then its
// late files by the seq their rows are above. A day's export is all of
// them; a pass that found none of the day's rows late wrote no late file.
// It returns none when dir holds no file of the day.
func DayFiles(dir string, log clicks.RawLog, day time.Time) ([]string, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var paths []string
	type late struct {
		from int64
		path string
	}
	var lates []late
	for _, e := range es {
		if e.Name() == FileName(log, day) {
			paths = append(paths, filepath.Join(dir, e.Name()))
		} else if from, ok := lateFrom(e.Name(), log, day); ok {
			lates = append(lates, late{from, filepath.Join(dir, e.Name())})
		}
	}
	slices.SortFunc(lates, func(a, b late) int { return cmp.Compare(a.from, b.from) })
	for _, l := range lates {
		paths = append(paths, l.path)
	}
	return paths, nil
}

// Start runs the job now and then every Options.Every until Stop. With a
// retention of 0 it does nothing.
func (j *Job) Start() {
	if j.o.Retention <= 0 || j.done != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	j.stop, j.done = cancel, make(chan struct{})
	go func() {
		defer close(j.done)
		t := time.NewTicker(j.o.Every)
		defer t.Stop()
		for {
			err := j.Run(ctx)
			if err != nil && ctx.Err() == nil {
				j.o.Logger.Error("retention", "err", err)
				j.o.Metrics.RetentionError()
			}
			if j.o.Passed != nil {
				j.o.Passed(err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// Stop ends the background runs and waits for the one running, which
// stops between two transactions; what it did not finish, the next start
// finishes.
func (j *Job) Stop() {
	if j.done == nil {
		return
	}
	j.stop()
	<-j.done
}

// Run makes one pass: every whole UTC day older than the retention is
// exported and removed, log by log, oldest first; then the spend of days
// past Options.SpendDays is forgotten. It returns the first error, and
// leaves the days after it for the next pass. With Options.Turn it does
// nothing, and returns nil, when it does not get the turn.
func (j *Job) Run(ctx context.Context) error {
	if j.o.Retention <= 0 {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.o.Turn != nil {
		turn, ok, err := j.o.Turn(ctx)
		if err != nil {
			return fmt.Errorf("retention: taking the turn: %w", err)
		}
		if !ok {
			j.o.Logger.Debug("retention pass skipped: another server's pass is running")
			return nil
		}
		j.turn = turn
		defer func() { turn.Release(); j.turn = nil }()
	}
	j.marks = map[clicks.RawLog]int64{}
	now := j.o.Now().UTC()
	// Days that start before before have ended Retention ago.
	before := now.Add(-j.o.Retention).Truncate(24 * time.Hour)
	if err := os.MkdirAll(j.o.Dir, 0o750); err != nil {
		return fmt.Errorf("retention: %w", err)
	}
	j.removeTemps()
	for _, log := range clicks.RawLogs {
		var done time.Time
		for {
			day, ok, err := j.r.OldestDay(ctx, log)
			if err != nil {
				return fmt.Errorf("retention: %s: %w", log, err)
			}
			if !ok || !day.Before(before) {
				break
			}
			if day.Equal(done) && j.o.Exports != nil {
				// Rows came to the day since the pass exported it up to
				// a moment ago: they are the next pass's late rows.
				j.o.Logger.Warn("retention: rows keep coming to an exported day; the next pass exports them",
					"log", string(log), "day", day.Format(time.DateOnly))
				break
			}
			// A store that kept a day it said it deleted would otherwise
			// be asked again forever.
			if day.Equal(done) {
				return fmt.Errorf("retention: %s of %s: rows left after the day was deleted", log, day.Format(time.DateOnly))
			}
			done = day
			err = j.day(ctx, log, day)
			if errors.Is(err, errRowsKeepComing) {
				// The day's rows are exported up to a moment ago, but it
				// stays the log's oldest: the next pass goes on from it.
				j.o.Logger.Warn("retention: rows keep coming to an exported day; the next pass exports them",
					"log", string(log), "day", day.Format(time.DateOnly), "err", err)
				break
			}
			if err != nil {
				return fmt.Errorf("retention: %s of %s: %w", log, day.Format(time.DateOnly), err)
			}
		}
	}
	// A budget's day is its zone's date (clicks.BudgetDay): at UTC-12 the
	// day before UTC's is still current, so that day is kept as well.
	spendFrom := now.Truncate(24*time.Hour).AddDate(0, 0, -j.o.SpendDays)
	if err := j.r.ForgetSpendBefore(ctx, spendFrom); err != nil {
		return fmt.Errorf("retention: spend: %w", err)
	}
	return nil
}

// tempPrefix starts the names of exports being written.
const tempPrefix = ".export-"

// removeTemps removes the exports a crash left half written.
func (j *Job) removeTemps() {
	old, _ := filepath.Glob(filepath.Join(j.o.Dir, tempPrefix+"*"))
	for _, p := range old {
		if err := os.Remove(p); err != nil {
			j.o.Logger.Warn("retention: removing a half-written export", "file", p, "err", err)
		}
	}
}

// ErrRowsAfterExport is returned for a day whose rows in the store are
// not all in its export. Without Options.Exports, rows were recorded for
// it after its file was written (the clock stepped back by more than the
// retention); with them, the day's records say their files hold fewer
// rows than the store has up to their mark (a record made by hand, or
// one made before exports kept their mark, for a day that got rows
// later). The job deletes none of those rows, and stops there; moving
// the file aside (and, with Options.Exports, deleting the day's records)
// lets the next pass export what the store holds.
var ErrRowsAfterExport = errors.New("the store holds rows its export has not")

// holds checks that the export at path holds every row of log's day that
// the store still has, and returns how many rows it holds. Deletion goes
// oldest first, in the export's order, so what a crash left of the day is
// the export's last lines, byte for byte.
func (j *Job) holds(ctx context.Context, path string, log clicks.RawLog, day time.Time) (int, error) {
	exported, err := countLines(path)
	if err != nil {
		return 0, err
	}
	stored, err := j.r.ExportDay(ctx, log, day, io.Discard)
	if err != nil {
		return 0, err
	}
	if stored > exported {
		return 0, fmt.Errorf("%s has %d rows, the store %d: %w", path, exported, stored, ErrRowsAfterExport)
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	dec, err := zstd.NewReader(f, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return 0, err
	}
	defer dec.Close()
	br := bufio.NewReaderSize(dec, 1<<16)
	for range exported - stored {
		if _, err := br.ReadBytes('\n'); err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
	}
	if _, err := j.r.ExportDay(ctx, log, day, &sameAs{r: br}); err != nil {
		if errors.Is(err, errDiffers) {
			return 0, fmt.Errorf("%s: %w", path, ErrRowsAfterExport)
		}
		return 0, err
	}
	return exported, nil
}

var errDiffers = errors.New("differs")

// sameAs is a writer that checks that what is written is what r reads.
type sameAs struct {
	r   io.Reader
	buf []byte
}

func (s *sameAs) Write(p []byte) (int, error) {
	if cap(s.buf) < len(p) {
		s.buf = make([]byte, len(p))
	}
	b := s.buf[:len(p)]
	if _, err := io.ReadFull(s.r, b); err != nil || !bytes.Equal(b, p) {
		return 0, errDiffers
	}
	return len(p), nil
}

// day exports log's rows of day unless its file is already in place,
// then deletes them.
func (j *Job) day(ctx context.Context, log clicks.RawLog, day time.Time) error {
	if j.o.Exports != nil {
		return j.recordedDay(ctx, log, day)
	}
	path := filepath.Join(j.o.Dir, FileName(log, day))
	var rows int
	var size int64
	fi, err := os.Stat(path)
	switch {
	case err == nil:
		// A pass exported this day and stopped before deleting all of it:
		// delete what is left, once the file is seen to hold it.
		if rows, err = j.holds(ctx, path, log, day); err != nil {
			return err
		}
		size = fi.Size()
	case errors.Is(err, os.ErrNotExist):
		export := func(w io.Writer) (int, error) { return j.r.ExportDay(ctx, log, day, w) }
		if rows, size, _, err = j.export(ctx, path, export); err != nil {
			return err
		}
		j.o.Metrics.RetentionExported(string(log), rows, size)
	default:
		return err
	}
	deleted, err := j.r.DeleteDay(ctx, log, day)
	j.o.Metrics.RetentionDeleted(string(log), deleted)
	if err != nil {
		return err
	}
	j.o.Logger.Info("exported day", "log", string(log), "day", day.Format(time.DateOnly), "rows", rows,
		"deleted", deleted, "file", path, "bytes", size)
	return nil
}

// export writes the rows rowsTo writes to path, in Dir, durably: a
// temporary file, fsync'd and read back, renamed to path once the pass
// is seen to hold its turn, and the directory fsync'd. It returns the rows and bytes written and their
// SHA-256.
func (j *Job) export(ctx context.Context, path string,
	rowsTo func(io.Writer) (int, error)) (rows int, size int64, sum [32]byte, err error) {
	f, err := os.CreateTemp(j.o.Dir, tempPrefix+filepath.Base(path)+"-*")
	if err != nil {
		return 0, 0, sum, err
	}
	tmp := f.Name()
	defer func() {
		if f != nil {
			f.Close()
		}
		if err != nil {
			os.Remove(tmp)
		}
	}()
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(f, h), 1<<16)
	enc, err := zstd.NewWriter(bw, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedBetterCompression))
	if err != nil {
		return 0, 0, sum, err
	}
	if rows, err = rowsTo(enc); err != nil {
		enc.Close()
		return 0, 0, sum, err
	}
	if err = enc.Close(); err != nil {
		return 0, 0, sum, err
	}
	if err = bw.Flush(); err != nil {
		return 0, 0, sum, err
	}
	if err = f.Sync(); err != nil {
		return 0, 0, sum, err
	}
	if err = f.Close(); err != nil {
		return 0, 0, sum, err
	}
	f = nil
	// What was written must read back before any row goes.
	n, err := countLines(tmp)
	if err != nil {
		return 0, 0, sum, err
	}
	if n != rows {
		return 0, 0, sum, fmt.Errorf("%s reads back %d rows, %d written", tmp, n, rows)
	}
	fi, err := os.Stat(tmp)
	if err != nil {
		return 0, 0, sum, err
	}
	// A pass that lost its turn while it wrote may have been overtaken
	// by another server's, whose file of the same name, in a shared
	// directory, may be recorded already and its rows deleted: this one
	// must not replace it. Asked last, so that the rename follows at once.
	if err = j.held(ctx); err != nil {
		return 0, 0, sum, err
	}
	if err = os.Rename(tmp, path); err != nil {
		return 0, 0, sum, err
	}
	if err = syncDir(j.o.Dir); err != nil {
		return 0, 0, sum, err
	}
	h.Sum(sum[:0])
	return rows, fi.Size(), sum, nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// countLines returns the number of lines in the zstd file at path, and
// an error when it does not decode whole.
func countLines(path string) (int, error) {
	n := 0
	err := ReadFile(path, func([]byte) error { n++; return nil })
	return n, err
}

// ReadDay calls fn with each row of log's export of the UTC day at day in
// dir, file after file as DayFiles lists them: the day's rows as the
// store held them when it was exported, then those that came later.
func ReadDay(dir string, log clicks.RawLog, day time.Time, fn func(line []byte) error) error {
	paths, err := DayFiles(dir, log, day)
	if err != nil {
		return err
	}
	for _, p := range paths {
		if err := ReadFile(p, fn); err != nil {
			return err
		}
	}
	return nil
}

// ReadFile calls fn with each line of the export at path (one JSON
// object, without its newline), in order. fn must not keep the line.
func ReadFile(path string, fn func(line []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	dec, err := zstd.NewReader(f, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return err
	}
	defer dec.Close()
	br := bufio.NewReaderSize(dec, 1<<16)
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A row longer than the buffer: gather it whole.
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err == io.EOF {
			if len(line) > 0 {
				return fmt.Errorf("%s: a last line without its newline", path)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if err := fn(line[:len(line)-1]); err != nil {
			return err
		}
	}
}
