package retention

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/adlink/adlink/backend/clicks"
)

// recordedDay exports log's rows of day unless the store records the day
// exported, records the export, and then deletes the rows the export
// holds. A day without a record is written again, over whatever file a
// pass that stopped before its record left here: its rows are all still
// in the store. Rows the day got after its export (a spooled click
// shipped late) are in no file: they stay, and the pass stops there.
func (j *Job) recordedDay(ctx context.Context, log clicks.RawLog, day time.Time) error {
	if err := j.held(ctx); err != nil {
		return err
	}
	rec, ok, err := j.o.Exports.Exported(ctx, log, day)
	if err != nil {
		return err
	}
	if ok {
		// A pass recorded the day and stopped before deleting all of it.
		stored, err := j.o.Exports.ExportDayTo(ctx, log, day, rec.Seq, io.Discard)
		if err != nil {
			return err
		}
		if stored > rec.Rows {
			return fmt.Errorf("%s on %s has %d rows, the store %d: %w", rec.Path, rec.Host, rec.Rows, stored, ErrRowsAfterExport)
		}
	} else if rec, err = j.exportAndRecord(ctx, log, day); err != nil {
		return err
	}
	if err := j.held(ctx); err != nil {
		return err
	}
	deleted, err := j.o.Exports.DeleteDayTo(ctx, log, day, rec.Seq)
	j.o.Metrics.RetentionDeleted(string(log), deleted)
	if err != nil {
		return err
	}
	j.o.Logger.Info("deleted day", "log", string(log), "day", day.Format(time.DateOnly), "deleted", deleted,
		"host", rec.Host, "file", rec.Path)
	late, err := j.r.ExportDay(ctx, log, day, io.Discard)
	if err != nil {
		return err
	}
	if late > 0 {
		return fmt.Errorf("%d rows came after its export %s on %s: %w", late, rec.Path, rec.Host, ErrRowsAfterExport)
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

// exportAndRecord writes log's day to its file in Dir and then records
// it, and returns the day's record.
func (j *Job) exportAndRecord(ctx context.Context, log clicks.RawLog, day time.Time) (clicks.Export, error) {
	path, err := filepath.Abs(filepath.Join(j.o.Dir, FileName(log, day)))
	if err != nil {
		return clicks.Export{}, err
	}
	seq, err := j.mark(ctx, log)
	if err != nil {
		return clicks.Export{}, err
	}
	rows, size, sum, err := j.export(ctx, log, day, path, func(w io.Writer) (int, error) {
		return j.o.Exports.ExportDayTo(ctx, log, day, seq, w)
	})
	if err != nil {
		return clicks.Export{}, err
	}
	j.o.Metrics.RetentionExported(string(log), rows, size)
	mine := clicks.Export{Log: log, Day: day, At: j.o.Now().UTC(), Host: j.o.Host, Path: path, Rows: rows, SHA256: sum, Seq: seq}
	rec, err := j.o.Exports.RecordExport(ctx, mine)
	if err != nil {
		return clicks.Export{}, fmt.Errorf("recording %s: %w", path, err)
	}
	j.o.Logger.Info("exported day", "log", string(log), "day", day.Format(time.DateOnly), "rows", rows,
		"host", j.o.Host, "file", path, "bytes", size)
	if rec.Host != mine.Host || rec.Path != mine.Path || rec.SHA256 != mine.SHA256 {
		// Only a server that lost its turn mid-pass gets here.
		j.o.Logger.Warn("another server recorded the day first: this file is a second copy", "log", string(log),
			"day", day.Format(time.DateOnly), "file", path, "recorded_host", rec.Host, "recorded_file", rec.Path)
	}
	return rec, nil
}
