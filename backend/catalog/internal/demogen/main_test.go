package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/adlink/adlink/backend/catalog"
)

// TestOutputUpToDate fails when data.go changed but the demo catalog or its
// logos were not regenerated with "go generate ./backend/catalog".
func TestOutputUpToDate(t *testing.T) {
	ads, logos := build()
	var b bytes.Buffer
	if err := catalog.WriteJSONL(&b, ads); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join("..", "..", "..", "..")
	got, err := os.ReadFile(filepath.Join(root, "testdata", "catalog", "demo.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, b.Bytes()) {
		t.Error("testdata/catalog/demo.jsonl is stale: run go generate ./backend/catalog")
	}
	for _, name := range logos {
		got, err := os.ReadFile(filepath.Join(root, "web", "demo", "logos", logoSlug(name)+".svg"))
		if err != nil || !bytes.Equal(got, logoSVG(name)) {
			t.Errorf("logo of %s is missing or stale (%v): run go generate ./backend/catalog", name, err)
		}
	}
}

func TestGTIN(t *testing.T) {
	for _, p := range products {
		if g := gtin(p.brand, p.model); !catalog.ValidGTIN(g) {
			t.Errorf("%s %s: invalid GTIN %s", p.brand, p.model, g)
		}
	}
}
