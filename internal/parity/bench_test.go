package parity

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/adlink/adlink/backend/shards"
	"github.com/adlink/adlink/internal/testenv"
	"github.com/adlink/adlink/wasm/module"
)

// BenchmarkModuleBytes reports matcher.wasm's size over the wire in each
// encoding the server keeps it in, beside an empty reactor built the same
// way (module.Build: the flags of "make wasm", data segments merged): what
// the Go runtime alone costs. The zstd served is the zstd CLI's -19, which
// "make wasm" writes to matcher.wasm.zst when the CLI is installed, if it
// is the smaller, else klauspost/compress's; klauspost's is reported too.
func BenchmarkModuleBytes(b *testing.B) {
	dir := b.TempDir()
	empty, err := module.Empty()
	if err != nil {
		b.Fatal(err)
	}
	emptyPath := filepath.Join(dir, "empty.wasm")
	if err := os.WriteFile(emptyPath, empty, 0o644); err != nil {
		b.Fatal(err)
	}
	matcherPath := filepath.Join(dir, "matcher.wasm")
	if err := os.WriteFile(matcherPath, testenv.Matcher(), 0o644); err != nil {
		b.Fatal(err)
	}
	// The alternative the server's encodings spare the module: decoding
	// zstd itself, with klauspost/compress's decoder.
	withDecoder, err := module.Program(zstdReactor)
	if err != nil {
		b.Fatal(err)
	}
	decoderPath := filepath.Join(dir, "decoder.wasm")
	if err := os.WriteFile(decoderPath, withDecoder, 0o644); err != nil {
		b.Fatal(err)
	}
	var mod, base, dec served
	for range b.N {
		mod, base, dec = serve(b, matcherPath), serve(b, emptyPath), serve(b, decoderPath)
	}
	kb := func(n int) float64 { return float64(n) / 1e3 }
	b.ReportMetric(kb(mod.Size(shards.Zstd)), "KB-zstd")
	b.ReportMetric(kb(mod.klauspost), "KB-zstd-klauspost")
	b.ReportMetric(kb(mod.Size(shards.Gzip)), "KB-gzip")
	b.ReportMetric(kb(mod.Size(shards.Identity)), "KB-identity")
	b.ReportMetric(kb(base.Size(shards.Zstd)), "KB-zstd-empty-reactor")
	fmt.Printf("matcher.wasm: zstd %.1f KB by %s (target <= 480 KB); zstd %.1f KB by klauspost/compress, gzip %.1f KB, identity %.1f KB\n",
		kb(mod.Size(shards.Zstd)), mod.encoder, kb(mod.klauspost), kb(mod.Size(shards.Gzip)), kb(mod.Size(shards.Identity)))
	fmt.Printf("  baseline, an empty Go reactor built the same way: zstd %.1f KB by %s; zstd %.1f KB by klauspost/compress, gzip %.1f KB, identity %.1f KB: the matcher adds %.1f KB zstd\n",
		kb(base.Size(shards.Zstd)), base.encoder, kb(base.klauspost), kb(base.Size(shards.Gzip)), kb(base.Size(shards.Identity)),
		kb(mod.Size(shards.Zstd)-base.Size(shards.Zstd)))
	b.ReportMetric(kb(dec.Size(shards.Zstd)-base.Size(shards.Zstd)), "KB-zstd-decoder")
	fmt.Printf("  an empty reactor with klauspost/compress's zstd decoder: zstd %.1f KB, %.1f KB more than without: what decoding shards in the module would add to every first view, where browsers decode Content-Encoding zstd and gzip themselves (so it is left out)\n",
		kb(dec.Size(shards.Zstd)), kb(dec.Size(shards.Zstd)-base.Size(shards.Zstd)))
}

// zstdReactor is an empty reactor that decodes zstd in the module.
const zstdReactor = `package main

import "github.com/klauspost/compress/zstd"

func main() {}

var in, out []byte

//go:wasmexport decode
func decode() int32 {
	d, err := zstd.NewReader(nil)
	if err != nil {
		return -1
	}
	out, err = d.DecodeAll(in, out[:0])
	if err != nil {
		return -1
	}
	return int32(len(out))
}
`

// served is a module as the server keeps it: its zstd, the encoder that
// made it, and klauspost's zstd size beside.
type served struct {
	*shards.Blob
	encoder   string
	klauspost int
}

// serve compresses the module at path as "make wasm" and the server do:
// the zstd CLI's path.zst, when the CLI is installed, offered to the blob.
func serve(b *testing.B, path string) served {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	blob, err := shards.NewBlob(data, "application/wasm")
	if err != nil {
		b.Fatal(err)
	}
	s := served{Blob: blob, encoder: "klauspost/compress", klauspost: blob.Size(shards.Zstd)}
	switch err := module.WriteZstd(path); {
	case errors.Is(err, module.ErrNoZstd):
		s.encoder += " (no zstd CLI)"
	case err != nil:
		b.Fatal(err)
	default:
		z, err := os.ReadFile(path + ".zst")
		if err != nil {
			b.Fatal(err)
		}
		used, err := blob.UseZstd(z)
		if err != nil {
			b.Fatal(err)
		}
		if used {
			s.encoder = fmt.Sprintf("the zstd CLI at -%d", module.ZstdLevel)
		}
	}
	return s
}
