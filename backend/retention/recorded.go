package retention

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"time"

	"github.com/adlink/adlink/backend/clicks"
)

// lateRounds is how many times one pass exports rows that came to a day
// after its last export before it leaves the day to the next pass: rows
// still landing in it while the pass exports are few, and must not hold
// the pass.
const lateRounds = 2

// errRowsKeepComing is returned for a day that got rows again after the
// pass exported the ones that came late: the next pass exports them.
var errRowsKeepComing = errors.New("rows keep coming to the day")

// recordedDay exports log's rows of day unless the store records the day
// exported, records the export, and then deletes the rows the export
// holds. A day without a record is written again, over whatever file a
// pass that stopped before its record left here: its rows are all still
// in the store. Rows the day got after its last export (a spooled click
// shipped late) are exported beside it, to a file of their own
// (LateFileName), recorded, and then deleted the same way.
func (j *Job) recordedDay(ctx context.Context, log clicks.RawLog, day time.Time) error {
	if err := j.held(ctx); err != nil {
		return err
	}
	recs, err := j.o.Exports.DayExports(ctx, log, day)
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		seq, err := j.mark(ctx, log)
		if err != nil {
			return err
		}
		rec, err := j.exportAndRecord(ctx, log, day, 0, seq)
		if err != nil {
			return err
		}
		recs = append(recs, rec)
	} else if err := j.holdsRecorded(ctx, log, day, recs); err != nil {
		return err
	}
	last := recs[len(recs)-1]
	for round := 0; ; round++ {
		if err := j.held(ctx); err != nil {
			return err
		}
		deleted, err := j.o.Exports.DeleteDayTo(ctx, log, day, last.Seq)
		j.o.Metrics.RetentionDeleted(string(log), deleted)
		if err != nil {
			return err
		}
		j.o.Logger.Info("deleted day", "log", string(log), "day", day.Format(time.DateOnly), "deleted", deleted,
			"host", last.Host, "file", last.Path)
		if last.Seq == math.MaxInt64 {
			// A record made before exports kept their seq stands for
			// every row of its day.
			return nil
		}
		// A store that kept rows it said it deleted would otherwise be
		// asked again forever.
		kept, err := j.o.Exports.ExportDayTo(ctx, log, day, 0, last.Seq, io.Discard)
		if err != nil {
			return err
		}
		if kept > 0 {
			return fmt.Errorf("%d rows left after the day was deleted up to seq %d", kept, last.Seq)
		}
		late, err := j.o.Exports.ExportDayTo(ctx, log, day, last.Seq, math.MaxInt64, io.Discard)
		if err != nil {
			return err
		}
		if late == 0 {
			return nil
		}
		if round == lateRounds {
			return fmt.Errorf("%d rows came after its export %s on %s: %w", late, last.Path, last.Host, errRowsKeepComing)
		}
		if err := j.held(ctx); err != nil {
			return err
		}
		seq, err := j.o.Exports.Mark(ctx, log)
		if err != nil {
			return err
		}
		if seq <= last.Seq {
			return fmt.Errorf("the store's mark %d is at or below its export's %d, with %d rows above it", seq, last.Seq, late)
		}
		if last, err = j.exportAndRecord(ctx, log, day, last.Seq, seq); err != nil {
			return err
		}
	}
}

// holdsRecorded returns ErrRowsAfterExport when the store holds more of
// the day's rows, up to its records' last mark, than their files: a
// record that does not stand for the rows it would delete.
func (j *Job) holdsRecorded(ctx context.Context, log clicks.RawLog, day time.Time, recs []clicks.Export) error {
	last := recs[len(recs)-1]
	stored, err := j.o.Exports.ExportDayTo(ctx, log, day, 0, last.Seq, io.Discard)
	if err != nil {
		return err
	}
	exported := 0
	for _, r := range recs {
		exported += r.Rows
	}
	if stored > exported {
		return fmt.Errorf("%s on %s and the day's %d other files have %d rows, the store %d: %w",
			last.Path, last.Host, len(recs)-1, exported, stored, ErrRowsAfterExport)
	}
	return nil
}

// held returns an error when the pass's turn may have gone to another
// server: two passes at once could each write a day's file over the
// other's in a shared directory.
func (j *Job) held(ctx context.Context) error {
	if j.turn == nil {
		return nil
	}
	if err := j.turn.Held(ctx); err != nil {
		return fmt.Errorf("the turn is lost: %w", err)
	}
	return nil
}

// mark returns the store's Mark of log, taken at the pass's first export
// of log: one lock a log and pass, whatever days it exports.
func (j *Job) mark(ctx context.Context, log clicks.RawLog) (int64, error) {
	if seq, ok := j.marks[log]; ok {
		return seq, nil
	}
	seq, err := j.o.Exports.Mark(ctx, log)
	if err != nil {
		return 0, err
	}
	j.marks[log] = seq
	return seq, nil
}

// exportAndRecord writes log's rows of day above from and up to seq to
// their file in Dir (the day's own for from 0, else its LateFileName)
// and then records it, and returns the record.
func (j *Job) exportAndRecord(ctx context.Context, log clicks.RawLog, day time.Time, from, seq int64) (clicks.Export, error) {
	name := FileName(log, day)
	if from > 0 {
		name = LateFileName(log, day, from)
	}
	path, err := filepath.Abs(filepath.Join(j.o.Dir, name))
	if err != nil {
		return clicks.Export{}, err
	}
	rows, size, sum, err := j.export(ctx, path, func(w io.Writer) (int, error) {
		return j.o.Exports.ExportDayTo(ctx, log, day, from, seq, w)
	})
	if err != nil {
		return clicks.Export{}, err
	}
	mine := clicks.Export{Log: log, Day: day, At: j.o.Now().UTC(), Host: j.o.Host, Path: path, Rows: rows, SHA256: sum,
		FromSeq: from, Seq: seq}
	rec, err := j.o.Exports.RecordExport(ctx, mine)
	if err != nil {
		return clicks.Export{}, fmt.Errorf("recording %s: %w", path, err)
	}
	theirs := rec.Host != mine.Host || rec.Path != mine.Path || rec.SHA256 != mine.SHA256
	if from == 0 {
		j.o.Logger.Info("exported day", "log", string(log), "day", day.Format(time.DateOnly), "rows", rows,
			"host", j.o.Host, "file", path, "bytes", size)
	} else {
		j.o.Logger.Info("exported late rows", "log", string(log), "day", day.Format(time.DateOnly), "rows", rows,
			"host", j.o.Host, "file", path, "bytes", size, "after_seq", from)
	}
	if theirs {
		// Only a server that lost its turn mid-pass gets here.
		j.o.Logger.Warn("another server recorded the export first: this file is a second copy", "log", string(log),
			"day", day.Format(time.DateOnly), "file", path, "recorded_host", rec.Host, "recorded_file", rec.Path)
		return rec, nil
	}
	// Counted once recorded, so that a file written again after a crash
	// before its record counts once.
	if from == 0 {
		j.o.Metrics.RetentionExported(string(log), rows, size)
	} else {
		j.o.Metrics.RetentionLateExported(string(log), rows, size)
	}
	return rec, nil
}
