package app

import (
	"os"
	"testing"

	"github.com/adlink/adlink/internal/testenv"
	"github.com/adlink/adlink/internal/testpg"
)

// The replica tests share one Postgres server, started here, and their
// servers the shards they compress.
func TestMain(m *testing.M) {
	testenv.ShareCompression()
	os.Exit(testpg.Main(m))
}
