package clicks

import (
	"context"
	"io"
	"time"
)

// Export is the record of one day of a raw log written to an export
// file: where, by which server, and what the file holds. A day has its
// own export (FromSeq 0) and one more for each batch of rows it got
// after the last (a spooled click shipped late).
type Export struct {
	Log RawLog
	// Day is the UTC day's start.
	Day time.Time
	// At is when the file was in place.
	At time.Time
	// Host names the server that wrote the file, Path where it is there.
	Host, Path string
	// Rows is how many rows the file holds; SHA256 is its bytes' digest.
	Rows   int
	SHA256 [32]byte
	// Seq is the Mark the export was read up to, FromSeq the Mark of
	// the day's export before it (0 for the day's own): the file holds
	// the day's rows above FromSeq and at or below Seq, and a row of the
	// day above Seq came after the export.
	FromSeq, Seq int64
}

// Exports record which days retention exported, in the store the rows
// are in, so that servers sharing one store export each day once,
// whichever of them runs a pass: a day with a record is only deleted.
// The Postgres store keeps them; a bbolt file needs none, the export file
// beside it being its record.
type Exports interface {
	// Exported returns the record of the own export (FromSeq 0) of
	// log's day that starts at day, and false when there is none. day
	// must be a UTC midnight.
	Exported(ctx context.Context, log RawLog, day time.Time) (e Export, ok bool, err error)
	// DayExports returns every record of log's day, by FromSeq: its own
	// export first, then those of the rows it got later; none when the
	// day was never exported. day must be a UTC midnight.
	DayExports(ctx context.Context, log RawLog, day time.Time) ([]Export, error)

	// RecordExport records e, durable when it returns, and returns the
	// record of e's day and FromSeq: e, or the one recorded first when
	// the day already has one from that FromSeq (which is kept as it
	// was). e.Day must be a UTC midnight, e.FromSeq below e.Seq.
	RecordExport(ctx context.Context, e Export) (Export, error)

	// Mark returns a sequence number at or above every row of log the
	// store holds, and below every row it is given later, whatever day
	// the row is of (a spooled click shipped late lands in a day long
	// past).
	Mark(ctx context.Context, log RawLog) (seq int64, err error)
	// ExportDayTo is Retainer.ExportDay of the day's rows above after
	// and at or below seq.
	ExportDayTo(ctx context.Context, log RawLog, day time.Time, after, seq int64, w io.Writer) (rows int, err error)
	// DeleteDayTo is Retainer.DeleteDay of the day's rows at or below
	// seq.
	DeleteDayTo(ctx context.Context, log RawLog, day time.Time, seq int64) (rows int, err error)
}

// A Turn is one server's turn to run a retention pass among the servers
// sharing a store (pgstore.Retainer.TryTurn).
type Turn interface {
	// Held returns an error when the turn may have gone to another
	// server (the connection that held it ended): the pass must stop.
	Held(ctx context.Context) error
	// Release ends the turn.
	Release()
}
