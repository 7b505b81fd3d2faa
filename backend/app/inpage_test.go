package app

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/shards"
	"github.com/adlink/adlink/match"
)

// TestInPageChoosesTheMatchersZstd: the server serves matcher.wasm.zst
// when it is matcher.wasm and smaller than klauspost's encoding, says
// which it serves, and ignores a stale or corrupt one with a warning.
func TestInPageChoosesTheMatchersZstd(t *testing.T) {
	ads, err := catalog.Demo(catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A few ads of each market: the shards are built (and compressed at
	// their best) again in each case, and the choice under test is the
	// module's.
	var few []match.Ad
	for i := 0; i < len(ads); i += 16 {
		few = append(few, ads[i])
	}
	indexes, err := market.Build(few)
	if err != nil {
		t.Fatal(err)
	}
	// Any file of some size stands in for the module.
	wasm, err := os.ReadFile(filepath.Join("..", "api", "openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	own, err := shards.NewBlob(wasm, "application/wasm")
	if err != nil {
		t.Fatal(err)
	}
	encode := func(b []byte, level zstd.EncoderLevel) []byte {
		w, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(level), zstd.WithEncoderConcurrency(1))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		return w.EncodeAll(b, nil)
	}
	good := encode(wasm, zstd.SpeedBestCompression)
	type zstCase struct {
		name   string
		zst    []byte // nil: none
		served bool   // zst is served
		warn   bool
		logged string // the encoder logged, a prefix
	}
	cases := []zstCase{
		{name: "no .zst", logged: "klauspost/compress"},
		{name: "larger", zst: encode(wasm, zstd.SpeedFastest), logged: "klauspost/compress"},
		{name: "stale", zst: encode(append([]byte("changed "), wasm...), zstd.SpeedBestCompression), warn: true, logged: "klauspost/compress"},
		{name: "truncated", zst: good[:len(good)-10], warn: true, logged: "klauspost/compress"},
		{name: "corrupt", zst: append([]byte{0x28, 0xb5, 0x2f, 0xfd}, wasm[:100]...), warn: true, logged: "klauspost/compress"},
		{name: "empty", zst: []byte{}, warn: true, logged: "klauspost/compress"},
	}
	if bin, err := exec.LookPath("zstd"); err == nil {
		cli, err := exec.Command(bin, "-19", "-q", "-c", filepath.Join("..", "api", "openapi.json")).Output()
		if err != nil {
			t.Fatal(err)
		}
		if len(cli) >= own.Size(shards.Zstd) {
			t.Fatalf("zstd -19 gave %d bytes, klauspost %d: want it smaller", len(cli), own.Size(shards.Zstd))
		}
		cases = append(cases, zstCase{name: "zstd -19", zst: cli, served: true, logged: "zstd CLI"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			set, err := inPage(indexes, wasm, tc.zst, "", 0, nil, false, slog.New(slog.NewJSONHandler(&logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			want := own.Bytes(shards.Zstd)
			if tc.served {
				want = tc.zst
			}
			if got := set.Matcher().Bytes(shards.Zstd); !bytes.Equal(got, want) {
				t.Errorf("serves %d bytes of zstd, want %d", len(got), len(want))
			}
			var warned bool
			var chosen string
			for line := range strings.Lines(logs.String()) {
				var l struct {
					Level       string `json:"level"`
					Msg         string `json:"msg"`
					ZstdEncoder string `json:"zstd_encoder"`
				}
				if err := json.Unmarshal([]byte(line), &l); err != nil {
					t.Fatal(err)
				}
				warned = warned || (l.Level == "WARN" && strings.Contains(l.Msg, "matcher.wasm.zst"))
				if l.Msg == "matcher.wasm" {
					chosen = l.ZstdEncoder
				}
			}
			if warned != tc.warn || !strings.HasPrefix(chosen, tc.logged) {
				t.Errorf("logged a warning %v, the encoder %q; want %v, %q:\n%s", warned, chosen, tc.warn, tc.logged, logs.String())
			}
		})
	}
}
