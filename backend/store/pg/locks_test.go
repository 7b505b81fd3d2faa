package pgstore

import (
	"go/constant"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/adlink/adlink/internal/srcconst"
)

// sqlLockClasses are the advisory lock classes only the migrations'
// functions take.
var sqlLockClasses = map[int64]string{
	// The clicks of one advertiser and day (adlink_record_click and
	// adlink_record_clicks; the key is a hash of advertiser "/" day).
	0x61646c62: "adlb",
	// The shard of the rollup and spend rows a running
	// adlink_record_clicks holds (the key is the shard, 0 to 15).
	0x61646c73: "adls",
	// The removed ads' sequence, per schema (00016_removed_ads_seq).
	0x6164726d: "adrm",
}

// TestLockClassesDiffer checks that every advisory lock class the
// package declares (a constant named ...LockClass, in any file) has a
// value of its own, none of sqlLockClasses, and that the migrations'
// functions lock only with declared classes or sqlLockClasses. Page
// pushes once shared the class of the prefix claims, and site pushes
// that of the rollup shards.
func TestLockClassesDiffer(t *testing.T) {
	consts, err := srcconst.Read(func(name string) bool { return strings.HasSuffix(name, "LockClass") }, "*.go")
	if err != nil {
		t.Fatal(err)
	}
	classes := map[int64]string{}
	for v, name := range sqlLockClasses {
		classes[v] = "the migrations' " + name
	}
	for _, c := range consts {
		v, ok := constant.Int64Val(constant.MakeFromLiteral(c.Lit.Value, c.Lit.Kind, 0))
		if !ok {
			t.Fatalf("%s: %s = %s", c.Pos, c.Name, c.Lit.Value)
		}
		if other, ok := classes[v]; ok {
			t.Errorf("%s and %s are both %#x", other, c.Name, v)
		}
		classes[v] = c.Name
	}
	if len(classes) < 10 {
		t.Fatalf("found %d lock classes, want the 7 of locks.go and the migrations' 3: %v", len(classes), classes)
	}

	migrations, err := filepath.Glob("migrations/*.sql")
	if err != nil || len(migrations) == 0 {
		t.Fatalf("migrations: %v, %d files", err, len(migrations))
	}
	lock := regexp.MustCompile(`advisory_[a-z_]*lock\(\s*(\d+)\s*,`)
	seen := 0
	for _, name := range migrations {
		sql, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range lock.FindAllSubmatch(sql, -1) {
			v, err := strconv.ParseInt(string(m[1]), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := classes[v]; !ok {
				t.Errorf("%s locks with class %d, which no ...LockClass declares", name, v)
			}
			seen++
		}
	}
	if seen == 0 {
		t.Fatal("no advisory lock found in the migrations")
	}
}
